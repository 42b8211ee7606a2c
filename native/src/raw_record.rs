//! A `predigest.raw` record's content found and decoded here, the rest of the record left to pydantic: its JSON
//! parser read the ~18 KB of base64 into a `str` before decoding it (the read whole ~11 µs a note, ~6 this way;
//! docs/performance.md). Only a record as the watcher writes it is split; any other is left whole to pydantic.

use base64_simd::{Out, URL_SAFE};
use memchr::memmem;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::json_string::push_json_string;

const KEY: &[u8] = b"\"content\":\"";

/// `(record, content)`: the raw record with its content emptied (`"content":""`) and its content decoded; None
/// unless the record holds no backslash (no escape anywhere, so every key is written as it reads), names
/// `"content"` once, followed at once by its string, and that string is padded canonical URL-safe base64.
#[pyfunction]
pub fn raw_content<'py>(
    py: Python<'py>,
    value: &[u8],
) -> Option<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
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

/// The bytes of `RawFile(path=…, content=…, size=…, mtime=…, sha256=…).model_dump_json().encode()`, built in one
/// pass (pydantic's dump and the str's encoding cost the backfill ~23 µs a note; docs/performance.md); `mtime`
/// comes as its JSON (`pydantic_core.to_json`: serde_json's float digits, which Rust's own formatting does not
/// always choose). None when a name is not UTF-8 (pydantic then says why).
#[pyfunction]
pub fn raw_file_json<'py>(
    py: Python<'py>,
    path: &Bound<'py, PyString>,
    content: &[u8],
    size: i64,
    mtime: &[u8],
    sha256: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let (Ok(path), Ok(sha256)) = (path.to_str(), sha256.to_str()) else {
        return Ok(None);
    };
    let mut head = Vec::with_capacity(path.len() + 24);
    head.extend_from_slice(b"{\"path\":");
    push_json_string(path.as_bytes(), &mut head);
    head.push(b',');
    head.extend_from_slice(KEY);
    let mut tail = Vec::with_capacity(sha256.len() + 96);
    tail.extend_from_slice(format!("\",\"size\":{size},\"mtime\":").as_bytes());
    tail.extend_from_slice(mtime);
    tail.extend_from_slice(b",\"sha256\":");
    push_json_string(sha256.as_bytes(), &mut tail);
    tail.extend_from_slice(b",\"deleted\":false,\"refused\":null,\"refused_code\":null}");
    let encoded = URL_SAFE.encoded_length(content.len());
    let value = PyBytes::new_with(py, head.len() + encoded + tail.len(), |out| {
        let (start, rest) = out.split_at_mut(head.len());
        let (text, end) = rest.split_at_mut(encoded);
        start.copy_from_slice(&head);
        end.copy_from_slice(&tail);
        py.detach(|| URL_SAFE.encode(content, Out::from_slice(text)));
        Ok(())
    })?;
    Ok(Some(value))
}
