//! `TypedColumns`: columns of Python values (text, integers, booleans, times, lists of text) handed to DuckDB as
//! one Arrow batch (`arrow_stream`), where its appender converted each value holding the GIL.
//!
//! The integers, booleans and times are read under the GIL (a few dozen ns each, where the appender spent ~0.4 µs
//! a value); the text is encoded without it, as `TextColumns` does.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::arrow_stream::{self, ArrowBatch, Column};
use crate::text_columns::{column, raw, Raw};

/// A column read under the GIL: done, or text whose UTF-8 is made once the GIL is released.
enum Read {
    Done(Column),
    Text(Vec<Raw>),
    TextLists(Vec<i32>, Vec<Raw>),
}

fn read<'py>(
    kind: &str,
    cells: &[Bound<'py, PyAny>],
    held: &mut Vec<Bound<'py, PyAny>>,
) -> PyResult<Read> {
    let ints = || {
        cells
            .iter()
            .map(|c| c.extract::<i64>())
            .collect::<PyResult<Vec<_>>>()
    };
    Ok(match kind {
        "text" => Read::Text(cells.iter().map(raw).collect::<PyResult<_>>()?),
        "int64" => Read::Done(Column::Int64(ints()?)),
        "timestamp" => Read::Done(Column::TimestampUtc(ints()?)),
        "float64" => Read::Done(Column::Float64(
            cells
                .iter()
                .map(|c| c.extract::<f64>())
                .collect::<PyResult<_>>()?,
        )),
        "int32" => Read::Done(Column::Int32(
            cells
                .iter()
                .map(|c| c.extract::<i32>())
                .collect::<PyResult<_>>()?,
        )),
        "int64?" => {
            let (mut values, mut valid, mut nulls) =
                (Vec::new(), vec![0u8; cells.len().div_ceil(8)], 0);
            for (i, c) in cells.iter().enumerate() {
                if c.is_none() {
                    values.push(0);
                    nulls += 1;
                } else {
                    values.push(c.extract::<i64>()?);
                    valid[i / 8] |= 1 << (i % 8);
                }
            }
            Read::Done(Column::NullableInt64 {
                values,
                valid,
                nulls,
            })
        }
        "bool" => {
            let mut bits = vec![0u8; cells.len().div_ceil(8)];
            for (i, c) in cells.iter().enumerate() {
                if c.extract::<bool>()? {
                    bits[i / 8] |= 1 << (i % 8);
                }
            }
            Read::Done(Column::Bool {
                bits,
                len: cells.len(),
            })
        }
        "text[]" => {
            let (mut offsets, mut raws) = (vec![0i32], Vec::new());
            for c in cells {
                for item in c.try_iter()? {
                    let item = item?;
                    raws.push(raw(&item)?);
                    held.push(item); // its string's buffer is read once the GIL is released
                }
                offsets.push(
                    i32::try_from(raws.len())
                        .map_err(|_| PyValueError::new_err("too many list items"))?,
                );
            }
            Read::TextLists(offsets, raws)
        }
        _ => return Err(PyValueError::new_err(format!("no column type {kind:?}"))),
    })
}

fn built(read: Read) -> Result<Column, String> {
    Ok(match read {
        Read::Done(c) => c,
        Read::Text(raws) => column(&raws)?,
        Read::TextLists(offsets, raws) => Column::List {
            offsets,
            items: Box::new(column(&raws)?),
        },
    })
}

/// Columns of the types named, one Arrow batch for DuckDB (`connection.from_arrow(columns)`): "text" (str or
/// UTF-8 bytes), "int64", "int64?" (None: NULL), "int32", "float64", "bool", "timestamp" (µs since the epoch, UTC),
/// "text[]" (each cell a sequence of str).
#[pyclass(extends = ArrowBatch, frozen, module = "predigest_native")]
pub struct TypedColumns;

#[pymethods]
impl TypedColumns {
    #[new]
    fn new(
        py: Python<'_>,
        names: Vec<String>,
        types: Vec<String>,
        columns: Vec<Vec<Bound<'_, PyAny>>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        if types.len() != columns.len() {
            return Err(PyValueError::new_err("one type per column"));
        }
        let (names, length) = arrow_stream::shape(names, &columns)?;
        let mut held = Vec::new();
        let reads = types
            .iter()
            .zip(&columns)
            .map(|(kind, cells)| read(kind, cells, &mut held))
            .collect::<PyResult<Vec<_>>>()?;
        // `columns` and `held` (and so every string) outlive the detached encoding.
        let built = py.detach(|| reads.into_iter().map(built).collect::<Result<Vec<_>, _>>());
        let built = built.map_err(PyValueError::new_err)?;
        drop(held);
        Ok(
            PyClassInitializer::from(ArrowBatch::new(names, length, built))
                .add_subclass(TypedColumns),
        )
    }
}
