//! Run-wide slowdowns: the project's detectors (`--algorithm`: modal,
//! SSTD, HBOS or COPOD, as for TAU traces) on the series of the whole run.
//!
//! Peer comparison cannot see a slowdown that hits every PE at once (system
//! noise, a shared file system, an oversubscribed node): no PE stands out
//! from the others. What does show it is the run's own history: the real
//! seconds a GVT interval took, the event-processing time and rollbacks
//! summed over the PEs. Each of these run-level series is one "function"
//! of a detector, and each GVT interval one step of the bulk-synchronous
//! pipeline of TAU runs: the interval is labelled against the model of the
//! intervals before it, then added to the model. Two choices differ from
//! the TAU path, both because a slowdown of the whole run is a regime that
//! lasts many intervals, not a rare execution:
//!
//! - an interval labelled anomalous is *not* added to the model, so a
//!   slowdown stays anomalous for as long as it lasts instead of becoming
//!   the model's new normal after a few intervals;
//! - only the bad side counts (longer, more rollbacks): a run that speeds
//!   up is not what a user looks for.
//!
//! The first [`WARMUP_INTERVALS`] intervals only build the model (ROSS's
//! first intervals include start-up). Consecutive anomalous intervals of
//! one signal form one window, kept when it mattered to the run: its
//! excess over the model's mean, summed over the window, is at least
//! [`MIN_SHARE`] of the signal's total over the run (a stall of a tenth of
//! a millisecond in a run of milliseconds is real but not worth a look). A window that overlaps a slow PE found by
//! the peer comparison (its `event_process_s` window) or a hotspot LP is
//! attributed to it: the run was slow *because of* that PE or LP; one
//! without a cause is a run-wide slowdown with no culprit among the PEs.
//!
//! The series are the same on every AD rank (the engine files are read by
//! all), so the windows are too, whatever the number of ranks.

use crate::detect::choice::DetectorSettings;
use crate::detect::{reduce_step, Detector, Label, Wire};

use super::hotspots::HotspotLp;
use super::peers::PeerAnomaly;
use super::signals::{Entity, RunSeries, Signal, SignalWindow};

/// Intervals that only build the model before the first is labelled.
pub const WARMUP_INTERVALS: usize = 8;

/// Smallest share of the run's total of a signal a window's excess must
/// reach to be reported.
pub const MIN_SHARE: f64 = 0.01;

/// The run-level signals, each one detector function (in this order).
pub const RUN_SIGNALS: [Signal; 4] = [
    Signal::SampleGap,
    Signal::EventProcessTime,
    Signal::Rollbacks,
    Signal::EventsRolledBack,
];

/// A window of consecutive GVT intervals in which the whole run was slow.
#[derive(Debug, Clone, PartialEq)]
pub struct RunWideAnomaly {
    /// The run-level signal.
    pub signal: Signal,
    /// Where and how strongly: the highest detector score in the window,
    /// and the run's value at that interval.
    pub window: SignalWindow,
    /// The model's mean then (the run's usual value, same units).
    pub usual: f64,
    /// The window's excess over the usual values, summed (seconds or
    /// counts: for `sample_gap_s`, the real time the slowdown cost).
    pub excess: f64,
    /// That excess as a share of the signal's total over the run.
    pub share: f64,
    /// The run's values over the window and one interval on each side,
    /// with the index of the first.
    pub context: (usize, Vec<f64>),
    /// The slow PE the window is attributed to.
    pub caused_by_pe: Option<u32>,
    /// The hotspot LP the window is attributed to.
    pub caused_by_lp: Option<u32>,
}

/// One interval of one run-level series as the detector judged it (the
/// detector's model over the run, for the provenance file).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunPoint {
    /// The run-level signal.
    pub signal: Signal,
    /// Interval index.
    pub interval: usize,
    /// The run's value (seconds or counts).
    pub value: f64,
    /// The model's mean when the interval was judged.
    pub usual: f64,
    /// The detector's score.
    pub score: f64,
    /// Whether the interval was judged anomalous (and so kept out of the
    /// model).
    pub anomalous: bool,
}

/// What the run-wide detection found: the windows, and every interval as
/// judged.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunWide {
    /// The windows worth reporting.
    pub windows: Vec<RunWideAnomaly>,
    /// Every interval of every run-level series.
    pub points: Vec<RunPoint>,
}

/// One value per GVT interval of each run-level signal: the real seconds
/// of the interval (the longest any PE saw), the rest summed over PEs.
pub fn run_series(series: &RunSeries) -> Vec<(Signal, Vec<f64>)> {
    let n = series.intervals.values().map(Vec::len).min().unwrap_or(0);
    RUN_SIGNALS
        .iter()
        .map(|&sig| {
            let mut out = vec![0.0f64; n];
            for (&pe, intervals) in &series.intervals {
                if sig == Signal::SampleGap {
                    for (slot, iv) in out.iter_mut().zip(intervals) {
                        let gap = iv.real_to - iv.real_from;
                        if gap.is_finite() {
                            *slot = slot.max(gap);
                        }
                    }
                    continue;
                }
                let Some(v) = series.values.get(&(Entity::Pe(pe), sig)) else {
                    continue;
                };
                for (slot, x) in out.iter_mut().zip(v) {
                    if x.is_finite() {
                        *slot += x;
                    }
                }
            }
            (sig, out)
        })
        .collect()
}

/// A value in the detector's integer unit: microseconds for seconds,
/// counts as they are (negative values, which these signals do not have,
/// would be 0).
fn to_units(sig: Signal, x: f64) -> u64 {
    let v = match sig {
        Signal::SampleGap | Signal::EventProcessTime | Signal::RollbackTime => x * 1e6,
        _ => x,
    };
    if v.is_finite() && v > 0.0 {
        v.round() as u64
    } else {
        0
    }
}

/// Back from the detector's unit.
fn from_units(sig: Signal, v: f64) -> f64 {
    match sig {
        Signal::SampleGap | Signal::EventProcessTime | Signal::RollbackTime => v / 1e6,
        _ => v,
    }
}

/// Per signal and interval: `(anomalous, score, model mean)`.
type Labels = Vec<Vec<(bool, f64, f64)>>;

/// Labels every interval of every run-level series, in step order.
fn label_intervals(
    run: &[(Signal, Vec<f64>)],
    settings: &DetectorSettings,
) -> anyhow::Result<Labels> {
    let mut det: Box<dyn Detector> = settings.build()?;
    det.ensure_functions(run.len());
    let n = run.first().map_or(0, |(_, v)| v.len());
    let mut out: Labels = run.iter().map(|_| Vec::with_capacity(n)).collect();
    for k in 0..n {
        for (f, (sig, values)) in run.iter().enumerate() {
            let x = to_units(*sig, values[k]);
            let verdict = det.label(f as u32, x);
            let mean = det.mean(f as u32);
            let anomalous =
                k >= WARMUP_INTERVALS && verdict.label == Label::Anomaly && (x as f64) > mean;
            if !anomalous {
                det.observe(f as u32, x);
            }
            out[f].push((anomalous, verdict.score, from_units(*sig, mean)));
        }
        // The interval's step: its normal values join the model (every
        // rank holds the whole series, so the reduction is this rank's own
        // partial).
        let partial = det.take_partial();
        reduce_step(det.as_mut(), partial, Wire::clone);
    }
    Ok(out)
}

/// Every run-wide window, in a fixed order (signal, window start), with
/// its cause among `peer` (the GVT peer anomalies) and `hotspots`, and
/// every interval as judged.
pub fn find(
    series: &RunSeries,
    settings: &DetectorSettings,
    peer: &[PeerAnomaly],
    hotspots: &[HotspotLp],
) -> anyhow::Result<RunWide> {
    let run = run_series(series);
    let labels = label_intervals(&run, settings)?;
    let points = run
        .iter()
        .zip(&labels)
        .flat_map(|((sig, values), marks)| {
            values
                .iter()
                .zip(marks)
                .enumerate()
                .map(|(k, (v, m))| RunPoint {
                    signal: *sig,
                    interval: k,
                    value: *v,
                    usual: m.2,
                    score: m.1,
                    anomalous: m.0,
                })
        })
        .collect();
    let grid = series
        .intervals
        .values()
        .next()
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    for ((sig, values), marks) in run.iter().zip(&labels) {
        let total: f64 = values.iter().sum();
        let mut k = 0;
        while k < marks.len() {
            if !marks[k].0 {
                k += 1;
                continue;
            }
            let first = k;
            while k < marks.len() && marks[k].0 {
                k += 1;
            }
            let last = k - 1;
            let excess: f64 = (first..=last)
                .map(|i| (values[i] - marks[i].2).max(0.0))
                .sum();
            let share = if total > 0.0 { excess / total } else { 0.0 };
            if share < MIN_SHARE {
                continue;
            }
            let peak = (first..=last)
                .max_by(|a, b| marks[*a].1.total_cmp(&marks[*b].1))
                .unwrap_or(first);
            let from = first.saturating_sub(1);
            let to = (last + 1).min(values.len() - 1);
            let overlaps = |a: usize, b: usize| a <= last && first <= b;
            let caused_by_pe = peer
                .iter()
                .filter(|a| {
                    a.signal == Signal::EventProcessTime
                        && matches!(a.entity, Entity::Pe(_))
                        && overlaps(a.window.first, a.window.last)
                })
                .max_by(|x, y| x.window.score.total_cmp(&y.window.score))
                .map(|a| a.entity.pe());
            let caused_by_lp = hotspots
                .iter()
                .filter(|h| overlaps(h.first, h.last))
                .max_by(|x, y| x.score.total_cmp(&y.score))
                .map(|h| h.lp);
            out.push(RunWideAnomaly {
                signal: *sig,
                window: SignalWindow::new(&grid, (first, last), marks[peak].1, values[peak]),
                usual: marks[peak].2,
                excess,
                share,
                context: (from, values[from..=to].to_vec()),
                caused_by_pe,
                caused_by_lp,
            });
        }
    }
    Ok(RunWide {
        windows: out,
        points,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::choice::Algorithm;
    use crate::ross::signals::Interval;

    /// A run of `n` intervals of 4 PEs, every PE's handlers `slow` times
    /// longer in `window`.
    fn run(n: usize, window: std::ops::Range<usize>, slow: f64) -> RunSeries {
        let mut s = RunSeries::default();
        for pe in 0..4u32 {
            let mut t = 0.0;
            let mut iv = Vec::new();
            let mut proc = Vec::new();
            for k in 0..n {
                // A little deterministic wobble, different per PE.
                let wobble = 1.0 + 0.02 * (((k * 7 + pe as usize * 3) % 5) as f64 - 2.0);
                let f = if window.contains(&k) { slow } else { 1.0 };
                let d = 0.02 * wobble * f;
                iv.push(Interval {
                    gvt_from: k as f64,
                    gvt_to: (k + 1) as f64,
                    real_from: t,
                    real_to: t + d,
                });
                t += d;
                proc.push(0.015 * wobble * f);
            }
            s.values
                .insert((Entity::Pe(pe), Signal::EventProcessTime), proc);
            s.values
                .insert((Entity::Pe(pe), Signal::Rollbacks), vec![3.0; n]);
            s.intervals.insert(pe, iv);
        }
        s
    }

    #[test]
    fn a_slowdown_of_every_pe_is_one_window_for_as_long_as_it_lasts() {
        for algorithm in [Algorithm::Sstd, Algorithm::Copod, Algorithm::Modal] {
            let settings = DetectorSettings {
                algorithm,
                ..Default::default()
            };
            let found = find(&run(60, 30..40, 10.0), &settings, &[], &[])
                .unwrap()
                .windows;
            let gaps: Vec<_> = found
                .iter()
                .filter(|a| a.signal == Signal::SampleGap)
                .collect();
            assert_eq!(gaps.len(), 1, "{algorithm}: {found:?}");
            let g = gaps[0];
            assert_eq!((g.window.first, g.window.last), (30, 39), "{algorithm}");
            assert_eq!((g.window.span.gvt_from, g.window.span.gvt_to), (30.0, 40.0));
            assert!(g.window.value > 5.0 * g.usual, "{algorithm}: {g:?}");
            assert_eq!((g.caused_by_pe, g.caused_by_lp), (None, None));
            assert_eq!(g.context.0, 29);
            assert_eq!(g.context.1.len(), 12);
        }
    }

    #[test]
    fn a_steady_run_has_no_run_wide_window_and_a_faster_stretch_is_not_one() {
        for algorithm in [Algorithm::Sstd, Algorithm::Copod, Algorithm::Modal] {
            let settings = DetectorSettings {
                algorithm,
                ..Default::default()
            };
            let steady = find(&run(60, 0..0, 1.0), &settings, &[], &[])
                .unwrap()
                .windows;
            assert!(steady.is_empty(), "{algorithm}: {steady:?}");
            let faster = find(&run(60, 30..40, 0.1), &settings, &[], &[])
                .unwrap()
                .windows;
            assert!(faster.is_empty(), "{algorithm}: {faster:?}");
        }
    }

    #[test]
    fn a_window_overlapping_a_slow_pe_is_attributed_to_it() {
        let s = run(60, 30..40, 10.0);
        let slow = PeerAnomaly {
            entity: Entity::Pe(2),
            signal: Signal::EventProcessTime,
            window: SignalWindow::new(&[], (31, 38), 40.0, 1.0),
            peer_median: 0.1,
            context: (30, Vec::new()),
        };
        let found = find(&s, &DetectorSettings::default(), &[slow], &[])
            .unwrap()
            .windows;
        assert!(!found.is_empty());
        assert!(found.iter().all(|a| a.caused_by_pe == Some(2)));
    }

    #[test]
    fn the_warmup_is_never_labelled() {
        let found = find(&run(60, 0..4, 10.0), &DetectorSettings::default(), &[], &[]).unwrap();
        assert!(found
            .windows
            .iter()
            .all(|a| a.window.first >= WARMUP_INTERVALS));
        // Every interval of every signal is in the model's record.
        assert_eq!(found.points.len(), 60 * RUN_SIGNALS.len());
        assert!(found.points[..WARMUP_INTERVALS]
            .iter()
            .all(|p| !p.anomalous));
    }
}
