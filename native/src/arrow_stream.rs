//! One Arrow batch of UTF-8 columns as an Arrow C stream in a capsule (`__arrow_c_stream__`, the PyCapsule
//! interface DuckDB reads): the structs of the Arrow C data and stream interfaces and their release callbacks.
//! The buffers are Rust's, shared by every stream of the batch; no Python object is touched past the capsule.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr::{self, NonNull};
use std::sync::Arc;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

// The Arrow C data and stream interfaces (arrow.apache.org/docs/format/CDataInterface.html), as laid out there.
#[repr(C)]
struct ArrowSchema {
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
struct ArrowArray {
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
struct ArrowArrayStream {
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
pub struct Column {
    pub offsets: Vec<i64>,
    pub data: Vec<u8>,
}

/// A capsule holding a new stream of the batch: `length` rows of the named columns.
pub fn capsule<'py>(
    py: Python<'py>,
    names: Vec<CString>,
    length: usize,
    columns: Arc<Vec<Column>>,
) -> PyResult<Bound<'py, PyCapsule>> {
    let private = Box::new(StreamData {
        names,
        length,
        columns: Some(columns),
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
        PyCapsule::new_with_pointer_and_destructor(py, stream.cast(), STREAM, Some(capsule_release))
    }
}

struct StreamData {
    names: Vec<CString>,
    length: usize,
    columns: Option<Arc<Vec<Column>>>, // None once its one batch was handed over
}

unsafe extern "C" fn capsule_release(capsule: *mut ffi::PyObject) {
    // SAFETY: the capsule was made by `capsule` from a boxed stream; a consumer that moved the stream
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
    // SAFETY: `private_data` is the boxed StreamData of `capsule`.
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
                // Boxed first, then its buffers' address taken from the raw pointer (not from the Box, whose move
                // into `into_raw` would invalidate a pointer derived before it under Stacked Borrows).
                let child = Box::into_raw(Box::new(ChildData {
                    buffers: [
                        ptr::null(),
                        column.offsets.as_ptr().cast(),
                        column.data.as_ptr().cast(),
                    ],
                    _columns: Arc::clone(&columns),
                }));
                Box::into_raw(Box::new(ArrowArray {
                    length,
                    null_count: 0,
                    offset: 0,
                    n_buffers: 3,
                    n_children: 0,
                    buffers: ptr::addr_of_mut!((*child).buffers).cast(),
                    children: ptr::null_mut(),
                    dictionary: ptr::null_mut(),
                    release: Some(child_array_release),
                    private_data: child.cast(),
                }))
            })
            .collect();
        let parent = Box::into_raw(Box::new(ParentData {
            buffers: [ptr::null()],
            children,
        }));
        out.write(ArrowArray {
            length,
            null_count: 0,
            offset: 0,
            n_buffers: 1,
            n_children: (*parent).children.len() as i64,
            buffers: ptr::addr_of_mut!((*parent).buffers).cast(),
            children: (*parent).children.as_mut_ptr(),
            dictionary: ptr::null_mut(),
            release: Some(array_release),
            private_data: parent.cast(),
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
