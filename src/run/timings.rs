//! Where an AD rank's time goes: seconds and collective bytes per stage of
//! the step loop, for the progress of the run (the `ad_perf` table), the
//! summary and the benchmarks.

use std::time::Duration;

use crate::collectives::Collectives;
use crate::provenance::records::PerfRow;

/// The stages of a step, in the order the loop runs them (the same list as
/// `docs/architecture.md` and the `ad_perf` table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Every stream's next step, read.
    Read,
    /// Names first seen in the step, agreed by all ranks.
    Agree,
    /// Call stacks replayed into executions; the partial model.
    Build,
    /// The partial models of all ranks reduced into the global model.
    Reduce,
    /// Every execution labelled against the global model.
    Label,
    /// The step's anomalies of every rank linked into incidents.
    Link,
    /// Outputs pick what they keep (provenance records, model snapshots).
    Collect,
    /// Outputs write (collectively).
    Write,
    /// What no later step can need is dropped.
    Trim,
    /// Who still has data, who failed, progress numbers.
    Status,
}

impl Stage {
    /// Every stage, in order.
    pub const ALL: [Stage; 10] = [
        Stage::Read,
        Stage::Agree,
        Stage::Build,
        Stage::Reduce,
        Stage::Label,
        Stage::Link,
        Stage::Collect,
        Stage::Write,
        Stage::Trim,
        Stage::Status,
    ];

    /// The stage's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Read => "read",
            Stage::Agree => "agree",
            Stage::Build => "build",
            Stage::Reduce => "reduce",
            Stage::Label => "label",
            Stage::Link => "link",
            Stage::Collect => "collect",
            Stage::Write => "write",
            Stage::Trim => "trim",
            Stage::Status => "status",
        }
    }
}

/// Time and collective bytes per stage on this rank.
#[derive(Debug, Default, Clone)]
pub struct Timings {
    ns: [u64; 10],
    /// The current step's share of `ns`.
    step_ns: [u64; 10],
    /// Bytes this rank contributed to collectives, per stage.
    bytes: [u64; 10],
    /// Bytes collectives delivered to this rank, per stage.
    received: [u64; 10],
}

impl Timings {
    /// Adds `d`, and the bytes sent and received in collectives, to
    /// `stage`.
    pub fn add(&mut self, stage: Stage, d: Duration, bytes: u64, received: u64) {
        let i = stage as usize;
        let ns = d.as_nanos() as u64;
        self.ns[i] += ns;
        self.step_ns[i] += ns;
        self.bytes[i] += bytes;
        self.received[i] += received;
    }

    /// The `ad_perf` row of the step since the last call (then resets it);
    /// `rss_mb` is left at 0 for the output that keeps the row to fill in
    /// (reading it costs a `/proc` read, paid only when it is kept).
    pub fn take_step(&mut self, ad_rank: usize, step: u64) -> PerfRow {
        let s = self.step_ns.map(|ns| ns as f64 / 1e9);
        self.step_ns = [0; 10];
        PerfRow {
            ad_rank: ad_rank as u32,
            io_step: step,
            read: s[Stage::Read as usize],
            agree: s[Stage::Agree as usize],
            build: s[Stage::Build as usize],
            reduce: s[Stage::Reduce as usize],
            label: s[Stage::Label as usize],
            link: s[Stage::Link as usize],
            collect: s[Stage::Collect as usize],
            write: s[Stage::Write as usize],
            trim: s[Stage::Trim as usize],
            status: s[Stage::Status as usize],
            rss_mb: 0.0,
        }
    }

    /// Bytes sent in collectives in `stage` so far.
    pub fn bytes(&self, stage: Stage) -> u64 {
        self.bytes[stage as usize]
    }

    /// Bytes received from collectives in `stage` so far.
    pub fn received(&self, stage: Stage) -> u64 {
        self.received[stage as usize]
    }

    /// Slowest rank's seconds per stage (what bounds a lockstep run;
    /// collective).
    pub fn reduce_max(&self, coll: &Collectives) -> Vec<(String, f64)> {
        let g = coll.allreduce_max(&self.ns);
        Stage::ALL
            .iter()
            .zip(g)
            .map(|(stage, ns)| (stage.name().to_owned(), ns as f64 / 1e9))
            .collect()
    }
}
