//! The one pass over a note's normalised text: its tokens (`processors.tokens.token_counts`) and the text
//! its exact-duplicate hash is taken of (`processors.text.strip_markup`), read together, character by
//! character.

use std::hash::Hasher;

use hashbrown::HashTable;
use rustc_hash::FxHasher;
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

use crate::unicode::{is_alnum, is_assigned, is_cjk, is_space};

/// `processors.tokens.normalise`: NFKC, then lower case (with Greek final sigma, as `str.lower` does).
pub fn normalise(text: &str) -> String {
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    if text.chars().all(is_assigned) {
        return normalise_assigned(text);
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
    if is_nfkc_quick(text.chars()) == IsNormalized::Yes {
        return text.to_lowercase();
    }
    // NFKC runs only over the stretches that need it: ASCII and the CJK unified ideographs are their own
    // NFKC, never reorder, and nothing composes with them as its second character, so they bound a stretch
    // (an ASCII character before one goes with it: `e` + U+0301 is `é`). Chinese text always has some
    // full-width punctuation to fold, and NFKC of the whole note cost more than the rest of the pass.
    let inert = |c: char| c.is_ascii() || ('\u{4e00}'..='\u{9fff}').contains(&c);
    let mut out = String::with_capacity(text.len() + 16);
    let mut copied = 0; // bytes of `text` already in `out`
    let mut stretch: Option<usize> = None; // start of the stretch being read
    let mut ascii_before: Option<usize> = None; // the previous character, when it is ASCII
    for (i, c) in text.char_indices() {
        if inert(c) {
            if let Some(start) = stretch.take() {
                out.extend(text[start..i].nfkc());
                copied = i;
            }
            ascii_before = c.is_ascii().then_some(i);
        } else if stretch.is_none() {
            let start = ascii_before.unwrap_or(i);
            out.push_str(&text[copied..start]);
            stretch = Some(start);
        }
    }
    match stretch {
        Some(start) => out.extend(text[start..].nfkc()),
        None => out.push_str(&text[copied..]),
    }
    out.to_lowercase()
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
    fn new() -> Self {
        Tokens { table: HashTable::with_capacity(256) }
    }

    fn add(&mut self, text: &str, start: usize, end: usize, times: u32) {
        let token = &text[start..end];
        let hash = token_hash(token);
        let eq = |t: &Token| t.hash == hash && &text[t.start as usize..t.end as usize] == token;
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
        self.table
            .find(hash, |t| t.hash == hash && &text[t.start as usize..t.end as usize] == token)
            .map(|t| t.count)
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }
}

/// Tokens, and (when asked) the text with Markdown noise removed and white space collapsed.
pub struct Scan {
    pub tokens: Tokens,
    pub stripped: String,
}

const NOISE: &[u8] = b"*_`#>|~[]";

/// The end of a match of `processors.text._NOISE_RE` at byte `i` of `text`, tried in the regex's order:
/// a run of `*_`#>|~[]`, three or more `-`, three or more `=`, and at a line start an optional indent, one
/// `-` or `+` and white space (a bullet).
fn noise_at(text: &str, i: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let b = bytes[i];
    if NOISE.contains(&b) {
        let run = bytes[i..].iter().take_while(|c| NOISE.contains(c)).count();
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
pub fn scan(norm: &str, strip: bool) -> Scan {
    let mut tokens = Tokens::new();
    let mut stripped = String::with_capacity(if strip { norm.len() } else { 0 });
    let mut pending_space = false;
    let mut word: Option<usize> = None; // start of the word being read
    let mut cjk: Option<(usize, usize, usize)> = None; // (run start, previous character's start, characters)
    let mut i = 0;
    while i < norm.len() {
        if strip {
            if let Some(end) = noise_at(norm, i) {
                end_word(&mut tokens, norm, &mut word, i);
                end_cjk(&mut tokens, norm, &mut cjk, i);
                pending_space = true;
                i = end;
                continue;
            }
        }
        let c = norm[i..].chars().next().unwrap_or('\0');
        let next = i + c.len_utf8();
        if is_space(c) {
            pending_space = true;
            end_word(&mut tokens, norm, &mut word, i);
            end_cjk(&mut tokens, norm, &mut cjk, i);
            i = next;
            continue;
        }
        if strip {
            if pending_space && !stripped.is_empty() {
                stripped.push(' ');
            }
            pending_space = false;
            stripped.push(c);
        }
        if is_cjk(c) {
            end_word(&mut tokens, norm, &mut word, i);
            match cjk.as_mut() {
                Some((_, prev, chars)) => {
                    tokens.add(norm, *prev, next, 1);
                    *prev = i;
                    *chars += 1;
                }
                None => cjk = Some((i, i, 1)),
            }
        } else if is_alnum(c) {
            end_cjk(&mut tokens, norm, &mut cjk, i);
            word.get_or_insert(i);
        } else {
            end_word(&mut tokens, norm, &mut word, i);
            end_cjk(&mut tokens, norm, &mut cjk, i);
        }
        i = next;
    }
    end_word(&mut tokens, norm, &mut word, norm.len());
    end_cjk(&mut tokens, norm, &mut cjk, norm.len());
    Scan { tokens, stripped }
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
