"""Phrases of the briefing in each language; processors and the renderer take them from here."""

from __future__ import annotations

from typing import Literal

from processors.reasons import RelevanceCode

Lang = Literal["zh", "en"]

PHRASES: dict[str, dict[Lang, str]] = {
    # D-items
    "d.version.subject": {
        "zh": "{product} {a} 与 {b} 版本号差异",
        "en": "{product} {a} vs {b}: version mismatch",
    },
    "d.version.claim_living": {
        "zh": "活文档已锚定 {product} {version}",
        "en": "the living document anchors {product} {version}",
    },
    "d.version.suggest": {
        "zh": "归入{where}时标注「{product} {a} 与 {b} 版本号差异待核实」；建议核验 {product} 官方 releases 页",
        "en": "when filing it{where}, mark '{product} {a} vs {b} to verify'; check {product}'s official release page",
    },
    "d.id.subject_title": {
        "zh": "同一标题「{title}」对应两个 arXiv 号 {ids}",
        "en": "one title '{title}' under two arXiv ids {ids}",
    },
    "d.id.claim": {"zh": "{title}（arXiv {id}）", "en": "{title} (arXiv {id})"},
    "d.suspect.typo": {
        "zh": "⚠ 疑为 arXiv {other} 的笔误（见 {d}）",
        "en": "⚠ likely a typo of arXiv {other} (see {d})",
    },
    "d.suspect.future": {
        "zh": "⚠ 年月晚于引用文档（见 {d}）",
        "en": "⚠ dated after the note citing it (see {d})",
    },
    "d.id.subject_id": {"zh": "arXiv {id} 对应两个标题", "en": "arXiv {id} under two titles"},
    "d.id.suggest": {
        "zh": "核验 arxiv.org/abs 页面，只保留正确的号与标题",
        "en": "check the arxiv.org/abs page and keep only the right id and title",
    },
    "d.future.subject": {
        "zh": "arXiv {id} 的年月晚于引用它的文档（{month}）",
        "en": "arXiv {id} is dated after the note citing it ({month})",
    },
    "d.future.suggest": {
        "zh": "多半是笔误：核验 arXiv 号后再引用",
        "en": "most likely a typo: verify the id before citing it",
    },
    "d.unsourced.subject": {"zh": "{what} 数字来源", "en": "source of the figures in {what}"},
    "d.unsourced.suggest": {
        "zh": "归入{where}时标注「{figures} 数字来源待核实」；找到原始论文或官方数据后再写入",
        "en": "when filing it{where}, mark '{figures}: source to verify'; find the original paper or vendor data first",
    },
    "d.flagged.subject": {"zh": "作者标注待核实：{what}", "en": "marked to verify by its writer: {what}"},
    "d.flagged.suggest": {
        "zh": "归入{where}时保留「待核实」标注；核验原始来源",
        "en": "keep the 'to verify' mark when filing it{where}; check the original source",
    },
    "d.where": {"zh": " {section} ", "en": " into {section}"},
    # credibility
    "cred.arxiv": {"zh": "arXiv {month}", "en": "arXiv {month}"},
    "cred.vendor": {"zh": "厂商/官方文档", "en": "vendor or official documentation"},
    "cred.community": {"zh": "技术社区博客", "en": "community blog"},
    "cred.unknown": {"zh": "来源类型不明", "en": "unknown kind of source"},
    "cred.support": {"zh": "{n} 个来源交叉印证", "en": "{n} sources agree"},
    "cred.flagged": {"zh": "含待核实说法⚠", "en": "carries claims to verify ⚠"},
    "cred.api": {"zh": "arXiv API 已核验", "en": "verified against the arXiv API"},
    "cred.unverified": {"zh": "未经 arXiv API 核验", "en": "not verified against the arXiv API"},
    # no-increment reasons
    "why.duplicate": {"zh": "与 {of} 重复", "en": "duplicate of {of}"},
    "why.near_duplicate": {
        "zh": "与 {of} 近似重复（相似度 {similarity}）",
        "en": "near-duplicate of {of} (similarity {similarity})",
    },
    "why.baseline": {
        "zh": "昨日锚定基线：用于续用锚定与 D 编号",
        "en": "yesterday's baseline: used for anchored ids and D numbering",
    },
    "why.reference": {
        "zh": "{axis} 主轴简报，由其实例独立维护",
        "en": "{axis} briefing, kept by its own instance",
    },
    "why.work_queue": {
        "zh": "工作队列：无 {axis} 主分类专项",
        "en": "work queue: no item filed under {axis}",
    },
    "why.work_queue_has": {
        "zh": "工作队列：{axis} 相关项 {n} 条，无新增内容",
        "en": "work queue: {n} item(s) on {axis}, nothing new",
    },
    "why.adjacent": {
        "zh": "主要属于 {other} 主轴（邻接 {axis}）",
        "en": "mainly {other} (adjacent to {axis})",
    },
    "why.low": {"zh": "与 {axis} 相关度低（{score}）", "en": "low relevance to {axis} ({score})"},
    "why.covered": {
        "zh": "内容已被活文档覆盖（{ids}）",
        "en": "already covered by the living document ({ids})",
    },
    "why.not_selected": {
        "zh": "未入选：排在前 {n} 条增量之后",
        "en": "not selected: ranked below the top {n} increments",
    },
    "why.no_content": {"zh": "无可用的新增内容", "en": "nothing new to add"},
    "why.adjacent_axis_unknown": {"zh": "其他主轴", "en": "another axis"},
    # priorities
    "pri.write": {"zh": "写入 {sections}", "en": "write into {sections}"},
    "pri.tbd": {"zh": "写入（章节待定）", "en": "write (section to decide)"},
    "pri.no_fit": {"zh": "无合适章节（建议新增）", "en": "no section fits (consider a new one)"},
    "pri.annotate": {"zh": "§附录标注", "en": "annotate in the appendix"},
    "pri.figures": {"zh": "（{figures}）", "en": " ({figures})"},
    "pri.d_content": {
        "zh": "{span} 矛盾/待核实标注（{subjects}）",
        "en": "{span} contradictions and claims to verify ({subjects})",
    },
    # topics of sources
    "topic.card": {
        "zh": "新卡 {card} {title} · 主分类 {primary}",
        "en": "new card {card} {title} · primary {primary}",
    },
    "topic.anchor": {"zh": "锚入 {axis} {sections}", "en": "anchored into {axis} {sections}"},
    "topic.baseline": {"zh": "昨日锚定基线", "en": "yesterday's baseline"},
}

# Labels of the Markdown briefing: the example's headings in zh, the same structure in en.
LABELS: dict[Lang, dict[str, str]] = {
    "zh": {
        "title": "{axis} · E1 预消化简报({date})",
        "summary": "状态摘要", "s1": "一、检查过的来源清单", "s2": "二、增量条目",
        "s3": "三、值得警惕的矛盾或待核实说法", "s4": "四、可引用 arXiv 号列表",
        "s5": "五、检查过的来源汇总（可审计）", "s6": "六、本次无显著新增量的来源说明",
        "s7": "七、建议今晚 E2 活文档更新优先级",
        "count": "增量条数：{n} 条主增量（{where} {lo}-{hi} 目标区间内；{window} 滑动窗口）",
        "inside": "在", "outside": "不在", "core": "核心新增：", "empty_window": "本窗口没有任何来源：简报照常生成，无增量可列",
        "ids": "涉及 arXiv 号：本次新增 {x} 个（{new}）；续用锚定 {y} 个", "more_ids": "… 另 {n} 个见四",
        "unverified": "未核验 arXiv 号：{u} 个（共 {n} 个；标题取自文档，未经 arXiv API 或缓存核实）：{ids}",
        "srcs": "来源：{s} 个（已用 {u}，重复 {d}，已取代 {sup}，拒收 {r}）；活文档 {living}",
        "t1": "| 来源目录 | 关键文件 | {axis} 相关度 |",
        "inc_id": "增量 {rank}：arXiv {ids} — {title}（{stars}）", "inc_doc": "增量 {rank}：{title}（{stars}）",
        "source": "来源", "original": "原始来源", "url": "URL", "arxiv": "arXiv 号", "points": "要点",
        "thesis": "核心论点", "cred": "可信度", "relation": "与活文档现有脉络的关系", "suggest": "建议归入章节",
        "rel_anchored": "{sec}已锚定 {names}", "rel_plain": "{sec}相关",
        "rel_new": "本条为本次新增", "rel_cont": "本条是承接延续", "rel_figures": "新增具体数字：{figures}",
        "rel_none": "{doc} 尚无相关章节；本条为本次新增", "rel_damaged": "{doc}：无法比对相关章节",
        "kind": "类型", "claim": "说法", "advice": "建议",
        "k.version_conflict": "版本号冲突", "k.arxiv_id_conflict": "arXiv 号与标题不一致",
        "k.future_arxiv_id": "arXiv 号晚于引用文档", "k.unsourced_claim": "数字无来源", "k.flagged": "作者标注待核实",
        "t4": "| arXiv 号 | 标题 | 可信度 | 与 {doc} 关系 |", "new": "本次新增", "continued": "续立", "unverified_mark": "· 未核验（标题取自文档）",
        "t7": "| 优先级 | 内容 | 动作 |", "highest": "🔴 最高", "medium": "🟡 中", "low": "🟢 低",
        "used": "已用", "no_increment": "无增量", "duplicate": "重复（与 {of} 重复）", "near_duplicate": "近似重复（与 {of}，相似度 {similarity}）", "superseded": "已被新版本取代",
        "rejected": "拒收", "none": "（无）", "tbd": "待定", "no_section_fits": "无合适章节（建议新增）", "no_living_document": "待定（无活文档）",
        "living_document_damaged": "待定（活文档已存储，但正文已损坏、无法读取）", "living_damaged": "{living}（已损坏、无法读取）",
        "living_document_row_missing": "待定（活文档已存储，但状态库缺少它的一行记录：`predigest rebuild` 可恢复）",
        "living_row_missing": "{living}（状态库缺少它的一行记录）",
        "g.not_selected": "未入选", "g.covered": "已被活文档覆盖", "g.no_content": "无可用的新增内容",
        "g.adjacent": "主要属于其他主轴（邻接）", "g.low": "相关度低", "g.duplicate": "重复",
        "g.baseline": "基线", "g.reference": "其他主轴的简报", "g.work_queue": "工作队列",
        "group_count": "{n} 个", "group_more": "列出前 {shown} 个；其余 {rest} 个见 JSON 的 no_increment_sources",
        "reject.binary": "二进制文件（含 NUL 字节）", "reject.limit": "超过大小上限", "reject.empty": "空文件",
        "reject.outside": "解析到根目录之外（符号链接的文件夹）", "reject.symlink": "符号链接",
        "reject.special": "不是普通文件", "reject.unreadable": "无法读取", "reject.vanished": "读取前已消失",
        "reject.bad_name": "文件名或其路径上某个文件夹的名称不是有效的 UTF-8（转义显示）；请重命名该文件或文件夹",
        "reject.parse": "无法解析", "reject.damaged": "已存储，但正文已损坏、无法读取",
        "reject.row_missing": "已存储，但状态库缺少它的一行记录（documents 主题仍保留其记录时，`predigest rebuild` 可恢复）",
        "footer": "本报告由 predigest 自动生成 · {at} · 增量条目：{n} 条（{titles}） · 涉及 arXiv 号：{x}+{y}（本次新增 {x} 个；续用锚定 {y} 个） · 来源 {s} 个（重复 {d}，拒收 {r}）",
        "sep": "、", "colon": "：", "lp": "（", "rp": "）", "semi": "；",
    },
    "en": {
        "title": "{axis} · E1 pre-digest briefing ({date})",
        "summary": "Status summary", "s1": "1. Sources checked", "s2": "2. Increments",
        "s3": "3. Contradictions and claims to verify", "s4": "4. Citable arXiv ids",
        "s5": "5. Audit list of sources", "s6": "6. Sources without a significant increment",
        "s7": "7. Recommended E2 update priorities tonight",
        "count": "Increments: {n} ({where} the {lo}-{hi} target range; sliding window {window})",
        "inside": "inside", "outside": "outside", "core": "Core additions: ", "empty_window": "No source in this window: the briefing is emitted with no increment",
        "ids": "arXiv ids: {x} new ({new}); {y} continued", "more_ids": "… {n} more in 4",
        "unverified": "Unverified arXiv ids: {u} of {n} (titles from the documents, not checked with the arXiv API or cache): {ids}",
        "srcs": "Sources: {s} ({u} used, {d} duplicate, {sup} superseded, {r} rejected); living document {living}",
        "t1": "| Folder | Key file | {axis} relevance |",
        "inc_id": "Increment {rank}: arXiv {ids} — {title} ({stars})", "inc_doc": "Increment {rank}: {title} ({stars})",
        "source": "Sources", "original": "original source", "url": "URL", "arxiv": "arXiv ids", "points": "Key points",
        "thesis": "Thesis", "cred": "Credibility", "relation": "Relation to the living document", "suggest": "Suggested sections",
        "rel_anchored": "{sec} already anchors {names}", "rel_plain": "{sec} is related",
        "rel_new": "this is new", "rel_cont": "this continues it", "rel_figures": "new figures: {figures}",
        "rel_none": "{doc} has no related section yet; this is new", "rel_damaged": "{doc}: its related sections cannot be told",
        "kind": "Kind", "claim": "Claim", "advice": "Suggestion",
        "k.version_conflict": "version conflict", "k.arxiv_id_conflict": "arXiv id and title disagree",
        "k.future_arxiv_id": "arXiv id later than the citing note", "k.unsourced_claim": "figure without a source", "k.flagged": "marked to verify by its writer",
        "t4": "| arXiv id | Title | Credibility | Relation to {doc} |", "new": "new", "continued": "continued", "unverified_mark": "· unverified (title from the documents)",
        "t7": "| Priority | Content | Action |", "highest": "🔴 highest", "medium": "🟡 medium", "low": "🟢 low",
        "used": "used", "no_increment": "no increment", "duplicate": "duplicate of {of}", "near_duplicate": "near-duplicate of {of} (similarity {similarity})", "superseded": "superseded by a newer version",
        "rejected": "rejected", "none": "(none)", "tbd": "TBD", "no_section_fits": "no section fits (consider a new one)", "no_living_document": "TBD (no living document)",
        "living_document_damaged": "TBD (the living document is stored, but its text is damaged and cannot be read)", "living_damaged": "{living} (damaged, cannot be read)",
        "living_document_row_missing": "TBD (the living document is stored, but a row of it is missing from the state: a `predigest rebuild` restores it)",
        "living_row_missing": "{living} (a row of it is missing from the state)",
        "g.not_selected": "not selected", "g.covered": "already covered by the living document", "g.no_content": "nothing new to add",
        "g.adjacent": "mainly another axis (adjacent)", "g.low": "low relevance", "g.duplicate": "duplicates",
        "g.baseline": "baseline", "g.reference": "other axes' briefings", "g.work_queue": "work queue",
        "group_count": "{n}", "group_more": "the first {shown} listed; the other {rest} are in the JSON's no_increment_sources",
        "reject.binary": "binary file (NUL bytes)", "reject.limit": "over the size limit", "reject.empty": "empty file",
        "reject.outside": "resolves outside the root (a symlinked folder)", "reject.symlink": "a symlink",
        "reject.special": "not a regular file", "reject.unreadable": "unreadable", "reject.vanished": "vanished before it was read",
        "reject.bad_name": "its name, or a folder's on its path, is not valid UTF-8 (shown escaped); rename that one",
        "reject.parse": "could not be parsed", "reject.damaged": "stored, but its text is damaged and cannot be read",
        "reject.row_missing": "stored, but a row of it is missing from the state (a `predigest rebuild` restores it while the documents topic holds its record)",
        "footer": "Generated by predigest · {at} · increments: {n} ({titles}) · arXiv ids: {x}+{y} ({x} new; {y} continued) · sources {s} ({d} duplicate, {r} rejected)",
        "sep": ", ", "colon": ": ", "lp": " (", "rp": ")", "semi": "; ",
    },
}  # fmt: skip

RELEVANCE: dict[RelevanceCode, dict[Lang, str]] = {
    "very_high": {"zh": "极高", "en": "very high"},
    "high": {"zh": "高", "en": "high"},
    "medium": {"zh": "中", "en": "medium"},
    "low": {"zh": "低", "en": "low"},
    "baseline": {"zh": "基线", "en": "baseline"},
    "reference": {"zh": "参考", "en": "reference"},
    "adjacent": {"zh": "邻接", "en": "adjacent"},
}


def relevance_label(code: RelevanceCode, lang: Lang) -> str:
    """The display text of a relevance code (`极高`, `very high` …)."""
    return RELEVANCE[code][lang]


def rejection_label(code: str | None, lang: Lang) -> str | None:
    """The display text of a rejection code (`a symlink`, `符号链接` …); None without one, or for one unknown here."""
    return LABELS[lang].get(f"reject.{code}") if code else None


def reason_alone(path: str, reason: str) -> str:
    """A stored rejection's message without the path it starts with (`x.md: it is a symlink` → `it is a symlink`),
    for a line that already names the path; the message as stored otherwise."""
    return reason.removeprefix(f"{path}: ") or reason


def say(key: str, lang: Lang, **values: object) -> str:
    """The phrase `key` in `lang`, formatted with `values`."""
    return PHRASES[key][lang].format(**values)
