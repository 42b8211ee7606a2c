//! zstd frames made and unpacked with contexts kept by the thread: a parse process compresses each note's body
//! and its chunk's records, the worker unpacks each body (processors.wire_frames), and a context made anew at each
//! call (cramjam's) cost ~9 µs of set-up a frame. The same libzstd and level as cramjam: the same bytes.

use std::cell::RefCell;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use zstd_safe::{CCtx, DCtx};

thread_local! {
    // The context and the output buffer, kept between calls: their tables and window are allocated once.
    static KEPT: RefCell<(CCtx<'static>, Vec<u8>)> = RefCell::new((CCtx::create(), Vec::new()));
    static UNPACK: RefCell<DCtx<'static>> = RefCell::new(DCtx::create());
}

/// `data` as one zstd frame at `level`, its content size declared in its header (as `cramjam.zstd.compress`).
#[pyfunction]
pub fn zstd_frame<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    level: i32,
) -> PyResult<Bound<'py, PyBytes>> {
    let buffer = PyBuffer::<u8>::get(data)?;
    let view = contiguous(&buffer)?;
    // SAFETY: the buffer is held (`buffer`) for the call, and nothing here runs Python code that could change it.
    let src: &[u8] = unsafe { view.as_ref() };
    KEPT.with(|kept| {
        let (cctx, out) = &mut *kept.borrow_mut();
        out.clear();
        out.reserve(zstd_safe::compress_bound(src.len()));
        cctx.compress(out, src, level).map_err(|code| {
            PyValueError::new_err(format!("zstd: {}", zstd_safe::get_error_name(code)))
        })?;
        Ok(PyBytes::new(py, out))
    })
}

/// `frames` (zstd frames back to back) unpacked into `out`, a writable buffer: how many bytes they came to;
/// ValueError when they do not unpack or come to more than `out` holds (never written past its end).
#[pyfunction]
pub fn zstd_unpack_into(frames: &Bound<'_, PyAny>, out: &Bound<'_, PyAny>) -> PyResult<usize> {
    let source = PyBuffer::<u8>::get(frames)?;
    let target = PyBuffer::<u8>::get(out)?;
    if target.readonly() {
        return Err(PyBufferError::new_err("a writable buffer to unpack into"));
    }
    let (src, mut dst) = (contiguous(&source)?, contiguous(&target)?);
    let (s, d) = (
        src.as_ptr() as *const u8 as usize,
        dst.as_ptr() as *const u8 as usize,
    );
    if s < d + dst.len() && d < s + src.len() {
        return Err(PyBufferError::new_err(
            "frames unpacked into their own bytes",
        ));
    }
    // SAFETY: both buffers are held for the call, apart, and nothing here runs Python code that could change them.
    let (src, dst): (&[u8], &mut [u8]) = unsafe { (src.as_ref(), dst.as_mut()) };
    UNPACK.with(|kept| {
        kept.borrow_mut()
            .decompress(dst, src)
            .map_err(|code| PyValueError::new_err(zstd_safe::get_error_name(code).to_string()))
    })
}

/// A buffer's bytes, if C-contiguous.
fn contiguous(buffer: &PyBuffer<u8>) -> PyResult<std::ptr::NonNull<[u8]>> {
    buffer
        .as_slice_ptr()
        .ok_or_else(|| PyBufferError::new_err("a contiguous buffer"))
}
