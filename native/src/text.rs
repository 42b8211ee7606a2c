//! The one pass over a note's normalised text: its tokens (`processors.tokens.token_counts`) and the text
//! its exact-duplicate hash is taken of (`processors.text.strip_markup`), read together, character by
//! character.

use std::borrow::Cow;
use std::hash::Hasher;

use hashbrown::HashTable;
use rustc_hash::FxHasher;

use unicode_normalization::char::canonical_combining_class;
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

use crate::unicode::{is_alnum, is_assigned, is_cjk, is_space, is_unified_ideograph};

/// `processors.tokens.normalise`: NFKC, then lower case (with Greek final sigma, as `str.lower` does).
pub fn normalise(text: &str) -> String {
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    // Most notes: every code point assigned, found out on the way through the NFKC pass.
    if let Some(nfkc) = nfkc_stretches(text, true) {
        return lowercase(&nfkc);
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
        Some(nfkc) => lowercase(&nfkc),
        None => lowercase(&text.nfkc().collect::<String>()), // never: unassigned code points are not checked
    }
}

/// Whether `c` is its own NFKC and no character before it can change with it (NFKC_QC=Yes, ccc=0): text can
/// be normalised in pieces cut before such characters. ASCII and the CJK unified ideographs (most of a
/// note) are answered without a look-up.
#[inline]
fn inert(c: char) -> bool {
    c.is_ascii()
        || ('\u{4e00}'..='\u{9fff}').contains(&c)
        || (canonical_combining_class(c) == 0 && is_nfkc_quick(std::iter::once(c)) == IsNormalized::Yes)
}

/// NFKC of `text`, run only over the stretches that need it: a stretch is a run of characters that are not
/// inert, with the character before it (which may compose with the first: `e` + U+0301 is `é`). Chinese text
/// always has some full-width punctuation to fold, and NFKC of the whole note cost more than the rest of
/// the pass. Borrowed when nothing needs it. None, when `assigned` asks so, at a code point the reference's
/// Unicode does not assign (the text is then normalised between such code points).
fn nfkc_stretches(text: &str, assigned: bool) -> Option<Cow<'_, str>> {
    let bytes = text.as_bytes();
    let n = bytes.len();
    let mut out = String::new();
    let mut copied = 0; // bytes of `text` already in `out`
    let mut stretch: Option<usize> = None; // start of the stretch being read
    let mut prev = 0; // start of the previous character
    let mut i = 0;
    while i < n {
        if stretch.is_none() && (bytes[i] < 0x80 || is_unified_ideograph(bytes, i)) {
            // ASCII (a word at a time) and unified ideographs: assigned, their own NFKC, composing with
            // nothing; most of a note is passed without decoding a character.
            while i < n {
                if i + 8 <= n && word_at(bytes, i) & ASCII_MASK == 0 {
                    i += 8;
                } else if bytes[i] < 0x80 {
                    i += 1;
                } else if is_unified_ideograph(bytes, i) {
                    i += 3;
                } else {
                    break;
                }
            }
            prev = if bytes[i - 1] < 0x80 { i - 1 } else { i - 3 };
            continue;
        }
        let c = text[i..].chars().next().unwrap_or('\0');
        if assigned && !is_assigned(c) {
            return None;
        }
        if inert(c) {
            if let Some(start) = stretch.take() {
                push_nfkc(&mut out, &text[start..i]);
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
        Some(start) => push_nfkc(&mut out, &text[start..]),
        None if copied == 0 => return Some(Cow::Borrowed(text)),
        None => out.push_str(&text[copied..]),
    }
    Some(Cow::Owned(out))
}

/// NFKC of one stretch. The common one — full-width ASCII (`，`, `（`, `：`), maybe after an inert character —
/// maps character by character: U+FF01…U+FF5E are `<wide>` forms of U+0021…U+007E, and an ASCII character
/// composes with nothing before it.
fn push_nfkc(out: &mut String, stretch: &str) {
    let wide = |c: char| ('\u{ff01}'..='\u{ff5e}').contains(&c);
    let mut chars = stretch.chars();
    let first = chars.next();
    if first.is_some_and(|c| wide(c) || inert(c)) && chars.clone().all(wide) {
        for c in first.into_iter().chain(chars) {
            out.push(if wide(c) { char::from_u32(c as u32 - 0xfee0).unwrap_or(c) } else { c });
        }
        return;
    }
    out.extend(stretch.nfkc());
}

/// Characters without case that a note is full of: CJK punctuation, kana, the unified ideographs, Hangul.
#[inline]
fn caseless(c: char) -> bool {
    matches!(c as u32, 0x3000..=0x30ff | 0x4e00..=0x9fff | 0xac00..=0xd7af)
}

const ASCII_MASK: u64 = 0x8080_8080_8080_8080;

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
        Tokens { table: HashTable::with_capacity(bytes / 8 + 16) }
    }

    fn add(&mut self, text: &str, start: usize, end: usize, times: u32) {
        // Bytes, not str slices: the offsets are character boundaries, and a str slice checks them again.
        let bytes = text.as_bytes();
        let token = &bytes[start..end];
        let mut h = FxHasher::default();
        h.write(token);
        let hash = h.finish();
        let eq = |t: &Token| t.hash == hash && same(&bytes[t.start as usize..t.end as usize], token);
        match self.table.find_mut(hash, eq) {
            Some(t) => t.count += times,
            None => {
                let t = Token { start: start as u32, end: end as u32, hash, count: times };
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
        self.table.find(hash, |t| t.hash == hash && &bytes[t.start as usize..t.end as usize] == token)
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
        let run = bytes[i..].iter().take_while(|&&c| NOISE[c as usize]).count();
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
    let indent: usize = rest.chars().take_while(|&c| c != '\n' && is_space(c)).map(char::len_utf8).sum();
    let after = &rest[indent..];
    if !after.starts_with(['-', '+']) {
        return None;
    }
    let space: usize = after[1..].chars().take_while(|&c| is_space(c)).map(char::len_utf8).sum();
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
    let mut out = Stripped { text: String::with_capacity(if strip { norm.len() } else { 0 }), ..Stripped::new(strip) };
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
            i += 1 + bytes[i + 1..].iter().take_while(|c| c.is_ascii_alphanumeric()).count();
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
        let c = if b < 0x80 { b as char } else { norm[i..].chars().next().unwrap_or('\0') };
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
    Scan { tokens, stripped: out.text }
}

/// The CJK characters from `i` (the first, `len` bytes long, already read): each makes a bigram with the one
/// before it. Returns where the run ends.
fn cjk_run(tokens: &mut Tokens, norm: &str, run: &mut Option<(usize, usize, usize)>, i: usize, len: usize) -> usize {
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
        Some(_) => norm[at..].chars().next().filter(|&c| is_cjk(c)).map_or(0, char::len_utf8),
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
        Stripped { text: String::new(), on, visible: None, gap: None }
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
            self.text.push_str(&norm[start..self.gap.take().unwrap_or(norm.len())]);
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
