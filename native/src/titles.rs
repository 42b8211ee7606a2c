//! The scan behind `processors.id_titles.stated_pairs`: which text of which block may title which arXiv id.
//!
//! For every section, in the order the reference (`tests/processors/reference/id_titles.py`) visits them:
//! the head, then each block — a link whose URL carries exactly one id offers its text (`link`); a block
//! carrying exactly one id offers its table row's title cell (`table`), its heading (`heading`) or its bold
//! lead (`lead`); after the blocks, the first `Title:` line offers its title when the section cites one id
//! (`title_line`). Python judges each raw text (`_candidate`: cleaned, then plausible or not) and, when
//! none of a section's survives, reads the named-paper case from the section's first block. Every section
//! is scanned here, so Python sees only the few that offer something.

use rustc_hash::FxHashSet;

use crate::arxiv::extract_ids;
use crate::markup::strip_pictographs;
use crate::structure::{BlockOut, Kind, SectionOut, StructureOut};
use crate::unicode::{collapse, is_space, starts_with_ignorecase};

/// A text that may title an id, and where it comes from (`processors.id_titles.TRUST`'s keys).
pub struct Raw {
    pub id: String,
    pub text: String,
    pub kind: &'static str,
}

/// A section about one paper its heading does not cite: the id its first block cites, that block's text,
/// and whether the heading may title it (the block is a paragraph and the section cites nothing else).
pub struct Named {
    pub id: String,
    pub text: String,
    pub heading_may_title: bool,
}

/// What one section offers.
pub struct SectionScan {
    pub index: usize,
    pub raws: Vec<Raw>,
    pub named: Option<Named>,
}

/// `processors.id_titles.block_ids`: the ids of a block's text and of its links' URLs.
fn block_ids(block: &BlockOut) -> Vec<String> {
    let mut urls = String::new();
    for (i, (_, url)) in block.links.iter().enumerate() {
        if i > 0 {
            urls.push(' ');
        }
        urls.push_str(url);
    }
    if urls.is_empty() {
        return extract_ids(&block.text);
    }
    extract_ids(&format!("{} {}", block.text, urls))
}

/// Whether `text` is one of `words`, ASCII letters compared as `re.IGNORECASE` compares them.
fn is_one_of(text: &str, words: &[&str]) -> bool {
    words
        .iter()
        .any(|w| starts_with_ignorecase(text, w) == Some(text.len()))
}

/// `_TITLE_COLUMNS`, most telling first: a title, a paper, a name.
const TITLE_COLUMNS: [&[&str]; 3] = [
    &[
        "paper title",
        "paper titles",
        "title",
        "titles",
        "标题",
        "论文标题",
        "题目",
        "제목",
        "논문 제목",
    ],
    &["paper", "papers", "论文", "논문", "publication"],
    &["name", "method", "model", "名称", "方法", "模型", "이름"],
];

/// `processors.id_titles.title_column`: the header cell naming the title column.
fn title_column(header: &[String]) -> Option<usize> {
    let cells: Vec<String> = header
        .iter()
        .map(|c| {
            let chars: Vec<char> = c.chars().collect();
            collapse(&strip_pictographs(&chars))
                .trim_matches([' ', '*', ':', '：'])
                .to_string()
        })
        .collect();
    TITLE_COLUMNS
        .iter()
        .find_map(|words| cells.iter().position(|c| is_one_of(c, words)))
}

/// `processors.id_titles.title_cell`: the cell under a table row's title column, "" without one (`columns`:
/// the title column of each table's header, found once per table, not once per row).
fn title_cell<'a>(block: &'a BlockOut, columns: &[Option<usize>]) -> &'a str {
    match block.header.and_then(|h| columns[h]) {
        Some(column) if column < block.cells.len() => &block.cells[column],
        _ => "",
    }
}

/// `_LABEL`'s words: a lead that is only a title label (`**原文标题：**`).
const LABELS: &[&str] = &[
    "原文标题",
    "原标题",
    "英文标题",
    "论文标题",
    "标题",
    "original title",
    "paper title",
    "title",
    "제목",
    "논문 제목",
    "원제",
];
/// The words a `Title:` line may open with, in the pattern's order.
const LINE_LABELS: &[&str] = &[
    "原文标题",
    "原标题",
    "英文标题",
    "论文标题",
    "original title",
    "paper title",
    "title",
];

fn skip_space(text: &str, i: usize) -> usize {
    i + text[i..]
        .chars()
        .take_while(|&c| is_space(c))
        .map(char::len_utf8)
        .sum::<usize>()
}

/// After a label word: `\s*(?:[:：]\s*)?$`.
fn label_end(text: &str, i: usize) -> bool {
    let mut j = skip_space(text, i);
    if let Some(c) = text[j..].chars().next().filter(|&c| c == ':' || c == '：') {
        j = skip_space(text, j + c.len_utf8());
    }
    j == text.len()
}

/// After a line's label word: `\s*[:：]\s*`, the end of the match.
fn line_label_end(text: &str, i: usize) -> Option<usize> {
    let j = skip_space(text, i);
    let c = text[j..]
        .chars()
        .next()
        .filter(|&c| c == ':' || c == '：')?;
    Some(skip_space(text, j + c.len_utf8()))
}

/// Whether `text` may open with a label word: its first character opens one (`o`, `p`, `t` in either case —
/// no other letter matches them under `re.IGNORECASE` — or the first character of a CJK or Korean label).
/// Most blocks are ruled out here, before any word is compared.
fn may_open_label(text: &str) -> bool {
    matches!(
        text.chars().next(),
        Some('o' | 'O' | 'p' | 'P' | 't' | 'T' | '原' | '英' | '论' | '标' | '제' | '논' | '원')
    )
}

/// `processors.id_titles.title_line`: the title a `Title: …` block states, "" if it is no title line.
fn title_line(block: &BlockOut) -> &str {
    let lead = block.lead.as_str();
    if may_open_label(lead)
        && LABELS
            .iter()
            .any(|w| starts_with_ignorecase(lead, w).is_some_and(|n| label_end(lead, n)))
    {
        return block.text.strip_prefix(lead).unwrap_or("");
    }
    let text = block.text.as_str();
    if !may_open_label(text) {
        return "";
    }
    LINE_LABELS
        .iter()
        .find_map(|w| starts_with_ignorecase(text, w).and_then(|n| line_label_end(text, n)))
        .map_or("", |end| &text[end..])
}

/// Every section's offers; sections that offer nothing are left out.
pub fn scan(structure: &StructureOut) -> Vec<SectionScan> {
    let columns: Vec<Option<usize>> = structure.headers.iter().map(|h| title_column(h)).collect();
    structure
        .sections
        .iter()
        .enumerate()
        .filter_map(|(index, section)| {
            let scanned = scan_section(index, section, &columns);
            (!scanned.raws.is_empty() || scanned.named.is_some()).then_some(scanned)
        })
        .collect()
}

fn scan_section(index: usize, section: &SectionOut, columns: &[Option<usize>]) -> SectionScan {
    let mut raws = Vec::new();
    let mut section_ids: Vec<String> = Vec::new();
    let mut seen: FxHashSet<String> = FxHashSet::default(); // a hostile section cites 10 000 ids
    let mut head_ids = 0;
    for (is_head, block) in section
        .head
        .iter()
        .map(|h| (true, h))
        .chain(section.blocks.iter().map(|b| (false, b)))
    {
        let ids = block_ids(block);
        if is_head {
            head_ids = ids.len();
        }
        for id in &ids {
            if seen.insert(id.clone()) {
                section_ids.push(id.clone());
            }
        }
        for (text, url) in &block.links {
            let link_ids = extract_ids(url);
            if link_ids.len() == 1 && !text.is_empty() {
                raws.push(Raw {
                    id: link_ids[0].clone(),
                    text: text.clone(),
                    kind: "link",
                });
            }
        }
        let [id] = &ids[..] else { continue };
        let offer = match block.kind {
            Kind::TableRow => {
                Some((title_cell(block, columns), "table")).filter(|(cell, _)| !cell.is_empty())
            }
            Kind::Heading => Some((
                if is_head {
                    section.heading.as_str()
                } else {
                    block.text.as_str()
                },
                "heading",
            )),
            _ if !block.lead.is_empty()
                && !block.links.iter().any(|(text, _)| *text == block.lead) =>
            {
                Some((block.lead.as_str(), "lead"))
            }
            _ => None,
        };
        if let Some((text, kind)) = offer {
            raws.push(Raw {
                id: id.clone(),
                text: text.to_string(),
                kind,
            });
        }
    }
    if let [id] = &section_ids[..] {
        if let Some(line) = section
            .blocks
            .iter()
            .map(title_line)
            .find(|t| !t.is_empty())
        {
            raws.push(Raw {
                id: id.clone(),
                text: line.to_string(),
                kind: "title_line",
            });
        }
    }
    let named = named_paper(section, head_ids, &section_ids);
    SectionScan { index, raws, named }
}

/// The preconditions of `_named_paper`: a section of level 2 or deeper whose heading cites no id and whose
/// first block with text cites exactly one.
fn named_paper(section: &SectionOut, head_ids: usize, section_ids: &[String]) -> Option<Named> {
    if section.level < 2 || section.head.is_none() || head_ids > 0 {
        return None;
    }
    let first = section.blocks.iter().find(|b| !b.text.is_empty())?;
    let ids = block_ids(first);
    let [id] = &ids[..] else { return None };
    let heading_may_title = first.kind == Kind::Paragraph && section_ids == &ids[..];
    Some(Named {
        id: id.clone(),
        text: first.text.clone(),
        heading_may_title,
    })
}
