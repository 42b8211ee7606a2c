//! `TextColumns`: columns of Python strings handed to DuckDB as one Arrow batch (the Arrow C stream interface,
//! `__arrow_c_stream__`, `arrow_stream`), their UTF-8 made here without the GIL.
//!
//! DuckDB's appender converts each `str` while holding the GIL (~29 µs a note for the window agent's ~18 KB of
//! summary and body, docs/performance.md): the event loop waits meanwhile. Here the GIL is held only to take
//! each string's buffer; the encoding runs detached, and DuckDB reads the Arrow buffers in C++. A cell may be
//! UTF-8 `bytes` instead (a decoded record's body, never decoded to `str`): checked and copied, detached too.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::string::PyStringData;
use pyo3::types::{PyBytes, PyString};

use crate::arrow_stream::{self, ArrowBatch, Column};

/// A string's buffer as CPython holds it (1, 2 or 4 bytes a code point; 0: the UTF-8 of a `bytes`), read while
/// the GIL is released: the strings and bytes are immutable and kept alive by the caller's lists for the whole call.
#[derive(Clone, Copy)]
pub(crate) struct Raw {
    kind: u8,
    ptr: usize,
    len: usize,
}

impl Raw {
    /// The string's bytes when it is ASCII (they are then its UTF-8).
    pub(crate) fn ascii(&self) -> Option<&[u8]> {
        // SAFETY: as `encode`: a live string's buffer of `kind`.
        let s = unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) };
        (self.kind == 1 && s.is_ascii()).then_some(s)
    }
}

pub(crate) fn raw(cell: &Bound<'_, PyAny>) -> PyResult<Raw> {
    if let Ok(b) = cell.cast::<PyBytes>() {
        let b = b.as_bytes();
        return Ok(Raw {
            kind: 0,
            ptr: b.as_ptr() as usize,
            len: b.len(),
        });
    }
    let s = cell
        .cast::<PyString>()
        .map_err(|_| PyTypeError::new_err("a cell is neither str nor bytes"))?;
    // SAFETY: the buffer is read only while `s` is alive (the caller's lists hold every string).
    let data = unsafe { s.data()? };
    Ok(match data {
        PyStringData::Ucs1(b) => Raw {
            kind: 1,
            ptr: b.as_ptr() as usize,
            len: b.len(),
        },
        PyStringData::Ucs2(b) => Raw {
            kind: 2,
            ptr: b.as_ptr() as usize,
            len: b.len(),
        },
        PyStringData::Ucs4(b) => Raw {
            kind: 4,
            ptr: b.as_ptr() as usize,
            len: b.len(),
        },
    })
}

const SURROGATE: &str = "a string holds a lone surrogate";
const NOT_UTF8: &str = "a bytes value is not UTF-8";
const NOT_BYTES: &str = "a cell of a blob column is not bytes";

/// Whether `data` is UTF-8: simdutf8 checks a note's body (~14 KB, mostly 2-byte characters) in a quarter of
/// the time of `std::str::from_utf8`.
fn utf8(data: &[u8]) -> bool {
    simdutf8::basic::from_utf8(data).is_ok()
}

/// Below this many bytes `is_utf8` keeps the GIL: ~1.5 µs for a 19 KB body, where giving the GIL up twice a
/// note left the decode thread waiting to get it back behind a busy thread (~600 µs a call).
const DETACH_FROM: usize = 1 << 20;

/// Whether `data` is UTF-8: a decoded record's body and summary are kept as their bytes, checked here where
/// `bytes.decode` checked them, and stored as they came.
#[pyfunction]
pub fn is_utf8(py: Python<'_>, data: &[u8]) -> bool {
    if data.len() < DETACH_FROM {
        utf8(data)
    } else {
        py.detach(|| utf8(data))
    }
}

/// Append one code point's UTF-8; Err for a surrogate (CPython keeps them as code points of their own, and
/// `str.encode` refuses them: not from decoded bytes).
fn push_code_point(out: &mut Vec<u8>, u: u32) -> Result<(), String> {
    let c = char::from_u32(u).ok_or_else(|| SURROGATE.to_string())?;
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    Ok(())
}

/// Append a string's UTF-8 (most notes are 2 bytes a code point in CPython: one CJK character is enough).
pub(crate) fn encode(out: &mut Vec<u8>, r: Raw) -> Result<(), String> {
    // SAFETY: `ptr`/`len` describe a live string's buffer of `kind` (see `Raw`).
    unsafe {
        match r.kind {
            0 => {
                let s = std::slice::from_raw_parts(r.ptr as *const u8, r.len);
                if !utf8(s) {
                    return Err(NOT_UTF8.to_string());
                }
                out.extend_from_slice(s);
            }
            1 => {
                let s = std::slice::from_raw_parts(r.ptr as *const u8, r.len);
                if s.is_ascii() {
                    out.extend_from_slice(s);
                } else {
                    for &b in s {
                        push_code_point(out, u32::from(b))?;
                    }
                }
            }
            2 => encode_ucs2(out, std::slice::from_raw_parts(r.ptr as *const u16, r.len))?,
            _ => {
                for &u in std::slice::from_raw_parts(r.ptr as *const u32, r.len) {
                    push_code_point(out, u)?;
                }
            }
        }
    }
    Ok(())
}

fn encode_ucs2(out: &mut Vec<u8>, s: &[u16]) -> Result<(), String> {
    out.reserve(s.len() * 3);
    let start = out.len();
    // SAFETY: room for 3 bytes a code unit is reserved past `start`, so `n` stays within the capacity; the
    // length covers the written bytes only once all are written (an error leaves it at `start`).
    unsafe {
        let at = out.as_mut_ptr().add(start);
        let mut n = 0;
        for &u in s {
            if u < 0x80 {
                *at.add(n) = u as u8;
                n += 1;
            } else if u < 0x800 {
                *at.add(n) = 0xC0 | (u >> 6) as u8;
                *at.add(n + 1) = 0x80 | (u & 0x3F) as u8;
                n += 2;
            } else if (0xD800..0xE000).contains(&u) {
                return Err(SURROGATE.to_string());
            } else {
                *at.add(n) = 0xE0 | (u >> 12) as u8;
                *at.add(n + 1) = 0x80 | ((u >> 6) & 0x3F) as u8;
                *at.add(n + 2) = 0x80 | (u & 0x3F) as u8;
                n += 3;
            }
        }
        out.set_len(start + n);
    }
    Ok(())
}

pub(crate) fn column(raws: &[Raw]) -> Result<Column, String> {
    let mut offsets = Vec::with_capacity(raws.len() + 1);
    let mut data = Vec::with_capacity(raws.iter().map(|r| r.len).sum());
    offsets.push(0);
    for &r in raws {
        encode(&mut data, r)?;
        offsets.push(data.len() as i64);
    }
    Ok(Column::Utf8 { offsets, data })
}

/// A column of `bytes` cells copied as they are (a note's body as its zstd frame, stored as a BLOB).
fn blob(raws: &[Raw]) -> Result<Column, String> {
    let mut offsets = Vec::with_capacity(raws.len() + 1);
    let mut data = Vec::with_capacity(raws.iter().map(|r| r.len).sum());
    offsets.push(0);
    for &r in raws {
        if r.kind != 0 {
            return Err(NOT_BYTES.to_string());
        }
        // SAFETY: as `encode`: a live bytes' buffer.
        data.extend_from_slice(unsafe { std::slice::from_raw_parts(r.ptr as *const u8, r.len) });
        offsets.push(data.len() as i64);
    }
    Ok(Column::Binary { offsets, data })
}

/// Columns of strings, one Arrow batch for DuckDB (`connection.from_arrow(columns)`): each stream (DuckDB opens
/// one for the schema, another to scan) shares the encoded buffers. A column named `blob:NAME` is bytes kept as
/// they are (a BLOB).
#[pyclass(extends = ArrowBatch, frozen, module = "predigest_native")]
pub struct TextColumns;

#[pymethods]
impl TextColumns {
    #[new]
    fn new(
        py: Python<'_>,
        names: Vec<String>,
        columns: Vec<Vec<Bound<'_, PyAny>>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        // A column named "blob:NAME" holds `bytes` as they are (Arrow large binary), not text.
        let blobs: Vec<bool> = names.iter().map(|n| n.starts_with("blob:")).collect();
        let names: Vec<String> = names
            .into_iter()
            .map(|n| n.trim_start_matches("blob:").to_string())
            .collect();
        let (names, length) = arrow_stream::shape(names, &columns)?;
        let raws = columns
            .iter()
            .map(|c| c.iter().map(raw).collect::<PyResult<Vec<_>>>())
            .collect::<PyResult<Vec<_>>>()?;
        // `columns` (and so every string) outlives the detached encoding.
        let built = py.detach(|| {
            raws.iter()
                .zip(&blobs)
                .map(|(r, &b)| if b { blob(r) } else { column(r) })
                .collect::<Result<Vec<_>, _>>()
        });
        let built = built.map_err(PyValueError::new_err)?;
        Ok(
            PyClassInitializer::from(ArrowBatch::new(names, length, built))
                .add_subclass(TextColumns),
        )
    }
}
