//! The two small hashes the project uses wherever a value must be the same
//! on every machine and rank: SplitMix64 (a seed's stream of random bits,
//! and its finaliser as a mixer of identities) and FNV-1a (digests of
//! bytes: model checks, names, fingerprints), and a pass-through hasher
//! for maps whose keys are such hashes already.

/// The golden-ratio increment of SplitMix64.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's finaliser: a well-mixed 64-bit function of `z`.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One step of SplitMix64: advances `state` and returns the next 64 bits.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(GOLDEN);
    mix64(*state)
}

/// FNV-1a (64-bit) over bytes.
pub fn fnv1a(bytes: impl IntoIterator<Item = u8>) -> u64 {
    let mut h = Fnv1a::default();
    h.write(bytes);
    h.finish()
}

/// FNV-1a fed piece by piece: the digest of a whole model is taken one
/// function at a time, so that it never needs all the words at once (tens
/// of megabytes at 10^5 functions).
#[derive(Debug, Clone, Copy)]
pub struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    /// Continues the hash over `bytes`.
    pub fn write(&mut self, bytes: impl IntoIterator<Item = u8>) {
        for b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// Continues the hash over the little-endian bytes of `words`.
    pub fn write_words(&mut self, words: &[u64]) {
        self.write(words.iter().flat_map(|w| w.to_le_bytes()));
    }

    /// The hash of everything written so far.
    pub fn finish(&self) -> u64 {
        self.0
    }
}

/// The 64-bit hash of a function or counter name of `program`: the key of
/// the global name tables and of the name agreement's owner ranks. The
/// same on every rank (the same code), well mixed, and fast on long C++
/// template names (FxHash takes 8 bytes a step where FNV-1a takes one).
pub fn name_hash(program: u32, name: &str) -> u64 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    h.write_u32(program);
    h.write(name.as_bytes());
    mix64(h.finish())
}

/// A `Hasher` that hands back the `u64` key it is given: for maps keyed by
/// a hash that is well mixed already ([`mix64`]), where hashing it again
/// (the standard map's SipHash) only costs time on every lookup.
#[derive(Debug, Clone, Copy, Default)]
pub struct PassThrough(u64);

impl std::hash::Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only reached for keys other than `u64`: fold them in, FNV-1a.
        let mut h = Fnv1a(self.0 ^ 0xcbf2_9ce4_8422_2325);
        h.write(bytes.iter().copied());
        self.0 = h.finish();
    }

    fn write_u64(&mut self, key: u64) {
        self.0 = key;
    }
}

/// A map keyed by mixed 64-bit hashes, not hashed again.
pub type HashKeyed<V> =
    std::collections::HashMap<u64, V, std::hash::BuildHasherDefault<PassThrough>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // FNV-1a of "" and "a" (the published test vectors).
        assert_eq!(fnv1a([]), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(*b"a"), 0xaf63_dc4c_8601_ec8c);
        // Fed in pieces, the same as at once.
        let mut h = Fnv1a::default();
        h.write(*b"ab");
        h.write_words(&[7, u64::MAX]);
        let at_once: Vec<u8> = b"ab"
            .iter()
            .copied()
            .chain(7u64.to_le_bytes())
            .chain(u64::MAX.to_le_bytes())
            .collect();
        assert_eq!(h.finish(), fnv1a(at_once));
        // SplitMix64 from state 0: its published first output.
        let mut s = 0;
        assert_eq!(splitmix64(&mut s), 0xe220_a839_7b1d_cdaf);
    }

    #[test]
    fn name_hashes_depend_on_program_and_every_byte() {
        let a = name_hash(0, "main");
        assert_eq!(a, name_hash(0, "main"));
        assert_ne!(a, name_hash(1, "main"));
        assert_ne!(a, name_hash(0, "mainx"));
        assert_ne!(a, name_hash(0, "maim"));
        assert_ne!(name_hash(0, ""), name_hash(1, ""));
        // Long names differing in one byte, anywhere.
        let long: String = "kernel<std::vector<double>>::apply".repeat(8);
        let h = name_hash(0, &long);
        for i in 0..long.len() {
            let mut b = long.clone().into_bytes();
            b[i] ^= 1;
            assert_ne!(
                h,
                name_hash(0, std::str::from_utf8(&b).unwrap()),
                "byte {i}"
            );
        }
    }

    #[test]
    fn hash_keyed_maps_use_the_key_as_its_hash() {
        use std::hash::{BuildHasher, BuildHasherDefault};
        let b = BuildHasherDefault::<PassThrough>::default();
        assert_eq!(b.hash_one(0x1234_5678_9abc_def0u64), 0x1234_5678_9abc_def0);
        let mut m: HashKeyed<u32> = HashKeyed::default();
        for k in 0..1000u64 {
            m.insert(mix64(k), k as u32);
        }
        assert!((0..1000u64).all(|k| m.get(&mix64(k)) == Some(&(k as u32))));
        assert_eq!(m.get(&mix64(1000)), None);
    }
}
