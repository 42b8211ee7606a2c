//! A `predigest.raw` record's content found and decoded here, the rest of the record left to pydantic: its JSON
//! parser read the ~18 KB of base64 a character at a time into a `str` (~15 µs a note) before decoding it
//! (docs/performance.md). Only a record as the watcher writes it is split; any other is left whole to pydantic.

use memchr::memmem;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

const KEY: &[u8] = b"\"content\":\"";
const BAD: u8 = 0xFF;

/// The URL-safe base64 alphabet's values (what pydantic writes bytes as); BAD for every other byte.
static VALUES: [u8; 256] = {
    let mut t = [BAD; 256];
    let mut i = 0;
    while i < 26 {
        t[b'A' as usize + i] = i as u8;
        t[b'a' as usize + i] = 26 + i as u8;
        i += 1;
    }
    let mut d = 0;
    while d < 10 {
        t[b'0' as usize + d] = 52 + d as u8;
        d += 1;
    }
    t[b'-' as usize] = 62;
    t[b'_' as usize] = 63;
    t
};

/// How many bytes padded URL-safe base64 `s` holds, or None when its length cannot be one.
fn decoded_len(s: &[u8]) -> Option<usize> {
    if s.len() % 4 != 0 {
        return None;
    }
    let pad = s.iter().rev().take(2).take_while(|&&c| c == b'=').count();
    Some(s.len() / 4 * 3 - pad)
}

/// Padded, canonical URL-safe base64 `s` (its last character's unused bits zero) decoded into `out` (of
/// `decoded_len` bytes); false for any other text: pydantic decodes these alike and reads the rest its own way.
fn decode(s: &[u8], out: &mut [u8]) -> bool {
    let body = &s[..s.len() - (s.len() / 4 * 3 - out.len())];
    let (mut o, mut i) = (0, 0);
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is there; `decode_avx2` reads and writes within the slices it is given.
        match unsafe { simd::decode_avx2(body, out) } {
            Some(done) => (i, o) = done,
            None => return false,
        }
    }
    let body = &body[i..];
    let mut eights = body.chunks_exact(8);
    for chunk in eights.by_ref() {
        let (mut acc, mut bad) = (0u64, 0u8);
        for &c in chunk {
            let v = VALUES[c as usize];
            bad |= v;
            acc = acc << 6 | u64::from(v);
        }
        if bad & 0xC0 != 0 {
            return false;
        }
        out[o..o + 6].copy_from_slice(&acc.to_be_bytes()[2..]);
        o += 6;
    }
    let mut values = [0u32; 8];
    let rest = eights.remainder();
    for (v, &c) in values.iter_mut().zip(rest) {
        *v = u32::from(VALUES[c as usize]);
        if *v > 63 {
            return false;
        }
    }
    let mut quads = values[..rest.len()].chunks_exact(4);
    for q in quads.by_ref() {
        let n = q[0] << 18 | q[1] << 12 | q[2] << 6 | q[3];
        out[o..o + 3].copy_from_slice(&n.to_be_bytes()[1..]);
        o += 3;
    }
    match *quads.remainder() {
        [] => true,
        [a, b] if b & 0x0F == 0 => {
            out[o] = (a << 2 | b >> 4) as u8;
            true
        }
        [a, b, c] if c & 0x03 == 0 => {
            let n = a << 10 | b << 4 | c >> 2;
            out[o..o + 2].copy_from_slice(&(n as u16).to_be_bytes());
            true
        }
        _ => false,
    }
}

/// `(record, content)`: the raw record with its content emptied (`"content":""`) and its content decoded; None
/// unless the record holds no backslash (no escape anywhere, so every key is written as it reads), names
/// `"content"` once, followed at once by its string, and that string is padded canonical URL-safe base64.
#[pyfunction]
pub fn raw_content<'py>(py: Python<'py>, value: &[u8]) -> Option<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    if memchr::memchr(b'\\', value).is_some() {
        return None;
    }
    let at = memmem::find(value, KEY)?;
    let start = at + KEY.len();
    if memmem::find(&value[start..], &KEY[..KEY.len() - 2]).is_some() {
        return None; // "content" again: a duplicated key (the last one counts)
    }
    let end = start + memchr::memchr(b'"', &value[start..])?;
    let text = &value[start..end];
    let length = decoded_len(text)?;
    let mut read = false;
    let content = PyBytes::new_with(py, length, |out| {
        read = decode(text, out);
        Ok(())
    })
    .ok()?;
    if !read {
        return None;
    }
    let rest = PyBytes::new_with(py, value.len() - text.len(), |out| {
        out[..start].copy_from_slice(&value[..start]);
        out[start..].copy_from_slice(&value[end..]);
        Ok(())
    })
    .ok()?;
    Some((rest, content))
}

/// Thirty-two characters at a time (Muła and Lemire's base64 decoding, with the URL-safe alphabet's tables).
#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::*;

    /// (characters, bytes) decoded from the start of `s` into `out`, in blocks of 32 while `out` has room for a
    /// whole 32-byte store; None when a character is not of the alphabet.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn decode_avx2(s: &[u8], out: &mut [u8]) -> Option<(usize, usize)> {
        // A character is refused when LO[its low nibble] & HI[its high nibble] != 0: one bit a high nibble.
        // 2: '-' (low D) alone; 3: '0'-'9'; 4: 'A'-'O' (not 0x40); 5: 'P'-'Z' and '_' (low 0-A, F); 6: 'a'-'o';
        // 7: 'p'-'z' (low 0-A); any other high nibble (bit 6) never.
        const fn lo_table() -> [i8; 16] {
            let mut t = [0i8; 16];
            let mut l = 0;
            while l < 16 {
                let mut bits = 0x40u8;
                if l != 0xD {
                    bits |= 0x01;
                }
                if l > 9 {
                    bits |= 0x02;
                }
                if l == 0 {
                    bits |= 0x04 | 0x10;
                }
                if l >= 0xB && l <= 0xE {
                    bits |= 0x08;
                }
                if l > 0xA {
                    bits |= 0x20;
                }
                t[l] = bits as i8;
                l += 1;
            }
            t
        }
        const LO: [i8; 16] = lo_table();
        const HI: [i8; 16] = [0x40, 0x40, 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40];
        // What each high nibble adds to a character for its value ('_' apart: -32).
        const ROLL: [i8; 16] = [0, 0, 17, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0];
        let lo = _mm256_broadcastsi128_si256(_mm_loadu_si128(LO.as_ptr().cast()));
        let hi = _mm256_broadcastsi128_si256(_mm_loadu_si128(HI.as_ptr().cast()));
        let roll = _mm256_broadcastsi128_si256(_mm_loadu_si128(ROLL.as_ptr().cast()));
        let nibble = _mm256_set1_epi8(0x0F);
        let underscore = _mm256_set1_epi8(b'_' as i8);
        let pack = _mm256_setr_epi8(
            2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1, 2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1,
            -1, -1,
        );
        let lanes = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 7, 7);
        let (mut i, mut o) = (0, 0);
        while i + 32 <= s.len() && o + 32 <= out.len() {
            let v = _mm256_loadu_si256(s.as_ptr().add(i).cast());
            let his = _mm256_and_si256(_mm256_srli_epi32(v, 4), nibble);
            let los = _mm256_and_si256(v, nibble);
            let bad = _mm256_and_si256(_mm256_shuffle_epi8(lo, los), _mm256_shuffle_epi8(hi, his));
            if _mm256_testz_si256(bad, bad) == 0 {
                return None;
            }
            let add = _mm256_blendv_epi8(_mm256_shuffle_epi8(roll, his), _mm256_set1_epi8(-32), _mm256_cmpeq_epi8(v, underscore));
            let values = _mm256_add_epi8(v, add);
            let pairs = _mm256_maddubs_epi16(values, _mm256_set1_epi32(0x0140_0140));
            let words = _mm256_madd_epi16(pairs, _mm256_set1_epi32(0x0001_1000));
            let bytes = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(words, pack), lanes);
            _mm256_storeu_si256(out.as_mut_ptr().add(o).cast(), bytes);
            i += 32;
            o += 24;
        }
        Some((i, o))
    }
}
