//! predigest's compiled pass over a note (issue 14): `Reader.read(body)` reads a Markdown body once for what
//! the later stages need — its structure (pulldown-cmark), arXiv ids, normalised-text hash, token counts
//! and index terms, and rensa's MinHash signature — and hands them to Python in one call.
//!
//! The Python reference implementations (under tests/processors/reference/) define every result; a
//! property test holds these equal to them on random and real text.

mod arrow_stream;
mod arxiv;
mod front_matter;
mod json_indent;
mod json_rows;
mod json_string;
mod markup;
mod minhash;
mod near_pairs;
mod normal;
mod profile_scores;
mod raw_record;
mod record_batches;
mod structure;
mod text;
mod text_columns;
mod titles;
mod typed_columns;
mod unicode;
mod unicode_tables;
mod zstd_frame;

use std::sync::{Arc, OnceLock};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple, PyType};
use rustc_hash::FxHashSet;
use sha2::{Digest, Sha256};

use crate::structure::{BlockOut, Link, StructureOut};
use crate::normal::normalise;
use crate::text::{scan, token_hash, Token, Tokens};
use crate::titles::SectionScan;
use crate::unicode::{is_cjk, is_digit};

/// What the reader is configured with, shared by every reading.
struct Config {
    stopwords: FxHashSet<String>,
    permutations: minhash::Permutations,
    min_shingles: usize,
    index_terms: usize,
}

impl Config {
    /// `processors.tokens.is_index_term`: stopwords, bare numbers and single Latin letters say nothing.
    fn is_index_term(&self, token: &str) -> bool {
        let single_ascii = token.is_ascii() && token.len() == 1;
        !(self.stopwords.contains(token) || token.chars().all(is_digit) || single_ascii)
    }
}

/// Distinct tokens counted once, twice … `LEVELS` times and more: how `terms` finds the frequency its
/// candidates start from.
const LEVELS: usize = 64;

/// The tokens of each count (the last for `LEVELS` and over) and the sum of the counts, taken while the
/// pass has the table in cache.
fn count_levels(tokens: &Tokens) -> ([usize; LEVELS + 1], u64) {
    let mut levels = [0usize; LEVELS + 1];
    let mut length: u64 = 0;
    for t in tokens.table.iter() {
        length += u64::from(t.count);
        levels[(t.count as usize).min(LEVELS)] += 1;
    }
    (levels, length)
}

/// The Python types the reader builds (NamedTuples of processors.structure).
struct Types {
    block: Py<PyType>,
    section: Py<PyType>,
    structure: Py<PyType>,
}

/// Reads notes: configured once with the product's constants and the Python types it builds.
#[pyclass(frozen, module = "predigest_native")]
struct Reader {
    config: Arc<Config>,
    types: Arc<Types>,
}

/// One note read: its ids, hash and signature, its sections, what may title its ids, and its token counts
/// for `terms`; its whole structure is built as Python objects only when asked for.
#[pyclass(frozen, module = "predigest_native")]
struct NoteReading {
    #[pyo3(get)]
    arxiv_ids: Py<PyList>,
    #[pyo3(get)]
    invalid_ids: Py<PyList>,
    #[pyo3(get)]
    text_hash: Py<PyString>,
    #[pyo3(get)]
    signature: Py<PyTuple>,
    #[pyo3(get)]
    sections: Py<PyList>,
    #[pyo3(get)]
    title_scan: Py<PyList>,
    body: String,
    out: StructureOut,
    structure: OnceLock<Py<PyAny>>,
    types: Arc<Types>,
    norm: String,
    tokens: Tokens,
    levels: [usize; LEVELS + 1],
    body_length: u64,
    config: Arc<Config>,
}

/// The body as UTF-8: a str holding lone surrogates is read with each one as `?`, as the reference
/// encodes it, so that character offsets still index the body.
fn body_text(body: &Bound<'_, PyString>) -> PyResult<String> {
    match body.to_str() {
        Ok(s) => Ok(s.to_owned()),
        Err(_) => {
            let bytes = body.call_method1("encode", ("utf-8", "replace"))?;
            Ok(String::from_utf8_lossy(bytes.extract::<&[u8]>()?).into_owned())
        }
    }
}

fn sha256_hex(text: &str) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(text.as_bytes());
    let mut hex = String::with_capacity(64);
    for b in digest.iter() {
        hex.push(char::from(DIGITS[usize::from(b >> 4)]));
        hex.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    hex
}

#[pymethods]
impl Reader {
    #[new]
    #[pyo3(signature = (*, block, section, structure, stopwords, num_perm, seed, min_shingles, index_terms))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        block: Py<PyType>,
        section: Py<PyType>,
        structure: Py<PyType>,
        stopwords: FxHashSet<String>,
        num_perm: usize,
        seed: u64,
        min_shingles: usize,
        index_terms: usize,
    ) -> PyResult<Self> {
        if num_perm == 0 {
            return Err(pyo3::exceptions::PyValueError::new_err("num_perm must be at least 1"));
        }
        let config = Config {
            stopwords,
            permutations: minhash::Permutations::new(num_perm, seed),
            min_shingles,
            index_terms,
        };
        Ok(Reader { config: Arc::new(config), types: Arc::new(Types { block, section, structure }) })
    }

    /// `processors.terms.read_terms` of a text its URLs are taken out of: the counts of its index terms, words
    /// and CJK bigrams apart, each in order of first appearance (as `Counter` over `findall` keeps them), and
    /// the text normalised (None for a text holding lone surrogates: read with `?` in their place).
    fn term_parts<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'py, PyString>,
    ) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyDict>, Option<String>)> {
        let exact = text.to_str().is_ok();
        let text = body_text(text)?;
        let norm = normalise(&text);
        let found = scan(&norm, false);
        // A token's start is where it first occurs, and no two tokens start at one byte.
        let mut tokens: Vec<&Token> = found.tokens.table.iter().collect();
        tokens.sort_unstable_by_key(|t| t.start);
        let (words, cjk) = (PyDict::new(py), PyDict::new(py));
        for t in tokens {
            let token = &norm[t.start as usize..t.end as usize];
            // A CJK token is never a stopword, a number or a Latin letter: only words are asked.
            if token.chars().next().is_some_and(is_cjk) {
                cjk.set_item(token, t.count)?;
            } else if self.config.is_index_term(token) {
                words.set_item(token, t.count)?;
            }
        }
        Ok((words, cjk, exact.then_some(norm)))
    }

    /// The sections and blocks of a Markdown body (`processors.structure.Structure`).
    fn structure<'py>(&self, py: Python<'py>, body: &Bound<'py, PyString>) -> PyResult<Bound<'py, PyAny>> {
        let text = body_text(body)?;
        let out = py.detach(|| structure::parse(&text));
        py_structure(py, &self.types, &text, &out)
    }

    /// Everything the parse stage needs of a note's body, in one pass over it. `utf8`, when given, is the
    /// body's UTF-8 as the file holds it: the body is then not encoded again (a tenth of the pass). Bytes
    /// that are not UTF-8 or not as many characters as the body are ignored.
    #[pyo3(signature = (body, utf8=None))]
    fn read<'py>(&self, py: Python<'py>, body: &Bound<'py, PyString>, utf8: Option<&[u8]>) -> PyResult<NoteReading> {
        let given = utf8.and_then(|b| simdutf8::basic::from_utf8(b).ok());
        let (text, exact) = match given {
            Some(t) if t.chars().count() == body.len()? => (t.to_owned(), true),
            _ => match body.to_str() {
                Ok(t) => (t.to_owned(), true),
                Err(_) => (body_text(body)?, false),
            },
        };
        let config = Arc::clone(&self.config);
        let (out, scanned, ids, invalid, norm, hash, signature) = py.detach(|| {
            let out = structure::parse(&text);
            let scanned = titles::scan(&out);
            let ids = arxiv::extract_ids(&text);
            let invalid = arxiv::invalid_mentions(&text);
            let norm = normalise(&text);
            let read = scan(&norm, true);
            let hash = sha256_hex(&read.stripped);
            let signature = if read.tokens.len() < config.min_shingles {
                Vec::new()
            } else {
                let hashes: Vec<u64> = read.tokens.table.iter().map(|t| t.hash).collect();
                config.permutations.digest(&hashes)
            };
            let levels = count_levels(&read.tokens);
            (out, scanned, ids, invalid, (norm, read.tokens, levels), hash, signature)
        });
        let (norm, tokens, (levels, body_length)) = norm;
        Ok(NoteReading {
            arxiv_ids: PyList::new(py, ids)?.unbind(),
            invalid_ids: PyList::new(py, invalid)?.unbind(),
            text_hash: PyString::new(py, &hash).unbind(),
            signature: PyTuple::new(py, signature)?.unbind(),
            sections: py_sections(py, body, exact, &text, &out)?.unbind(),
            title_scan: py_title_scan(py, &out, &scanned)?.unbind(),
            body: text,
            out,
            structure: OnceLock::new(),
            types: Arc::clone(&self.types),
            norm,
            tokens,
            levels,
            body_length,
            config,
        })
    }
}

/// `(number, heading, level, text)` of every section, the fields of `processors.models.Section`. Each text
/// is a slice of the body's own str (a copy of its characters, nothing decoded) unless the body holds lone
/// surrogates, which the pass reads as `?`.
fn py_sections<'py>(
    py: Python<'py>,
    body: &Bound<'py, PyString>,
    exact: bool,
    text: &str,
    out: &StructureOut,
) -> PyResult<Bound<'py, PyList>> {
    let mut items = Vec::with_capacity(out.sections.len());
    for s in &out.sections {
        let section_text = if exact {
            substring(body, s.start, s.end)?
        } else {
            PyString::new(py, &text[s.bytes.0..s.bytes.1])
        };
        items.push((s.number.as_deref(), s.heading.as_str(), s.level, section_text).into_pyobject(py)?);
    }
    PyList::new(py, items)
}

/// `text[start:end]` of a Python str, by character offsets.
fn substring<'py>(text: &Bound<'py, PyString>, start: usize, end: usize) -> PyResult<Bound<'py, PyString>> {
    let (start, end) = (start as pyo3::ffi::Py_ssize_t, end as pyo3::ffi::Py_ssize_t);
    // SAFETY: a valid str and offsets within it; PyUnicode_Substring returns a new reference or NULL with an
    // exception set, which from_owned_ptr_or_err turns into an error.
    unsafe {
        let ptr = pyo3::ffi::PyUnicode_Substring(text.as_ptr(), start, end);
        Ok(Bound::from_owned_ptr_or_err(text.py(), ptr)?.cast_into_unchecked())
    }
}

/// `(index, level, number, heading, [(id, text, kind)], (id, text, heading_may_title) | None)` of every
/// section that offers a title (`titles::scan`).
fn py_title_scan<'py>(py: Python<'py>, out: &StructureOut, scanned: &[SectionScan]) -> PyResult<Bound<'py, PyList>> {
    let mut items = Vec::with_capacity(scanned.len());
    for s in scanned {
        let section = &out.sections[s.index];
        let raws = s
            .raws
            .iter()
            .map(|r| (r.id.as_str(), r.text.as_str(), PyString::intern(py, r.kind)).into_pyobject(py))
            .collect::<PyResult<Vec<_>>>()?;
        let named = match &s.named {
            Some(n) => (n.id.as_str(), n.text.as_str(), n.heading_may_title).into_pyobject(py)?.into_any(),
            None => py.None().into_bound(py),
        };
        let values =
            (s.index, section.level, section.number.as_deref(), section.heading.as_str(), PyList::new(py, raws)?, named);
        items.push(values.into_pyobject(py)?);
    }
    PyList::new(py, items)
}

fn py_structure<'py>(py: Python<'py>, types: &Types, body: &str, out: &StructureOut) -> PyResult<Bound<'py, PyAny>> {
    let headers = out
        .headers
        .iter()
        .map(|h| PyTuple::new(py, h))
        .collect::<PyResult<Vec<_>>>()?;
    let mut sections = Vec::with_capacity(out.sections.len());
    for s in &out.sections {
        let head = match &s.head {
            Some(h) => py_block(py, types, h, &headers)?,
            None => py.None().into_bound(py),
        };
        let blocks = s.blocks.iter().map(|b| py_block(py, types, b, &headers)).collect::<PyResult<Vec<_>>>()?;
        let values = (
            s.level,
            s.number.as_deref(),
            s.heading.as_str(),
            head,
            &body[s.bytes.0..s.bytes.1],
            s.start,
            s.end,
            PyTuple::new(py, blocks)?,
        );
        sections.push(make(py, &types.section, values.into_pyobject(py)?)?);
    }
    make(py, &types.structure, (PyTuple::new(py, sections)?,).into_pyobject(py)?)
}

fn py_block<'py>(
    py: Python<'py>,
    types: &Types,
    b: &BlockOut,
    headers: &[Bound<'py, PyTuple>],
) -> PyResult<Bound<'py, PyAny>> {
    let header = match b.header {
        Some(i) => headers[i].clone(),
        None => PyTuple::empty(py),
    };
    let cell_links = b.cell_links.iter().map(|l| links(py, l)).collect::<PyResult<Vec<_>>>()?;
    let values: [Bound<'py, PyAny>; 12] = [
        PyString::intern(py, b.kind.name()).into_any(),
        PyString::new(py, &b.text).into_any(),
        b.line.into_pyobject(py)?.into_any(),
        links(py, &b.links)?.into_any(),
        links(py, &b.images)?.into_any(),
        PyString::new(py, &b.lead).into_any(),
        b.depth.into_pyobject(py)?.into_any(),
        b.checked.into_pyobject(py)?.into_any(),
        b.quoted.into_pyobject(py)?.to_owned().into_any(),
        PyTuple::new(py, &b.cells)?.into_any(),
        PyTuple::new(py, cell_links)?.into_any(),
        header.into_any(),
    ];
    make(py, &types.block, PyTuple::new(py, values)?)
}

fn links<'py>(py: Python<'py>, links: &[Link]) -> PyResult<Bound<'py, PyTuple>> {
    if links.is_empty() {
        return Ok(PyTuple::empty(py));
    }
    PyTuple::new(py, links.iter().map(|(t, u)| (t.as_str(), u.as_str())))
}

/// An instance of a NamedTuple class from its values.
fn make<'py>(py: Python<'py>, cls: &Py<PyType>, values: Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
    let tuple_new = py.get_type::<PyTuple>().getattr(pyo3::intern!(py, "__new__"))?;
    tuple_new.call1((cls.bind(py), values))
}

#[pymethods]
impl NoteReading {
    /// The note's sections and blocks (`processors.structure.Structure`), built on first use.
    #[getter]
    fn structure(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if let Some(built) = self.structure.get() {
            return Ok(built.clone_ref(py));
        }
        let built = py_structure(py, &self.types, &self.body, &self.out)?.unbind();
        Ok(self.structure.get_or_init(|| built).clone_ref(py))
    }

    /// `processors.tokens.note_terms(note_index(counts, title), keep)` and the note's length (the sum of
    /// its index counts: body tokens once, title tokens twice).
    fn terms<'py>(
        &self,
        py: Python<'py>,
        title: &Bound<'py, PyString>,
        keep: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyDict>, u64)> {
        // A lone surrogate (a title from front matter may hold one) separates tokens, as `?` does.
        let title_norm = normalise(&body_text(title)?);
        let title_scan = scan(&title_norm, false);
        let title_tokens = &title_scan.tokens;
        let (candidates, length) = self.top_terms(&title_norm, title_tokens);
        let dict = PyDict::new(py);
        for (token, count) in &candidates {
            dict.set_item(*token, *count)?;
        }
        for k in keep.try_iter()? {
            let k = k?;
            // A term with a lone surrogate is no token of any text: never found.
            let Ok(term) = k.cast::<PyString>()?.to_str() else { continue };
            let hash = token_hash(term);
            let body = self.tokens.get(&self.norm, term, hash).unwrap_or(0);
            let title = title_tokens.get(&title_norm, term, hash).unwrap_or(0);
            if body + title > 0 {
                dict.set_item(&k, body + 2 * title)?;
            }
        }
        Ok((dict, length))
    }
}

impl NoteReading {
    /// The index terms of the note and its title, most frequent first (ties by the term), at most
    /// `index_terms` of them, and the note's length.
    ///
    /// Only the most frequent tokens can be among them: the tokens are counted by frequency first, and
    /// only those at or above the lowest frequency that leaves twice as many as are kept are tested for
    /// stopwords and sorted (all of them, when that leaves too few terms).
    fn top_terms<'a>(&'a self, title_norm: &'a str, title_tokens: &Tokens) -> (Vec<(&'a str, u32)>, u64) {
        let level = |count: u32| (count as usize).min(LEVELS);
        let (mut levels, mut length) = (self.levels, self.body_length);
        // Title tokens count twice: added to the body's count of the same token, or standing alone.
        let mut titled: Vec<(u32, &str, u32)> = Vec::new(); // (body start, token, count with the title's)
        for t in title_tokens.table.iter() {
            let token = &title_norm[t.start as usize..t.end as usize];
            length += u64::from(2 * t.count);
            match self.tokens.find(&self.norm, token, t.hash) {
                Some(b) => {
                    levels[level(b.count)] -= 1;
                    titled.push((b.start, token, b.count + 2 * t.count));
                }
                None => titled.push((u32::MAX, token, 2 * t.count)),
            }
            levels[level(titled[titled.len() - 1].2)] += 1;
        }
        let top = self.config.index_terms;
        let (mut floor, mut above) = (LEVELS, levels[LEVELS]);
        while floor > 1 && above < 2 * top {
            floor -= 1;
            above += levels[floor];
        }
        // A title from front matter may hold thousands of tokens: their body entries are looked up in a set.
        let in_title: FxHashSet<u32> = titled.iter().map(|(start, _, _)| *start).collect();
        let mut candidates = self.terms_from(floor as u32, &titled, &in_title);
        if candidates.len() < top && floor > 1 {
            candidates = self.terms_from(1, &titled, &in_title);
        }
        let order = |a: &(&str, u32), b: &(&str, u32)| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0));
        if candidates.len() > top && top > 0 {
            candidates.select_nth_unstable_by(top - 1, order);
        }
        candidates.truncate(top);
        candidates.sort_unstable_by(order);
        (candidates, length)
    }

    /// The index terms counted `floor` times or more, with their counts (`titled`: the title's tokens).
    fn terms_from<'a>(
        &'a self,
        floor: u32,
        titled: &[(u32, &'a str, u32)],
        in_title: &FxHashSet<u32>,
    ) -> Vec<(&'a str, u32)> {
        let mut out = Vec::new();
        for t in self.tokens.table.iter() {
            if t.count >= floor && (in_title.is_empty() || !in_title.contains(&t.start)) {
                let token = &self.norm[t.start as usize..t.end as usize];
                if self.config.is_index_term(token) {
                    out.push((token, t.count));
                }
            }
        }
        for &(_, token, count) in titled {
            if count >= floor && self.config.is_index_term(token) {
                out.push((token, count));
            }
        }
        out
    }
}

/// `processors.arxiv_ids.extract_arxiv_ids`: every valid arXiv id, without version, unique, in order.
#[pyfunction]
fn extract_arxiv_ids(py: Python<'_>, text: &str) -> Vec<String> {
    py.detach(|| arxiv::extract_ids(text))
}

#[pymodule]
fn predigest_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Reader>()?;
    m.add_class::<NoteReading>()?;
    m.add_class::<front_matter::PlainFrontMatter>()?;
    m.add_class::<json_indent::JsonIndenter>()?;
    m.add_class::<arrow_stream::ArrowBatch>()?;
    m.add_class::<text_columns::TextColumns>()?;
    m.add_class::<json_rows::FactRows>()?;
    m.add_class::<typed_columns::TypedColumns>()?;
    m.add_class::<profile_scores::ProfileScores>()?;
    m.add_function(wrap_pyfunction!(json_rows::fact_json_reads, m)?)?;
    m.add_function(wrap_pyfunction!(text_columns::is_utf8, m)?)?;
    m.add_function(wrap_pyfunction!(json_string::json_string, m)?)?;
    m.add_function(wrap_pyfunction!(json_string::json_ints, m)?)?;
    m.add_function(wrap_pyfunction!(json_string::json_counts, m)?)?;
    m.add_function(wrap_pyfunction!(raw_record::raw_content, m)?)?;
    m.add_function(wrap_pyfunction!(raw_record::raw_file_json, m)?)?;
    m.add_function(wrap_pyfunction!(record_batches::record_batches_intact, m)?)?;
    m.add_function(wrap_pyfunction!(extract_arxiv_ids, m)?)?;
    m.add_function(wrap_pyfunction!(near_pairs::near_candidates, m)?)?;
    m.add_function(wrap_pyfunction!(near_pairs::near_same, m)?)?;
    m.add_function(wrap_pyfunction!(zstd_frame::zstd_frame, m)?)?;
    m.add_function(wrap_pyfunction!(zstd_frame::zstd_unpack_into, m)?)?;
    Ok(())
}
