//! Name agreement whose traffic per rank grows with the number of *unique*
//! new names, not with the number of ranks offering them.
//!
//! An allgather of every rank's new names hands each rank P copies of the
//! names all ranks see — in the first step of an SPMD application that is
//! the whole name table times the number of AD ranks (gigabytes per rank at
//! 10⁴ ranks). Instead, in three exchanges:
//!
//! 1. every rank sends an 8-byte hash of each of its new names to the
//!    name's *owner* rank (`hash mod P`; all-to-all);
//! 2. each owner keeps every hash once and names one of the ranks that
//!    offered it as its *provider* (spread by the hash, so that no rank
//!    provides everything); it tells each provider which hashes it provides
//!    (all-to-all);
//! 3. each provider publishes the full names it provides (allgather): every
//!    rank receives the union once.
//!
//! A rank receives at most 8 bytes per offered copy of the names it owns
//! (its share, 1/P of the copies), 8 bytes per name it provides, and the
//! union itself: about the union's size plus 16 bytes per unique name,
//! whatever P. From [`super::routed::MIN_GRID_RANKS`] ranks on, the three
//! exchanges travel in two hops over a √P × √P grid (`routed.rs`): about
//! 2√P messages per rank instead of P, each hash crossing two links. The
//! union is sorted, as before, so the global indices are
//! the same as with the allgather, for any P and any mapping of streams to
//! ranks. Two different names with the same 64-bit hash would lose one of
//! them: every rank checks that its own names are in the union, and if any
//! is missing anywhere (an OR over ranks) the step falls back to the plain
//! allgather.

use super::{decode_names, encode_names, to_bytes, to_words, Collectives};
use crate::events::names::NameKey;
use crate::util::hash::mix64;

/// The agreement's hash of a name: program and bytes, mixed.
pub fn name_hash(key: &NameKey) -> u64 {
    crate::util::hash::name_hash(key.0, &key.1)
}

/// Whether a name of `mine` (with its `hash`) is not in `union` under that
/// hash: another name with the same hash was published in its place.
fn misses_any(mine: &[(u64, &NameKey)], union: &[NameKey], hash: impl Fn(&NameKey) -> u64) -> bool {
    let mut by_hash: Vec<(u64, &NameKey)> = union.iter().map(|k| (hash(k), k)).collect();
    by_hash.sort_unstable_by_key(|e| e.0);
    mine.iter().any(|&(h, k)| {
        let at = by_hash.partition_point(|e| e.0 < h);
        !by_hash[at..]
            .iter()
            .take_while(|e| e.0 == h)
            .any(|e| e.1 == k)
    })
}

impl Collectives {
    /// Union of every rank's new names, sorted and without duplicates: the
    /// same list on every rank, whatever the number of ranks (collective).
    /// Received bytes per rank stay near the union's size as P grows (see
    /// the module doc).
    pub fn agree_names(&self, new_local: &[NameKey]) -> Vec<NameKey> {
        let p = self.size();
        if p == 1 {
            return sorted_union(new_local);
        }
        // Most steps bring no new name anywhere: one word says so.
        if self.allreduce_max(&[new_local.len() as u64])[0] == 0 {
            return Vec::new();
        }
        let mut mine: Vec<(u64, &NameKey)> = new_local.iter().map(|k| (name_hash(k), k)).collect();
        mine.sort();
        mine.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);

        // 1. Hashes to their owners.
        let mut to_owner = vec![Vec::new(); p];
        for (h, _) in &mine {
            to_owner[(*h % p as u64) as usize].push(*h);
        }
        let offered =
            self.all_to_all_routed(&to_owner.iter().map(|v| to_bytes(v)).collect::<Vec<_>>());

        // 2. For each owned hash, one provider among the ranks that offered
        // it: the first at or after `hash mod P` (cyclically), so that the
        // providers spread over the ranks.
        let mut offers: Vec<(u64, usize)> = offered
            .iter()
            .enumerate()
            .flat_map(|(r, b)| to_words(b).into_iter().map(move |h| (h, r)))
            .collect();
        offers.sort_unstable();
        let mut to_provider = vec![Vec::new(); p];
        let mut i = 0;
        while i < offers.len() {
            let h = offers[i].0;
            let j = offers[i..].iter().take_while(|o| o.0 == h).count() + i;
            let start = (mix64(h) % p as u64) as usize;
            let provider = offers[i..j]
                .iter()
                .map(|o| o.1)
                .min_by_key(|&r| (r + p - start) % p)
                .unwrap_or(offers[i].1);
            to_provider[provider].push(h);
            i = j;
        }
        let assigned =
            self.all_to_all_routed(&to_provider.iter().map(|v| to_bytes(v)).collect::<Vec<_>>());

        // 3. Providers publish their names; everyone gets the union once.
        let mut provide: Vec<u64> = assigned.iter().flat_map(|b| to_words(b)).collect();
        provide.sort_unstable();
        let published: Vec<NameKey> = mine
            .iter()
            .filter(|(h, _)| provide.binary_search(h).is_ok())
            .map(|(_, k)| (*k).clone())
            .collect();
        let gathered = self.allgather_routed(&encode_names(&published));
        let mut all: Vec<NameKey> = gathered.iter().flat_map(|b| decode_names(b)).collect();
        all.sort();
        all.dedup();

        // A hash collision would have dropped a name: check, and agree on
        // the plain allgather if it happened anywhere. Each of this rank's
        // names (`mine`, by hash) must be in the union under its hash.
        let missing = misses_any(&mine, &all, name_hash);
        if self.allreduce_or(&[missing as u64])[0] != 0 {
            self.name_hash_collisions
                .set(self.name_hash_collisions.get() + 1);
            return self.agree_names_by_allgather(new_local);
        }
        all
    }

    /// The plain agreement: every rank's new names to every rank. Traffic
    /// per rank grows with the number of ranks offering the same names;
    /// the fallback of [`Collectives::agree_names`].
    pub fn agree_names_by_allgather(&self, new_local: &[NameKey]) -> Vec<NameKey> {
        let gathered = self.allgather_bytes(&encode_names(new_local));
        let mut all: Vec<NameKey> = gathered.iter().flat_map(|b| decode_names(b)).collect();
        all.sort();
        all.dedup();
        all
    }
}

/// `names` sorted, each once: the agreement of a single rank. A name new
/// to several of its streams comes once per stream (four times in the
/// first step of four streams of one program): dropping the copies before
/// sorting leaves a quarter of the string comparisons and copies.
fn sorted_union(names: &[NameKey]) -> Vec<NameKey> {
    let mut seen = rustc_hash::FxHashSet::default();
    let mut all: Vec<NameKey> = names.iter().filter(|k| seen.insert(*k)).cloned().collect();
    // Distinct keys: an unstable sort puts them in the one sorted order.
    all.sort_unstable();
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_depend_on_program_and_name() {
        let a = name_hash(&(0, "main".into()));
        assert_eq!(a, name_hash(&(0, "main".into())));
        assert_ne!(a, name_hash(&(1, "main".into())));
        assert_ne!(a, name_hash(&(0, "mainx".into())));
    }

    #[test]
    fn a_single_rank_agrees_on_its_names_sorted_and_once() {
        let key = |p: u32, n: &str| -> NameKey { (p, n.into()) };
        let offered = [
            key(1, "b"),
            key(0, "z"),
            key(1, "b"),
            key(0, "a"),
            key(0, "z"),
        ];
        let want = vec![key(0, "a"), key(0, "z"), key(1, "b")];
        assert_eq!(sorted_union(&offered), want);
        assert!(sorted_union(&[]).is_empty());
    }

    #[test]
    fn words_roundtrip() {
        let v = vec![0, 1, u64::MAX, 0x0102_0304_0506_0708];
        assert_eq!(to_words(&to_bytes(&v)), v);
        assert!(to_words(&[1, 2, 3]).is_empty());
    }

    #[test]
    fn the_clashing_names_of_the_mpi_test_share_their_hash() {
        // `tests/names_scaling_mpi.rs` needs two names with one hash to
        // drive the agreement's fallback under mpirun. If the hash ever
        // changes, search a new pair the way its comment says.
        let a: NameKey = (0, "4n8sznN>QCkU0HUw".into());
        let b: NameKey = (0, "f<qfPdlkCcyqqaw2".into());
        assert_ne!(a, b);
        assert_eq!(name_hash(&a), name_hash(&b));
        assert_ne!(name_hash(&a), name_hash(&(1, b.1.clone())));
    }

    #[test]
    fn a_name_lost_to_a_hash_collision_is_noticed() {
        let (a, b, c): (NameKey, NameKey, NameKey) =
            ((0, "alpha".into()), (0, "beta".into()), (1, "alpha".into()));
        // A hash under which "alpha" and "beta" collide (program 1 apart).
        let clash = |k: &NameKey| u64::from(k.0) * 7;
        // The provider of the shared hash published "alpha": the rank that
        // offered "beta" misses it, the one that offered "alpha" does not.
        let union = vec![a.clone(), c.clone()];
        assert!(misses_any(&[(clash(&b), &b)], &union, clash));
        assert!(!misses_any(
            &[(clash(&a), &a), (clash(&c), &c)],
            &union,
            clash
        ));
        // Names absent from the union altogether are missed too, and with
        // the real hash nothing is missed when everything was published.
        assert!(misses_any(&[(name_hash(&b), &b)], &union, name_hash));
        let all = vec![a.clone(), b.clone(), c.clone()];
        let mine: Vec<(u64, &NameKey)> = all.iter().map(|k| (name_hash(k), k)).collect();
        assert!(!misses_any(&mine, &all, name_hash));
    }
}
