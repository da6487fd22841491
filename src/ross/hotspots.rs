//! Hotspot LPs from the event trace: the LP that receives far more events
//! than the others (in a rollback trace: the destination of the straggler
//! events that cause the rollbacks). One streaming pass counts events per
//! destination LP over the run and per GVT interval, in bounded memory per
//! LP; the peer comparison of `peers` then ranks LPs against each other.

use std::collections::BTreeMap;
use std::path::Path;

use super::peers::{peer_score, PeerRule};
use super::signals::{Interval, Signal};
use crate::trace::ross::{FileKind, Record, RecordReader, RossError};

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
}

/// Events per destination LP of a trace file, over the run and per GVT
/// interval (`grid`: the run's GVT intervals, in order).
#[derive(Debug, Default)]
pub struct TraceCounts {
    /// Events per destination LP.
    pub per_lp: BTreeMap<u32, u64>,
    /// Events per (destination LP, interval index).
    pub per_lp_interval: BTreeMap<(u32, usize), u64>,
    /// Events per (destination LP, source LP).
    pub per_pair: BTreeMap<(u32, u32), u64>,
    /// Records read.
    pub records: u64,
}

impl TraceCounts {
    /// Counts the events of the trace at `path` sent to model LPs: LP ids
    /// below `model_lps` when ROSS's stdout gave the count; otherwise the
    /// events that carry a model payload, if any does (analysis LPs, whose
    /// ids follow the model's, have no model type and so no payload).
    pub fn read(path: &Path, grid: &[Interval], model_lps: Option<u64>) -> Result<Self, RossError> {
        let with_payload = match model_lps {
            Some(_) => false,
            None => {
                let mut r = RecordReader::open(path, FileKind::EvTrace)?;
                let mut any = false;
                while let Some(rec) = r.next_record()? {
                    if matches!(rec, Record::Event(e) if !e.payload.is_empty()) {
                        any = true;
                        break;
                    }
                }
                any
            }
        };
        let mut r = RecordReader::open(path, FileKind::EvTrace)?;
        let mut c = TraceCounts::default();
        let last = grid.len().saturating_sub(1);
        while let Some(rec) = r.next_record()? {
            let Record::Event(e) = rec else { continue };
            let to_model = match model_lps {
                Some(n) => u64::from(e.dest_lp) < n,
                None => !with_payload || !e.payload.is_empty(),
            };
            if !to_model {
                continue;
            }
            c.records += 1;
            *c.per_lp.entry(e.dest_lp).or_default() += 1;
            *c.per_pair.entry((e.dest_lp, e.src_lp)).or_default() += 1;
            let t = f64::from(e.recv_vts);
            // Events after the last GVT sample count in the last interval.
            let k = grid.partition_point(|iv| iv.gvt_to < t).min(last);
            *c.per_lp_interval.entry((e.dest_lp, k)).or_default() += 1;
        }
        Ok(c)
    }

    /// The LPs that stand out (at least three LPs needed), strongest first.
    /// Only LPs that receive events from other LPs take part: an LP that
    /// only schedules events to itself (ROSS's analysis LPs do) cannot be a
    /// hotspot, and mixing it in would drag the peers' median down.
    pub fn hotspots(&self, grid: &[Interval], rule: &PeerRule) -> Vec<HotspotLp> {
        let lps: Vec<(u32, f64)> = self
            .per_lp
            .iter()
            .filter(|(l, _)| {
                self.per_pair
                    .range((**l, 0)..=(**l, u32::MAX))
                    .any(|((_, src), _)| src != *l)
            })
            .map(|(l, n)| (*l, *n as f64))
            .collect();
        if lps.len() < 3 {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (i, (lp, n)) in lps.iter().enumerate() {
            let others: Vec<f64> = lps
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, (_, v))| *v)
                .collect();
            let (score, med) = peer_score(*n, &others, Signal::EventsProcessed, rule);
            if score < rule.threshold {
                continue;
            }
            let (first, last) = self.window(*lp, med);
            let span = Interval {
                gvt_from: grid.get(first).map_or(0.0, |i| i.gvt_from),
                gvt_to: grid.get(last).map_or(0.0, |i| i.gvt_to),
                real_from: grid.get(first).map_or(0.0, |i| i.real_from),
                real_to: grid.get(last).map_or(0.0, |i| i.real_to),
            };
            let mut senders: Vec<(u32, u64)> = self
                .per_pair
                .range((*lp, 0)..=(*lp, u32::MAX))
                .map(|((_, s), c)| (*s, *c))
                .collect();
            senders.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            senders.truncate(5);
            out.push(HotspotLp {
                lp: *lp,
                score,
                events: *n as u64,
                peer_median: med,
                first,
                last,
                span,
                top_senders: senders,
            });
        }
        out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.lp.cmp(&b.lp)));
        out
    }

    /// The intervals in which `lp` got more than its peers' median over the
    /// whole run spread evenly: the first and last of them.
    fn window(&self, lp: u32, run_median: f64) -> (usize, usize) {
        let per: Vec<(usize, u64)> = self
            .per_lp_interval
            .range((lp, 0)..=(lp, usize::MAX))
            .map(|((_, k), c)| (*k, *c))
            .collect();
        let intervals = per.iter().map(|(k, _)| k + 1).max().unwrap_or(1);
        let even = run_median / intervals as f64;
        let busy: Vec<usize> = per
            .iter()
            .filter(|(_, c)| *c as f64 > 2.5 * even.max(1.0))
            .map(|(k, _)| *k)
            .collect();
        match (busy.first(), busy.last()) {
            (Some(a), Some(b)) => (*a, *b),
            _ => (0, intervals.saturating_sub(1)),
        }
    }
}
