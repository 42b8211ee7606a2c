//! A note's stored body, `{"text": …, "sections": [[number, heading, level, start, end], …]}`, the bytes
//! `processors.wire._store` writes, from the offsets the pass already found: the reference looks each section up
//! again with `str.find` (~10-15 µs a note, docs/performance.md).

use crate::json_string::push_json_string;
use crate::structure::StructureOut;
use crate::unicode::char_count;

/// Where the reference's `text.find(section, cursor)` finds a section the pass found at `at` (bytes), `at` or
/// before: an occurrence may begin in the gap since the last section (its heading), an empty section at `cursor`.
/// None when trying the gap's places would cost more than a few passes over it and the section (a long periodic
/// heading, e.g. a setext one of many like lines: quadratic here, linear in the reference's search).
fn first_at(body: &str, section: &str, cursor: usize, at: usize) -> Option<usize> {
    let gap = &body.as_bytes()[cursor..at];
    let Some(&lead) = section.as_bytes().first() else {
        return Some(cursor);
    };
    let mut budget = 2 * (gap.len() + section.len()) + 64;
    // Nearly always nothing: a heading line, each of its bytes like the section's first checked once.
    for (i, _) in gap.iter().enumerate().filter(|(_, &b)| b == lead) {
        let same = common_prefix(&body.as_bytes()[cursor + i..], section.as_bytes());
        if same == section.len() && body.is_char_boundary(cursor + i) {
            return Some(cursor + i);
        }
        budget = budget.checked_sub(same + 1)?;
    }
    Some(at)
}

/// How many leading bytes `a` and `b` share.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 32 <= n && a[i..i + 32] == b[i..i + 32] {
        i += 32;
    }
    i + a[i..n]
        .iter()
        .zip(&b[i..n])
        .take_while(|(x, y)| x == y)
        .count()
}

/// The body's stored JSON, or None where the reference would search past the pass's offsets (a section before
/// the previous one's end: never by the parser's order, but then the reference decides) or where its search is
/// the cheaper one (`first_at`).
pub(crate) fn stored_body(body: &str, out: &StructureOut) -> Option<Vec<u8>> {
    let mut json = Vec::with_capacity(body.len() + body.len() / 32 + 64 * out.sections.len() + 32);
    json.extend_from_slice(b"{\"text\":");
    push_json_string(body.as_bytes(), &mut json);
    json.extend_from_slice(b",\"sections\":[");
    let (mut cursor, mut cursor_chars) = (0, 0);
    for (n, s) in out.sections.iter().enumerate() {
        let (at, end) = s.bytes;
        if at < cursor || end < at || s.start < cursor_chars {
            return None;
        }
        let section = &body[at..end];
        let found = first_at(body, section, cursor, at)?;
        let start = if found == at {
            s.start
        } else {
            cursor_chars + char_count(&body[cursor..found])
        };
        let stop = start + (s.end - s.start);
        if n > 0 {
            json.push(b',');
        }
        json.push(b'[');
        match &s.number {
            Some(number) => push_json_string(number.as_bytes(), &mut json),
            None => json.extend_from_slice(b"null"),
        }
        json.push(b',');
        push_json_string(s.heading.as_bytes(), &mut json);
        json.extend_from_slice(format!(",{},{start},{stop}]", s.level).as_bytes());
        (cursor, cursor_chars) = (found + section.len(), stop);
    }
    json.extend_from_slice(b"]}");
    Some(json)
}
