//! A note's text as a JSON string, the bytes `pydantic_core.to_json` writes (serde_json's escapes), checked a word
//! at a time: its text is ~13 KB a note, with a newline every line to escape (docs/performance.md).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

const ONES: u64 = 0x0101_0101_0101_0101;
const HEX: &[u8; 16] = b"0123456789abcdef";

/// The high bit of each byte of the word that is a quote, a backslash or a control character (below 0x20), of
/// that byte alone: each test adds within a byte's low seven bits, never carrying into the next (UTF-8's other
/// bytes are 0x80 and above, never one of them).
#[inline]
fn to_escape(w: u64) -> u64 {
    const LOW: u64 = ONES * 0x7f;
    let zero = |x: u64| !(((x & LOW) + LOW) | x | LOW);
    let below_space = !(((w & LOW) + ONES * (0x80 - 0x20)) | w | LOW);
    zero(w ^ (ONES * u64::from(b'"'))) | zero(w ^ (ONES * u64::from(b'\\'))) | below_space
}

/// serde_json's escape of a quote, a backslash or a control character.
#[inline]
fn push_escape(b: u8, out: &mut Vec<u8>) {
    let short = match b {
        b'"' => b'"',
        b'\\' => b'\\',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        0x08 => b'b',
        0x0c => b'f',
        _ => {
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
            return;
        }
    };
    out.extend_from_slice(&[b'\\', short]);
}

/// `s` quoted and escaped onto `out`.
fn push_json_string(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    let mut run = 0; // where the bytes not yet copied start
    let blocks = s.chunks_exact(32); // four words checked together: most blocks of a note have nothing to escape
    let tail = blocks.remainder().len();
    for (n, block) in blocks.enumerate() {
        let mut found = [0u64; 4];
        for (bits, word) in found.iter_mut().zip(block.chunks_exact(8)) {
            *bits = to_escape(u64::from_le_bytes(word.try_into().unwrap_or([0; 8])));
        }
        if found == [0; 4] {
            continue;
        }
        for (k, mut bits) in found.into_iter().enumerate() {
            while bits != 0 {
                let j = n * 32 + k * 8 + (bits.trailing_zeros() / 8) as usize;
                out.extend_from_slice(&s[run..j]);
                push_escape(s[j], out);
                run = j + 1;
                bits &= bits - 1;
            }
        }
    }
    for j in s.len() - tail..s.len() {
        let b = s[j];
        if b < 0x20 || b == b'"' || b == b'\\' {
            out.extend_from_slice(&s[run..j]);
            push_escape(b, out);
            run = j + 1;
        }
    }
    out.extend_from_slice(&s[run..]);
    out.push(b'"');
}

/// A `str` as JSON: the bytes of `pydantic_core.to_json(text)`; UnicodeEncodeError for a lone surrogate.
#[pyfunction]
pub fn json_string<'py>(py: Python<'py>, text: &Bound<'py, PyString>) -> PyResult<Bound<'py, PyBytes>> {
    let s = text.to_str()?;
    let mut out = Vec::with_capacity(s.len() + s.len() / 32 + 16);
    push_json_string(s.as_bytes(), &mut out);
    Ok(PyBytes::new(py, &out))
}
