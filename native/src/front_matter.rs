//! The flat front matter most notes carry — one `key: value` per line — read to the values PyYAML builds
//! (`processors.plain_front_matter`; its Python reading is the reference under tests/processors/reference/).
//!
//! The syntax is read here, line by line; what a plain scalar *means* (bool, int, float, null, timestamp or
//! str) is PyYAML's to say, through the resolver the reader is given, which is called only for scalars whose
//! first character may start an implicit tag. Anything outside the flat syntax is declined (None) and read
//! by PyYAML within its bounds.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

/// A value of one line, as the reference's `_LINE` regex reads it.
enum Value<'a> {
    Null,                           // `key:` with nothing after it
    Quoted(&'a str),                // `"…"` without escapes, `'…'` without quotes
    Plain(&'a str),                 // a plain scalar, resolved by PyYAML's rules
    Seq(Vec<&'a str>),              // `[a, b]`: plain items
    Map(Vec<(&'a str, Entry<'a>)>), // `{k: v}`: plain keys
}

enum Entry<'a> {
    Quoted(&'a str),
    Plain(&'a str),
}

/// Characters YAML reads the same in every context (the reference's `_PRINTABLE`): printable, no tab, CR,
/// NEL, BOM or line/paragraph separator.
fn printable(c: char) -> bool {
    matches!(c, '\n' | '\x20'..='\x7e' | '\u{a0}'..='\u{2027}' | '\u{202a}'..='\u{d7ff}' | '\u{e000}'..='\u{fefe}'
        | '\u{ff00}'..='\u{fffd}' | '\u{10000}'..='\u{10ffff}')
}

/// `[A-Za-z_][A-Za-z0-9_-]{0,127}` at the start of `s`, then `:`: the key and what follows the colon.
fn key(s: &str) -> Option<(&str, &str)> {
    let b = s.as_bytes();
    if !b
        .first()
        .is_some_and(|&c| c.is_ascii_alphabetic() || c == b'_')
    {
        return None;
    }
    let n = 1 + b[1..]
        .iter()
        .take_while(|&&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
        .count();
    (n <= 128 && b.get(n) == Some(&b':')).then(|| (&s[..n], &s[n + 1..]))
}

/// The inside of `open … close` spanning all of `v`, holding none of `banned`.
fn enclosed<'a>(v: &'a str, open: char, close: char, banned: &str) -> Option<&'a str> {
    let inner = v.strip_prefix(open)?.strip_suffix(close)?;
    (!inner.contains(|c| banned.contains(c))).then_some(inner)
}

/// One line without its trailing spaces; None when it is not `key: value` of the flat syntax.
fn line(l: &str) -> Option<(&str, Value<'_>)> {
    let (k, rest) = key(l)?;
    if rest.is_empty() {
        return Some((k, Value::Null));
    }
    let v = rest.trim_start_matches(' ');
    if v.len() == rest.len() || v.is_empty() {
        return None;
    }
    let value = match v.as_bytes()[0] {
        b'"' => Value::Quoted(enclosed(v, '"', '"', "\"\\")?),
        b'\'' => Value::Quoted(enclosed(v, '\'', '\'', "'")?),
        b'[' => Value::Seq(seq(enclosed(v, '[', ']', "[]{}#\"'&*!|>%@`:\\")?)?),
        b'{' => Value::Map(map(enclosed(v, '{', '}', "[]{}#'&*!|>%@`\\")?)?),
        c if b" -?:,[]{}#&*!|>'\"%@`\\".contains(&c) => return None,
        _ if v.contains('#') => return None,
        // A mapping inside a plain value: PyYAML refuses it.
        _ if v.contains(": ") || v.ends_with(':') => return None,
        _ => Value::Plain(v),
    };
    Some((k, value))
}

/// The items of a one-line list: plain scalars that open with no indicator.
fn seq(inner: &str) -> Option<Vec<&str>> {
    let items: Vec<&str> = inner.split(',').map(|i| i.trim_matches(' ')).collect();
    if items.len() == 1 && items[0].is_empty() {
        return Some(Vec::new());
    }
    items
        .iter()
        .all(|i| !i.is_empty() && !i.starts_with(['-', '?']))
        .then_some(items)
}

/// The entries of a one-line mapping: a key, then a double-quoted string without quotes in it or a plain
/// scalar without `:` or `"`.
fn map(inner: &str) -> Option<Vec<(&str, Entry<'_>)>> {
    if inner.trim_matches(' ').is_empty() {
        return Some(Vec::new());
    }
    let mut out = Vec::new();
    for e in inner.split(',') {
        let (k, rest) = key(e.trim_matches(' '))?;
        let v = rest.trim_start_matches(' ');
        if v.len() == rest.len() || v.is_empty() {
            return None;
        }
        let entry = if v.starts_with('"') {
            Entry::Quoted(enclosed(v, '"', '"', "\"")?)
        } else if v.starts_with([' ', '-', '?', ':', '"']) || v.contains([':', '"']) {
            return None;
        } else {
            Entry::Plain(v)
        };
        out.push((k, entry));
    }
    Some(out)
}

/// Reads flat front matter, resolving plain scalars with PyYAML's rules through `resolve`.
#[pyclass(frozen, module = "predigest_native")]
pub struct PlainFrontMatter {
    resolve: Py<PyAny>,
    starts: Vec<char>,
    every: bool,
}

impl PlainFrontMatter {
    /// A plain scalar as PyYAML makes it: a str unless its first character may start an implicit tag.
    fn scalar<'py>(&self, py: Python<'py>, s: &str) -> PyResult<Bound<'py, PyAny>> {
        let first = s.chars().next();
        if self.every || first.is_some_and(|c| self.starts.contains(&c)) {
            return self.resolve.bind(py).call1((s,));
        }
        Ok(PyString::new(py, s).into_any())
    }

    fn value<'py>(&self, py: Python<'py>, v: &Value<'_>) -> PyResult<Bound<'py, PyAny>> {
        Ok(match v {
            Value::Null => py.None().into_bound(py),
            Value::Quoted(s) => PyString::new(py, s).into_any(),
            Value::Plain(s) => self.scalar(py, s)?,
            Value::Seq(items) => {
                let items = items
                    .iter()
                    .map(|i| self.scalar(py, i))
                    .collect::<PyResult<Vec<_>>>()?;
                PyList::new(py, items)?.into_any()
            }
            Value::Map(entries) => {
                let dict = PyDict::new(py);
                for (k, e) in entries {
                    let value = match e {
                        Entry::Quoted(s) => PyString::new(py, s).into_any(),
                        Entry::Plain(s) => self.scalar(py, s)?,
                    };
                    dict.set_item(self.scalar(py, k)?, value)?;
                }
                dict.into_any()
            }
        })
    }
}

#[pymethods]
impl PlainFrontMatter {
    /// `resolve`: a plain scalar's value by PyYAML's resolver and constructors (raising to decline it);
    /// `starts`: the characters its implicit resolvers are keyed by; `every`: whether any is tried on all.
    #[new]
    #[pyo3(signature = (*, resolve, starts, every))]
    fn new(resolve: Py<PyAny>, starts: &str, every: bool) -> Self {
        PlainFrontMatter {
            resolve,
            starts: starts.chars().collect(),
            every,
        }
    }

    /// The mapping PyYAML would load from `block`, when it is one `key: value` per line; None otherwise
    /// (an empty block too: PyYAML's own path says what that is).
    fn read<'py>(
        &self,
        py: Python<'py>,
        block: &Bound<'py, PyString>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        // A lone surrogate is no printable character: such a block is PyYAML's.
        let Ok(block) = block.to_str() else {
            return Ok(None);
        };
        if !block.chars().all(printable) {
            return Ok(None);
        }
        let mut lines = Vec::new();
        for l in block.split('\n') {
            if l.trim_matches(' ').is_empty() {
                continue;
            }
            match line(l.trim_end_matches(' ')) {
                Some(read) => lines.push(read),
                None => return Ok(None),
            }
        }
        if lines.is_empty() {
            return Ok(None);
        }
        let data = PyDict::new(py);
        for (k, v) in &lines {
            let value = self.value(py, v)?;
            data.set_item(self.scalar(py, k)?, value)?;
        }
        Ok(Some(data))
    }
}
