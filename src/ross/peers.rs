//! Peer comparison: an entity against the others of its kind in the same
//! GVT interval.
//!
//! Thresholding each PE against its own history fails on ROSS data: with
//! oversubscribed ranks every PE slows at once, and optimistic runs roll
//! back heavily everywhere. What marks a culprit is being far from its
//! peers at the same moment. For each signal and interval, an entity's
//! value is compared with the median of the *other* entities (leave one
//! out, so that two PEs can still be told apart), on a robust scale:
//!
//! `score = (x − median_others) / max(1.4826·MAD_others, rel_floor·|median_others|, abs_floor)`
//!
//! with the sign turned for signals where low is bad (efficiency). That
//! alone flags the ordinary interval-to-interval noise of small counts, so
//! the score of an interval is taken relative to the entity's usual
//! distance from its peers over the run: with `d_k = x_k − median_others_k`,
//!
//! `score_k = (d_k − median(d)) / max(1.4826·MAD(d), rel_floor·|median_others_k|, abs_floor)`.
//!
//! An entity is flagged where it departs from its peers by far more than
//! it usually does: a PE that is always a little busier (it holds more
//! LPs) is not, one that suddenly takes ten times longer is. An interval is
//! flagged when the score reaches the threshold; consecutive flagged
//! intervals of one entity and signal form one window.

use super::signals::{Entity, RunSeries, Signal, SignalWindow};

/// How far from its peers an entity must be to be flagged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeerRule {
    /// Score at or above which an interval is flagged.
    pub threshold: f64,
    /// Smallest scale, as a share of the peers' median: with the default
    /// threshold 6 and 0.25, a value must be at least 2.5× the peers'
    /// median before it can be flagged, however alike the peers are.
    pub rel_floor: f64,
    /// Consecutive flagged intervals a window needs: one interval alone is
    /// a hiccup (a descheduled process, a page fault storm), not a slow or
    /// hot entity.
    pub min_intervals: usize,
}

/// Unflagged intervals a window of the real-time series may bridge: in
/// real time a slow PE's peers wake up now and then (each GVT interval,
/// when the slow PE's events finally arrive), which breaks one slow
/// stretch into many short windows.
pub const RT_BRIDGE: usize = 3;

impl Default for PeerRule {
    fn default() -> Self {
        PeerRule {
            threshold: 6.0,
            rel_floor: 0.25,
            min_intervals: 2,
        }
    }
}

/// A window of consecutive intervals in which one entity's signal stood out.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerAnomaly {
    /// Who.
    pub entity: Entity,
    /// In what.
    pub signal: Signal,
    /// Where (interval indices of the entity's PE) and how strongly: the
    /// entity's value at the peak.
    pub window: SignalWindow,
    /// The other entities' median at that interval.
    pub peer_median: f64,
    /// The entity's values over the window and one interval on each side
    /// (the neighbouring samples), with the interval index of the first.
    pub context: (usize, Vec<f64>),
}

/// Smallest meaningful difference of a signal (absolute floor of the scale).
fn abs_floor(sig: Signal) -> f64 {
    match sig {
        Signal::EventProcessTime | Signal::RollbackTime | Signal::SampleGap => 1e-3,
        Signal::Efficiency => 1.0,
        Signal::GvtRate | Signal::TimeAheadOfGvt => 1e-9,
        _ => 1.0,
    }
}

/// The median of `v` (sorted in place; 0 when empty).
pub(super) fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    median_sorted(v)
}

/// The median of sorted `v` (0 when empty).
pub(super) fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The scale a difference from the peers' median `m` is measured in: the
/// peers' spread (`mad`, unscaled), floored by a share of the median and
/// by the signal's smallest meaningful difference.
pub(super) fn peer_scale(mad: f64, m: f64, sig: Signal, rule: &PeerRule) -> f64 {
    (1.4826 * mad)
        .max(rule.rel_floor * m.abs())
        .max(abs_floor(sig))
}

/// The score of `x` against `others` alone (one interval, no history):
/// `(score, median of others)`.
pub fn peer_score(x: f64, others: &[f64], sig: Signal, rule: &PeerRule) -> (f64, f64) {
    let mut o = others.to_vec();
    let m = median(&mut o);
    let mut dev: Vec<f64> = others.iter().map(|v| (v - m).abs()).collect();
    let mad = median(&mut dev);
    (bad_side(x - m, sig) / peer_scale(mad, m, sig, rule), m)
}

/// A difference turned so that positive is the bad side.
fn bad_side(d: f64, sig: Signal) -> f64 {
    if sig.low_is_bad() {
        -d
    } else {
        d
    }
}

/// Scores of one entity's intervals against its peers, relative to its
/// usual distance from them (see the module doc): `(score, median of
/// others)` per interval. `columns[k]` holds every entity's value at
/// interval `k`, sorted, the entity's own included: the median of the
/// others is that column's median without one copy of the entity's value,
/// which is exactly the leave-one-out median, in O(1).
fn scores_over_run(
    values: &[f64],
    columns: &[Vec<f64>],
    sig: Signal,
    rule: &PeerRule,
    against_usual: bool,
) -> Vec<(f64, f64)> {
    let medians: Vec<f64> = values
        .iter()
        .zip(columns)
        .map(|(x, col)| median_without(col, *x))
        .collect();
    let d: Vec<f64> = values
        .iter()
        .zip(&medians)
        .map(|(x, m)| bad_side(x - m, sig))
        .collect();
    if !against_usual {
        // Against the peers of each interval alone, on the interval's own
        // spread (the MAD of its column).
        return d
            .iter()
            .zip(&medians)
            .zip(columns)
            .map(|((dk, m), col)| {
                let mut dev: Vec<f64> = col.iter().map(|v| (v - m).abs()).collect();
                (dk / peer_scale(median(&mut dev), *m, sig, rule), *m)
            })
            .collect();
    }
    let usual = median(&mut d.clone());
    let spread = 1.4826 * median(&mut d.iter().map(|v| (v - usual).abs()).collect::<Vec<_>>());
    d.iter()
        .zip(&medians)
        .map(|(dk, m)| {
            let scale = spread.max(rule.rel_floor * m.abs()).max(abs_floor(sig));
            ((dk - usual) / scale, *m)
        })
        .collect()
}

/// The median of sorted `v` without one element equal to `x` (which `v`
/// holds).
pub(super) fn median_without(v: &[f64], x: f64) -> f64 {
    let at = v.partition_point(|y| y.total_cmp(&x).is_lt());
    let m = v.len().saturating_sub(1);
    let get = |i: usize| if i < at { v[i] } else { v[i + 1] };
    if m == 0 {
        0.0
    } else if m % 2 == 1 {
        get(m / 2)
    } else {
        (get(m / 2 - 1) + get(m / 2)) / 2.0
    }
}

/// Every window where an entity stood out from its peers, in a fixed
/// order (kind, signal, entity, window start).
///
/// `against_usual`: scores relative to each entity's usual distance from
/// its peers (GVT series). The real-time series compare with the peers
/// alone: a slow PE stretches every GVT interval it is slow in, so in real
/// time its slow stretch can be most of the run, and would become its
/// "usual" distance.
pub fn find(series: &RunSeries, rule: &PeerRule, against_usual: bool) -> Vec<PeerAnomaly> {
    let mut out = Vec::new();
    let bridge = if against_usual { 0 } else { RT_BRIDGE };
    for g in peer_groups(series) {
        for (entity, values) in &g.members {
            let len = g.columns.len();
            let scored = scores_over_run(&values[..len], &g.columns, g.signal, rule, against_usual);
            windows(
                series, *entity, g.signal, values, &scored, rule, bridge, &mut out,
            );
        }
    }
    out
}

/// The entities compared with each other on one signal: all of one kind,
/// at least two.
#[derive(Debug)]
pub struct PeerGroup<'a> {
    /// `pe`, `kp` or `lp`.
    pub kind: &'static str,
    /// The signal.
    pub signal: Signal,
    /// Each entity and its series.
    pub members: Vec<(Entity, &'a [f64])>,
    /// Per interval (as many as the shortest series has), every member's
    /// value, sorted: the detector's model at that interval.
    pub columns: Vec<Vec<f64>>,
}

/// Every group of peers of `series`, in a fixed order (kind, signal).
pub fn peer_groups(series: &RunSeries) -> Vec<PeerGroup<'_>> {
    let kinds: [(&str, &[Signal]); 3] = [
        ("pe", &Signal::PE),
        ("kp", &Signal::KP),
        ("lp", &Signal::LP),
    ];
    let mut out = Vec::new();
    for (kind, signals) in kinds {
        for &signal in signals.iter().filter(|s| s.is_compared()) {
            let members: Vec<(Entity, &[f64])> = series
                .values
                .iter()
                .filter(|((e, s), _)| *s == signal && e.kind() == kind)
                .map(|((e, _), v)| (*e, v.as_slice()))
                .collect();
            if members.len() < 2 {
                continue;
            }
            let len = members.iter().map(|(_, v)| v.len()).min().unwrap_or(0);
            let columns = (0..len)
                .map(|k| {
                    let mut c: Vec<f64> = members.iter().map(|(_, v)| v[k]).collect();
                    c.sort_by(f64::total_cmp);
                    c
                })
                .collect();
            out.push(PeerGroup {
                kind,
                signal,
                members,
                columns,
            });
        }
    }
    out
}

/// Merges consecutive flagged intervals into windows.
#[allow(clippy::too_many_arguments)]
fn windows(
    series: &RunSeries,
    entity: Entity,
    sig: Signal,
    values: &[f64],
    scored: &[(f64, f64)],
    rule: &PeerRule,
    bridge: usize,
    out: &mut Vec<PeerAnomaly>,
) {
    let intervals = series.intervals_of(entity);
    let mut k = 0;
    while k < scored.len() {
        if scored[k].0 < rule.threshold {
            k += 1;
            continue;
        }
        let first = k;
        let flagged = |j: usize| scored.get(j).is_some_and(|s| s.0 >= rule.threshold);
        loop {
            if flagged(k + 1) {
                k += 1;
            } else if let Some(j) = (k + 2..=k + 1 + bridge).find(|j| flagged(*j)) {
                k = j;
            } else {
                break;
            }
        }
        let last = k;
        k += 1;
        if last + 1 - first < rule.min_intervals.max(1) {
            continue;
        }
        let peak = (first..=last)
            .max_by(|a, b| scored[*a].0.total_cmp(&scored[*b].0))
            .unwrap_or(first);
        let lo = first.saturating_sub(1);
        let hi = (last + 2).min(values.len());
        let window = SignalWindow::new(intervals, (first, last), scored[peak].0, values[peak]);
        out.push(PeerAnomaly {
            entity,
            signal: sig,
            window,
            peer_median: scored[peak].1,
            context: (lo, values[lo..hi].to_vec()),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_without_one_matches_removing_it() {
        let v = [1.0, 2.0, 2.0, 5.0, 9.0];
        for x in v {
            let mut w = v.to_vec();
            let i = w.iter().position(|y| *y == x).unwrap();
            w.remove(i);
            assert_eq!(median_without(&v, x), median_sorted(&w), "{x}");
        }
    }

    #[test]
    fn one_slow_pe_of_two_stands_out_and_alike_peers_do_not() {
        let rule = PeerRule::default();
        let (s, m) = peer_score(10.0, &[1.0], Signal::EventProcessTime, &rule);
        assert_eq!(m, 1.0);
        assert!(s >= rule.threshold, "{s}");
        let (s, _) = peer_score(1.2, &[1.0, 1.1, 0.9], Signal::EventProcessTime, &rule);
        assert!(s < 1.0, "{s}");
        // Low is bad for efficiency: a PE far below its peers is flagged.
        let (s, _) = peer_score(-300.0, &[90.0, 92.0, 91.0], Signal::Efficiency, &rule);
        assert!(s >= rule.threshold, "{s}");
        let (s, _) = peer_score(300.0, &[90.0, 92.0, 91.0], Signal::Efficiency, &rule);
        assert!(s < 0.0);
    }
}
