//! Hotspot LPs from the event trace: the LP that receives far more events
//! than the others (in a rollback trace: the destination of the straggler
//! events that cause the rollbacks). The counts come from
//! [`super::trace_counts`]; the peer comparison of `peers` ranks LPs
//! against each other, and the candidates' per-interval counts (pass 2)
//! give the window in which each was hot.

use super::peers::{median, median_sorted, median_without, peer_scale, peer_score, PeerRule};
use super::signals::{Interval, Signal};
use super::trace_counts::{HotTally, TraceTally};

/// An LP that received far more trace events than its peers.
#[derive(Debug, Clone, PartialEq)]
pub struct HotspotLp {
    /// Global LP id.
    pub lp: u32,
    /// Its score against the other LPs (events over the run).
    pub score: f64,
    /// Events it received over the run.
    pub events: u64,
    /// The other LPs' median.
    pub peer_median: f64,
    /// GVT intervals `first..=last` in which it received most of them.
    pub first: usize,
    /// Last interval of the window.
    pub last: usize,
    /// The window's bounds.
    pub span: Interval,
    /// The LPs that sent it the most events, with their counts (up to 5).
    pub top_senders: Vec<(u32, u64)>,
    /// Events it received per GVT interval.
    pub per_interval: Vec<u64>,
}

impl HotspotLp {
    /// Its events per interval over the window and one interval on each
    /// side (the neighbouring samples), with the index of the first.
    pub fn evidence(&self) -> (usize, &[u64]) {
        let lo = self.first.saturating_sub(1);
        let hi = (self.last + 2).min(self.per_interval.len());
        (lo, self.per_interval.get(lo..hi).unwrap_or(&[]))
    }
}

/// An LP that pass 1 found far above its peers, before pass 2 adds its
/// window and senders.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Global LP id.
    pub lp: u32,
    /// Score against the other LPs.
    pub score: f64,
    /// Events it received.
    pub events: u64,
    /// The other LPs' median.
    pub peer_median: f64,
}

/// Groups up to this size are scored exactly leave-one-out (median and MAD
/// of the others); larger ones take the others' median from one sorted
/// array and the MAD of the whole group, which one LP more or less barely
/// moves, in O(n log n) instead of O(n² log n).
const EXACT_GROUP: usize = 256;

/// The LPs that stand out from the pass-1 tally (at least three LPs
/// needed), strongest first. Only LPs that receive events from other LPs
/// take part: an LP that only schedules events to itself (ROSS's analysis
/// LPs do) cannot be a hotspot, and mixing it in would drag the peers'
/// median down.
pub fn candidates(tally: &TraceTally, model_lps: Option<u64>, rule: &PeerRule) -> Vec<Candidate> {
    let lps: Vec<(u32, f64)> = tally
        .model_lps(model_lps)
        .into_iter()
        .filter(|(_, _, other)| *other > 0)
        .map(|(lp, n, _)| (lp, n as f64))
        .collect();
    if lps.len() < 3 {
        return Vec::new();
    }
    let sig = Signal::EventsProcessed;
    // `(score, median of the others)` of each LP.
    let scores: Vec<(f64, f64)> = if lps.len() <= EXACT_GROUP {
        (0..lps.len())
            .map(|i| {
                let others: Vec<f64> = lps
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .map(|(_, (_, v))| *v)
                    .collect();
                peer_score(lps[i].1, &others, sig, rule)
            })
            .collect()
    } else {
        let mut sorted: Vec<f64> = lps.iter().map(|(_, v)| *v).collect();
        sorted.sort_by(f64::total_cmp);
        let all_median = median_sorted(&sorted);
        let mad = median(
            &mut sorted
                .iter()
                .map(|v| (v - all_median).abs())
                .collect::<Vec<_>>(),
        );
        lps.iter()
            .map(|(_, n)| {
                let med = median_without(&sorted, *n);
                ((n - med) / peer_scale(mad, med, sig, rule), med)
            })
            .collect()
    };
    let mut out: Vec<Candidate> = lps
        .iter()
        .zip(scores)
        .filter(|(_, (score, _))| *score >= rule.threshold)
        .map(|((lp, n), (score, med))| Candidate {
            lp: *lp,
            score,
            events: *n as u64,
            peer_median: med,
        })
        .collect();
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.lp.cmp(&b.lp)));
    // The evidence pass keeps per-interval counts for each candidate: a
    // bounded number of them.
    out.truncate(MAX_HOTSPOTS);
    out
}

/// Most hotspot LPs reported (the strongest).
pub const MAX_HOTSPOTS: usize = 64;

/// The hotspots of the candidates, with the window and senders pass 2
/// counted (`hot.lps` are the candidates' LPs, in the same order).
pub fn hotspots(found: &[Candidate], hot: &HotTally, grid: &[Interval]) -> Vec<HotspotLp> {
    found
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let (first, last) = window(hot.intervals_of(i), c.peer_median);
            let span = Interval {
                gvt_from: grid.get(first).map_or(0.0, |i| i.gvt_from),
                gvt_to: grid.get(last).map_or(0.0, |i| i.gvt_to),
                real_from: grid.get(first).map_or(0.0, |i| i.real_from),
                real_to: grid.get(last).map_or(0.0, |i| i.real_to),
            };
            HotspotLp {
                lp: c.lp,
                score: c.score,
                events: c.events,
                peer_median: c.peer_median,
                first,
                last,
                span,
                top_senders: hot.top_senders(i, 5),
                per_interval: hot.intervals_of(i).to_vec(),
            }
        })
        .collect()
}

/// The intervals in which an LP got more than 2.5× its peers' median over
/// the whole run spread evenly: the first and last of them.
fn window(per: &[u64], run_median: f64) -> (usize, usize) {
    let intervals = per.len().max(1);
    let even = run_median / intervals as f64;
    let busy: Vec<usize> = per
        .iter()
        .enumerate()
        .filter(|(_, c)| **c as f64 > 2.5 * even.max(1.0))
        .map(|(k, _)| k)
        .collect();
    match (busy.first(), busy.last()) {
        (Some(a), Some(b)) => (*a, *b),
        _ => (0, intervals - 1),
    }
}
