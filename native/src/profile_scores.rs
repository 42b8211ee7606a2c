//! A source's scores against every axis profile, and the terms behind its score for one axis, from its counts of
//! the profile terms (`processors.relevance.AxisSpace`): ~7 and ~2 µs a source in Python, once per source of a
//! window that can hold 100k (docs/performance.md).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyMapping, PyString, PyTuple};
use rustc_hash::FxHashMap;

/// One occurrence of a term in a profile: its axis, and the living document's weight (None: a keyword).
type Entry = (usize, Option<f64>);

/// A profile term: the profile's own string (what the evidence names, shared by every source), its occurrences,
/// its place in the profile (the order a score's sums run in, whatever the counts' order).
struct Term {
    string: Py<PyString>,
    entries: Vec<Entry>,
    place: usize,
}

/// `round(x, 4)`: Rust's formatting rounds the exact binary value to the nearest, ties to even, as dtoa does for
/// Python, and reading it back is correctly rounded, as Python's is.
fn round4(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    format!("{x:.4}").parse().unwrap_or(x)
}

/// `counts` as a dict: itself, or a copy of another mapping's items.
fn as_dict<'py>(counts: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    if let Ok(d) = counts.cast::<PyDict>() {
        return Ok(d.clone());
    }
    let d = PyDict::new(counts.py());
    d.update(counts.cast::<PyMapping>()?)?;
    Ok(d)
}

/// A key of the counts as a term; None, skipped as Python's lookup of it in the profile missed, for a key that is
/// not a str or holds a lone surrogate (no term of any profile: terms are tokens of decoded text).
fn term_of<'a>(key: &'a Bound<'_, PyAny>) -> Option<&'a str> {
    key.cast::<PyString>().ok()?.to_str().ok()
}

/// The profiles as `AxisSpace._profile_index` holds them, with BM25's and the score's constants.
#[pyclass(frozen)]
pub struct ProfileScores {
    names: Vec<Py<PyString>>, // the axes, in the order of their numbers
    index: FxHashMap<String, Term>,
    shares: Vec<f64>, // per axis: the living document's share of its score (0.0 without living terms)
    average_length: f64,
    k1: f64,
    b: f64,
    softness: f64,
}

#[pymethods]
impl ProfileScores {
    #[new]
    fn new(
        names: Vec<Py<PyString>>,
        index: Vec<(Bound<'_, PyString>, Vec<Entry>)>,
        shares: Vec<f64>,
        average_length: f64,
        constants: (f64, f64, f64),
    ) -> PyResult<Self> {
        let (k1, b, softness) = constants;
        let axes = names.len();
        if shares.len() != axes || index.iter().any(|(_, e)| e.iter().any(|&(a, _)| a >= axes)) {
            return Err(PyValueError::new_err(
                "profile scores: an axis number out of range",
            ));
        }
        let mut terms = FxHashMap::default();
        for (place, (string, entries)) in index.into_iter().enumerate() {
            terms.insert(
                string.to_str()?.to_owned(),
                Term {
                    string: string.unbind(),
                    entries,
                    place,
                },
            );
        }
        Ok(Self {
            names,
            index: terms,
            shares,
            average_length,
            k1,
            b,
            softness,
        })
    }

    /// Axis name → its score rounded to 4 decimals as Python's `round` rounds (the nearest, ties to even: Rust's
    /// formatting, read back), as `_profile_scores` works each out: a term's
    /// BM25 saturation, keywords as a soft OR, the living terms' weighted share. `keyword_counts`: a unit's counts
    /// of its several-term keywords, whole (a term absent there counts as in `counts`).
    #[pyo3(signature = (counts, length, keyword_counts=None))]
    fn scores<'py>(
        &self,
        py: Python<'py>,
        counts: &Bound<'py, PyAny>,
        length: i64,
        keyword_counts: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let counts = as_dict(counts)?;
        let keyword_counts = keyword_counts.map(as_dict).transpose()?;
        let ratio = if length != 0 {
            length as f64 / self.average_length
        } else {
            1.0
        };
        let norm = self.k1 * (1.0 - self.b + self.b * ratio);
        // The terms used, each with its saturations, summed below in the profile's order: a stored source's
        // counts come in DuckDB's order (json_group_object, unordered), and float sums of three terms or more
        // depend on their order (Python's ran in its set's, the hash seed's).
        let mut used: Vec<(usize, &[Entry], f64, f64)> = Vec::new();
        for (key, value) in counts.iter() {
            let Some(term) = term_of(&key) else { continue };
            let Some(Term { entries, place, .. }) = self.index.get(term) else {
                continue;
            };
            let c: i64 = value.extract()?;
            let sat = if c != 0 {
                c as f64 / (c as f64 + norm)
            } else {
                0.0
            };
            let k: i64 = match &keyword_counts {
                Some(whole) => match whole.get_item(&key)? {
                    Some(v) => v.extract()?,
                    None => c,
                },
                None => c,
            };
            let keyword_sat = if k != 0 {
                k as f64 / (k as f64 + norm)
            } else {
                0.0
            };
            used.push((*place, entries.as_slice(), sat, keyword_sat));
        }
        used.sort_unstable_by_key(|u| u.0);
        let mut missing = vec![1.0f64; self.shares.len()];
        let mut coverage = vec![0.0f64; self.shares.len()];
        for (_, entries, sat, keyword_sat) in used {
            for &(axis, weight) in entries {
                match weight {
                    // C's pow, as Python's float power calls it (1.0 - keyword_sat is in (0, 1]).
                    None => missing[axis] *= (1.0 - keyword_sat).powf(self.softness),
                    Some(w) => coverage[axis] += w * sat,
                }
            }
        }
        let out = PyDict::new(py);
        for (axis, name) in self.names.iter().enumerate() {
            let share = self.shares[axis];
            out.set_item(
                name,
                round4((1.0 - share) * (1.0 - missing[axis]) + share * coverage[axis]),
            )?;
        }
        Ok(out)
    }

    /// The terms of `counts` in axis `axis`'s profile, most frequent first, ties by the term (as Python orders
    /// str: by code point, UTF-8's byte order), at most `limit`: the profile's own strings, which a window's
    /// relevances share instead of holding a copy a source.
    fn evidence<'py>(
        &self,
        py: Python<'py>,
        counts: &Bound<'py, PyAny>,
        axis: usize,
        limit: usize,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let mut found: Vec<(i64, &str, &Py<PyString>)> = Vec::new();
        for (key, value) in as_dict(counts)?.iter() {
            let Some(term) = term_of(&key) else { continue };
            let Some((
                own,
                Term {
                    string, entries, ..
                },
            )) = self.index.get_key_value(term)
            else {
                continue;
            };
            if entries.iter().any(|&(a, _)| a == axis) {
                found.push((value.extract()?, own.as_str(), string));
            }
        }
        found.sort_by(|x, y| y.0.cmp(&x.0).then_with(|| x.1.cmp(y.1)));
        PyTuple::new(
            py,
            found
                .into_iter()
                .take(limit)
                .map(|(_, _, string)| string.bind(py)),
        )
    }
}
