//! The one pass over a note's normalised text: its tokens (`processors.tokens.token_counts`) and the text
//! its exact-duplicate hash is taken of (`processors.text.strip_markup`), read together, character by
//! character.

use std::hash::Hasher;

use hashbrown::HashTable;
use rustc_hash::FxHasher;

use crate::unicode::{is_alnum, is_cjk, is_space, is_unified_ideograph};

/// The 64-bit hash of a token: rensa's token hash (FxHasher over its UTF-8 bytes), which also keys the
/// token table.
#[inline]
pub fn token_hash(token: &str) -> u64 {
    let mut h = FxHasher::default();
    h.write(token.as_bytes());
    h.finish()
}

/// One distinct token: its bytes in the normalised text, its hash and how often it occurs.
#[derive(Clone, Copy)]
pub struct Token {
    pub start: u32,
    pub end: u32,
    pub hash: u64,
    pub count: u32,
}

/// Distinct tokens of one text, keyed by their content without copying it.
pub struct Tokens {
    pub table: HashTable<Token>,
}

impl Tokens {
    /// A table sized for a text of `bytes` (a distinct token every few bytes): a note's table is not grown
    /// and rehashed on the way.
    fn for_text(bytes: usize) -> Self {
        Tokens {
            table: HashTable::with_capacity(bytes / 8 + 16),
        }
    }

    fn add(&mut self, text: &str, start: usize, end: usize, times: u32) {
        // Bytes, not str slices: the offsets are character boundaries, and a str slice checks them again.
        let bytes = text.as_bytes();
        let token = &bytes[start..end];
        let mut h = FxHasher::default();
        h.write(token);
        let hash = h.finish();
        let eq =
            |t: &Token| t.hash == hash && same(&bytes[t.start as usize..t.end as usize], token);
        match self.table.find_mut(hash, eq) {
            Some(t) => t.count += times,
            None => {
                let t = Token {
                    start: start as u32,
                    end: end as u32,
                    hash,
                    count: times,
                };
                self.table.insert_unique(hash, t, |t| t.hash);
            }
        }
    }

    /// The count of `token` (a string of `other`, looked up in this table over `text`).
    pub fn get(&self, text: &str, token: &str, hash: u64) -> Option<u32> {
        self.find(text, token, hash).map(|t| t.count)
    }

    /// The entry of `token` (a string of `other`, looked up in this table over `text`).
    pub fn find(&self, text: &str, token: &str, hash: u64) -> Option<&Token> {
        let (bytes, token) = (text.as_bytes(), token.as_bytes());
        self.table.find(hash, |t| {
            t.hash == hash && &bytes[t.start as usize..t.end as usize] == token
        })
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }
}

/// Whether two tokens are the same bytes: compared in line, eight or four bytes at a time with the last
/// load overlapping the one before, a token being a few bytes long (a call to memcmp per token was a tenth
/// of adding it, and a byte loop's exit mispredicts with the token's length).
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], i: usize| u64::from_ne_bytes(s[i..i + 8].try_into().unwrap_or([0; 8]));
    let half = |s: &[u8], i: usize| u32::from_ne_bytes(s[i..i + 4].try_into().unwrap_or([0; 4]));
    if n >= 8 {
        let mut i = 0;
        while i + 8 < n {
            if word(a, i) != word(b, i) {
                return false;
            }
            i += 8;
        }
        return word(a, n - 8) == word(b, n - 8);
    }
    if n >= 4 {
        return half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4);
    }
    a.iter().zip(b).all(|(x, y)| x == y)
}

/// Tokens, and (when asked) the text with Markdown noise removed and white space collapsed.
pub struct Scan {
    pub tokens: Tokens,
    pub stripped: String,
}

/// The bytes of `*_`#>|~[]`, the runs `_NOISE_RE` removes.
const NOISE: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < 9 {
        table[b"*_`#>|~[]"[i] as usize] = true;
        i += 1;
    }
    table
};

/// The end of a match of `processors.text._NOISE_RE` at byte `i` of `text`, tried in the regex's order:
/// a run of `*_`#>|~[]`, three or more `-`, three or more `=`, and at a line start an optional indent, one
/// `-` or `+` and white space (a bullet).
fn noise_at(text: &str, i: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let b = bytes[i];
    if NOISE[b as usize] {
        let run = bytes[i..]
            .iter()
            .take_while(|&&c| NOISE[c as usize])
            .count();
        return Some(i + run);
    }
    if b == b'-' || b == b'=' {
        let run = bytes[i..].iter().take_while(|&&c| c == b).count();
        if run >= 3 {
            return Some(i + run);
        }
    }
    if i > 0 && bytes[i - 1] != b'\n' {
        return None;
    }
    let rest = &text[i..];
    let indent: usize = rest
        .chars()
        .take_while(|&c| c != '\n' && is_space(c))
        .map(char::len_utf8)
        .sum();
    let after = &rest[indent..];
    if !after.starts_with(['-', '+']) {
        return None;
    }
    let space: usize = after[1..]
        .chars()
        .take_while(|&c| is_space(c))
        .map(char::len_utf8)
        .sum();
    (space > 0).then_some(i + indent + 1 + space)
}

/// Words (letter/digit runs, CJK excluded) and CJK character bigrams (a lone CJK character stands for
/// itself) of normalised text, with the stripped text when `strip` is set.
///
/// Runs of ASCII letters and digits and runs of CJK characters are read in loops of their own: inside them
/// nothing can start noise or white space, and a branch taken once per run instead of once per character
/// is most of the speed on mixed Chinese and English text.
pub fn scan(norm: &str, strip: bool) -> Scan {
    let bytes = norm.as_bytes();
    let mut tokens = Tokens::for_text(norm.len());
    let mut out = Stripped {
        text: String::with_capacity(if strip { norm.len() } else { 0 }),
        ..Stripped::new(strip)
    };
    let mut word: Option<usize> = None; // start of the word being read
    let mut cjk: Option<(usize, usize, usize)> = None; // (run start, previous character's start, characters)
    let mut i = 0;
    while i < bytes.len() {
        // Noise never starts at a letter, digit or ideograph: those are read before looking for it.
        let b = bytes[i];
        if b.is_ascii_alphanumeric() {
            out.show(norm, i);
            end_cjk(&mut tokens, norm, &mut cjk, i);
            word.get_or_insert(i);
            i = ascii_word_end(bytes, i + 1);
            continue;
        }
        if is_unified_ideograph(bytes, i) {
            out.show(norm, i);
            end_word(&mut tokens, norm, &mut word, i);
            i = cjk_run(&mut tokens, norm, &mut cjk, i, 3);
            continue;
        }
        if strip {
            if let Some(end) = noise_at(norm, i) {
                out.brk(i);
                end_word(&mut tokens, norm, &mut word, i);
                end_cjk(&mut tokens, norm, &mut cjk, i);
                i = end;
                continue;
            }
        }
        let c = if b < 0x80 {
            b as char
        } else {
            norm[i..].chars().next().unwrap_or('\0')
        };
        if is_space(c) {
            out.brk(i);
            end_word(&mut tokens, norm, &mut word, i);
            end_cjk(&mut tokens, norm, &mut cjk, i);
            i += c.len_utf8();
            continue;
        }
        out.show(norm, i);
        if b >= 0x80 && is_cjk(c) {
            end_word(&mut tokens, norm, &mut word, i);
            i = cjk_run(&mut tokens, norm, &mut cjk, i, c.len_utf8());
            continue;
        }
        if b >= 0x80 && is_alnum(c) {
            end_cjk(&mut tokens, norm, &mut cjk, i);
            word.get_or_insert(i);
        } else {
            end_word(&mut tokens, norm, &mut word, i);
            end_cjk(&mut tokens, norm, &mut cjk, i);
        }
        i += c.len_utf8();
    }
    out.finish(norm);
    end_word(&mut tokens, norm, &mut word, norm.len());
    end_cjk(&mut tokens, norm, &mut cjk, norm.len());
    Scan {
        tokens,
        stripped: out.text,
    }
}

/// The end of the run of ASCII letters and digits from `i`: sixteen bytes at a time where the CPU's baseline
/// vectors allow (every x86-64 has SSE2), so that a word costs one predictable test, not a branch per letter
/// whose exit mispredicts with the word's length.
#[inline]
fn ascii_word_end(bytes: &[u8], mut i: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    while i + 16 <= bytes.len() {
        // SAFETY: 16 bytes from `i` are within `bytes` (checked above); SSE2 is part of x86-64's baseline.
        let stop = unsafe { not_alnum16(bytes.as_ptr().add(i)) };
        if stop != 0 {
            return i + stop.trailing_zeros() as usize;
        }
        i += 16;
    }
    i + bytes[i..]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric())
        .count()
}

/// A bit for each of the 16 bytes at `p` that is not an ASCII letter or digit. Signed compares: a byte of
/// 0x80 or more is negative, below every bound, so never taken for a letter or digit.
#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn not_alnum16(p: *const u8) -> u32 {
    use std::arch::x86_64::*;
    let x = _mm_loadu_si128(p.cast());
    let digit = _mm_and_si128(
        _mm_cmpgt_epi8(x, _mm_set1_epi8(0x2f)),
        _mm_cmplt_epi8(x, _mm_set1_epi8(0x3a)),
    );
    let folded = _mm_or_si128(x, _mm_set1_epi8(0x20)); // a capital to its small letter
    let letter = _mm_and_si128(
        _mm_cmpgt_epi8(folded, _mm_set1_epi8(0x60)),
        _mm_cmplt_epi8(folded, _mm_set1_epi8(0x7b)),
    );
    !(_mm_movemask_epi8(_mm_or_si128(digit, letter)) as u32) & 0xffff
}

/// The CJK characters from `i` (the first, `len` bytes long, already read): each makes a bigram with the one
/// before it. Returns where the run ends.
fn cjk_run(
    tokens: &mut Tokens,
    norm: &str,
    run: &mut Option<(usize, usize, usize)>,
    i: usize,
    len: usize,
) -> usize {
    let (mut at, mut len) = (i, len);
    loop {
        let after = at + len;
        match run.as_mut() {
            Some((_, prev, chars)) => {
                tokens.add(norm, *prev, after, 1);
                *prev = at;
                *chars += 1;
            }
            None => *run = Some((at, at, 1)),
        }
        at = after;
        len = cjk_len(norm, at);
        if len == 0 {
            return at;
        }
    }
}

/// The byte length of the CJK character at `at` (a character boundary), 0 if none is there. The unified
/// ideographs, most of a Chinese note, are known by their first two bytes without decoding them.
#[inline]
fn cjk_len(norm: &str, at: usize) -> usize {
    let bytes = norm.as_bytes();
    match bytes.get(at) {
        Some(&b) if b < 0x80 => 0,
        Some(_) if is_unified_ideograph(bytes, at) => 3,
        Some(_) => norm[at..]
            .chars()
            .next()
            .filter(|&c| is_cjk(c))
            .map_or(0, char::len_utf8),
        None => 0,
    }
}

/// The stripped text being written: visible characters are copied a run at a time, and the white space or
/// noise between two runs becomes one space. A run goes on over a gap of one ASCII space (already what the
/// text will hold): prose is copied in a few stretches, not word by word.
struct Stripped {
    text: String,
    on: bool,
    visible: Option<usize>, // start of the run of visible characters not yet in `text`
    gap: Option<usize>,     // where white space or noise after that run starts
}

impl Stripped {
    fn new(on: bool) -> Self {
        Stripped {
            text: String::new(),
            on,
            visible: None,
            gap: None,
        }
    }

    /// A visible character at `i`.
    #[inline]
    fn show(&mut self, norm: &str, i: usize) {
        if !self.on {
            return;
        }
        match (self.visible, self.gap.take()) {
            (None, _) => {
                if !self.text.is_empty() {
                    self.text.push(' ');
                }
                self.visible = Some(i);
            }
            (Some(_), None) => {}
            (Some(_), Some(gap)) if gap + 1 == i && norm.as_bytes()[gap] == b' ' => {}
            (Some(start), Some(gap)) => {
                self.text.push_str(&norm[start..gap]);
                self.text.push(' ');
                self.visible = Some(i);
            }
        }
    }

    /// White space or noise at `at`.
    #[inline]
    fn brk(&mut self, at: usize) {
        if self.visible.is_some() && self.gap.is_none() {
            self.gap = Some(at);
        }
    }

    /// The end of the text: the last run copied.
    fn finish(&mut self, norm: &str) {
        if let Some(start) = self.visible.take() {
            self.text
                .push_str(&norm[start..self.gap.take().unwrap_or(norm.len())]);
        }
    }
}

#[inline]
fn end_word(tokens: &mut Tokens, norm: &str, word: &mut Option<usize>, at: usize) {
    if let Some(start) = word.take() {
        tokens.add(norm, start, at, 1);
    }
}

#[inline]
fn end_cjk(tokens: &mut Tokens, norm: &str, run: &mut Option<(usize, usize, usize)>, at: usize) {
    if let Some((start, _, chars)) = run.take() {
        if chars == 1 {
            tokens.add(norm, start, at, 1);
        }
    }
}
