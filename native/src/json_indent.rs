//! Compact JSON indented as pydantic's `to_json(indent=n)` writes it (serde's pretty formatter), fed a piece at a
//! time: the `.json` file of a briefing made from the compact JSON already serialised, not from the model again.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

#[pyclass(module = "predigest_native")]
pub struct JsonIndenter {
    indent: usize,
    depth: usize,
    in_string: bool,
    escaped: bool,
    open: Option<u8>, // `[` or `{` seen, not yet written: `[]` and `{}` stay on one line
}

impl JsonIndenter {
    fn line(&self, out: &mut Vec<u8>) {
        out.push(b'\n');
        out.resize(out.len() + self.depth * self.indent, b' ');
    }

    fn string(&mut self, piece: &[u8], out: &mut Vec<u8>) -> usize {
        // Inside a string every byte is copied; only its closing quote (not escaped) ends it.
        let mut at = 0;
        if self.escaped {
            // The piece before ended on a backslash: this byte is the escaped one.
            self.escaped = false;
            at = 1;
        }
        while let Some(found) = memchr::memchr2(b'"', b'\\', &piece[at..]) {
            let end = at + found;
            if piece[end] == b'"' {
                self.in_string = false;
                out.extend_from_slice(&piece[..=end]);
                return end + 1;
            }
            if end + 1 == piece.len() {
                self.escaped = true;
                break;
            }
            at = end + 2;
        }
        out.extend_from_slice(piece);
        piece.len()
    }

    fn token(&mut self, c: u8, out: &mut Vec<u8>) {
        if let Some(open) = self.open.take() {
            if (open, c) == (b'[', b']') || (open, c) == (b'{', b'}') {
                out.extend_from_slice(&[open, c]);
                return;
            }
            out.push(open);
            self.depth += 1;
            self.line(out);
        }
        match c {
            b'[' | b'{' => self.open = Some(c),
            b']' | b'}' => {
                self.depth = self.depth.saturating_sub(1);
                self.line(out);
                out.push(c);
            }
            b',' => {
                out.push(c);
                self.line(out);
            }
            b':' => out.extend_from_slice(b": "),
            b'"' => {
                out.push(c);
                self.in_string = true;
            }
            _ => out.push(c),
        }
    }
}

#[pymethods]
impl JsonIndenter {
    #[new]
    #[pyo3(signature = (indent = 2))]
    fn new(indent: usize) -> Self {
        JsonIndenter {
            indent,
            depth: 0,
            in_string: false,
            escaped: false,
            open: None,
        }
    }

    /// The indented bytes of the next piece of compact JSON (a piece may end anywhere, inside a string too).
    fn feed<'py>(&mut self, py: Python<'py>, piece: &[u8]) -> Bound<'py, PyBytes> {
        let mut out = Vec::with_capacity(piece.len() + piece.len() / 2);
        let mut at = 0;
        while at < piece.len() {
            if self.in_string {
                at += self.string(&piece[at..], &mut out);
            } else {
                self.token(piece[at], &mut out);
                at += 1;
            }
        }
        PyBytes::new(py, &out)
    }

    /// What is left once the last piece was fed (an opening bracket still held).
    fn finish<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let rest: Vec<u8> = self.open.take().into_iter().collect();
        PyBytes::new(py, &rest)
    }
}
