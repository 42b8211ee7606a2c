//! `FactRows`: the term counts and signatures of stored versions (JSON of their own, processors.source_facts)
//! read into rows here, without the GIL, and handed to DuckDB as one Arrow batch (`arrow_stream`).
//!
//! DuckDB's `::JSON::MAP(VARCHAR, INTEGER)` and `::JSON::UBIGINT[]` casts cost the window agent ~20 and ~10 µs a
//! note (~54 terms, 128 values; docs/performance.md); reading them here is a pass over ~1.5 KB.

use std::ffi::CString;
use std::hash::BuildHasher;

use hashbrown::hash_table::Entry;
use hashbrown::HashTable;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rustc_hash::FxBuildHasher;

use crate::arrow_stream::{ArrowBatch, Column};
use crate::text_columns::{encode, raw, Raw};

/// A JSON text being read: the few forms the facts hold (an object of integers, an array of them). Strict JSON
/// (RFC 8259), as pydantic read them before: no leading zero, no raw control character in a string.
struct Json<'a> {
    s: &'a [u8],
    at: usize,
}

impl<'a> Json<'a> {
    fn new(s: &'a [u8]) -> Self {
        Json { s, at: 0 }
    }

    fn space(&mut self) {
        while matches!(self.s.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        self.space();
        if self.s.get(self.at) == Some(&b) {
            self.at += 1;
            return true;
        }
        false
    }

    fn end(&mut self) -> bool {
        self.space();
        self.at == self.s.len()
    }

    /// An integer (no fraction or exponent) as its sign and magnitude, the magnitude within u64; None otherwise.
    fn integer(&mut self) -> Option<(bool, u64)> {
        self.space();
        let negative = self.s.get(self.at) == Some(&b'-');
        if negative {
            self.at += 1;
        }
        let start = self.at;
        let mut value: u64 = 0;
        while let Some(&d) = self.s.get(self.at).filter(|d| d.is_ascii_digit()) {
            value = value.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            self.at += 1;
        }
        let leading_zero = self.s.get(start) == Some(&b'0') && self.at > start + 1;
        let fraction = matches!(self.s.get(self.at), Some(b'.' | b'e' | b'E'));
        (self.at > start && !leading_zero && !fraction).then_some((negative, value))
    }

    /// A string's UTF-8, its escapes read, appended to `out`.
    fn string(&mut self, out: &mut Vec<u8>) -> Option<()> {
        if !self.eat(b'"') {
            return None;
        }
        loop {
            let rest = &self.s[self.at..];
            // A byte at a time: terms are a few bytes, shorter than memchr's start-up.
            let n = rest
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
            if rest[n] < 0x20 {
                return None; // a raw control character: JSON has them escaped
            }
            out.extend_from_slice(&rest[..n]);
            self.at += n + 1;
            if rest[n] == b'"' {
                return Some(());
            }
            let c = *self.s.get(self.at)?;
            self.at += 1;
            match c {
                b'"' | b'\\' | b'/' => out.push(c),
                b'b' => out.push(0x08),
                b'f' => out.push(0x0C),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b't' => out.push(b'\t'),
                b'u' => self.unicode(out)?,
                _ => return None,
            }
        }
    }

    /// A `\uXXXX` escape (its `\u` read), a surrogate pair as one code point; a lone surrogate is refused.
    fn unicode(&mut self, out: &mut Vec<u8>) -> Option<()> {
        let mut u = self.hex4()?;
        if (0xD800..0xDC00).contains(&u) {
            if !self.s[self.at..].starts_with(b"\\u") {
                return None;
            }
            self.at += 2;
            let low = self.hex4()?;
            if !(0xDC00..0xE000).contains(&low) {
                return None;
            }
            u = 0x10000 + ((u - 0xD800) << 10) + (low - 0xDC00);
        }
        let c = char::from_u32(u)?;
        out.extend_from_slice(c.encode_utf8(&mut [0u8; 4]).as_bytes());
        Some(())
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.s.get(self.at..self.at + 4)?;
        // from_str_radix alone would take a sign ("\u+041")
        if !digits.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        let text = std::str::from_utf8(digits).ok()?;
        let u = u32::from_str_radix(text, 16).ok()?;
        self.at += 4;
        Some(u)
    }
}

/// The (term, count) pairs of `{"term": n, …}` into the columns; `null` (exactly: what a summary without them
/// writes) has none. None when it is neither, or names a term twice (the old MAP cast failed the batch on it, a
/// briefing would count the note twice in the term's document frequency); `rows` then holds part of it.
fn terms(json: &[u8], vid: i64, rows: &mut TermColumns) -> Option<()> {
    if json == b"null" {
        return Some(());
    }
    let mut j = Json::new(json);
    if !j.eat(b'{') {
        return None;
    }
    let first = rows.counts.len();
    if !j.eat(b'}') {
        loop {
            j.string(&mut rows.data)?;
            if !j.eat(b':') {
                return None;
            }
            let (negative, value) = j.integer()?;
            let magnitude = i64::try_from(value).ok()?;
            let n = i32::try_from(if negative { -magnitude } else { magnitude }).ok()?;
            rows.places.push((rows.counts.len() - first) as i32);
            rows.vids.push(vid);
            rows.offsets.push(rows.data.len() as i64);
            rows.counts.push(n);
            if j.eat(b'}') {
                break;
            }
            if !j.eat(b',') {
                return None;
            }
        }
    }
    (j.end() && !rows.repeated(first)).then_some(())
}

struct TermColumns {
    vids: Vec<i64>,
    offsets: Vec<i64>,
    data: Vec<u8>,
    counts: Vec<i32>,
    places: Vec<i32>, // each term's place among its version's counts: how a whole summary is rebuilt in order
    seen: HashTable<(usize, usize)>, // the terms of one version, as spans of `data` (`repeated`)
}

impl TermColumns {
    fn new() -> Self {
        TermColumns {
            vids: Vec::new(),
            offsets: vec![0],
            data: Vec::new(),
            counts: Vec::new(),
            places: Vec::new(),
            seen: HashTable::new(),
        }
    }

    /// Room for the rows of `json_bytes` more of term counts (a row is 5 bytes of JSON or more, `"t":1,`):
    /// columns grown a row at a time were moved ~30 times a note.
    fn reserve(&mut self, json_bytes: usize) {
        let rows = json_bytes / 5 + 1;
        self.vids.reserve(rows);
        self.offsets.reserve(rows);
        self.data.reserve(json_bytes);
        self.counts.reserve(rows);
        self.places.reserve(rows);
    }

    /// Whether two of the terms of the rows from `first` on are one (the same UTF-8, their escapes read).
    fn repeated(&mut self, first: usize) -> bool {
        let (data, seen) = (&self.data, &mut self.seen);
        let hash = |&(start, end): &(usize, usize)| FxBuildHasher.hash_one(&data[start..end]);
        let terms = &self.offsets[first..];
        seen.clear();
        seen.reserve(terms.len(), hash);
        for w in terms.windows(2) {
            let span = (w[0] as usize, w[1] as usize);
            let term = &data[span.0..span.1];
            match seen.entry(hash(&span), |&(s, e)| &data[s..e] == term, hash) {
                Entry::Occupied(_) => return true,
                Entry::Vacant(slot) => _ = slot.insert(span),
            }
        }
        false
    }
}

/// The values of `[n, …]` appended to `out` when it is a list of `length` u64 (None: of any length); false
/// (nothing appended) for anything else: `null`, another length, a value that is no u64 (the decode's
/// `fact_json_reads` has refused the last with its note).
fn signature(json: &[u8], length: Option<usize>, out: &mut Vec<u64>) -> bool {
    let start = out.len();
    let mut j = Json::new(json);
    let read = (|| {
        if !j.eat(b'[') {
            return None;
        }
        if !j.eat(b']') {
            loop {
                match j.integer()? {
                    (false, v) => out.push(v),
                    (true, 0) => out.push(0),
                    _ => return None,
                }
                if j.eat(b']') {
                    break;
                }
                if !j.eat(b',') {
                    return None;
                }
            }
        }
        j.end().then_some(())
    })();
    if read.is_none() || length.is_some_and(|n| out.len() - start != n) {
        out.truncate(start);
        return false;
    }
    true
}

/// Whether a record's facts hold term counts and a signature `FactRows` reads: `{"term": n, …}` (each n an
/// INTEGER, each term once) or `null`, and a list of u64 or `null`. What a window batch's store would fail on
/// is refused with its record instead.
#[pyfunction]
pub fn fact_json_reads(
    terms_json: &Bound<'_, PyAny>,
    signature_json: &Bound<'_, PyAny>,
) -> PyResult<bool> {
    let mut text = Vec::new();
    if encode(&mut text, raw(terms_json)?).is_err() {
        return Ok(false); // a lone surrogate: no UTF-8 to store
    }
    let mut rows = TermColumns::new();
    rows.reserve(text.len());
    if terms(&text, 0, &mut rows).is_none() {
        return Ok(false);
    }
    text.clear();
    if encode(&mut text, raw(signature_json)?).is_err() {
        return Ok(false);
    }
    // Room for the values up front: a list growing to 128 values moved eight times.
    let mut values = Vec::with_capacity(text.len() / 16);
    Ok(text == b"null" || signature(&text, None, &mut values))
}

fn raws(cells: &[Bound<'_, PyAny>]) -> PyResult<Vec<Raw>> {
    cells.iter().map(raw).collect()
}

/// Each cell's UTF-8 (a `str` encoded, `bytes` checked) handed to `each` with its index; the first error stops.
fn each_text(
    raws: &[Raw],
    mut each: impl FnMut(usize, &[u8]) -> Result<(), String>,
) -> Result<(), String> {
    let mut text = Vec::new();
    for (i, &r) in raws.iter().enumerate() {
        text.clear();
        encode(&mut text, r)?;
        each(i, &text)?;
    }
    Ok(())
}

/// Rows of stored versions' facts as one Arrow batch for DuckDB (`connection.from_arrow(rows)`).
#[pyclass(extends = ArrowBatch, frozen, module = "predigest_native")]
pub struct FactRows;

fn names(names: &[&str]) -> Vec<CString> {
    names
        .iter()
        .map(|n| CString::new(*n).expect("a static name"))
        .collect()
}

#[pymethods]
impl FactRows {
    /// (vid, term, n, k) of each version's term counts, k the term's place among them, `{"term": n, …}` or `null` (none); ValueError for JSON of
    /// another shape, a count beyond INTEGER or a term named twice.
    #[staticmethod]
    fn terms(py: Python<'_>, vids: Vec<i64>, counts: Vec<Bound<'_, PyAny>>) -> PyResult<Py<Self>> {
        if vids.len() != counts.len() {
            return Err(PyValueError::new_err("one vid per version"));
        }
        let raws = raws(&counts)?;
        let built = py.detach(|| {
            let mut rows = TermColumns::new();
            each_text(&raws, |i, json| {
                rows.reserve(json.len());
                terms(json, vids[i], &mut rows).ok_or_else(|| {
                    format!(
                        "the term counts of version {} are not a JSON object of integers, each term once",
                        vids[i]
                    )
                })
            })?;
            Ok::<_, String>(rows)
        });
        let rows = built.map_err(PyValueError::new_err)?;
        let length = rows.vids.len();
        let columns = vec![
            Column::Int64(rows.vids),
            Column::Utf8 {
                offsets: rows.offsets,
                data: rows.data,
            },
            Column::Int32(rows.counts),
            Column::Int32(rows.places),
        ];
        FactRows::batch(
            py,
            ArrowBatch::new(names(&["vid", "term", "n", "k"]), length, columns),
        )
    }

    /// (vid, signature) of each version whose signature is a list of `length` u64; the others (`null`,
    /// another scheme's length) are left out.
    #[staticmethod]
    fn signatures(
        py: Python<'_>,
        vids: Vec<i64>,
        signatures: Vec<Bound<'_, PyAny>>,
        length: usize,
    ) -> PyResult<Py<Self>> {
        if vids.len() != signatures.len() {
            return Err(PyValueError::new_err("one vid per version"));
        }
        let raws = raws(&signatures)?;
        let built = py.detach(|| {
            let (mut kept, mut offsets, mut values) = (Vec::new(), vec![0i32], Vec::new());
            each_text(&raws, |i, json| {
                if signature(json, Some(length), &mut values) {
                    kept.push(vids[i]);
                    offsets.push(
                        i32::try_from(values.len()).map_err(|_| "too many signature values")?,
                    );
                }
                Ok(())
            })?;
            Ok::<_, String>((kept, offsets, values))
        });
        let (kept, offsets, values) = built.map_err(PyValueError::new_err)?;
        let length = kept.len();
        let columns = vec![
            Column::Int64(kept),
            Column::List {
                offsets,
                items: Box::new(Column::UInt64(values)),
            },
        ];
        FactRows::batch(
            py,
            ArrowBatch::new(names(&["vid", "signature"]), length, columns),
        )
    }
}

impl FactRows {
    fn batch(py: Python<'_>, batch: ArrowBatch) -> PyResult<Py<Self>> {
        Py::new(py, PyClassInitializer::from(batch).add_subclass(FactRows))
    }
}
