//! Plain text of Markdown pieces, as the reference's `processors/markup.py` patterns read them: headings
//! cleaned of decoration (`clean_heading`), § numbers (`section_number`), back-link texts (`is_back_text`),
//! and the text and image sources of HTML blocks.

use crate::unicode::{collapse, is_decimal, is_space, is_word, starts_with_ignorecase};

/// `EMOJI`'s ranges: pictographs and the zero-width joiner.
#[inline]
fn is_pictograph(c: char) -> bool {
    matches!(c as u32, 0x1F000..=0x1FAFF | 0x2600..=0x27BF | 0x2B00..=0x2BFF | 0x2300..=0x23FF | 0x200D)
}

/// `_KEYCAP` (`[0-9#*]\ufe0f?\u20e3`) removed, then `EMOJI` (pictographs; © and ® before U+FE0F; U+FE0F
/// not before U+20E3) removed, each pass over the result of the one before.
fn strip_emoji(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut keycapless: Vec<char> = Vec::with_capacity(chars.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if matches!(c, '0'..='9' | '#' | '*') {
            let mut j = i + 1;
            if chars.get(j) == Some(&'\u{fe0f}') {
                j += 1;
            }
            if chars.get(j) == Some(&'\u{20e3}') {
                i = j + 1;
                continue;
            }
        }
        keycapless.push(c);
        i += 1;
    }
    strip_pictographs(&keycapless)
}

/// `EMOJI.sub("", text)` over `text`'s characters: pictographs and joiners, © and ® before U+FE0F, and
/// U+FE0F not before U+20E3 removed (a keycap's digit and U+20E3 are kept).
pub fn strip_pictographs(chars: &[char]) -> String {
    let mut out = String::with_capacity(chars.len());
    for (i, &c) in chars.iter().enumerate() {
        let next = chars.get(i + 1).copied();
        let drop = is_pictograph(c)
            || (matches!(c, '©' | '®') && next == Some('\u{fe0f}'))
            || (c == '\u{fe0f}' && next != Some('\u{20e3}'));
        if !drop {
            out.push(c);
        }
    }
    out
}

/// The words a back-link or its residue may say, in the patterns' order.
const BACK_WORDS: &[&str] = &[
    "back to top",
    "back",
    "top",
    "toc",
    "返回顶部",
    "返回目录",
    "返回",
    "回到顶部",
    "맨 위로",
];
const RESIDUE_WORDS: &[&str] = &[
    "back to top",
    "back",
    "top",
    "toc",
    "up",
    "返回顶部",
    "返回目录",
    "返回",
    "回到顶部",
    "맨 위로",
];

/// `BACK_TEXT`: `^\W*(?:back(?: to top)?|top|toc|返回(?:顶部|目录)?|回到顶部|맨 위로)?\W*$`, case-insensitive.
pub fn is_back_text(text: &str) -> bool {
    let rest = text.trim_start_matches(|c: char| !is_word(c));
    if rest.is_empty() {
        return true;
    }
    let all_nonword = |s: &str| s.chars().all(|c| !is_word(c)) || s == "\n";
    BACK_WORDS.iter().any(|w| {
        starts_with_ignorecase(rest, w).is_some_and(|n| {
            let tail = &rest[n..];
            all_nonword(tail) || (tail.ends_with('\n') && all_nonword(&tail[..tail.len() - 1]))
        })
    })
}

const OPENERS: &[char] = &['(', '[', '（', '【'];
const CLOSERS: &[char] = &[')', ']', '）', '】'];

/// `_RESIDUE` at `i` (an opener): the end of the match.
fn residue_at(text: &str, i: usize) -> Option<usize> {
    let open = text[i..].chars().next()?;
    let mut j = i + open.len_utf8();
    j += text[j..]
        .chars()
        .take_while(|&c| is_space(c))
        .map(char::len_utf8)
        .sum::<usize>();
    let close_at = |k: usize| -> Option<usize> {
        let k = k + text[k..]
            .chars()
            .take_while(|&c| is_space(c))
            .map(char::len_utf8)
            .sum::<usize>();
        let c = text[k..].chars().next()?;
        CLOSERS.contains(&c).then(|| k + c.len_utf8())
    };
    for w in RESIDUE_WORDS {
        if let Some(n) = starts_with_ignorecase(&text[j..], w) {
            if let Some(end) = close_at(j + n) {
                return Some(end);
            }
        }
    }
    close_at(j)
}

/// `clean_heading`: a heading's plain text without emoji decoration or back-link residue, white space
/// collapsed.
pub fn clean_heading(text: &str) -> String {
    let collapsed = collapse(text);
    // Most headings: no emoji to strip (a keycap needs U+20E3, © and ® go only before U+FE0F) and no
    // bracket a residue could open with, so nothing to remove and nothing to collapse again.
    let plain =
        |c: char| !(c == '\u{20e3}' || c == '\u{fe0f}' || is_pictograph(c) || OPENERS.contains(&c));
    if collapsed.chars().all(plain) {
        return collapsed;
    }
    let text = strip_emoji(&collapsed);
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let c = text[i..].chars().next().unwrap_or('\0');
        if OPENERS.contains(&c) {
            if let Some(end) = residue_at(&text, i) {
                out.push(' ');
                i = end;
                continue;
            }
        }
        out.push(c);
        i += c.len_utf8();
    }
    collapse(&out)
}

fn decimal_run(text: &str, i: usize, max: usize) -> usize {
    text[i..]
        .chars()
        .take(max)
        .take_while(|&c| is_decimal(c))
        .map(char::len_utf8)
        .sum()
}

/// `_PLAIN_NO`'s repetitions `(?:\.\d{1,3})*` from `i`, then `\.?(?=\s|$)`: the end of the number.
fn plain_tail(text: &str, i: usize) -> Option<usize> {
    if text[i..].starts_with('.') {
        let full = decimal_run(text, i + 1, 3);
        let mut widths: Vec<usize> = Vec::new();
        let mut w = full;
        while w > 0 {
            widths.push(w);
            let last = text[i + 1..i + 1 + w]
                .chars()
                .next_back()
                .map_or(1, char::len_utf8);
            w -= last;
        }
        for w in widths {
            if let Some(end) = plain_tail(text, i + 1 + w) {
                return Some(end);
            }
        }
    }
    let ends = |k: usize| {
        let rest = &text[k..];
        rest.is_empty() || rest == "\n" || rest.chars().next().is_some_and(is_space)
    };
    if text[i..].starts_with('.') && ends(i + 1) {
        return Some(i);
    }
    ends(i).then_some(i)
}

/// `section_number`: `§3.3` for `§3.3 Cache`, `附录 §5.1 x`, `3.3 Cache` or `3. Cache`; None otherwise.
pub fn section_number(heading: &str) -> Option<String> {
    for (i, _) in heading.match_indices('§') {
        let j = i + '§'.len_utf8();
        let j = j + heading[j..]
            .chars()
            .take_while(|&c| is_space(c))
            .map(char::len_utf8)
            .sum::<usize>();
        let first = decimal_run(heading, j, usize::MAX);
        if first == 0 {
            continue;
        }
        let mut end = j + first;
        while heading[end..].starts_with('.') {
            let more = decimal_run(heading, end + 1, usize::MAX);
            if more == 0 {
                break;
            }
            end += 1 + more;
        }
        return Some(format!("§{}", &heading[j..end]));
    }
    let lead = decimal_run(heading, 0, 2);
    let mut widths = vec![lead];
    if lead > 0 {
        let first = heading.chars().next().map_or(1, char::len_utf8);
        if first < lead {
            widths.push(first);
        }
    }
    for w in widths.into_iter().filter(|&w| w > 0) {
        if let Some(end) = plain_tail(heading, w) {
            return Some(format!("§{}", &heading[..end]));
        }
    }
    None
}

/// `_TAG.sub(" ", raw)` then white space collapsed: the text of an HTML block.
pub fn html_text(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw.as_bytes()[i] == b'<' {
            if let Some(k) = raw[i + 1..].find(['<', '>']) {
                if raw.as_bytes()[i + 1 + k] == b'>' {
                    out.push(' ');
                    i += k + 2;
                    continue;
                }
            }
        }
        let c = raw[i..].chars().next().unwrap_or('\0');
        out.push(c);
        i += c.len_utf8();
    }
    collapse(&out)
}

/// `_SRC.findall(raw)`: the image sources of an HTML block (`\bsrc\s*=\s*["']?([^"'\s<>]+)`, case-insensitive).
pub fn html_sources(raw: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        let c = raw[i..].chars().next().unwrap_or('\0');
        let boundary = !raw[..i].chars().next_back().is_some_and(is_word);
        if boundary {
            if let Some(n) = starts_with_ignorecase(&raw[i..], "src") {
                if let Some((start, end)) = src_value(raw, i + n) {
                    out.push(raw[start..end].to_string());
                    i = end;
                    continue;
                }
            }
        }
        i += c.len_utf8();
    }
    out
}

fn src_value(raw: &str, mut j: usize) -> Option<(usize, usize)> {
    let spaces = |k: usize| {
        raw[k..]
            .chars()
            .take_while(|&c| is_space(c))
            .map(char::len_utf8)
            .sum::<usize>()
    };
    j += spaces(j);
    if !raw[j..].starts_with('=') {
        return None;
    }
    j += 1;
    j += spaces(j);
    if raw[j..].starts_with(['"', '\'']) {
        j += 1;
    }
    let len: usize = raw[j..]
        .chars()
        .take_while(|&c| !matches!(c, '"' | '\'' | '<' | '>') && !is_space(c))
        .map(char::len_utf8)
        .sum();
    (len > 0).then_some((j, j + len))
}
