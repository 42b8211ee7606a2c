//! A window's near-duplicate pairs from its MinHash signatures, read from an Arrow C stream of (pos BIGINT,
//! signature UBIGINT[]) rows as DuckDB hands a query's result over (`__arrow_c_stream__`): the LSH buckets, the
//! 2-bit sketches and the slots compared here, in place of SQL whose plan alone (a 128-term sum, 128 slot columns)
//! cost a briefing ~60 ms whatever the window (`sinks.window_reads`).

use std::ffi::CStr;
use std::ptr;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use rustc_hash::FxHashMap;

use crate::arrow_stream::{ArrowArray, ArrowArrayStream, ArrowSchema};

const STREAM: &CStr = c"arrow_array_stream";
const PER_WORD: usize = 32; // slots a sketch word holds, two bits each

/// The stream of a query's result, moved out of its capsule (the PyCapsule interface), released when dropped;
/// `large`: its lists have 64-bit offsets.
struct Stream(ArrowArrayStream, bool);

// SAFETY: a stream's callbacks may be called from any thread, one call at a time (the C stream interface). Its
// batches are read without the GIL (`py.detach`), as pyarrow reads them: DuckDB's run the query as they are
// fetched, and every Python thread (the worker's event loop) waited for all of it.
unsafe impl Send for Stream {}

impl Drop for Stream {
    fn drop(&mut self) {
        if let Some(release) = self.0.release {
            // SAFETY: the stream was moved out of its capsule and is released once, here.
            unsafe { release(&mut self.0) };
        }
    }
}

/// One batch of the stream, released when dropped.
struct Batch(ArrowArray);

impl Drop for Batch {
    fn drop(&mut self) {
        if let Some(release) = self.0.release {
            // SAFETY: a batch the stream handed over, released once, here.
            unsafe { release(&mut self.0) };
        }
    }
}

fn bad(what: &str) -> PyErr {
    PyValueError::new_err(format!("signature rows: {what}"))
}

/// `what`, with the stream's own error after a call failed (DuckDB's: an interrupt, memory, a cast), when it says.
fn failed(stream: &mut Stream, what: &str) -> PyErr {
    let Some(last) = stream.0.get_last_error else {
        return bad(what);
    };
    // SAFETY: a failed call's error is a C string valid until the stream's next call or release; copied here.
    let error = unsafe { last(&mut stream.0) };
    if error.is_null() {
        return bad(what);
    }
    bad(&format!(
        "{what}: {}",
        unsafe { CStr::from_ptr(error) }.to_string_lossy()
    ))
}

fn open(rows: &Bound<'_, PyAny>) -> PyResult<Stream> {
    let capsule = rows.call_method0("__arrow_c_stream__")?;
    let capsule = capsule.cast::<PyCapsule>()?;
    let pointer = capsule
        .pointer_checked(Some(STREAM))?
        .cast::<ArrowArrayStream>();
    // SAFETY: a capsule of that name holds a valid stream; it is moved out and its release cleared in the
    // capsule, so that the capsule's destructor leaves it to us.
    let mut stream = unsafe {
        let stream = ptr::read(pointer.as_ptr());
        (*pointer.as_ptr()).release = None;
        Stream(stream, false)
    };
    if stream.0.release.is_none() {
        return Err(bad("a stream already released")); // its callbacks may no longer be called
    }
    stream.1 = check_schema(&mut stream)?;
    Ok(stream)
}

fn format_of(schema: &ArrowSchema) -> &CStr {
    // SAFETY: an exported schema's format is a valid C string.
    unsafe { CStr::from_ptr(schema.format) }
}

/// Two columns: an int64 and a list of uint64; whether the list's offsets are 64-bit.
fn check_schema(stream: &mut Stream) -> PyResult<bool> {
    let get = stream.0.get_schema.ok_or_else(|| bad("no schema"))?;
    // SAFETY: a zeroed schema is what the interface fills in; it is released below.
    let mut schema: ArrowSchema = unsafe { std::mem::zeroed() };
    if unsafe { get(&mut stream.0, &mut schema) } != 0 {
        return Err(failed(stream, "its schema could not be read"));
    }
    // SAFETY: the children of a schema the stream filled in are valid for its lifetime.
    let found = unsafe {
        if format_of(&schema) != c"+s" || schema.n_children != 2 {
            None
        } else {
            let pos = &**schema.children;
            let list = &**schema.children.add(1);
            let large = format_of(list) == c"+L";
            // A dictionary-encoded column's format is that of its indices: refused.
            let ok = format_of(pos) == c"l"
                && pos.dictionary.is_null()
                && (large || format_of(list) == c"+l")
                && list.dictionary.is_null()
                && list.n_children == 1
                && format_of(&**list.children) == c"L"
                && (**list.children).dictionary.is_null();
            ok.then_some(large)
        }
    };
    if let Some(release) = schema.release {
        unsafe { release(&mut schema) };
    }
    found.ok_or_else(|| bad("expected (BIGINT, UBIGINT[])"))
}

/// Every row of the stream: its position and its slots.
fn each_row(stream: &mut Stream, mut row: impl FnMut(i64, &[u64]) -> PyResult<()>) -> PyResult<()> {
    let next = stream.0.get_next.ok_or_else(|| bad("no batches"))?;
    loop {
        // SAFETY: a zeroed array is what the interface fills in; `Batch` releases it.
        let mut batch = Batch(unsafe { std::mem::zeroed() });
        if unsafe { next(&mut stream.0, &mut batch.0) } != 0 {
            return Err(failed(stream, "a batch could not be read"));
        }
        if batch.0.release.is_none() {
            return Ok(()); // the end of the stream
        }
        // SAFETY: the schema was checked (`check_schema`): a struct of an int64 and a list of uint64, whose
        // buffers hold `length` rows from their offsets; NULLs are refused before any value is read.
        unsafe { batch_rows(&batch.0, stream.1, &mut row)? };
    }
}

/// Whether an array may hold a NULL: a count of them, or an unknown count (-1) beside a validity bitmap.
unsafe fn may_hold_null(array: &ArrowArray) -> bool {
    unsafe {
        array.null_count > 0
            || (array.null_count < 0 && array.n_buffers > 0 && !(*array.buffers).is_null())
    }
}

/// Whether `array` has `children` children (none a null pointer) and `buffers` buffers.
unsafe fn shaped(array: &ArrowArray, children: i64, buffers: i64) -> bool {
    unsafe {
        array.n_children == children
            && array.n_buffers == buffers
            && !array.buffers.is_null()
            && (children == 0 || !array.children.is_null())
            && (0..children as usize).all(|k| !(*array.children.add(k)).is_null())
    }
}

unsafe fn batch_rows(
    batch: &ArrowArray,
    large: bool,
    row: &mut impl FnMut(i64, &[u64]) -> PyResult<()>,
) -> PyResult<()> {
    unsafe {
        if !shaped(batch, 2, 1) {
            return Err(bad("a batch of another shape"));
        }
        let pos = &**batch.children;
        let list = &**batch.children.add(1);
        if !shaped(pos, 0, 2) || !shaped(list, 1, 2) || !shaped(&**list.children, 0, 2) {
            return Err(bad("a batch of another shape"));
        }
        let items = &**list.children;
        if may_hold_null(batch) || may_hold_null(pos) || may_hold_null(list) || may_hold_null(items)
        {
            return Err(bad("a NULL"));
        }
        // The rows (from the struct's offset and each child's own) within the children, the items' offsets
        // within the items: a producer's lengths and offsets are checked before a value is read.
        let rows = batch.offset.checked_add(batch.length);
        let within = |a: &ArrowArray| {
            a.offset >= 0
                && rows.is_some_and(|r| batch.offset >= 0 && batch.length >= 0 && r <= a.length)
        };
        if !within(pos) || !within(list) || items.offset < 0 || items.length < 0 {
            return Err(bad("a batch whose rows are out of its columns"));
        }
        let positions = (*pos.buffers.add(1)).cast::<i64>();
        let offsets = *list.buffers.add(1);
        let values = (*items.buffers.add(1)).cast::<u64>();
        for i in 0..batch.length {
            let r = batch.offset + i;
            let at = (list.offset + r) as usize;
            let (start, end) = if large {
                let o = offsets.cast::<i64>();
                (*o.add(at), *o.add(at + 1))
            } else {
                let o = offsets.cast::<i32>();
                (i64::from(*o.add(at)), i64::from(*o.add(at + 1)))
            };
            if start < 0 || end < start || end > items.length {
                return Err(bad("a list's offsets out of its items"));
            }
            // An empty list's items may have no buffer at all.
            let slots = if end > start {
                std::slice::from_raw_parts(
                    values.add((items.offset + start) as usize),
                    (end - start) as usize,
                )
            } else {
                &[]
            };
            row(*positions.add((pos.offset + r) as usize), slots)?;
        }
        Ok(())
    }
}

/// A band's key: its slots mixed into 64 bits (equal slots, equal keys; DuckDB's `hash` played this part before).
fn band_key(slots: &[u64]) -> u64 {
    let mut h = 0x9e37_79b9_7f4a_7c15_u64;
    for &v in slots {
        h = (h ^ v).wrapping_mul(0xbf58_476d_1ce4_e5b9).rotate_left(31);
    }
    h ^ (h >> 29)
}

/// A signature's sketch: the low two bits of each slot, `PER_WORD` slots a word.
fn sketch(slots: &[u64], out: &mut Vec<u64>) {
    for word in slots.chunks(PER_WORD) {
        out.push(
            word.iter()
                .enumerate()
                .fold(0, |w, (k, v)| w | ((v & 3) << (2 * k))),
        );
    }
}

/// How many 2-bit groups of two sketches are equal: at least the equal slots.
fn sketch_same(x: &[u64], y: &[u64]) -> usize {
    let low = 0x5555_5555_5555_5555_u64;
    let differ: u32 = x
        .iter()
        .zip(y)
        .map(|(a, b)| (((a ^ b) | ((a ^ b) >> 1)) & low).count_ones())
        .sum();
    x.len() * PER_WORD - differ as usize
}

/// The LSH candidates of a window's signatures (`rows`: its first version of each text, (pos, signature) of
/// `bands` x `rows_per_band` slots or more): each paired with the first (lowest pos) of each bucket it shares,
/// when earlier, distinct, and only the pairs whose sketches can reach `needed` equal slots.
#[pyfunction]
pub fn near_candidates(
    py: Python<'_>,
    rows: &Bound<'_, PyAny>,
    bands: usize,
    rows_per_band: usize,
    needed: usize,
) -> PyResult<Vec<(i64, i64)>> {
    if rows_per_band == 0 {
        return Err(bad("bands of no slots"));
    }
    // Past usize, the product wrapped (to 0 at 2^63 x 2) and the band keys were read past their end: a panic.
    let banded = bands
        .checked_mul(rows_per_band)
        .ok_or_else(|| bad("signatures of too few slots"))?;
    let mut stream = open(rows)?;
    let (mut positions, mut keys, mut sketches) = (Vec::new(), Vec::new(), Vec::new());
    let mut width = None;
    py.detach(|| {
        each_row(&mut stream, |pos, slots| {
            if slots.len() < banded
                || slots.len() % PER_WORD != 0
                || *width.get_or_insert(slots.len()) != slots.len()
            {
                return Err(bad("signatures of different or too few slots"));
            }
            positions.push(pos);
            keys.extend(slots.chunks_exact(rows_per_band).take(bands).map(band_key));
            sketch(slots, &mut sketches);
            Ok(())
        })
    })?;
    drop(stream);
    let words = width.unwrap_or(0) / PER_WORD;
    let pairs = py.detach(|| {
        bucket_pairs(&keys, &positions, bands, |i, f| {
            sketch_same(
                &sketches[i * words..(i + 1) * words],
                &sketches[f * words..(f + 1) * words],
            ) >= needed
        })
    });
    Ok(pairs
        .into_iter()
        .map(|(i, f)| (positions[i], positions[f]))
        .collect())
}

/// (row, the first row of a bucket it shares) for each row of `positions` and each of its `bands` keys, when
/// the first is earlier and `kept` keeps the pair; distinct, sorted.
fn bucket_pairs(
    keys: &[u64],
    positions: &[i64],
    bands: usize,
    kept: impl Fn(usize, usize) -> bool,
) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    let mut first: FxHashMap<u64, usize> = FxHashMap::default();
    for band in 0..bands {
        first.clear();
        for (i, &pos) in positions.iter().enumerate() {
            let at = first.entry(keys[i * bands + band]).or_insert(i);
            if pos < positions[*at] {
                *at = i;
            }
        }
        for (i, &pos) in positions.iter().enumerate() {
            let f = first[&keys[i * bands + band]];
            if positions[f] < pos && kept(i, f) {
                pairs.push((i, f));
            }
        }
    }
    pairs.sort_unstable();
    pairs.dedup();
    pairs
}

/// How many slots of each pair's signatures are equal (`rows`: (pos, signature) of every position the pairs
/// name, at least).
#[pyfunction]
pub fn near_same(
    py: Python<'_>,
    rows: &Bound<'_, PyAny>,
    pairs: Vec<(i64, i64)>,
) -> PyResult<Vec<(i64, i64, usize)>> {
    let mut stream = open(rows)?;
    let mut signatures: FxHashMap<i64, Vec<u64>> = FxHashMap::default();
    py.detach(|| {
        each_row(&mut stream, |pos, slots| {
            signatures.insert(pos, slots.to_vec());
            Ok(())
        })
    })?;
    drop(stream);
    py.detach(|| {
        pairs
            .into_iter()
            .map(|(x, y)| match (signatures.get(&x), signatures.get(&y)) {
                (Some(a), Some(b)) if a.len() == b.len() => {
                    Ok((x, y, a.iter().zip(b).filter(|(p, q)| p == q).count()))
                }
                _ => Err(bad("a pair's signature is missing or of another length")),
            })
            .collect()
    })
}
