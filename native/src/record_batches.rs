//! The CRC-32C of every Kafka record batch in a fetched partition's bytes, checked with the CPU's CRC instruction:
//! aiokafka's own check runs a table-driven CRC (~1.9 GB/s, ~13 µs a note in the worker's consumer thread;
//! docs/performance.md "The documents topic's bytes, end to end").

use pyo3::prelude::*;

const LENGTH_AT: usize = 8; // base offset (8), then the batch's length (4) counted from the leader epoch on
const MAGIC_AT: usize = 16;
const CRC_AT: usize = 17;
const CRC_FROM: usize = 21; // the CRC covers the attributes to the batch's end (KIP-98)
const HEADER: usize = 61; // a v2 batch's header, its records after

/// True when `data` is whole v2 (magic 2) record batches back to back, each one's stored CRC-32C that of its bytes
/// from the attributes on, a partial batch at the end left aside as aiokafka leaves it; False for anything else
/// (a mismatch, an older message format, a malformed or negative length), which aiokafka then checks and reports
/// itself.
#[pyfunction]
pub fn record_batches_intact(py: Python<'_>, data: &[u8]) -> bool {
    py.detach(|| batches_intact(data))
}

fn batches_intact(data: &[u8]) -> bool {
    let mut at = 0;
    while data.len() - at > MAGIC_AT {
        let length =
            i32::from_be_bytes(data[at + LENGTH_AT..at + LENGTH_AT + 4].try_into().unwrap());
        let Ok(length) = usize::try_from(length) else {
            return false; // negative as aiokafka reads it: its pure-Python records can slice back from the end
        };
        let end = at + 12 + length;
        if end > data.len() {
            return true; // a batch cut off by the fetch size: aiokafka never reads it
        }
        if data[at + MAGIC_AT] != 2 || 12 + length < HEADER {
            return false;
        }
        let stored = u32::from_be_bytes(data[at + CRC_AT..at + CRC_FROM].try_into().unwrap());
        if crc32c::crc32c(&data[at + CRC_FROM..end]) != stored {
            return false;
        }
        at = end;
    }
    true
}
