//! One Arrow batch of columns (UTF-8, integers, lists of u64) as an Arrow C stream in a capsule (`__arrow_c_stream__`, the PyCapsule
//! interface DuckDB reads): the structs of the Arrow C data and stream interfaces and their release callbacks.
//! The buffers are Rust's, shared by every stream of the batch; no Python object is touched past the capsule.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr::{self, NonNull};
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

// The Arrow C data and stream interfaces (arrow.apache.org/docs/format/CDataInterface.html), as laid out there.
#[repr(C)]
pub(crate) struct ArrowSchema {
    pub(crate) format: *const c_char,
    pub(crate) name: *const c_char,
    pub(crate) metadata: *const c_char,
    pub(crate) flags: i64,
    pub(crate) n_children: i64,
    pub(crate) children: *mut *mut ArrowSchema,
    pub(crate) dictionary: *mut ArrowSchema,
    pub(crate) release: Option<unsafe extern "C" fn(*mut ArrowSchema)>,
    pub(crate) private_data: *mut c_void,
}

#[repr(C)]
pub(crate) struct ArrowArray {
    pub(crate) length: i64,
    pub(crate) null_count: i64,
    pub(crate) offset: i64,
    pub(crate) n_buffers: i64,
    pub(crate) n_children: i64,
    pub(crate) buffers: *mut *const c_void,
    pub(crate) children: *mut *mut ArrowArray,
    pub(crate) dictionary: *mut ArrowArray,
    pub(crate) release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    pub(crate) private_data: *mut c_void,
}

#[repr(C)]
pub(crate) struct ArrowArrayStream {
    pub(crate) get_schema:
        Option<unsafe extern "C" fn(*mut ArrowArrayStream, *mut ArrowSchema) -> c_int>,
    pub(crate) get_next:
        Option<unsafe extern "C" fn(*mut ArrowArrayStream, *mut ArrowArray) -> c_int>,
    pub(crate) get_last_error: Option<unsafe extern "C" fn(*mut ArrowArrayStream) -> *const c_char>,
    pub(crate) release: Option<unsafe extern "C" fn(*mut ArrowArrayStream)>,
    pub(crate) private_data: *mut c_void,
}

const STRUCT: &CStr = c"+s";
const LARGE_BINARY: &CStr = c"Z"; // i64 offsets, as LARGE_UTF8
const LARGE_UTF8: &CStr = c"U"; // i64 offsets: a batch of large notes may pass 2 GiB
const INT64: &CStr = c"l";
const INT32: &CStr = c"i";
const UINT64: &CStr = c"L";
const FLOAT64: &CStr = c"g";
const BOOL: &CStr = c"b";
const TIMESTAMP_UTC: &CStr = c"tsu:UTC"; // microseconds since the epoch: DuckDB's TIMESTAMPTZ
const LIST: &CStr = c"+l";
const STREAM: &CStr = c"arrow_array_stream";

/// One column of the batch, its buffers as Arrow lays them out.
pub enum Column {
    /// Strings' UTF-8 back to back, and where each starts (one more offset than strings).
    Utf8 {
        offsets: Vec<i64>,
        data: Vec<u8>,
    },
    /// Bytes as they came (a BLOB), laid out as Utf8.
    Binary {
        offsets: Vec<i64>,
        data: Vec<u8>,
    },
    Int64(Vec<i64>),
    /// Integers some of which are NULL: a bit a row, set where it holds a value.
    NullableInt64 {
        values: Vec<i64>,
        valid: Vec<u8>,
        nulls: usize,
    },
    Int32(Vec<i32>),
    UInt64(Vec<u64>),
    Float64(Vec<f64>),
    /// A bit a row (`len` of them).
    Bool {
        bits: Vec<u8>,
        len: usize,
    },
    /// Microseconds since the epoch, UTC.
    TimestampUtc(Vec<i64>),
    /// Lists of `items`: where each starts among them (one more offset than lists).
    List {
        offsets: Vec<i32>,
        items: Box<Column>,
    },
}

impl Column {
    fn format(&self) -> &'static CStr {
        match self {
            Column::Utf8 { .. } => LARGE_UTF8,
            Column::Binary { .. } => LARGE_BINARY,
            Column::Int64(_) | Column::NullableInt64 { .. } => INT64,
            Column::Int32(_) => INT32,
            Column::UInt64(_) => UINT64,
            Column::Float64(_) => FLOAT64,
            Column::Bool { .. } => BOOL,
            Column::TimestampUtc(_) => TIMESTAMP_UTC,
            Column::List { .. } => LIST,
        }
    }

    fn len(&self) -> usize {
        match self {
            Column::Utf8 { offsets, .. } | Column::Binary { offsets, .. } => offsets.len() - 1,
            Column::Int64(v) | Column::TimestampUtc(v) => v.len(),
            Column::NullableInt64 { values, .. } => values.len(),
            Column::Int32(v) => v.len(),
            Column::UInt64(v) => v.len(),
            Column::Float64(v) => v.len(),
            Column::Bool { len, .. } => *len,
            Column::List { offsets, .. } => offsets.len() - 1,
        }
    }

    fn nulls(&self) -> usize {
        match self {
            Column::NullableInt64 { nulls, .. } => *nulls,
            _ => 0,
        }
    }

    /// The array's buffers: its validity bitmap (null when every row holds a value), then its own.
    fn buffers(&self) -> Vec<*const c_void> {
        match self {
            Column::Utf8 { offsets, data } | Column::Binary { offsets, data } => {
                vec![ptr::null(), offsets.as_ptr().cast(), data.as_ptr().cast()]
            }
            Column::Int64(v) | Column::TimestampUtc(v) => vec![ptr::null(), v.as_ptr().cast()],
            Column::NullableInt64 { values, valid, .. } => {
                vec![valid.as_ptr().cast(), values.as_ptr().cast()]
            }
            Column::Int32(v) => vec![ptr::null(), v.as_ptr().cast()],
            Column::UInt64(v) => vec![ptr::null(), v.as_ptr().cast()],
            Column::Float64(v) => vec![ptr::null(), v.as_ptr().cast()],
            Column::Bool { bits, .. } => vec![ptr::null(), bits.as_ptr().cast()],
            Column::List { offsets, .. } => vec![ptr::null(), offsets.as_ptr().cast()],
        }
    }

    fn items(&self) -> Option<&Column> {
        match self {
            Column::List { items, .. } => Some(items),
            _ => None,
        }
    }
}

/// `length` rows of the named columns as one Arrow batch for DuckDB (`connection.from_arrow(batch)`): each stream
/// it hands out (DuckDB opens one for the schema, another to scan) shares the columns. The base of the batch
/// classes (`TextColumns`, `TypedColumns`, `FactRows`), which differ only in how they build the columns.
#[pyclass(subclass, frozen, module = "predigest_native")]
pub struct ArrowBatch {
    names: Vec<CString>,
    length: usize,
    columns: Arc<Vec<Column>>,
}

impl ArrowBatch {
    pub fn new(names: Vec<CString>, length: usize, columns: Vec<Column>) -> Self {
        ArrowBatch {
            names,
            length,
            columns: Arc::new(columns),
        }
    }
}

#[pymethods]
impl ArrowBatch {
    fn __len__(&self) -> usize {
        self.length
    }

    /// The batch as an Arrow C stream in a capsule; the requested schema is ignored.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        capsule(
            py,
            self.names.clone(),
            self.length,
            Arc::clone(&self.columns),
        )
    }
}

/// The names as C strings and the rows' count of columns given from Python: ValueError unless there is a name
/// per column, at least one column, and every column is as long as the first.
pub fn shape<T>(names: Vec<String>, columns: &[Vec<T>]) -> PyResult<(Vec<CString>, usize)> {
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
    Ok((names, length))
}

/// A capsule holding a new stream of the batch: `length` rows of the named columns.
fn capsule<'py>(
    py: Python<'py>,
    names: Vec<CString>,
    length: usize,
    columns: Arc<Vec<Column>>,
) -> PyResult<Bound<'py, PyCapsule>> {
    let private = Box::new(StreamData {
        names,
        length,
        columns,
        handed: false,
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
    columns: Arc<Vec<Column>>,
    handed: bool, // its one batch was handed over: the stream is at its end
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

/// What a schema owns: its name and its boxed children (a struct's columns, a list's items).
struct SchemaData {
    name: CString,
    children: Vec<*mut ArrowSchema>,
}

/// A boxed schema of `format` named `name`, owning `children`.
fn schema(format: &'static CStr, name: CString, children: Vec<*mut ArrowSchema>) -> ArrowSchema {
    let data = Box::into_raw(Box::new(SchemaData { name, children }));
    // SAFETY: `data` was just boxed; its name and children live until `schema_release` frees them.
    unsafe {
        ArrowSchema {
            format: format.as_ptr(),
            name: (*data).name.as_ptr(),
            metadata: ptr::null(),
            flags: 0,
            n_children: (*data).children.len() as i64,
            children: (*data).children.as_mut_ptr(),
            dictionary: ptr::null_mut(),
            release: Some(schema_release),
            private_data: data.cast(),
        }
    }
}

fn column_schema(name: CString, column: &Column) -> *mut ArrowSchema {
    let items = column
        .items()
        .map(|items| column_schema(c"item".to_owned(), items))
        .into_iter()
        .collect();
    Box::into_raw(Box::new(schema(column.format(), name, items)))
}

unsafe extern "C" fn stream_schema(stream: *mut ArrowArrayStream, out: *mut ArrowSchema) -> c_int {
    // SAFETY: a live stream (its consumer calls it before release) and a schema to fill.
    unsafe {
        let data = &*((*stream).private_data as *const StreamData);
        let children = data
            .names
            .iter()
            .zip(data.columns.iter())
            .map(|(name, column)| column_schema(name.clone(), column))
            .collect();
        out.write(schema(STRUCT, CString::default(), children));
    }
    0
}

unsafe extern "C" fn schema_release(schema: *mut ArrowSchema) {
    // SAFETY: `private_data` is the boxed SchemaData of `schema`, owning its boxed children.
    unsafe {
        let data = Box::from_raw((*schema).private_data as *mut SchemaData);
        for &child in data.children.iter() {
            if let Some(release) = (*child).release {
                release(child);
            }
            drop(Box::from_raw(child));
        }
        (*schema).release = None;
    }
}

/// What an array owns: the shared buffers, the pointers to them Arrow reads, and its boxed children.
struct ArrayData {
    _columns: Arc<Vec<Column>>,
    buffers: Vec<*const c_void>,
    children: Vec<*mut ArrowArray>,
}

/// An array of `length` rows (`nulls` of them NULL) over `buffers` (of `columns`), owning `children`.
fn array(
    columns: &Arc<Vec<Column>>,
    (length, nulls): (usize, usize),
    buffers: Vec<*const c_void>,
    children: Vec<*mut ArrowArray>,
) -> ArrowArray {
    let data = Box::into_raw(Box::new(ArrayData {
        _columns: Arc::clone(columns),
        buffers,
        children,
    }));
    // SAFETY: `data` was just boxed; the pointers into it live until `array_release` frees it.
    unsafe {
        ArrowArray {
            length: length as i64,
            null_count: nulls as i64,
            offset: 0,
            n_buffers: (*data).buffers.len() as i64,
            n_children: (*data).children.len() as i64,
            buffers: (*data).buffers.as_mut_ptr(),
            children: (*data).children.as_mut_ptr(),
            dictionary: ptr::null_mut(),
            release: Some(array_release),
            private_data: data.cast(),
        }
    }
}

fn column_array(columns: &Arc<Vec<Column>>, column: &Column) -> *mut ArrowArray {
    let items = column
        .items()
        .map(|items| column_array(columns, items))
        .into_iter()
        .collect();
    let shape = (column.len(), column.nulls());
    Box::into_raw(Box::new(array(columns, shape, column.buffers(), items)))
}

unsafe extern "C" fn stream_next(stream: *mut ArrowArrayStream, out: *mut ArrowArray) -> c_int {
    // SAFETY: a live stream and an array to fill; the batch is handed over once, then the end (release null).
    unsafe {
        let data = &mut *((*stream).private_data as *mut StreamData);
        if data.handed {
            out.write(empty_array());
            return 0;
        }
        data.handed = true;
        let columns = &data.columns;
        let children = columns
            .iter()
            .map(|column| column_array(columns, column))
            .collect();
        out.write(array(
            columns,
            (data.length, 0),
            vec![ptr::null()],
            children,
        ));
    }
    0
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

unsafe extern "C" fn array_release(array: *mut ArrowArray) {
    // SAFETY: `private_data` is the boxed ArrayData of `array`, owning its boxed children.
    unsafe {
        let data = Box::from_raw((*array).private_data as *mut ArrayData);
        for &child in data.children.iter() {
            if let Some(release) = (*child).release {
                release(child);
            }
            drop(Box::from_raw(child));
        }
        (*array).release = None;
    }
}
