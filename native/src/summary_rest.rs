//! `summary_rest`: what of a note's summary JSON the state keeps in `contents` (schema 8): the fields no other
//! table holds (its headings, its whole front matter, a signature that is not whole), their bytes as they are.
//!
//! The rest of it (the slim summary, term counts, whole signature, stated titles) is stored as rows beside it
//! (processors.source_facts); a whole-document reader rebuilds the summary from both (processors.summary_parts).

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::text_columns::{encode, raw};

/// The end of the JSON string starting at `at` (its opening quote), past its closing quote.
fn string_end(s: &[u8], mut at: usize) -> Option<usize> {
    at += 1;
    loop {
        let n = memchr::memchr2(b'"', b'\\', s.get(at..)?)?;
        at += n;
        if s[at] == b'"' {
            return Some(at + 1);
        }
        at += 2; // an escape: its next byte is never the string's end
    }
}

/// The end of the JSON value starting at `at` (no space before it), without reading it.
fn value_end(s: &[u8], mut at: usize) -> Option<usize> {
    match *s.get(at)? {
        b'"' => string_end(s, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            loop {
                match *s.get(at)? {
                    b'"' => {
                        at = string_end(s, at)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(at + 1);
                        }
                    }
                    _ => {}
                }
                at += 1;
            }
        }
        _ => {
            let n = s[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(s.len() - at);
            (n > 0).then_some(at + n)
        }
    }
}

/// Whether `value` is a list of exactly `length` unsigned integers (what `source_signatures` holds).
fn whole_signature(value: &[u8], length: usize) -> bool {
    let Some(inner) = value.strip_prefix(b"[").and_then(|v| v.strip_suffix(b"]")) else {
        return false;
    };
    !inner.is_empty()
        && inner.split(|&b| b == b',').count() == length
        && inner
            .split(|&b| b == b',')
            .all(|n| !n.is_empty() && n.iter().all(u8::is_ascii_digit))
}

/// The (key, value) spans of a compact JSON object's top level; None when it is not one.
fn fields(s: &[u8]) -> Option<Vec<(&[u8], &[u8])>> {
    let mut out = Vec::with_capacity(24);
    if s.first() != Some(&b'{') {
        return None;
    }
    let mut at = 1;
    if s.get(at) == Some(&b'}') {
        return (s.len() == 2).then_some(out);
    }
    loop {
        if s.get(at) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(s, at)?;
        let key = &s[at + 1..key_end - 1];
        if s.get(key_end) != Some(&b':') {
            return None;
        }
        let end = value_end(s, key_end + 1)?;
        out.push((key, &s[key_end + 1..end]));
        match s.get(end) {
            Some(b',') => at = end + 1,
            Some(b'}') if end + 1 == s.len() => return Some(out),
            _ => return None,
        }
    }
}

/// A summary's headings, front matter and (unless a list of `whole` integers) signature as a JSON object of
/// their bytes as they are, in its order; None for a summary that is not a compact JSON object (the caller then
/// keeps it whole).
#[pyfunction]
pub fn summary_rest<'py>(
    py: Python<'py>,
    summary: &Bound<'py, PyAny>,
    whole: usize,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let mut text = Vec::new();
    if encode(&mut text, raw(summary)?).is_err() {
        return Ok(None);
    }
    let Some(found) = fields(&text) else {
        return Ok(None);
    };
    let mut out = Vec::with_capacity(text.len() / 3);
    out.push(b'{');
    for (key, value) in found {
        let kept = match key {
            b"headings" | b"front_matter" => true,
            b"signature" => value != b"[]" && !whole_signature(value, whole),
            _ => false,
        };
        if kept {
            if out.len() > 1 {
                out.push(b',');
            }
            out.push(b'"');
            out.extend_from_slice(key);
            out.extend_from_slice(b"\":");
            out.extend_from_slice(value);
        }
    }
    out.push(b'}');
    Ok(Some(PyBytes::new(py, &out)))
}
