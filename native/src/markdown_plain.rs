//! Whether a briefing's Markdown cell needs escaping (`processors.render_markdown._plain`): one pass over the
//! string's code points as CPython holds them, not the regex's ~12 ns a character over the ~2.5 MB of a 10k
//! window's rows (docs/performance.md).

use pyo3::prelude::*;
use pyo3::types::string::PyStringData;
use pyo3::types::PyString;

/// A code point `processors.inert.markdown_inline` changes: `<`, `>`, `&`, `|`, `\`, `[`, `str.isspace`'s white
/// space but the space itself, and the control and bidi characters of `processors.inert.CONTROL`.
#[inline]
fn escaped(c: u32) -> bool {
    matches!(
        c,
        0x00..=0x1f // controls, `\t\n\x0b\x0c\r` and `\x1c-\x1f` among them
            | 0x26 | 0x3c | 0x3e | 0x5b | 0x5c | 0x7c // & < > [ \ |
            | 0x7f..=0xa0 // DEL, the C1 controls (NEL, 0x85, among them) and NBSP
            | 0x061c
            | 0x1680
            | 0x2000..=0x200a
            | 0x200e
            | 0x200f
            | 0x2028..=0x202f // line and paragraph separators, the bidi embeddings, a narrow NBSP
            | 0x205f
            | 0x2066..=0x2069
            | 0x3000
    )
}

fn plain_units<T: Copy + Into<u32>>(units: &[T]) -> bool {
    let mut space = false;
    for &unit in units {
        let c = unit.into();
        if c == 0x20 {
            if space {
                return false; // a double space, which `markdown_inline` collapses
            }
            space = true;
        } else if escaped(c) {
            return false;
        } else {
            space = false;
        }
    }
    true
}

/// True when `markdown_inline` leaves the text as it is: no double space and none of its escaped characters.
#[pyfunction]
pub fn markdown_plain(text: &Bound<'_, PyString>) -> PyResult<bool> {
    // SAFETY: the buffer is read while `text` is borrowed, under the GIL; str is immutable.
    let data = unsafe { text.data()? };
    Ok(match data {
        PyStringData::Ucs1(b) => plain_units(b),
        PyStringData::Ucs2(b) => plain_units(b),
        PyStringData::Ucs4(b) => plain_units(b),
    })
}
