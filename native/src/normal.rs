//! `processors.tokens.normalise` over a note: NFKC, then lower case, each run only where the text needs it
//! (most of a note is ASCII and unified ideographs, passed without decoding a character). The token scan
//! (`text.rs`) reads what this returns.

use std::borrow::Cow;

use unicode_normalization::char::canonical_combining_class;
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

use crate::unicode::{is_assigned, is_unified_ideograph};

/// `processors.tokens.normalise`: NFKC, then lower case (with Greek final sigma, as `str.lower` does).
pub fn normalise(text: &str) -> String {
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    // Most notes: every code point assigned, found out on the way through the NFKC pass.
    if let Some((nfkc, cased)) = nfkc_stretches(text, true) {
        return lower(nfkc, cased);
    }
    // A code point the reference's Unicode does not assign is, to Python, a starter that neither composes
    // nor changes case: the text is normalised in the stretches between such code points.
    let mut out = String::with_capacity(text.len());
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if !is_assigned(c) {
            out.push_str(&normalise_assigned(&text[start..i]));
            out.push(c);
            start = i + c.len_utf8();
        }
    }
    out.push_str(&normalise_assigned(&text[start..]));
    out
}

fn normalise_assigned(text: &str) -> String {
    match nfkc_stretches(text, false) {
        Some((nfkc, cased)) => lower(nfkc, cased),
        None => lowercase(&text.nfkc().collect::<String>()), // never: unassigned code points are not checked
    }
}

/// Whether `c` is its own NFKC and no character before it can change with it (NFKC_QC=Yes, ccc=0): text can
/// be normalised in pieces cut before such characters. ASCII and the CJK unified ideographs (most of a
/// note) are answered without a look-up.
#[inline]
fn inert(c: char) -> bool {
    match c as u32 {
        0..=0x7f | 0x4e00..=0x9fff => true,
        // The punctuation of a Chinese note, answered without the two look-ups: `、` `。` `×` `÷` `–` `—`
        // and the curly quotes are their own NFKC (no decomposition, ccc=0); the full-width forms are not.
        0x3001 | 0x3002 | 0xd7 | 0xf7 | 0x2013 | 0x2014 | 0x2018..=0x201d => true,
        0xff01..=0xff5e => false,
        _ => {
            canonical_combining_class(c) == 0
                && is_nfkc_quick(std::iter::once(c)) == IsNormalized::Yes
        }
    }
}

/// Lower case of NFKC'd text: ASCII lowered in place when the NFKC pass met no other character with a case.
fn lower(nfkc: Cow<'_, str>, cased: bool) -> String {
    match nfkc {
        _ if cased => lowercase(&nfkc),
        Cow::Borrowed(text) => text.to_ascii_lowercase(),
        Cow::Owned(mut text) => {
            text.make_ascii_lowercase();
            text
        }
    }
}

/// Whether lower case changes a character that is not ASCII (`Σ` among them, the one lowered by context).
#[inline]
fn lowers(c: char) -> bool {
    if c.is_ascii() || caseless(c) {
        return false;
    }
    let mut lower = c.to_lowercase();
    lower.len() != 1 || lower.next() != Some(c)
}

/// NFKC of `text`, run only over the stretches that need it: a stretch is a run of characters that are not
/// inert, with the character before it (which may compose with the first: `e` + U+0301 is `é`). Chinese text
/// always has some full-width punctuation to fold, and NFKC of the whole note cost more than the rest of
/// the pass. Borrowed when nothing needs it. None, when `assigned` asks so, at a code point the reference's
/// Unicode does not assign (the text is then normalised between such code points). With it, whether the result
/// may hold a character other than ASCII that lower case changes: every character read on the way is asked,
/// and a stretch NFKC'd in general says yes (most notes: no, and lower case is ASCII's alone).
fn nfkc_stretches(text: &str, assigned: bool) -> Option<(Cow<'_, str>, bool)> {
    let bytes = text.as_bytes();
    let n = bytes.len();
    let mut out = String::new();
    let mut copied = 0; // bytes of `text` already in `out`
    let mut stretch: Option<usize> = None; // start of the stretch being read
    let mut prev = 0; // start of the previous character
    let mut cased = false;
    let mut i = 0;
    while i < n {
        if stretch.is_none() && plain_lead(bytes[i]) {
            // ASCII and U+4000…U+9FFF (`plain_lead`), sixteen bytes at a time: most of a note is passed
            // without decoding a character.
            i = plain_end(bytes, i);
            prev = if bytes[i - 1] < 0x80 { i - 1 } else { i - 3 };
            continue;
        }
        let c = text[i..].chars().next().unwrap_or('\0');
        if assigned && !is_assigned(c) {
            return None;
        }
        cased = cased || lowers(c);
        if inert(c) {
            if let Some(start) = stretch.take() {
                cased |= push_nfkc(&mut out, &text[start..i]);
                copied = i;
            }
        } else if stretch.is_none() {
            let start = if i > 0 { prev } else { 0 };
            if out.capacity() == 0 {
                out.reserve(n + 16);
            }
            out.push_str(&text[copied..start]);
            stretch = Some(start);
        }
        prev = i;
        i += c.len_utf8();
    }
    match stretch {
        Some(start) => cased |= push_nfkc(&mut out, &text[start..]),
        None if copied == 0 => return Some((Cow::Borrowed(text), cased)),
        None => out.push_str(&text[copied..]),
    }
    Some((Cow::Owned(out), cased))
}

/// NFKC of one stretch. The common one — full-width ASCII (`，`, `（`, `：`), maybe after an inert character —
/// maps character by character: U+FF01…U+FF5E are `<wide>` forms of U+0021…U+007E, and an ASCII character
/// composes with nothing before it. True when the stretch took the general NFKC, whose characters are not
/// known to be without case.
fn push_nfkc(out: &mut String, stretch: &str) -> bool {
    let wide = |c: char| ('\u{ff01}'..='\u{ff5e}').contains(&c);
    let mut chars = stretch.chars();
    let first = chars.next();
    if first.is_some_and(|c| wide(c) || inert(c)) && chars.clone().all(wide) {
        for c in first.into_iter().chain(chars) {
            out.push(if wide(c) {
                char::from_u32(c as u32 - 0xfee0).unwrap_or(c)
            } else {
                c
            });
        }
        return false;
    }
    out.extend(stretch.nfkc());
    true
}

/// Characters without case that a note is full of: CJK punctuation, kana, the unified ideographs, Hangul.
#[inline]
fn caseless(c: char) -> bool {
    // Also: `×` `÷`, general punctuation, and the full-width forms up to `＠` (`Ａ` is U+FF21).
    matches!(c as u32, 0xd7 | 0xf7 | 0x2000..=0x206f | 0x3000..=0x30ff | 0x4e00..=0x9fff | 0xac00..=0xd7af | 0xff01..=0xff20)
}

const ASCII_MASK: u64 = 0x8080_8080_8080_8080;

/// Whether a character led by byte `b` is passed as it is by NFKC and lower case, and assigned in the
/// reference's Unicode: ASCII, and U+4000…U+9FFF (lead 0xe4…0xe9: the unified ideographs, most of a Chinese
/// note, with CJK extension A and the hexagrams), all their own NFKC, composing with nothing, caseless.
#[inline]
fn plain_lead(b: u8) -> bool {
    b < 0x80 || (0xe4..=0xe9).contains(&b)
}

/// The end of the run of such characters from `i` (a character boundary): sixteen bytes at a time where the
/// CPU's baseline vectors allow (SSE2 on every x86-64), a lead byte of any other character stopping it; then
/// a word of ASCII or a character at a time. Mixed Chinese and English text is one run, without a branch at
/// each change of script.
#[inline]
fn plain_end(bytes: &[u8], mut i: usize) -> usize {
    let n = bytes.len();
    #[cfg(target_arch = "x86_64")]
    {
        while i + 16 <= n {
            // SAFETY: 16 bytes from `i` are within `bytes` (checked above); SSE2 is part of x86-64's baseline.
            let stops = unsafe { other_leads16(bytes.as_ptr().add(i)) };
            if stops != 0 {
                return i + stops.trailing_zeros() as usize;
            }
            i += 16;
        }
        // Sixteen bytes may end inside a character, whose lead byte was read.
        while i < n && bytes[i] & 0xc0 == 0x80 {
            i += 1;
        }
    }
    while i < n {
        if i + 8 <= n && word_at(bytes, i) & ASCII_MASK == 0 {
            i += 8;
        } else if bytes[i] < 0x80 {
            i += 1;
        } else if plain_lead(bytes[i]) {
            i += 3;
        } else {
            break;
        }
    }
    i
}

/// A bit for each of the 16 bytes at `p` that leads a character `plain_lead` does not pass (0xc0 and over,
/// but 0xe4…0xe9).
#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn other_leads16(p: *const u8) -> u32 {
    use std::arch::x86_64::*;
    let x = _mm_loadu_si128(p.cast());
    let at_least = |b: u8| _mm_cmpeq_epi8(_mm_max_epu8(x, _mm_set1_epi8(b as i8)), x);
    let at_most = |b: u8| _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(b as i8)), x);
    let plain = _mm_and_si128(at_least(0xe4), at_most(0xe9));
    _mm_movemask_epi8(_mm_andnot_si128(plain, at_least(0xc0))) as u32
}

/// Eight bytes from `i` (at least eight left) as one word.
#[inline]
fn word_at(bytes: &[u8], i: usize) -> u64 {
    u64::from_ne_bytes(bytes[i..i + 8].try_into().unwrap_or([0x80; 8]))
}

/// `str::to_lowercase`: the text copied whole, characters whose lower case differs replaced, then ASCII
/// lowered in place (no character lowers to an ASCII capital). Caseless characters are passed without a
/// look-up in the case tables. Only a capital sigma lowers by its context (final or not): text holding one
/// takes the standard library's path.
fn lowercase(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut copied, mut i) = (0, 0);
    while i < bytes.len() {
        // ASCII eight bytes at a time: it is lowered in place at the end.
        while i + 8 <= bytes.len() && word_at(bytes, i) & ASCII_MASK == 0 {
            i += 8;
        }
        if i >= bytes.len() {
            break;
        }
        if bytes[i] < 0x80 {
            i += 1;
            continue;
        }
        if is_unified_ideograph(bytes, i) {
            i += 3; // caseless
            continue;
        }
        let c = text[i..].chars().next().unwrap_or('\0');
        let n = c.len_utf8();
        if c == 'Σ' {
            return text.to_lowercase();
        }
        if !caseless(c) {
            let mut lower = c.to_lowercase();
            if lower.len() != 1 || lower.clone().next() != Some(c) {
                out.push_str(&text[copied..i]);
                out.extend(&mut lower);
                copied = i + n;
            }
        }
        i += n;
    }
    out.push_str(&text[copied..]);
    out.make_ascii_lowercase();
    out
}
