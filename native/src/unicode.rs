//! Python's character classes (`str.isalnum`, `str.isspace`, `\d`, `str.isdigit`), case-insensitive ASCII
//! letters as Python's `re.IGNORECASE` matches them, and the CJK ranges of `processors/tokens.py`.
//!
//! The classes are Python's own (src/unicode_tables.rs, generated from Python 3.11, Unicode 14): the Rust
//! crates' tables are newer, and a character assigned since is unassigned — no letter, digit or case — to
//! the Python this pass replaces.

use crate::unicode_tables::{ALNUM, ASSIGNED, DECIMAL, DIGIT};

#[inline]
fn in_table(table: &[(u32, u32)], c: char) -> bool {
    let cp = c as u32;
    table
        .binary_search_by(|&(lo, hi)| {
            if hi < cp {
                std::cmp::Ordering::Less
            } else if lo > cp {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Whether the reference's Unicode (14) assigns `c`.
#[inline]
pub fn is_assigned(c: char) -> bool {
    // Without the search: what a note is made of — ASCII, Latin-1 to Greek, general punctuation, CJK
    // punctuation, the unified ideographs, Hangul syllables, full-width forms — every code point of these
    // ranges is assigned in Unicode 14.
    matches!(
        c as u32,
        0..=0x7f | 0xa0..=0x377 | 0x2000..=0x2064 | 0x3000..=0x303f | 0x4e00..=0x9fff | 0xac00..=0xd7a3
            | 0xff01..=0xff5e
    ) || in_table(ASSIGNED, c)
}

/// `str.isalnum()`.
#[inline]
pub fn is_alnum(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric();
    }
    in_table(ALNUM, c)
}

/// A word character of Python's `re` (`\w`): alphanumeric or `_`.
#[inline]
pub fn is_word(c: char) -> bool {
    c == '_' || is_alnum(c)
}

/// `str.isspace()`, which is also `re`'s `\s` and what `str.split()` splits on.
#[inline]
pub fn is_space(c: char) -> bool {
    match c {
        '\t'..='\r' | '\x1c'..='\x1f' | ' ' => true,
        _ if c.is_ascii() => false,
        _ => matches!(
            c,
            '\u{85}' | '\u{a0}' | '\u{1680}' | '\u{2000}'
                ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}'
        ),
    }
}

/// `re`'s `\d` for str patterns: a decimal digit of any script (general category Nd).
#[inline]
pub fn is_decimal(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_digit();
    }
    in_table(DECIMAL, c)
}

/// The value of a decimal digit, as Python's `int()` reads it. Unicode encodes every decimal digit set as
/// ten consecutive code points from zero, so a digit's value is its distance from the start of its run of
/// Nd code points, modulo ten (adjacent sets, such as the mathematical digits, are whole sets of ten).
pub fn decimal_value(c: char) -> u32 {
    if c.is_ascii_digit() {
        return c as u32 - '0' as u32;
    }
    let mut run = 0u32;
    let mut cp = c as u32;
    while cp > 0 {
        match char::from_u32(cp - 1) {
            Some(p) if is_decimal(p) => {
                run += 1;
                cp -= 1;
            }
            _ => break,
        }
    }
    run % 10
}

/// `str.isdigit()` of one character.
#[inline]
pub fn is_digit(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_digit();
    }
    in_table(DIGIT, c)
}

/// `processors.tokens.CJK`: kana, Hangul and the CJK ideograph blocks (none put spaces between words).
#[inline]
pub fn is_cjk(c: char) -> bool {
    matches!(
        c as u32,
        0x3040..=0x30ff | 0x3400..=0x4dbf | 0x4e00..=0x9fff | 0xac00..=0xd7af | 0xf900..=0xfaff | 0x20000..=0x2ffff
    )
}

/// Whether the character at `i` of UTF-8 `bytes` (a character boundary) is a CJK unified ideograph
/// (U+4E00…U+9FFF: three bytes led by 0xE5…0xE9, or by 0xE4 and 0xB8 or more), read from its first two bytes.
#[inline]
pub fn is_unified_ideograph(bytes: &[u8], i: usize) -> bool {
    match bytes[i] {
        0xe5..=0xe9 => true,
        0xe4 => bytes.get(i + 1).is_some_and(|&b| b >= 0xb8),
        _ => false,
    }
}

/// Whether `c` matches the ASCII letter `lower` under Python's `re.IGNORECASE` (which also pairs `i` with
/// `İ` and `ı`, `k` with the Kelvin sign and `s` with the long s).
#[inline]
pub fn ignorecase_eq(c: char, lower: char) -> bool {
    if c.to_ascii_lowercase() == lower && c.is_ascii() {
        return true;
    }
    match lower {
        'i' => c == '\u{130}' || c == '\u{131}',
        'k' => c == '\u{212a}',
        's' => c == '\u{17f}',
        _ => false,
    }
}

/// `[A-Za-z]` under `re.IGNORECASE`.
#[inline]
pub fn is_ascii_letter_ignorecase(c: char) -> bool {
    c.is_ascii_alphabetic() || matches!(c, '\u{130}' | '\u{131}' | '\u{17f}' | '\u{212a}')
}

/// Whether `text` starts with the ASCII `word` under `re.IGNORECASE`; the byte length matched.
pub fn starts_with_ignorecase(text: &str, word: &str) -> Option<usize> {
    let mut chars = text.char_indices();
    for w in word.chars() {
        let (_, c) = chars.next()?;
        let ok = if w.is_ascii_alphabetic() {
            ignorecase_eq(c, w.to_ascii_lowercase())
        } else {
            c == w
        };
        if !ok {
            return None;
        }
    }
    Some(chars.next().map_or(text.len(), |(i, _)| i))
}

/// How a byte starts a character, for white space: 1 an ASCII space, 2 the first byte of a character that
/// may be one (U+0085, U+00A0, U+1680, U+2000…U+205F, U+3000), 0 neither.
const SPACE_START: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0x09;
    while b <= 0x0d {
        table[b] = 1;
        b += 1;
    }
    let mut b = 0x1c;
    while b <= 0x1f {
        table[b] = 1;
        b += 1;
    }
    table[b' ' as usize] = 1;
    table[0xc2] = 2;
    table[0xe1] = 2;
    table[0xe2] = 2;
    table[0xe3] = 2;
    table
};

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` below `n` (at most 0x80), exactly: no borrow crosses bytes.
#[inline]
fn below(word: u64, n: u8) -> u64 {
    let low = (word & !HIGHS) + ONES * u64::from(0x80 - n);
    !(low | word) & HIGHS
}

/// How far eight bytes from `i` can be skipped inside a word run of `collapse`: 8 when none may start
/// white space (`SPACE_START`, with a few bytes more: below 0x21, 0xc2, 0xe0…0xe3) but single ASCII spaces,
/// 7 when the last byte is such a space (the byte after it decides), 0 otherwise. Prose holds a space every
/// few bytes, so a word at a time only pays with the spaces let through.
#[inline]
fn word_run(word: u64) -> usize {
    let spaces = below(word ^ (ONES * 0x20), 1);
    let others = (below(word, 0x21) ^ spaces)
        | below(word ^ (ONES * 0xe0), 4)
        | below(word ^ (ONES * 0xc2), 1);
    if others != 0 || spaces & (spaces << 8) != 0 {
        return 0;
    }
    if spaces >> 63 == 0 {
        8
    } else {
        7
    }
}

/// The byte length of the white space character at `i` (a character boundary), 0 if none starts there.
#[inline]
fn space_at(text: &str, i: usize) -> usize {
    match SPACE_START[text.as_bytes()[i] as usize] {
        0 => 0,
        1 => 1,
        _ => text[i..]
            .chars()
            .next()
            .filter(|&c| is_space(c))
            .map_or(0, char::len_utf8),
    }
}

/// `" ".join(text.split())`: white space runs collapsed to one space, none at either end. Found byte by
/// byte: a character is decoded only where its first byte may start white space (continuation bytes never
/// do, so the scan needs no character boundaries). Words apart by one ASCII space are already as the
/// result has them, and are copied as one stretch, not word by word.
pub fn collapse(text: &str) -> String {
    let n = text.len();
    let mut out = String::with_capacity(n);
    let mut i = 0;
    loop {
        // White space before the next word.
        while i < n {
            match space_at(text, i) {
                0 => break,
                len => i += len,
            }
        }
        if i == n {
            return out;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        let start = i;
        i = run_end(text, i);
        out.push_str(&text[start..i]);
    }
}

/// `collapse` of a text given whole: returned as it is, not copied, when it is already collapsed (most
/// block texts: words apart by single spaces).
pub fn collapse_owned(text: String) -> String {
    if text.is_empty() || (space_at(&text, 0) == 0 && run_end(&text, 0) == text.len()) {
        return text;
    }
    collapse(&text)
}

/// From a word's start: up to white space that is not one ASCII space before a word, or the end.
#[inline]
fn run_end(text: &str, mut i: usize) -> usize {
    let bytes = text.as_bytes();
    let n = bytes.len();
    while i < n {
        i = run_skip(bytes, i);
        if i == n {
            break;
        }
        if SPACE_START[bytes[i] as usize] == 0 {
            i += 1;
        } else if space_at(text, i) == 0 {
            i += text[i..].chars().next().map_or(1, char::len_utf8);
        } else if bytes[i] == b' ' && i + 1 < n && space_at(text, i + 1) == 0 {
            i += 1;
        } else {
            break;
        }
    }
    i
}

/// From `i`, past the bytes that cannot stop a run: sixteen at a time where the CPU's baseline vectors allow
/// (SSE2 on every x86-64), to the first byte that may; then eight at a time (`word_run`). Continuation bytes
/// never start white space: a run may be skipped from inside a character.
#[inline]
fn run_skip(bytes: &[u8], mut i: usize) -> usize {
    let n = bytes.len();
    #[cfg(target_arch = "x86_64")]
    while i + 16 <= n {
        // SAFETY: 16 bytes from `i` are within `bytes` (checked above); SSE2 is part of x86-64's baseline.
        let stops = unsafe { run_stops16(bytes.as_ptr().add(i)) };
        if stops != 0 {
            return i + stops.trailing_zeros() as usize;
        }
        i += 16;
    }
    while i + 8 <= n {
        match word_run(u64::from_le_bytes(
            bytes[i..i + 8].try_into().unwrap_or([0; 8]),
        )) {
            0 => break,
            skip => i += skip,
        }
    }
    i
}

/// A bit for each of the 16 bytes at `p` that may stop a run (`word_run`'s bytes: below 0x21, 0xc2,
/// 0xe0…0xe3), but a space before a byte that cannot (the last byte's space is a stop: its next is unseen).
#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn run_stops16(p: *const u8) -> u32 {
    use std::arch::x86_64::*;
    let x = _mm_loadu_si128(p.cast());
    let low = _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x20)), x);
    let lead = _mm_or_si128(
        _mm_cmpeq_epi8(x, _mm_set1_epi8(0xc2_u8 as i8)),
        _mm_cmpeq_epi8(
            _mm_and_si128(x, _mm_set1_epi8(0xfc_u8 as i8)),
            _mm_set1_epi8(0xe0_u8 as i8),
        ),
    );
    let may = _mm_movemask_epi8(_mm_or_si128(low, lead)) as u32;
    let spaces = _mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8(0x20))) as u32;
    (may & !spaces) | (spaces & ((may >> 1) | 0x8000))
}

/// `text.chars().count()`: the bytes that start a character (all but continuation bytes, 0x80…0xBF; signed,
/// -0x80…-0x41, below every other byte).
pub fn char_count(text: &str) -> usize {
    count_bytes(
        text.as_bytes(),
        |b| b as i8 >= -0x40,
        |x| {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: SSE2 is part of x86-64's baseline.
            unsafe {
                use std::arch::x86_64::*;
                _mm_cmpgt_epi8(x, _mm_set1_epi8(-0x41))
            }
        },
    )
}

/// The line feeds in `bytes`.
pub fn newline_count(bytes: &[u8]) -> usize {
    count_bytes(
        bytes,
        |b| b == b'\n',
        |x| {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: SSE2 is part of x86-64's baseline.
            unsafe {
                use std::arch::x86_64::*;
                _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\n' as i8))
            }
        },
    )
}

#[cfg(target_arch = "x86_64")]
type Lanes = std::arch::x86_64::__m128i;
#[cfg(not(target_arch = "x86_64"))]
type Lanes = ();

/// The bytes of `bytes` that `is` takes, sixteen at a time where the CPU's baseline vectors allow (SSE2 on
/// every x86-64; `lanes` marks them with all bits set), inline: a call to memchr's count cost more than the
/// counting in the few hundred bytes from one block to the next.
#[inline]
fn count_bytes(bytes: &[u8], is: impl Fn(u8) -> bool, lanes: impl Fn(Lanes) -> Lanes) -> usize {
    let mut count = 0;
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    while i + 16 <= bytes.len() {
        use std::arch::x86_64::*;
        // Up to 255 blocks counted in byte lanes (a lane never overflows), then summed.
        let blocks = ((bytes.len() - i) / 16).min(255);
        // SAFETY: `blocks` blocks of 16 bytes from `i` are within `bytes` (computed above); SSE2 is part of
        // x86-64's baseline.
        unsafe {
            let p = bytes.as_ptr().add(i);
            let mut sum = _mm_setzero_si128();
            for k in 0..blocks {
                sum = _mm_sub_epi8(sum, lanes(_mm_loadu_si128(p.add(16 * k).cast())));
            }
            let sums = _mm_sad_epu8(sum, _mm_setzero_si128());
            count += (_mm_cvtsi128_si64(sums) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums)))
                as usize;
        }
        i += blocks * 16;
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = lanes;
    count + bytes[i..].iter().filter(|&&b| is(b)).count()
}
