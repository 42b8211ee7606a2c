//! A zstd frame with its content size declared, made with a compression context kept by the thread: a parse
//! process compresses each note's body and its chunk's records (processors.wire_frames), and a context made anew
//! at each call (cramjam's) cost ~9 µs of set-up a frame. The same libzstd and level as cramjam: the same bytes.

use std::cell::RefCell;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use zstd_safe::CCtx;

thread_local! {
    // The context and the output buffer, kept between calls: their tables and window are allocated once.
    static KEPT: RefCell<(CCtx<'static>, Vec<u8>)> = RefCell::new((CCtx::create(), Vec::new()));
}

/// `data` as one zstd frame at `level`, its content size declared in its header (as `cramjam.zstd.compress`).
#[pyfunction]
pub fn zstd_frame<'py>(py: Python<'py>, data: &Bound<'py, PyAny>, level: i32) -> PyResult<Bound<'py, PyBytes>> {
    let buffer = PyBuffer::<u8>::get(data)?;
    let view = buffer.as_slice_ptr().ok_or_else(|| PyBufferError::new_err("a contiguous buffer"))?;
    // SAFETY: the buffer is held (`buffer`) for the call, and nothing here runs Python code that could change it.
    let src: &[u8] = unsafe { view.as_ref() };
    KEPT.with(|kept| {
        let (cctx, out) = &mut *kept.borrow_mut();
        out.clear();
        out.reserve(zstd_safe::compress_bound(src.len()));
        cctx.compress(out, src, level)
            .map_err(|code| PyValueError::new_err(format!("zstd: {}", zstd_safe::get_error_name(code))))?;
        Ok(PyBytes::new(py, out))
    })
}
