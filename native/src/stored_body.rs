//! A note's stored body, `{"text": …, "sections": [[number, heading, level, start, end], …]}`, the bytes
//! `processors.wire._store` writes, from the offsets the pass already found: the reference looks each section up
//! again with `str.find` (~10-15 µs a note, docs/performance.md).

use crate::json_string::push_json_string;
use crate::structure::StructureOut;
use crate::unicode::char_count;

/// Where the reference's `text.find(section, cursor)` finds a section the pass found at `at` (bytes), `at` or
/// before: an occurrence may begin in the gap since the last section (its heading), an empty section at `cursor`.
fn first_at(body: &str, section: &str, cursor: usize, at: usize) -> usize {
    let gap = &body.as_bytes()[cursor..at];
    let Some(&lead) = section.as_bytes().first() else {
        return cursor;
    };
    // Nearly always nothing: a heading line, each of its bytes like the section's first checked once.
    for (i, _) in gap.iter().enumerate().filter(|(_, &b)| b == lead) {
        if body.is_char_boundary(cursor + i) && body[cursor + i..].starts_with(section) {
            return cursor + i;
        }
    }
    at
}

/// The body's stored JSON, or None where the reference would search past the pass's offsets (a section before
/// the previous one's end: never by the parser's order, but then the reference decides).
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
        let found = first_at(body, section, cursor, at);
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
