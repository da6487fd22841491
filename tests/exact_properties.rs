//! Property tests of the exact statistics behind the global model
//! (`chimbuko_mpi::detect::stats::exact`): what rank-count invariance rests on.
//!
//! * Any partition of a data set into parts, merged in any order and any
//!   tree shape, gives bit-identical totals and statistics.
//! * Merging an empty partial changes nothing.
//! * `sum_words` → element-wise `u64` sum over ranks (what an MPI `SUM`
//!   reduction does) → `from_words` equals the direct merge, up to the
//!   documented limits (runtimes below 2^44 µs and counts below 2^40 for
//!   `ExactMoments`, any `u64` for `WideMoments`).
//! * The statistics agree with a direct two-pass floating-point
//!   computation.

use chimbuko_mpi::detect::stats::exact::{
    ExactMoments, Moments, WideMoments, MOMENT_SUM_WORDS, U256, WIDE_SUM_WORDS,
};
use proptest::prelude::*;
use proptest::sample::Index;

/// Runtimes as the detectors see them: mostly small, some anywhere below
/// 2^44 µs, some at the very top of the range.
fn runtime() -> impl Strategy<Value = u64> + Clone {
    prop_oneof![
        4 => 0u64..1_000,
        2 => 0u64..(1 << 44),
        1 => ((1u64 << 44) - 1_000)..(1u64 << 44),
        1 => Just(0u64),
        1 => Just((1u64 << 44) - 1),
    ]
}

/// Counter values: any `u64`, with the extremes well represented.
fn counter_value() -> impl Strategy<Value = u64> + Clone {
    prop_oneof![
        3 => 0u64..1_000,
        3 => any::<u64>(),
        2 => (u64::MAX - 1_000)..=u64::MAX,
        1 => Just(0u64),
        1 => Just(u64::MAX),
    ]
}

/// The operations both moment types share, so each property is written
/// once (the derived statistics come from the library's `Moments`).
trait MomentKind: Moments + Copy + Default + PartialEq + std::fmt::Debug {
    const WORDS: usize;
    fn push(&mut self, x: u64);
    fn merge(&mut self, o: &Self);
    fn n(&self) -> u64;
    fn min_max(&self) -> (u64, u64);
    fn sum_words(&self, out: &mut Vec<u64>);
    fn from_words(words: &[u64], min: u64, max: u64) -> Self;
    fn mean(&self) -> f64;
}

macro_rules! moments_impl {
    ($t:ty, $words:expr) => {
        impl MomentKind for $t {
            const WORDS: usize = $words;
            fn push(&mut self, x: u64) {
                <$t>::push(self, x)
            }
            fn merge(&mut self, o: &Self) {
                <$t>::merge(self, o)
            }
            fn n(&self) -> u64 {
                self.n
            }
            fn min_max(&self) -> (u64, u64) {
                (self.min, self.max)
            }
            fn sum_words(&self, out: &mut Vec<u64>) {
                <$t>::sum_words(self, out)
            }
            fn from_words(words: &[u64], min: u64, max: u64) -> Self {
                <$t>::from_words(words, min, max)
            }
            fn mean(&self) -> f64 {
                <$t>::mean(self)
            }
        }
    };
}

moments_impl!(ExactMoments, MOMENT_SUM_WORDS);
moments_impl!(WideMoments, WIDE_SUM_WORDS);

fn of<M: MomentKind>(xs: impl IntoIterator<Item = u64>) -> M {
    let mut m = M::default();
    xs.into_iter().for_each(|x| m.push(x));
    m
}

/// The bits of every statistic we report.
fn stat_bits<M: MomentKind>(m: &M) -> [u64; 6] {
    [
        m.mean().to_bits(),
        m.variance(0).to_bits(),
        m.stddev(1).to_bits(),
        m.skewness().to_bits(),
        m.kurtosis().to_bits(),
        m.n(),
    ]
}

/// Splits `data` by the part each value was assigned to.
fn partition(data: &[(u64, usize)], parts: usize) -> Vec<Vec<u64>> {
    let mut p = vec![Vec::new(); parts];
    for &(x, k) in data {
        p[k % parts].push(x);
    }
    p
}

/// Merges `partials` pairwise in the tree shape `picks` describes: each
/// pick names the partial that absorbs its right neighbour.
fn tree_merge<M: MomentKind>(mut partials: Vec<M>, picks: &[Index]) -> M {
    let mut k = 0;
    while partials.len() > 1 {
        let i = picks.get(k).map_or(0, |p| p.index(partials.len() - 1));
        k += 1;
        let right = partials.remove(i + 1);
        partials[i].merge(&right);
    }
    partials.pop().unwrap_or_default()
}

/// Any partition, merged in the order `order` (a permutation of the
/// parts) and in an arbitrary tree, gives the whole data set's state.
fn check_partition_invariance<M: MomentKind>(
    data: &[(u64, usize)],
    order: &[usize],
    picks: &[Index],
) -> Result<(), TestCaseError> {
    let whole: M = of(data.iter().map(|d| d.0));
    let parts: Vec<M> = partition(data, order.len())
        .into_iter()
        .map(of::<M>)
        .collect();
    let mut linear = M::default();
    for &k in order {
        linear.merge(&parts[k]);
    }
    prop_assert_eq!(linear, whole);
    prop_assert_eq!(stat_bits(&linear), stat_bits(&whole));
    let permuted: Vec<M> = order.iter().map(|&k| parts[k]).collect();
    let tree = tree_merge(permuted, picks);
    prop_assert_eq!(tree, whole);
    prop_assert_eq!(stat_bits(&tree), stat_bits(&whole));
    Ok(())
}

/// Merging an empty partial, on either side, changes nothing.
fn check_empty_identity<M: MomentKind>(xs: &[u64]) -> Result<(), TestCaseError> {
    let m: M = of(xs.iter().copied());
    let mut right = m;
    right.merge(&M::default());
    prop_assert_eq!(right, m);
    let mut left = M::default();
    left.merge(&m);
    prop_assert_eq!(left, m);
    prop_assert_eq!(stat_bits(&left), stat_bits(&m));
    Ok(())
}

/// What the reduction over ranks does: each rank sends `sum_words`, an
/// MPI `SUM` adds them element-wise as `u64`, and MIN/MAX reduce the
/// extremes, where an empty rank sends `u64::MAX` / `0` so that it cannot
/// win (as `detect::sstd` and `provenance::stats` do).
fn reduce_like_mpi<M: MomentKind>(ranks: &[M]) -> M {
    let mut sum = vec![0u64; M::WORDS];
    let (mut min, mut max) = (u64::MAX, 0u64);
    for m in ranks {
        let mut w = Vec::new();
        m.sum_words(&mut w);
        assert_eq!(w.len(), M::WORDS);
        for (s, x) in sum.iter_mut().zip(&w) {
            // Each word holds 32 bits, so this cannot overflow before
            // 2^32 ranks (and would panic here if it did).
            *s += x;
        }
        let (lo, hi) = if m.n() == 0 {
            (u64::MAX, 0)
        } else {
            m.min_max()
        };
        min = min.min(lo);
        max = max.max(hi);
    }
    M::from_words(&sum, min, max)
}

fn check_reduction<M: MomentKind>(ranks: &[M]) -> Result<(), TestCaseError> {
    let mut direct = M::default();
    ranks.iter().for_each(|m| direct.merge(m));
    let reduced = reduce_like_mpi(ranks);
    prop_assert_eq!(reduced, direct);
    prop_assert_eq!(stat_bits(&reduced), stat_bits(&direct));
    Ok(())
}

/// `a` agrees with `reference` within `tol`, relative to `reference` or
/// to `scale`, whichever is larger.
fn close(a: f64, reference: f64, tol: f64, scale: f64) -> bool {
    (a - reference).abs() <= tol * reference.abs().max(scale)
}

/// Mean, variance (ddof 0 and 1), skewness and excess kurtosis by the
/// textbook two passes in `f64`. The second pass works on `x - min`
/// (exact in integers): central moments do not change under a shift, and
/// without it the reference itself would lose the digits of data sets
/// with a small spread around a large value.
fn two_pass(xs: &[u64]) -> (f64, f64, f64, f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / n;
    let lo = *xs.iter().min().unwrap();
    let shifted: Vec<f64> = xs.iter().map(|&x| (x - lo) as f64).collect();
    let c = shifted.iter().sum::<f64>() / n;
    let m = |k: i32| shifted.iter().map(|&d| (d - c).powi(k)).sum::<f64>() / n;
    let (m2, m3, m4) = (m(2), m(3), m(4));
    let (skew, kurt) = if m2 > 0.0 {
        (m3 / m2.powf(1.5), m4 / (m2 * m2) - 3.0)
    } else {
        (0.0, 0.0)
    };
    let var1 = if xs.len() > 1 {
        m2 * n / (n - 1.0)
    } else {
        0.0
    };
    (mean, m2, var1, skew, kurt)
}

fn check_against_two_pass<M: MomentKind>(xs: &[u64]) -> Result<(), TestCaseError> {
    let m: M = of(xs.iter().copied());
    let (mean, var0, var1, skew, kurt) = two_pass(xs);
    prop_assert!(
        close(m.mean(), mean, 1e-12, 0.0),
        "mean {} vs {mean}",
        m.mean()
    );
    prop_assert!(
        close(m.variance(0), var0, 1e-9, 0.0),
        "var0 {} vs {var0}",
        m.variance(0)
    );
    prop_assert!(
        close(m.variance(1), var1, 1e-9, 0.0),
        "var1 {} vs {var1}",
        m.variance(1)
    );
    // Dimensionless: an absolute tolerance where they are near zero.
    prop_assert!(
        close(m.skewness(), skew, 1e-7, 1.0),
        "skew {} vs {skew}",
        m.skewness()
    );
    prop_assert!(
        close(m.kurtosis(), kurt, 1e-7, 1.0),
        "kurt {} vs {kurt}",
        m.kurtosis()
    );
    let (lo, hi) = m.min_max();
    prop_assert_eq!(lo, *xs.iter().min().unwrap());
    prop_assert_eq!(hi, *xs.iter().max().unwrap());
    Ok(())
}

/// Parts of a data set and a merge order over 1..=8 parts.
fn partitioned(
    value: impl Strategy<Value = u64> + Clone + 'static,
) -> impl Strategy<Value = PartitionCase> {
    (1usize..=8).prop_flat_map(move |parts| {
        (
            prop::collection::vec((value.clone(), 0..parts), 0..300),
            Just((0..parts).collect::<Vec<_>>()).prop_shuffle(),
            prop::collection::vec(any::<Index>(), parts),
        )
    })
}

type PartitionCase = (Vec<(u64, usize)>, Vec<usize>, Vec<Index>);

fn u256_below(top_limb: u64) -> impl Strategy<Value = U256> {
    (any::<[u64; 3]>(), 0..=top_limb).prop_map(|(l, top)| U256([l[0], l[1], l[2], top]))
}

/// A partial model at the documented limits, built field by field (no one
/// can push 2^40 values in a test): each of `ranks` partials may hold up
/// to 1/`ranks` of the largest totals, so the reduced totals stay within
/// the limits and every limb is busy.
fn exact_partial(ranks: u64) -> impl Strategy<Value = ExactMoments> {
    let full = (
        1..=(1u64 << 40) / ranks,
        0..=(1u128 << 84) / ranks as u128,
        0..=u128::MAX / ranks as u128,
        u256_below(u64::MAX / ranks),
        u256_below(u64::MAX / ranks),
        0u64..(1 << 44),
        0u64..(1 << 44),
    )
        .prop_map(|(n, s1, s2, s3, s4, a, b)| ExactMoments {
            n,
            s1,
            s2,
            s3,
            s4,
            min: a.min(b),
            max: a.max(b),
        });
    prop_oneof![4 => full, 1 => Just(ExactMoments::default())]
}

fn wide_partial(ranks: u64) -> impl Strategy<Value = WideMoments> {
    let full = (
        (1..=(1u64 << 40) / ranks, 0..=(1u128 << 104) / ranks as u128),
        u256_below(u64::MAX / ranks),
        u256_below(u64::MAX / ranks),
        any::<[u64; 4]>(),
        0..=(1u64 << 40) / ranks,
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(|((n, s1), s2, s3, s4, s4_carry, a, b)| WideMoments {
            n,
            s1,
            s2,
            s3,
            s4: U256(s4),
            s4_carry,
            min: a.min(b),
            max: a.max(b),
        });
    prop_oneof![4 => full, 1 => Just(WideMoments::default())]
}

/// 1..=64 simulated ranks, each with a partial from `partial(ranks)`.
fn ranks_of<M: MomentKind, S: Strategy<Value = M>>(
    partial: impl Fn(u64) -> S,
) -> impl Strategy<Value = Vec<M>> {
    (1u64..=64).prop_flat_map(move |r| prop::collection::vec(partial(r), r as usize))
}

proptest! {
    #[test]
    fn exact_any_partition_and_merge_order_is_bit_identical(
        (data, order, picks) in partitioned(runtime())
    ) {
        check_partition_invariance::<ExactMoments>(&data, &order, &picks)?;
    }

    #[test]
    fn wide_any_partition_and_merge_order_is_bit_identical(
        (data, order, picks) in partitioned(counter_value())
    ) {
        check_partition_invariance::<WideMoments>(&data, &order, &picks)?;
    }

    #[test]
    fn merging_an_empty_partial_is_the_identity(
        runtimes in prop::collection::vec(runtime(), 0..100),
        values in prop::collection::vec(counter_value(), 0..100),
    ) {
        check_empty_identity::<ExactMoments>(&runtimes)?;
        check_empty_identity::<WideMoments>(&values)?;
    }

    /// Ranks that pushed real data (some ranks saw nothing).
    #[test]
    fn reduction_over_ranks_equals_direct_merge_of_data(
        exact in prop::collection::vec(prop::collection::vec(runtime(), 0..40), 1..16),
        wide in prop::collection::vec(prop::collection::vec(counter_value(), 0..40), 1..16),
    ) {
        let exact: Vec<ExactMoments> = exact.into_iter().map(of).collect();
        check_reduction(&exact)?;
        let wide: Vec<WideMoments> = wide.into_iter().map(of).collect();
        check_reduction(&wide)?;
    }

    /// Partials at the documented limits, where every carry between the
    /// 32-bit limbs of the reduced words matters.
    #[test]
    fn exact_reduction_at_the_limits_equals_direct_merge(
        ranks in ranks_of(exact_partial)
    ) {
        check_reduction(&ranks)?;
    }

    #[test]
    fn wide_reduction_at_the_limits_equals_direct_merge(
        ranks in ranks_of(wide_partial)
    ) {
        check_reduction(&ranks)?;
    }

    #[test]
    fn exact_statistics_agree_with_two_pass(
        xs in prop::collection::vec(runtime(), 1..400)
    ) {
        check_against_two_pass::<ExactMoments>(&xs)?;
    }

    #[test]
    fn wide_statistics_agree_with_two_pass(
        xs in prop::collection::vec(counter_value(), 1..400)
    ) {
        check_against_two_pass::<WideMoments>(&xs)?;
    }
}

// ---------------------------------------------------------------------
// Histogram merge
//
// Place for the histogram-merge property of the HBOS/COPOD detectors (on
// their own branch): partial histograms on the fixed global bin grid,
// merged over any partition and in any order, must give bit-identical
// counts and scores. To be written against the real histogram type when
// that branch is merged; the strategies above (`partitioned`, `ranks_of`,
// `tree_merge`) are meant to be reused for it.
