//! rensa's R-MinHash as rensa 0.5 computes it (`rensa.RMinHash(num_perm, seed)`, ALGORITHM_VERSION 2), over
//! the token hashes of the one pass (FxHasher over each token's UTF-8 bytes, as rensa hashes a str).
//!
//! rensa 0.5 fills the slots by bucketing (its src/rminhash/bucket.rs, after Fast Similarity Sketching): in
//! each of three rounds every token is mixed (SplitMix64 of its hash xor the round's seed), lands in one
//! slot and offers its round tag (top two bits) and rank (30 bits); a slot no round reached takes a
//! fallback: the tag 3 and the minimum over the tokens of `(a·m + b) >> 32` (the classic R-MinHash
//! permutation of the token's fallback mix `m`), shifted to 30 bits. Each slot is the minimum of what it
//! is offered, so the order of the tokens and the batching rensa uses do not matter. The permutations
//! (a, b) are drawn from Xoshiro256++ seeded with `seed` (a odd). A test holds the digests equal to rensa's.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const RANK_BITS: u32 = 2;
const FRACTION_BITS: u32 = 32 - RANK_BITS;
const ROUNDS: u32 = (1 << RANK_BITS) - 1;
const FALLBACK: u32 = ROUNDS << FRACTION_BITS;
const BUCKET_DOMAIN: u64 = 0x6a09_e667_f3bc_c909;
const ROUND_DOMAIN: u64 = 0x3c6e_f372_fe94_f82b;
const FALLBACK_DOMAIN: u64 = 0xbb67_ae85_84ca_a73b;

pub struct Permutations {
    a: Vec<u64>,
    b: Vec<u64>,
}

#[inline]
fn splitmix64(mut value: u64) -> u64 {
    value = value.wrapping_add(0x9e37_79b9_7f4a_7c15);
    value = (value ^ (value >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    value ^ (value >> 31)
}

/// The slot of a mixed hash among `count`: Lemire's product of its low word, redrawn in the rare biased
/// case (for a power of two, the top bits of the low word, never redrawn).
fn bucket_index(mut mixed: u64, count: u32) -> usize {
    let threshold = count.wrapping_neg() % count;
    loop {
        let product = u64::from(mixed as u32) * u64::from(count);
        if product as u32 >= threshold {
            return (product >> 32) as usize;
        }
        mixed = splitmix64(mixed);
    }
}

impl Permutations {
    pub fn new(num_perm: usize, seed: u64) -> Self {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let (mut a, mut b) = (Vec::with_capacity(num_perm), Vec::with_capacity(num_perm));
        for _ in 0..num_perm {
            a.push(rng.next_u64() | 1);
            b.push(rng.next_u64());
        }
        Permutations { a, b }
    }

    /// The digest of a set of distinct token hashes (at least one permutation, fewer than 2³² of them).
    pub fn digest(&self, hashes: &[u64]) -> Vec<u32> {
        let len = self.a.len();
        let mut values = vec![u32::MAX; len];
        if hashes.is_empty() || len == 0 {
            return values;
        }
        let count = len as u32;
        for round in 0..ROUNDS {
            let seed = self.b[0] ^ BUCKET_DOMAIN ^ u64::from(round).wrapping_mul(ROUND_DOMAIN);
            let prefix = round << FRACTION_BITS;
            for &h in hashes {
                let mixed = splitmix64(h ^ seed);
                let slot = bucket_index(mixed, count);
                let rank = prefix | (mixed >> (32 + RANK_BITS)) as u32;
                values[slot] = values[slot].min(rank);
            }
            // Later rounds only offer larger values.
            if values.iter().all(|&v| v < (round + 1) << FRACTION_BITS) {
                return values;
            }
        }
        let seed = self.a[0] ^ FALLBACK_DOMAIN;
        let mixed: Vec<u64> = hashes.iter().map(|&h| splitmix64(h ^ seed)).collect();
        for (i, value) in values.iter_mut().enumerate() {
            if *value >= FALLBACK {
                let (a, b) = (self.a[i], self.b[i]);
                let least = mixed
                    .iter()
                    .map(|&m| (a.wrapping_mul(m).wrapping_add(b) >> 32) as u32)
                    .min()
                    .unwrap_or(u32::MAX);
                *value = FALLBACK | (*value & ((1 << FRACTION_BITS) - 1)).min(least >> RANK_BITS);
            }
        }
        values
    }
}
