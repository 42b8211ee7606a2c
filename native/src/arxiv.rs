//! arXiv ids in free text, as `processors/arxiv_ids.py` describes them: `extract_ids` finds every valid id
//! (new style `YYMM.NNNNN`, old style `archive/YYMMNNN`), `invalid_mentions` what is announced as an id
//! (`arXiv:…`, an arxiv.org URL) but is none. Each matcher tries the same alternatives in the same order as
//! the regular expression it stands for, so the same text gives the same ids; `\d` is any script's decimal
//! digit there, as in Python.

use rustc_hash::FxHashSet;

use crate::unicode::{
    decimal_value, is_ascii_letter_ignorecase, is_decimal, is_space, starts_with_ignorecase,
};

/// Old-style archives, longest (as escaped in the Python pattern) first.
const ARCHIVES: &[&str] = &[
    "chao-dyn", "solv-int", "patt-sol", "adap-org", "comp-gas", "alg-geom", "funct-an", "bayes-an",
    "acc-phys", "plasm-ph", "cond-mat", "astro-ph", "quant-ph", "supr-con", "hep-lat", "nucl-th",
    "nucl-ex", "math-ph", "chem-ph", "atom-ph", "mtrl-th", "hep-th", "hep-ph", "hep-ex", "physics",
    "q-bio", "q-fin", "gr-qc", "dg-ga", "q-alg", "ao-sci", "cmp-lg", "math", "nlin", "stat", "cs",
];

#[inline]
fn char_at(text: &str, i: usize) -> Option<char> {
    text.get(i..).and_then(|s| s.chars().next())
}

#[inline]
fn char_before(text: &str, i: usize) -> Option<char> {
    text[..i].chars().next_back()
}

/// The end of the run of (any script's) decimal digits starting at `i`, and its length in characters.
fn digits(text: &str, i: usize) -> (usize, usize) {
    let mut end = i;
    let mut n = 0;
    for c in text[i..].chars() {
        if !is_decimal(c) {
            break;
        }
        end += c.len_utf8();
        n += 1;
    }
    (end, n)
}

/// Byte offset after `n` characters from `i`.
fn advance(text: &str, i: usize, n: usize) -> usize {
    i + text[i..].chars().take(n).map(char::len_utf8).sum::<usize>()
}

fn value(digits: &str) -> u32 {
    digits.chars().fold(0u32, |acc, c| {
        acc.saturating_mul(10).saturating_add(decimal_value(c))
    })
}

/// `_new_style_ok`: a real month, a non-zero number, 4 digits until 1412 and 5 from 1501.
fn new_style_ok(yymm: &str, number: &str) -> bool {
    let (yy, mm) = (
        value(&yymm[..yymm.char_indices().nth(2).map_or(yymm.len(), |(i, _)| i)]),
        value(yymm) % 100,
    );
    if !(1..=12).contains(&mm) || value(number) == 0 {
        return false;
    }
    let stamp = value(yymm);
    if number.chars().count() == 4 {
        return (704..=1412).contains(&stamp);
    }
    stamp >= 1501 && yy >= 15
}

/// `_old_style_ok`: YYMMNNN from 9107 to 0703, a real month, a non-zero number.
fn old_style_ok(digits: &str) -> bool {
    let cut = |n: usize| {
        digits
            .char_indices()
            .nth(n)
            .map_or(digits.len(), |(i, _)| i)
    };
    let (yy, mm, num) = (
        value(&digits[..cut(2)]),
        value(&digits[cut(2)..cut(4)]),
        value(&digits[cut(4)..]),
    );
    if !(1..=12).contains(&mm) || num == 0 {
        return false;
    }
    (yy >= 91 && yy * 100 + mm >= 9107) || yy * 100 + mm <= 703
}

/// `(?![0-9])(?!\.[0-9])` at `i`.
fn new_style_end(text: &str, i: usize) -> bool {
    let b = text.as_bytes();
    match b.get(i) {
        Some(c) if c.is_ascii_digit() => false,
        Some(b'.') => !b.get(i + 1).is_some_and(u8::is_ascii_digit),
        _ => true,
    }
}

/// `_NEW_RE` at `p` (the lookbehind already checked): where its YYMM and its number end, and the match.
fn new_style_at(text: &str, p: usize) -> Option<(usize, usize, usize)> {
    let yymm_end = advance(text, p, 4);
    if digits(text, p).1 < 4 || text.as_bytes().get(yymm_end) != Some(&b'.') {
        return None;
    }
    let num_start = yymm_end + 1;
    let (_, run) = digits(text, num_start);
    for len in [5usize, 4] {
        if run < len {
            continue;
        }
        let num_end = advance(text, num_start, len);
        if text.as_bytes().get(num_end) == Some(&b'v') {
            let (_, vrun) = digits(text, num_end + 1);
            for k in (1..=vrun).rev() {
                let end = advance(text, num_end + 1, k);
                if new_style_end(text, end) {
                    return Some((yymm_end, num_end, end));
                }
            }
        }
        if new_style_end(text, num_end) {
            return Some((yymm_end, num_end, num_end));
        }
    }
    None
}

/// `_OLD_RE` at `p` (the lookbehind already checked).
fn old_style_at(text: &str, p: usize) -> Option<(usize, String)> {
    let rest = &text[p..];
    for archive in ARCHIVES {
        if !rest.starts_with(archive) {
            continue;
        }
        let after = p + archive.len();
        let b = text.as_bytes();
        let class = b.get(after) == Some(&b'.')
            && b.get(after + 1).is_some_and(u8::is_ascii_uppercase)
            && b.get(after + 2).is_some_and(u8::is_ascii_uppercase);
        for slash in [after + 3, after]
            .into_iter()
            .filter(|&s| class || s == after)
        {
            if b.get(slash) != Some(&b'/') {
                continue;
            }
            let (_, run) = digits(text, slash + 1);
            if run < 7 {
                continue;
            }
            let num_end = advance(text, slash + 1, 7);
            let id = || format!("{archive}/{}", &text[slash + 1..num_end]);
            if b.get(num_end) == Some(&b'v') {
                let (_, vrun) = digits(text, num_end + 1);
                for k in (1..=vrun).rev() {
                    let end = advance(text, num_end + 1, k);
                    if !b.get(end).is_some_and(u8::is_ascii_digit) {
                        return Some((end, id()));
                    }
                }
            }
            if !b.get(num_end).is_some_and(u8::is_ascii_digit) {
                return Some((num_end, id()));
            }
        }
    }
    None
}

fn has_old_hint(text: &str) -> bool {
    memchr::memchr_iter(b'/', text.as_bytes()).any(|i| digits(text, i + 1).1 >= 7)
}

/// `extract_arxiv_ids`: every valid id, without version, unique, in order of first appearance.
pub fn extract_ids(text: &str) -> Vec<String> {
    let mut found: Vec<(usize, String)> = Vec::new();
    // A new-style id has four digits right before a dot: start from the dots.
    let mut last_end = 0;
    for dot in memchr::memchr_iter(b'.', text.as_bytes()) {
        let mut p = dot;
        let mut ok = true;
        for _ in 0..4 {
            match char_before(text, p) {
                Some(c) if is_decimal(c) => p -= c.len_utf8(),
                _ => {
                    ok = false;
                    break;
                }
            }
        }
        if !ok || p < last_end {
            continue;
        }
        if char_before(text, p).is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
            continue;
        }
        if let Some((yymm_end, num_end, end)) = new_style_at(text, p) {
            let (yymm, number) = (&text[p..yymm_end], &text[yymm_end + 1..num_end]);
            if new_style_ok(yymm, number) {
                found.push((p, format!("{yymm}.{number}")));
            }
            last_end = end;
        }
    }
    if has_old_hint(text) {
        let mut i = 0;
        while i < text.len() {
            let c = char_at(text, i).unwrap_or('\0');
            let boundary = !char_before(text, i)
                .is_some_and(|b| b.is_ascii_alphanumeric() || b == '_' || b == '.' || b == '-');
            if c.is_ascii_lowercase() && boundary {
                if let Some((end, id)) = old_style_at(text, i) {
                    let digits = &id[id.find('/').unwrap_or(0) + 1..];
                    if old_style_ok(digits) {
                        found.push((i, id));
                    }
                    i = end;
                    continue;
                }
            }
            i += c.len_utf8();
        }
    }
    found.sort_by_key(|(at, _)| *at);
    // A hostile note holds 50 000 ids: a set keeps the first appearances in linear time.
    let mut seen: FxHashSet<&str> = FxHashSet::default();
    let mut first = Vec::with_capacity(found.len());
    for (i, (_, id)) in found.iter().enumerate() {
        if seen.insert(id.as_str()) {
            first.push(i);
        }
    }
    let mut found: Vec<Option<String>> = found.into_iter().map(|(_, id)| Some(id)).collect();
    first.into_iter().filter_map(|i| found[i].take()).collect()
}

/// The group of `_MENTION_RE` at `g`: `\d{2,6}\.\d{1,7}(?:v\d+)?(?![0-9.])`, case-insensitive.
fn mention_group(text: &str, g: usize) -> Option<usize> {
    let (head_end, head) = digits(text, g);
    if !(2..=6).contains(&head) || text.as_bytes().get(head_end) != Some(&b'.') {
        return None;
    }
    let tail = head_end + 1;
    let (_, run) = digits(text, tail);
    let ends =
        |i: usize| !matches!(text.as_bytes().get(i), Some(c) if c.is_ascii_digit() || *c == b'.');
    for len in (1..=run.min(7)).rev() {
        let num_end = advance(text, tail, len);
        if matches!(text.as_bytes().get(num_end), Some(b'v' | b'V')) {
            let (_, vrun) = digits(text, num_end + 1);
            for k in (1..=vrun).rev() {
                let end = advance(text, num_end + 1, k);
                if ends(end) {
                    return Some(end);
                }
            }
        }
        if ends(num_end) {
            return Some(num_end);
        }
    }
    None
}

/// `arxiv\s*[: ]\s*` after `arxiv` ends at `q`: where the id must start.
fn after_prefix(text: &str, q: usize) -> Option<usize> {
    let mut w_end = q;
    let mut has_space = false;
    for c in text[q..].chars() {
        if !is_space(c) {
            break;
        }
        has_space |= c == ' ';
        w_end += c.len_utf8();
    }
    if text.as_bytes().get(w_end) == Some(&b':') {
        let rest = &text[w_end + 1..];
        let ws: usize = rest
            .chars()
            .take_while(|&c| is_space(c))
            .map(char::len_utf8)
            .sum();
        return Some(w_end + 1 + ws);
    }
    has_space.then_some(w_end)
}

/// `_MENTION_RE` at `p`: the group's span.
fn mention_at(text: &str, p: usize) -> Option<(usize, usize)> {
    let arxiv = starts_with_ignorecase(&text[p..], "arxiv")?;
    let q = p + arxiv;
    if !char_before(text, p).is_some_and(is_ascii_letter_ignorecase) {
        if let Some(g) = after_prefix(text, q) {
            if let Some(end) = mention_group(text, g) {
                return Some((g, end));
            }
        }
    }
    let org = starts_with_ignorecase(&text[q..], ".org/")?;
    let r = q + org;
    for kind in ["abs", "html", "pdf"] {
        if let Some(k) = starts_with_ignorecase(&text[r..], kind) {
            if text.as_bytes().get(r + k) == Some(&b'/') {
                let g = r + k + 1;
                return mention_group(text, g).map(|end| (g, end));
            }
        }
    }
    None
}

/// `is_valid_arxiv_id` of a mention's group (digits, a dot, digits, maybe a version).
fn valid_mention(group: &str) -> bool {
    let Some(dot) = group.find('.') else {
        return false;
    };
    let (yymm, rest) = (&group[..dot], &group[dot + 1..]);
    let (num_end, n) = digits(rest, 0);
    let version_ok = match &rest[num_end..] {
        "" => true,
        v => v.starts_with('v') && digits(v, 1).1 == v[1..].chars().count() && v.len() > 1,
    };
    yymm.chars().count() == 4
        && (n == 4 || n == 5)
        && version_ok
        && new_style_ok(yymm, &rest[..num_end])
}

/// `invalid_arxiv_mentions`: strings announced as ids that are no valid id, unique, in order.
pub fn invalid_mentions(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen: FxHashSet<&str> = FxHashSet::default();
    let mut i = 0;
    let bytes = text.as_bytes();
    // A mention starts with `arx` in either case (`arXiv:`, `arxiv.org/`; no other letter matches a, r or x
    // under `re.IGNORECASE`): jump from one `x` or `X` to the next, rarer in prose than `a`, and look two bytes
    // back. An ASCII byte is never inside a multi-byte character, so each is a character boundary.
    for x in memchr::memchr2_iter(b'x', b'X', bytes) {
        let Some(p) = x.checked_sub(2).filter(|&p| p >= i) else {
            continue;
        };
        if !matches!(bytes[p], b'a' | b'A') || !matches!(bytes[p + 1], b'r' | b'R') {
            continue;
        }
        if let Some((g, end)) = mention_at(text, p) {
            let group = &text[g..end];
            if !valid_mention(group) && seen.insert(group) {
                out.push(group.to_string());
            }
            i = end;
        }
    }
    out
}
