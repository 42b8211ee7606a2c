//! A note's text as a JSON string, the bytes `pydantic_core.to_json` writes (serde_json's escapes), checked a word
//! at a time: its text is ~13 KB a note, with a newline every line to escape (docs/performance.md). A summary's
//! signature and term counts likewise (`json_ints`, `json_counts`).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyInt, PyList, PyString, PyTuple};

use crate::text_columns;

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
            out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 15) as usize],
            ]);
            return;
        }
    };
    out.extend_from_slice(&[b'\\', short]);
}

/// `s` quoted and escaped onto `out`.
pub(crate) fn push_json_string(s: &[u8], out: &mut Vec<u8>) {
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

/// A `str` as JSON: the bytes of `pydantic_core.to_json(text)`; UnicodeEncodeError for a lone surrogate. Its UTF-8
/// is made here from CPython's own buffer, not asked of the `str` (which encoded it and kept a copy: ~8 µs a note).
#[pyfunction]
pub fn json_string<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyString>,
) -> PyResult<Bound<'py, PyBytes>> {
    let r = text_columns::raw(text.as_any())?;
    let mut utf8 = Vec::new();
    let s: &[u8] = match r.ascii() {
        Some(s) => s,
        None => {
            if text_columns::encode(&mut utf8, r).is_err() {
                text.to_str()?; // a lone surrogate: the UnicodeEncodeError the str's own encoding raises
            }
            &utf8
        }
    };
    let mut out = Vec::with_capacity(s.len() + s.len() / 32 + 16);
    push_json_string(s, &mut out);
    Ok(PyBytes::new(py, &out))
}

/// "00" to "99", two digits at a time.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243444546474849\
5051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";

/// `n` (its sign apart) in decimal onto `out`.
fn push_int(out: &mut Vec<u8>, negative: bool, n: u64) {
    let mut buf = [0u8; 21];
    let mut at = buf.len();
    let mut m = n;
    while m >= 100 {
        let pair = (m % 100) as usize * 2;
        m /= 100;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if m >= 10 {
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[m as usize * 2..m as usize * 2 + 2]);
    } else {
        at -= 1;
        buf[at] = b'0' + m as u8;
    }
    if negative {
        at -= 1;
        buf[at] = b'-';
    }
    out.extend_from_slice(&buf[at..]);
}

/// An exact `int` (not a bool, not a subclass) within u64 or i64, onto `out`; false for another value.
fn push_exact_int(out: &mut Vec<u8>, v: &Bound<'_, PyAny>) -> bool {
    if !v.is_exact_instance_of::<PyInt>() {
        return false;
    }
    if let Ok(n) = v.extract::<u64>() {
        push_int(out, false, n);
    } else if let Ok(n) = v.extract::<i64>() {
        push_int(out, n < 0, n.unsigned_abs());
    } else {
        return false;
    }
    true
}

/// A list or tuple of ints as JSON, the bytes of `pydantic_core.to_json(values)` (a note's MinHash signature:
/// 128 of them, ~5 µs there); None for anything else (an int beyond 64 bits, a bool), left to pydantic.
#[pyfunction]
pub fn json_ints<'py>(py: Python<'py>, values: &Bound<'py, PyAny>) -> Option<Bound<'py, PyBytes>> {
    let mut out = Vec::with_capacity(values.len().unwrap_or(0) * 21 + 2);
    out.push(b'[');
    let mut each = |i: usize, v: Bound<'py, PyAny>| {
        if i > 0 {
            out.push(b',');
        }
        push_exact_int(&mut out, &v)
    };
    let all = if let Ok(t) = values.cast_exact::<PyTuple>() {
        t.iter().enumerate().all(|(i, v)| each(i, v))
    } else {
        values
            .cast_exact::<PyList>()
            .ok()?
            .iter()
            .enumerate()
            .all(|(i, v)| each(i, v))
    };
    if !all {
        return None;
    }
    out.push(b']');
    Some(PyBytes::new(py, &out))
}

/// A dict of str to int as JSON, the bytes of `pydantic_core.to_json(counts)` (a note's term counts, ~4 µs
/// there); None for anything else (a key not a str, a lone surrogate, a count not an int), left to pydantic.
#[pyfunction]
pub fn json_counts<'py>(
    py: Python<'py>,
    counts: &Bound<'py, PyAny>,
) -> Option<Bound<'py, PyBytes>> {
    let counts = counts.cast_exact::<PyDict>().ok()?;
    let mut out = Vec::with_capacity(counts.len() * 16 + 2);
    out.push(b'{');
    for (i, (k, v)) in counts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let key = k.cast_exact::<PyString>().ok()?.to_str().ok()?;
        push_json_string(key.as_bytes(), &mut out);
        out.push(b':');
        if !push_exact_int(&mut out, &v) {
            return None;
        }
    }
    out.push(b'}');
    Some(PyBytes::new(py, &out))
}
