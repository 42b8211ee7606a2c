//! A `predigest.raw` record's content found and decoded here, the rest of the record left to pydantic: its JSON
//! parser read the ~18 KB of base64 into a `str` before decoding it (the read whole ~11 µs a note, ~6 this way;
//! docs/performance.md). Only a record as the watcher writes it is split; any other is left whole to pydantic.

use base64_simd::{Out, URL_SAFE};
use memchr::memmem;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

const KEY: &[u8] = b"\"content\":\"";

/// `(record, content)`: the raw record with its content emptied (`"content":""`) and its content decoded; None
/// unless the record holds no backslash (no escape anywhere, so every key is written as it reads), names
/// `"content"` once, followed at once by its string, and that string is padded canonical URL-safe base64.
#[pyfunction]
pub fn raw_content<'py>(py: Python<'py>, value: &[u8]) -> Option<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    if memchr::memchr(b'\\', value).is_some() {
        return None;
    }
    let at = memmem::find(value, KEY)?;
    let start = at + KEY.len();
    if memmem::find(&value[start..], &KEY[..KEY.len() - 2]).is_some() {
        return None; // "content" again: a duplicated key (the last one counts)
    }
    let end = start + memchr::memchr(b'"', &value[start..])?;
    let text = &value[start..end];
    // base64-simd's URL_SAFE is strict as pydantic is: padding to a multiple of 4, the alphabet's 64 characters,
    // zero bits past the last byte; whatever it refuses is left to pydantic, which reads or words it its own way.
    let length = URL_SAFE.decoded_length(text).ok()?;
    let mut read = false;
    let content = PyBytes::new_with(py, length, |out| {
        read = URL_SAFE.decode(text, Out::from_slice(out)).is_ok();
        Ok(())
    })
    .ok()?;
    if !read {
        return None;
    }
    let rest = PyBytes::new_with(py, value.len() - text.len(), |out| {
        out[..start].copy_from_slice(&value[..start]);
        out[start..].copy_from_slice(&value[end..]);
        Ok(())
    })
    .ok()?;
    Some((rest, content))
}
