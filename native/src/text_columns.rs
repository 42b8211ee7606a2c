//! `TextColumns`: columns of Python strings handed to DuckDB as one Arrow batch (the Arrow C stream interface,
//! `__arrow_c_stream__`), their UTF-8 made here without the GIL.
//!
//! DuckDB's appender converts each `str` while holding the GIL (~29 µs a note for the window agent's ~18 KB of
//! summary and body, docs/performance.md): the event loop waits meanwhile. Here the GIL is held only to take
//! each string's buffer; the encoding runs detached, and DuckDB reads the Arrow buffers in C++.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr::{self, NonNull};
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::string::PyStringData;
use pyo3::types::{PyCapsule, PyString};

// The Arrow C data and stream interfaces (arrow.apache.org/docs/format/CDataInterface.html), as laid out there.
#[repr(C)]
pub struct ArrowSchema {
    format: *const c_char,
    name: *const c_char,
    metadata: *const c_char,
    flags: i64,
    n_children: i64,
    children: *mut *mut ArrowSchema,
    dictionary: *mut ArrowSchema,
    release: Option<unsafe extern "C" fn(*mut ArrowSchema)>,
    private_data: *mut c_void,
}

#[repr(C)]
pub struct ArrowArray {
    length: i64,
    null_count: i64,
    offset: i64,
    n_buffers: i64,
    n_children: i64,
    buffers: *mut *const c_void,
    children: *mut *mut ArrowArray,
    dictionary: *mut ArrowArray,
    release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    private_data: *mut c_void,
}

#[repr(C)]
pub struct ArrowArrayStream {
    get_schema: Option<unsafe extern "C" fn(*mut ArrowArrayStream, *mut ArrowSchema) -> c_int>,
    get_next: Option<unsafe extern "C" fn(*mut ArrowArrayStream, *mut ArrowArray) -> c_int>,
    get_last_error: Option<unsafe extern "C" fn(*mut ArrowArrayStream) -> *const c_char>,
    release: Option<unsafe extern "C" fn(*mut ArrowArrayStream)>,
    private_data: *mut c_void,
}

const STRUCT: &CStr = c"+s";
const LARGE_UTF8: &CStr = c"U"; // i64 offsets: a batch of large notes may pass 2 GiB
const STREAM: &CStr = c"arrow_array_stream";

/// One column: its strings' UTF-8 back to back, and where each starts (one more offset than strings).
struct Column {
    offsets: Vec<i64>,
    data: Vec<u8>,
}

/// A string's buffer as CPython holds it (1, 2 or 4 bytes a code point), read while the GIL is released: the
/// strings are immutable and kept alive by the caller's lists for the whole call.
#[derive(Clone, Copy)]
struct Raw {
    kind: u8,
    ptr: usize,
    len: usize,
}

fn raw(s: &Bound<'_, PyString>) -> PyResult<Raw> {
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

/// Append one code point's UTF-8; Err for a surrogate (CPython keeps them as code points of their own, and
/// `str.encode` refuses them: not from decoded bytes).
fn push_code_point(out: &mut Vec<u8>, u: u32) -> Result<(), String> {
    let c = char::from_u32(u).ok_or_else(|| SURROGATE.to_string())?;
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    Ok(())
}

/// Append a string's UTF-8 (most notes are 2 bytes a code point in CPython: one CJK character is enough).
fn encode(out: &mut Vec<u8>, r: Raw) -> Result<(), String> {
    // SAFETY: `ptr`/`len` describe a live string's buffer of `kind` (see `Raw`).
    unsafe {
        match r.kind {
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

fn column(raws: &[Raw]) -> Result<Column, String> {
    let mut offsets = Vec::with_capacity(raws.len() + 1);
    let mut data = Vec::with_capacity(raws.iter().map(|r| r.len).sum());
    offsets.push(0);
    for &r in raws {
        encode(&mut data, r)?;
        offsets.push(data.len() as i64);
    }
    Ok(Column { offsets, data })
}

/// Columns of strings, one Arrow batch for DuckDB (`connection.from_arrow(columns)`): each stream (DuckDB opens
/// one for the schema, another to scan) shares the encoded buffers.
#[pyclass(frozen, module = "predigest_native")]
pub struct TextColumns {
    names: Vec<CString>,
    length: usize,
    columns: Arc<Vec<Column>>,
}

#[pymethods]
impl TextColumns {
    #[new]
    fn new(
        py: Python<'_>,
        names: Vec<String>,
        columns: Vec<Vec<Bound<'_, PyString>>>,
    ) -> PyResult<Self> {
        if names.len() != columns.len() || names.is_empty() {
            return Err(PyValueError::new_err(
                "one name per column, at least one column",
            ));
        }
        let length = columns[0].len();
        if columns.iter().any(|c| c.len() != length) {
            return Err(PyValueError::new_err("columns of different lengths"));
        }
        let names = names
            .into_iter()
            .map(CString::new)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| PyValueError::new_err("a column name holds a NUL"))?;
        let raws = columns
            .iter()
            .map(|c| c.iter().map(raw).collect::<PyResult<Vec<_>>>())
            .collect::<PyResult<Vec<_>>>()?;
        // `columns` (and so every string) outlives the detached encoding.
        let built = py.detach(|| {
            raws.iter()
                .map(|r| column(r))
                .collect::<Result<Vec<_>, _>>()
        });
        let built = built.map_err(PyValueError::new_err)?;
        Ok(TextColumns {
            names,
            length,
            columns: Arc::new(built),
        })
    }

    fn __len__(&self) -> usize {
        self.length
    }

    /// The batch as an Arrow C stream in a capsule; the requested schema is ignored (the columns are UTF-8).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let columns = Some(Arc::clone(&self.columns));
        let private = Box::new(StreamData {
            names: self.names.clone(),
            length: self.length,
            columns,
        });
        let stream = NonNull::from(Box::leak(Box::new(ArrowArrayStream {
            get_schema: Some(stream_schema),
            get_next: Some(stream_next),
            get_last_error: Some(stream_error),
            release: Some(stream_release),
            private_data: Box::into_raw(private).cast(),
        })));
        // SAFETY: `stream` is a valid heap pointer freed by `capsule_release` alone; the name is static.
        unsafe {
            PyCapsule::new_with_pointer_and_destructor(
                py,
                stream.cast(),
                STREAM,
                Some(capsule_release),
            )
        }
    }
}

struct StreamData {
    names: Vec<CString>,
    length: usize,
    columns: Option<Arc<Vec<Column>>>, // None once its one batch was handed over
}

unsafe extern "C" fn capsule_release(capsule: *mut ffi::PyObject) {
    // SAFETY: the capsule was made by `__arrow_c_stream__` from a boxed stream; a consumer that moved the stream
    // out set its `release` to null (the PyCapsule interface), else it is released here.
    unsafe {
        let stream = ffi::PyCapsule_GetPointer(capsule, STREAM.as_ptr()) as *mut ArrowArrayStream;
        if stream.is_null() {
            ffi::PyErr_Clear();
            return;
        }
        if let Some(release) = (*stream).release {
            release(stream);
        }
        drop(Box::from_raw(stream));
    }
}

unsafe extern "C" fn stream_release(stream: *mut ArrowArrayStream) {
    // SAFETY: `private_data` is the boxed StreamData of `__arrow_c_stream__`.
    unsafe {
        drop(Box::from_raw((*stream).private_data as *mut StreamData));
        (*stream).release = None;
    }
}

unsafe extern "C" fn stream_error(_: *mut ArrowArrayStream) -> *const c_char {
    ptr::null()
}

unsafe extern "C" fn stream_schema(stream: *mut ArrowArrayStream, out: *mut ArrowSchema) -> c_int {
    // SAFETY: a live stream (its consumer calls it before release) and a schema to fill.
    unsafe {
        let data = &*((*stream).private_data as *const StreamData);
        let children: Vec<*mut ArrowSchema> = data
            .names
            .iter()
            .map(|name| {
                let name = Box::new(name.clone());
                Box::into_raw(Box::new(ArrowSchema {
                    format: LARGE_UTF8.as_ptr(),
                    name: name.as_ptr(),
                    metadata: ptr::null(),
                    flags: 0,
                    n_children: 0,
                    children: ptr::null_mut(),
                    dictionary: ptr::null_mut(),
                    release: Some(child_schema_release),
                    private_data: Box::into_raw(name).cast(),
                }))
            })
            .collect();
        let mut children = Box::new(children);
        out.write(ArrowSchema {
            format: STRUCT.as_ptr(),
            name: c"".as_ptr(),
            metadata: ptr::null(),
            flags: 0,
            n_children: children.len() as i64,
            children: children.as_mut_ptr(),
            dictionary: ptr::null_mut(),
            release: Some(schema_release),
            private_data: Box::into_raw(children).cast(),
        });
    }
    0
}

unsafe extern "C" fn child_schema_release(schema: *mut ArrowSchema) {
    // SAFETY: `private_data` is the child's boxed name.
    unsafe {
        drop(Box::from_raw((*schema).private_data as *mut CString));
        (*schema).release = None;
    }
}

unsafe extern "C" fn schema_release(schema: *mut ArrowSchema) {
    // SAFETY: `private_data` is the boxed list of boxed children of `stream_schema`.
    unsafe {
        let children = Box::from_raw((*schema).private_data as *mut Vec<*mut ArrowSchema>);
        for &child in children.iter() {
            if let Some(release) = (*child).release {
                release(child);
            }
            drop(Box::from_raw(child));
        }
        (*schema).release = None;
    }
}

/// What a column's array holds: the shared buffers and the three pointers to them Arrow reads.
struct ChildData {
    _columns: Arc<Vec<Column>>,
    buffers: [*const c_void; 3],
}

unsafe extern "C" fn stream_next(stream: *mut ArrowArrayStream, out: *mut ArrowArray) -> c_int {
    // SAFETY: a live stream and an array to fill; the batch is handed over once, then the end (release null).
    unsafe {
        let data = &mut *((*stream).private_data as *mut StreamData);
        let Some(columns) = data.columns.take() else {
            out.write(empty_array());
            return 0;
        };
        let length = data.length as i64;
        let children: Vec<*mut ArrowArray> = columns
            .iter()
            .map(|column| {
                let mut child = Box::new(ChildData {
                    buffers: [
                        ptr::null(),
                        column.offsets.as_ptr().cast(),
                        column.data.as_ptr().cast(),
                    ],
                    _columns: Arc::clone(&columns),
                });
                let buffers = child.buffers.as_mut_ptr();
                Box::into_raw(Box::new(ArrowArray {
                    length,
                    null_count: 0,
                    offset: 0,
                    n_buffers: 3,
                    n_children: 0,
                    buffers,
                    children: ptr::null_mut(),
                    dictionary: ptr::null_mut(),
                    release: Some(child_array_release),
                    private_data: Box::into_raw(child).cast(),
                }))
            })
            .collect();
        let mut parent = Box::new(ParentData {
            buffers: [ptr::null()],
            children,
        });
        out.write(ArrowArray {
            length,
            null_count: 0,
            offset: 0,
            n_buffers: 1,
            n_children: parent.children.len() as i64,
            buffers: parent.buffers.as_mut_ptr(),
            children: parent.children.as_mut_ptr(),
            dictionary: ptr::null_mut(),
            release: Some(array_release),
            private_data: Box::into_raw(parent).cast(),
        });
    }
    0
}

struct ParentData {
    buffers: [*const c_void; 1],
    children: Vec<*mut ArrowArray>,
}

fn empty_array() -> ArrowArray {
    ArrowArray {
        length: 0,
        null_count: 0,
        offset: 0,
        n_buffers: 0,
        n_children: 0,
        buffers: ptr::null_mut(),
        children: ptr::null_mut(),
        dictionary: ptr::null_mut(),
        release: None, // the end of the stream
        private_data: ptr::null_mut(),
    }
}

unsafe extern "C" fn child_array_release(array: *mut ArrowArray) {
    // SAFETY: `private_data` is the boxed ChildData of `stream_next`.
    unsafe {
        drop(Box::from_raw((*array).private_data as *mut ChildData));
        (*array).release = None;
    }
}

unsafe extern "C" fn array_release(array: *mut ArrowArray) {
    // SAFETY: `private_data` is the boxed ParentData of `stream_next`, owning its boxed children.
    unsafe {
        let parent = Box::from_raw((*array).private_data as *mut ParentData);
        for &child in parent.children.iter() {
            if let Some(release) = (*child).release {
                release(child);
            }
            drop(Box::from_raw(child));
        }
        (*array).release = None;
    }
}
