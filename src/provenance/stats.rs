//! Global runtime and counter profiles (behind `func_stats`,
//! `counter_stats` and the live statistics), kept sparse and agreed
//! incrementally.
//!
//! Each rank accumulates exact integer moments of what its streams
//! delivered since the last agreement, only for the functions that ran
//! ([`RunProfiles::profile`]: a slot per function, an entry per function
//! touched). An agreement ([`RunProfiles::agree`], collective) sums those
//! pending moments over ranks for the functions that ran on *some* rank
//! (one bitwise-OR reduction of a bit per function, then integer SUM and
//! MIN over the active functions only) and adds them to the run's totals,
//! which every rank holds, identical whatever the number of AD ranks. So
//! the wire and the work of an agreement follow what changed since the
//! previous one, not every function ever seen, and the totals cost one
//! [`Profile`] per function (144 bytes; 128 more once its exclusive times
//! differ from the inclusive ones, i.e. it had children).
//!
//! Runtime profiles count every completed execution once (the reference
//! counts executions held unlabeled again each step; we do not).

use std::cell::{Ref, RefCell};

use crate::collectives::Collectives;
use crate::detect::stats::exact::{ExactMoments, WideMoments, MOMENT_SUM_WORDS, WIDE_SUM_WORDS};

use super::records::RunStatsRow;
use crate::detect::stats::exact::Moments;
use crate::util::bits::{self, bitset_of, set_bits};
use crate::util::slots::Touched;

/// The run's runtime profile of one function (all ranks).
#[derive(Debug, Clone, Default)]
pub struct Profile {
    /// Inclusive runtimes (µs).
    pub inclusive: ExactMoments,
    /// Exclusive runtimes (µs), held apart only once they differ from the
    /// inclusive ones: a function that never had a child (most of them)
    /// costs one set of moments, not two.
    exclusive: Option<Box<ExactMoments>>,
}

impl Profile {
    /// Exclusive runtimes (µs).
    pub fn exclusive(&self) -> &ExactMoments {
        self.exclusive.as_deref().unwrap_or(&self.inclusive)
    }

    /// Whether the exclusive times ever differed from the inclusive ones.
    pub fn exclusive_differs(&self) -> bool {
        self.exclusive.is_some()
    }

    /// Adds the inclusive and exclusive moments of more executions.
    fn merge(&mut self, inclusive: &ExactMoments, exclusive: &ExactMoments) {
        match &mut self.exclusive {
            Some(e) => e.merge(exclusive),
            None if inclusive == exclusive => {}
            None => {
                let mut e = self.inclusive;
                e.merge(exclusive);
                self.exclusive = Some(Box::new(e));
            }
        }
        self.inclusive.merge(inclusive);
    }
}

/// What one rank adds to a function's profile between two agreements.
#[derive(Debug, Clone, Copy, Default)]
struct PendingProfile {
    /// Executions whose two times are equal (calls without children: most
    /// of them), counted once for both.
    same: ExactMoments,
    /// 1 + the place in [`Pending::split`] of the executions whose
    /// inclusive and exclusive times differ (calls with children); 0 while
    /// there is none, so a leaf function costs one set of moments.
    split: u32,
}

/// One stream's executions of a step for the profiles, gathered on a
/// worker thread ([`ProfileShare::profile`]) and added to the rank's
/// pending profile on the main thread ([`RunProfiles::absorb`]). The
/// moments are exact, so the result is the same as profiling every
/// execution on one thread.
#[derive(Debug, Default)]
pub struct ProfileShare {
    touched: Touched<PendingProfile>,
    split: Vec<(ExactMoments, ExactMoments)>,
    /// By counter: the stream's values of the step.
    counters: Vec<WideMoments>,
}

impl ProfileShare {
    /// Adds one execution of function `f`.
    #[inline]
    pub fn profile(&mut self, f: u32, inclusive: u64, exclusive: u64) {
        add_execution(&mut self.touched, &mut self.split, f, inclusive, exclusive);
    }

    /// Adds one value of counter `c`.
    #[inline]
    pub fn counter(&mut self, c: u32, value: u64) {
        counter_slot(&mut self.counters, c as usize).push(value);
    }

    /// Empties the share for the stream's next step (on its worker thread,
    /// before it builds: a pass over every function the stream ran).
    pub fn clear(&mut self) {
        self.touched.reset(|e| *e = PendingProfile::default());
        self.split.clear();
        for c in self.counters.iter_mut().filter(|c| c.n > 0) {
            *c = WideMoments::default();
        }
    }
}

/// The moments of counter `c` in `counters` (by counter), made room for.
#[inline]
fn counter_slot(counters: &mut Vec<WideMoments>, c: usize) -> &mut WideMoments {
    if c >= counters.len() {
        counters.resize(c + 1, WideMoments::default());
    }
    &mut counters[c]
}

/// Adds one execution of function `f` to pending profiles. Leaf calls
/// (inclusive == exclusive) cost one exact push, not two.
#[inline]
fn add_execution(
    touched: &mut Touched<PendingProfile>,
    split: &mut Vec<(ExactMoments, ExactMoments)>,
    f: u32,
    inclusive: u64,
    exclusive: u64,
) {
    let e = touched.entry(f);
    if inclusive == exclusive {
        e.same.push(inclusive);
    } else {
        if e.split == 0 {
            split.push(Default::default());
            e.split = split.len() as u32;
        }
        let (inc, exc) = &mut split[e.split as usize - 1];
        inc.push(inclusive);
        exc.push(exclusive);
    }
}

/// This rank's additions since the last agreement.
#[derive(Debug, Default)]
struct Pending {
    /// The functions touched since the last agreement (a 4-byte slot per
    /// function; reset entry by entry, never swept).
    touched: Touched<PendingProfile>,
    /// Inclusive and exclusive moments of calls with children.
    split: Vec<(ExactMoments, ExactMoments)>,
    /// By counter: every value since the last agreement (counters are few).
    counters: Vec<WideMoments>,
}

/// The run's totals, identical on every rank after each agreement.
#[derive(Debug, Default)]
pub struct Totals {
    /// By function.
    pub functions: Vec<Profile>,
    /// By counter: every value of the counter.
    pub counters: Vec<WideMoments>,
    /// Functions whose profile changed since [`Totals::take_changed`] was
    /// last called (the provenance writer rewrites only their rows).
    changed: bits::MarkedSet,
}

impl Totals {
    /// The functions whose profile changed since the last call, in
    /// increasing order (then forgotten).
    pub fn take_changed(&mut self) -> Vec<u32> {
        let mut out = self.changed.take();
        out.sort_unstable();
        out
    }

    fn mark_changed(&mut self, f: u32) {
        self.changed.mark(f);
    }
}

/// Runtime and counter profiles of the run: this rank's pending additions
/// and the agreed totals.
#[derive(Debug, Default)]
pub struct RunProfiles {
    pending: RefCell<Pending>,
    totals: RefCell<Totals>,
}

impl RunProfiles {
    /// Adds one execution of function `f` to this rank's pending profile.
    /// Leaf calls (inclusive == exclusive) cost one exact push, not two.
    #[inline]
    pub fn profile(&mut self, f: u32, inclusive: u64, exclusive: u64) {
        let p = self.pending.get_mut();
        add_execution(&mut p.touched, &mut p.split, f, inclusive, exclusive);
    }

    /// Adds a stream's share (gathered on a worker thread) to this rank's
    /// pending profile, as if each of its executions and counter values had
    /// been profiled here. The stream empties the share before its next
    /// build ([`ProfileShare::clear`]).
    pub fn absorb(&mut self, share: &ProfileShare) {
        let p = self.pending.get_mut();
        for (f, theirs) in share.touched.iter() {
            let mine = p.touched.entry(f);
            mine.same.merge(&theirs.same);
            if theirs.split > 0 {
                if mine.split == 0 {
                    p.split.push(Default::default());
                    mine.split = p.split.len() as u32;
                }
                let (inc, exc) = &share.split[theirs.split as usize - 1];
                let (my_inc, my_exc) = &mut p.split[mine.split as usize - 1];
                my_inc.merge(inc);
                my_exc.merge(exc);
            }
        }
        for (c, theirs) in share.counters.iter().enumerate() {
            if theirs.n > 0 {
                counter_slot(&mut p.counters, c).merge(theirs);
            }
        }
    }

    /// Adds every rank's pending profiles to the totals (collective: every
    /// rank calls it at the same point of the same step; every rank gets
    /// the same totals). `functions` and `counters` are the numbers of
    /// global names.
    pub fn agree(&self, coll: &Collectives, functions: usize, counters: usize) {
        let mut p = self.pending.borrow_mut();
        let mut t = self.totals.borrow_mut();
        agree(&mut p, &mut t, coll, functions, counters);
    }

    /// The totals as last agreed.
    pub fn totals(&self) -> Ref<'_, Totals> {
        self.totals.borrow()
    }

    /// The functions whose totals changed since the last call, increasing.
    pub fn take_changed(&self) -> Vec<u32> {
        self.totals.borrow_mut().take_changed()
    }
}

/// One agreement: see [`RunProfiles::agree`].
fn agree(p: &mut Pending, t: &mut Totals, coll: &Collectives, nf: usize, nc: usize) {
    let mut keys: Vec<u32> = p.touched.iter().map(|e| e.0).collect();
    keys.sort_unstable();
    let (touched, split) = (&p.touched, &p.split);
    let fill = |f: u32, sum: &mut Vec<u64>, lo: &mut Vec<u64>| {
        let e = touched.get(f as usize).copied();
        // The full inclusive and exclusive profiles.
        let (mut inc, mut exc) = match e {
            Some(e) if e.split > 0 => split[e.split as usize - 1],
            _ => Default::default(),
        };
        if let Some(e) = e {
            inc.merge(&e.same);
            exc.merge(&e.same);
        }
        for m in [&inc, &exc] {
            m.sum_words(sum);
            push_min_max(lo, m.n, m.min, m.max);
        }
    };
    let mut counter_sum = Vec::new();
    let mut counter_lo = Vec::new();
    p.counters.resize(nc, WideMoments::default());
    for c in &p.counters[..nc] {
        c.sum_words(&mut counter_sum);
        push_min_max(&mut counter_lo, c.n, c.min, c.max);
    }
    if t.functions.len() < nf {
        // Grown by a quarter, not doubled: at 10^5 functions the slack of a
        // doubling would be megabytes of empty profiles.
        let more = (nf - t.functions.len()).max(t.functions.len() / 4);
        t.functions.reserve_exact(more);
        t.functions.resize(nf, Profile::default());
    }
    let mut changed = Vec::new();
    let functions = &mut t.functions;
    let (s, lo) = reduce_sparse(
        coll,
        nf,
        &keys,
        (2 * MOMENT_SUM_WORDS, 4),
        fill,
        (&counter_sum, &counter_lo),
        |f, s, lo| {
            functions[f as usize].merge(
                &ExactMoments::from_words(s, lo[0], !lo[1]),
                &ExactMoments::from_words(&s[MOMENT_SUM_WORDS..], lo[2], !lo[3]),
            );
            changed.push(f);
        },
    );
    for f in changed {
        t.mark_changed(f);
    }
    if t.counters.len() < nc {
        t.counters.resize(nc, WideMoments::default());
    }
    for c in 0..nc {
        let m = WideMoments::from_words(&s[c * WIDE_SUM_WORDS..], lo[2 * c], !lo[2 * c + 1]);
        t.counters[c].merge(&m);
    }
    // Forget what was agreed: entry by entry, never a sweep of all slots.
    p.touched.reset(|e| *e = PendingProfile::default());
    p.split.clear();
    p.counters
        .iter_mut()
        .for_each(|c| *c = WideMoments::default());
}

/// Appends a moment's MIN-reduced words: its min, and its max bitwise
/// negated (so that one MIN reduction gives both: max x = !min !x).
pub(super) fn push_min_max(lo: &mut Vec<u64>, n: u64, min: u64, max: u64) {
    if n == 0 {
        lo.extend([u64::MAX, u64::MAX]);
    } else {
        lo.extend([min, !max]);
    }
}

/// Functions per round of [`reduce_sparse`]: bounds the buffers of a
/// reduction (about 1.7 MB for profiles) whatever the number of functions.
const REDUCE_CHUNK: usize = 4096;

/// Sums per-function words over ranks for the functions that some rank
/// has (`keys`, this rank's, increasing), plus a small dense `extra` part
/// (collective). First the union of the keys (one OR reduction of a bit
/// per function: `n / 8` bytes), then SUM and MIN reductions of the active
/// functions' words, [`REDUCE_CHUNK`] functions at a time: `fill` appends a
/// function's words (identity words — zeros, `u64::MAX` — for one this
/// rank does not have), `absorb` gets each active function's reduced
/// words, in increasing function order. Returns the reduced extra part.
pub(super) fn reduce_sparse(
    coll: &Collectives,
    n: usize,
    keys: &[u32],
    (sum_words, lo_words): (usize, usize),
    mut fill: impl FnMut(u32, &mut Vec<u64>, &mut Vec<u64>),
    extra: (&[u64], &[u64]),
    mut absorb: impl FnMut(u32, &[u64], &[u64]),
) -> (Vec<u64>, Vec<u64>) {
    let bits = coll.allreduce_or(&bitset_of(n, keys.iter().copied()));
    let active: Vec<u32> = set_bits(&bits).collect();
    let mut extra_out = (Vec::new(), Vec::new());
    // The same number of rounds on every rank (the active set is agreed);
    // the extra part rides with the first.
    let rounds = active.len().div_ceil(REDUCE_CHUNK).max(1);
    let (mut sum, mut lo) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        let chunk = &active
            [(r * REDUCE_CHUNK).min(active.len())..((r + 1) * REDUCE_CHUNK).min(active.len())];
        sum.clear();
        lo.clear();
        for &f in chunk {
            fill(f, &mut sum, &mut lo);
        }
        debug_assert_eq!(sum.len(), chunk.len() * sum_words);
        debug_assert_eq!(lo.len(), chunk.len() * lo_words);
        if r == 0 {
            sum.extend_from_slice(extra.0);
            lo.extend_from_slice(extra.1);
        }
        let mut s = coll.allreduce_sum(&sum);
        let mut l = coll.allreduce_min(&lo);
        if r == 0 {
            extra_out = (
                s.split_off(chunk.len() * sum_words),
                l.split_off(chunk.len() * lo_words),
            );
        }
        for (k, &f) in chunk.iter().enumerate() {
            absorb(
                f,
                &s[k * sum_words..(k + 1) * sum_words],
                &l[k * lo_words..(k + 1) * lo_words],
            );
        }
    }
    extra_out
}

/// Chimbuko's RunStats of exact moments (`scale` divides every value:
/// 1 for runtimes and counts, [`super::anomaly_stats::SCORE_SCALE`] for
/// scores).
pub fn run_stats(m: &ExactMoments, scale: f64) -> RunStatsRow {
    if m.n == 0 {
        return RunStatsRow::default();
    }
    let (skewness, kurtosis) = m.skewness_kurtosis();
    RunStatsRow {
        count: m.n,
        accumulate: m.s1 as f64 / scale,
        minimum: m.min as f64 / scale,
        maximum: m.max as f64 / scale,
        mean: m.mean() / scale,
        stddev: m.stddev(1) / scale,
        skewness,
        kurtosis,
    }
}

/// RunStats of a counter's values.
pub fn wide_run_stats(m: &WideMoments) -> RunStatsRow {
    if m.n == 0 {
        return RunStatsRow::default();
    }
    let (skewness, kurtosis) = m.skewness_kurtosis();
    RunStatsRow {
        count: m.n,
        accumulate: m.s1 as f64,
        minimum: m.min as f64,
        maximum: m.max as f64,
        mean: m.mean(),
        stddev: m.stddev(1),
        skewness,
        kurtosis,
    }
}
