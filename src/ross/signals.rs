//! Time series of the signals that matter in a ROSS run, per PE, KP and
//! LP: one point per GVT interval (from the GVT file), and per PE one point
//! per step of a real-time grid (from the RT file, [`RunSeries::from_rt`]).
//!
//! ROSS's GVT file has one sample per PE (and per KP) at every sampled GVT,
//! taken collectively, so sample *k* of every PE covers the same GVT
//! interval: the points of different PEs line up by index, which is what
//! the peer comparison needs. Counters in a sample are deltas since the
//! previous sample (so a point is one interval's worth); `pq_qsize` and
//! `time_ahead_gvt` are instantaneous (the value at the interval's end).

use crate::trace::ross::{EngineSeries, KpSample, LpSample, PeSample};

/// Which quantity a series holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Signal {
    /// Seconds inside the model's forward event handlers.
    EventProcessTime,
    /// Seconds spent rolling back.
    RollbackTime,
    /// Rollbacks (primary and secondary).
    Rollbacks,
    /// Secondary rollbacks.
    SecondaryRollbacks,
    /// Events processed (rolled-back ones included).
    EventsProcessed,
    /// Events rolled back.
    EventsRolledBack,
    /// ROSS's efficiency, percent (can be negative).
    Efficiency,
    /// Remote events sent.
    RemoteSent,
    /// Remote events received.
    RemoteReceived,
    /// Pending-event queue size at the interval's end.
    QueueSize,
    /// Virtual time of the KP's last event minus GVT, at the interval's end.
    TimeAheadOfGvt,
    /// GVT advance per second of real time over the interval.
    GvtRate,
    /// Real seconds between the interval's two samples.
    SampleGap,
}

impl Signal {
    /// The signal's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Signal::EventProcessTime => "event_process_s",
            Signal::RollbackTime => "rollback_s",
            Signal::Rollbacks => "rollbacks",
            Signal::SecondaryRollbacks => "secondary_rollbacks",
            Signal::EventsProcessed => "events_processed",
            Signal::EventsRolledBack => "events_rolled_back",
            Signal::Efficiency => "efficiency",
            Signal::RemoteSent => "remote_sent",
            Signal::RemoteReceived => "remote_received",
            Signal::QueueSize => "queue_size",
            Signal::TimeAheadOfGvt => "time_ahead_of_gvt",
            Signal::GvtRate => "gvt_per_second",
            Signal::SampleGap => "sample_gap_s",
        }
    }

    /// Whether a low value is the bad side (efficiency, GVT progress);
    /// for every other signal a high value is.
    pub fn low_is_bad(self) -> bool {
        matches!(self, Signal::Efficiency | Signal::GvtRate)
    }

    /// Whether entities are compared with their peers on this signal. GVT
    /// progress and sample gaps are the same run-wide quantity seen from
    /// each PE; remote traffic follows the model's own pattern; efficiency
    /// is derived from the events processed and rolled back (which are
    /// compared) and swings wildly in intervals with few events: they are
    /// kept as evidence, not compared.
    pub fn is_compared(self) -> bool {
        !matches!(
            self,
            Signal::GvtRate
                | Signal::SampleGap
                | Signal::RemoteSent
                | Signal::RemoteReceived
                | Signal::SecondaryRollbacks
                | Signal::Efficiency
        )
    }

    /// The signals of PE series.
    pub const PE: [Signal; 12] = [
        Signal::EventProcessTime,
        Signal::RollbackTime,
        Signal::Rollbacks,
        Signal::SecondaryRollbacks,
        Signal::EventsProcessed,
        Signal::EventsRolledBack,
        Signal::Efficiency,
        Signal::RemoteSent,
        Signal::RemoteReceived,
        Signal::QueueSize,
        Signal::GvtRate,
        Signal::SampleGap,
    ];

    /// The signals of LP series.
    pub const LP: [Signal; 5] = [
        Signal::EventsProcessed,
        Signal::EventsRolledBack,
        Signal::Efficiency,
        Signal::RemoteSent,
        Signal::RemoteReceived,
    ];

    /// The signals of KP series.
    pub const KP: [Signal; 5] = [
        Signal::EventsProcessed,
        Signal::EventsRolledBack,
        Signal::Rollbacks,
        Signal::Efficiency,
        Signal::TimeAheadOfGvt,
    ];
}

/// The GVT and real-time bounds of one interval.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Interval {
    /// GVT at the previous sample (0 for the first).
    pub gvt_from: f64,
    /// GVT at this sample.
    pub gvt_to: f64,
    /// Real time (s) at the previous sample (this one's for the first).
    pub real_from: f64,
    /// Real time (s) at this sample.
    pub real_to: f64,
}

/// Where a signal stood out: intervals `first..=last` (indices into the
/// intervals they were found in), their bounds, and the peak.
#[derive(Debug, Clone, PartialEq)]
pub struct SignalWindow {
    /// First interval of the window.
    pub first: usize,
    /// Last interval of the window.
    pub last: usize,
    /// GVT and real-time bounds of the window.
    pub span: Interval,
    /// The highest score in the window.
    pub score: f64,
    /// The value at that interval (signal units: seconds or counts).
    pub value: f64,
}

impl SignalWindow {
    /// The window `first..=last` of `intervals` with the score and value of
    /// its peak; bounds of intervals that are not there are 0.
    pub fn new(
        intervals: &[Interval],
        (first, last): (usize, usize),
        score: f64,
        value: f64,
    ) -> Self {
        let (from, to) = (intervals.get(first), intervals.get(last));
        let span = Interval {
            gvt_from: from.map_or(0.0, |i| i.gvt_from),
            gvt_to: to.map_or(0.0, |i| i.gvt_to),
            real_from: from.map_or(0.0, |i| i.real_from),
            real_to: to.map_or(0.0, |i| i.real_to),
        };
        SignalWindow {
            first,
            last,
            span,
            score,
            value,
        }
    }
}

/// An entity of the simulation: a PE, a KP of a PE, or an LP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Entity {
    /// A PE (MPI rank).
    Pe(u32),
    /// A KP: (PE, local KP index).
    Kp(u32, u32),
    /// An LP: (PE, local KP index, global LP id).
    Lp(u32, u32, u32),
}

impl Entity {
    /// The PE the entity belongs to.
    pub fn pe(self) -> u32 {
        match self {
            Entity::Pe(p) | Entity::Kp(p, _) | Entity::Lp(p, _, _) => p,
        }
    }

    /// `pe`, `kp` or `lp`.
    pub fn kind(self) -> &'static str {
        match self {
            Entity::Pe(_) => "pe",
            Entity::Kp(..) => "kp",
            Entity::Lp(..) => "lp",
        }
    }

    /// How people name it: `PE 0`, `PE 0 KP 1`, `LP 37 (PE 2, KP 1)`.
    pub fn label(self) -> String {
        match self {
            Entity::Pe(p) => format!("PE {p}"),
            Entity::Kp(p, k) => format!("PE {p} KP {k}"),
            Entity::Lp(p, k, l) => format!("LP {l} (PE {p}, KP {k})"),
        }
    }

    /// Whether two entities are of the same kind (and so peers).
    pub fn same_kind(self, other: Entity) -> bool {
        self.kind() == other.kind()
    }
}

/// Every series of a run: per entity, its intervals and one value per
/// signal and interval.
#[derive(Debug, Clone, Default)]
pub struct RunSeries {
    /// The intervals of each PE (KPs share their PE's).
    pub intervals: std::collections::BTreeMap<u32, Vec<Interval>>,
    /// `(entity, signal)` → one value per interval of the entity's PE.
    pub values: std::collections::BTreeMap<(Entity, Signal), Vec<f64>>,
}

impl RunSeries {
    /// The series of an engine file's samples (the final real-time sample,
    /// which has no GVT, is left out).
    pub fn from_engine(series: &EngineSeries) -> Self {
        let mut out = RunSeries::default();
        for (&pe, s) in &series.pes {
            let intervals = intervals_of(&s.pe);
            for sig in Signal::PE {
                let v: Vec<f64> =
                    s.pe.iter()
                        .zip(&intervals)
                        .map(|(p, iv)| pe_value(p, sig, iv))
                        .collect();
                out.values.insert((Entity::Pe(pe), sig), v);
            }
            let nkp = s.kp.iter().map(|k| k.kpid + 1).max().unwrap_or(0);
            for kp in 0..nkp {
                let samples: Vec<&KpSample> = s.kp.iter().filter(|k| k.kpid == kp).collect();
                for sig in Signal::KP {
                    let v = samples.iter().map(|k| kp_value(k, sig)).collect();
                    out.values.insert((Entity::Kp(pe, kp), sig), v);
                }
            }
            let mut lps: Vec<(u32, u32)> = s.lp.iter().map(|l| (l.lpid, l.kpid)).collect();
            lps.sort_unstable();
            lps.dedup();
            for (lp, kp) in lps {
                let samples: Vec<&LpSample> = s.lp.iter().filter(|l| l.lpid == lp).collect();
                for sig in Signal::LP {
                    let v = samples.iter().map(|l| lp_value(l, sig)).collect();
                    out.values.insert((Entity::Lp(pe, kp, lp), sig), v);
                }
            }
            out.intervals.insert(pe, intervals);
        }
        out
    }

    /// The series of a real-time (RT) file, on one real-time grid shared
    /// by every PE.
    ///
    /// PEs sample on their own timers, and a PE blocked in GVT takes fewer
    /// samples, so sample *k* of two PEs is not the same moment: the points
    /// cannot be lined up by index as GVT samples are. The grid's step is
    /// the median gap between consecutive samples of a PE (the sampling
    /// interval ROSS was given); a sample's deltas are spread over the grid
    /// steps between its previous sample and itself in proportion to the
    /// overlap (a PE that was blocked for three steps reports three steps'
    /// worth at once, which must not look like a burst), and instantaneous
    /// values are the last one seen in a step. GVT bounds of a step are the
    /// highest GVT any PE had reported by its start and end.
    ///
    /// `min_step` (seconds) coarsens the grid: within a GVT interval PEs
    /// work in bursts at different moments (each blocks in GVT when its
    /// batch is done), so steps shorter than a couple of GVT intervals
    /// compare phases, not speeds. [`RunSeries::rt_step_floor`] gives it.
    pub fn from_rt(series: &EngineSeries, min_step: f64) -> Self {
        let mut out = RunSeries::default();
        let Some(grid) = RtGrid::of(series, min_step) else {
            return out;
        };
        let intervals = grid.intervals(series);
        for (&pe, s) in &series.pes {
            let rows = grid.pe_rows(&s.pe);
            for (i, sig) in Signal::PE.iter().enumerate() {
                let v: Vec<f64> = rows
                    .iter()
                    .zip(&intervals)
                    .map(|(row, iv)| rt_value(row, i, *sig, iv, grid.dt))
                    .collect();
                out.values.insert((Entity::Pe(pe), *sig), v);
            }
            out.intervals.insert(pe, intervals.clone());
        }
        out
    }

    /// Twice the median real-time length of the GVT intervals of these
    /// (GVT) series: the shortest step an RT grid should have (0 without
    /// GVT intervals).
    pub fn rt_step_floor(&self) -> f64 {
        let mut d: Vec<f64> = self
            .intervals
            .values()
            .flat_map(|v| v.iter().skip(1).map(|i| i.real_to - i.real_from))
            .filter(|x| x.is_finite() && *x > 0.0)
            .collect();
        d.sort_by(f64::total_cmp);
        d.get(d.len() / 2).map_or(0.0, |m| 2.0 * m)
    }

    /// The intervals of `entity`'s PE.
    pub fn intervals_of(&self, entity: Entity) -> &[Interval] {
        self.intervals
            .get(&entity.pe())
            .map_or(&[][..], Vec::as_slice)
    }
}

/// The real-time grid of [`RunSeries::from_rt`]: `steps` steps of `dt`
/// seconds from `start`.
struct RtGrid {
    start: f64,
    dt: f64,
    steps: usize,
}

impl RtGrid {
    /// The grid of an RT file's samples (see [`RunSeries::from_rt`]);
    /// `None` when no PE has two samples apart in time.
    fn of(series: &EngineSeries, min_step: f64) -> Option<Self> {
        let mut gaps = Vec::new();
        let (mut t0, mut t1) = (f64::INFINITY, f64::NEG_INFINITY);
        for s in series.pes.values() {
            for w in s.pe.windows(2) {
                gaps.push(w[1].header.real_time - w[0].header.real_time);
            }
            if let (Some(a), Some(b)) = (s.pe.first(), s.pe.last()) {
                t0 = t0.min(a.header.real_time);
                t1 = t1.max(b.header.real_time);
            }
        }
        gaps.retain(|g| *g > 0.0 && g.is_finite());
        gaps.sort_by(f64::total_cmp);
        let &gap = gaps.get(gaps.len() / 2)?;
        // Whole multiples of the sampling period, so that every step holds
        // the same number of samples.
        let dt = gap * (min_step / gap).ceil().max(1.0);
        // The first sample of each PE opens the grid (it covers the time
        // before it, of unknown length, and is its own step).
        let steps = (((t1 - t0) / dt).ceil() as usize + 1).min(1 << 20);
        Some(RtGrid {
            start: t0 - dt,
            dt,
            steps,
        })
    }

    /// Real time at the start and end of step `k`.
    fn bounds(&self, k: usize) -> (f64, f64) {
        (
            self.start + k as f64 * self.dt,
            self.start + (k + 1) as f64 * self.dt,
        )
    }

    /// The step real time `t` falls in (the first or last one beyond).
    fn step_of(&self, t: f64) -> usize {
        (((t - self.start) / self.dt).floor().max(0.0) as usize).min(self.steps - 1)
    }

    /// Each step's interval: its real-time bounds, and the highest GVT any
    /// PE had reported by its start and by its end.
    fn intervals(&self, series: &EngineSeries) -> Vec<Interval> {
        // Highest GVT reported by the end of each step.
        let mut gvt = vec![0.0f64; self.steps];
        for s in series.pes.values() {
            for p in &s.pe {
                let k = self.step_of(p.header.real_time);
                gvt[k] = gvt[k].max(p.header.ts);
            }
        }
        for k in 1..self.steps {
            gvt[k] = gvt[k].max(gvt[k - 1]);
        }
        (0..self.steps)
            .map(|k| Interval {
                gvt_from: if k == 0 { 0.0 } else { gvt[k - 1] },
                gvt_to: gvt[k],
                real_from: self.bounds(k).0,
                real_to: self.bounds(k).1,
            })
            .collect()
    }

    /// One PE's values per step and PE signal (in [`Signal::PE`] order):
    /// each sample's deltas spread over the steps since the PE's previous
    /// sample in proportion to the overlap, and the queue size last seen
    /// (a step without a sample, blocked in GVT, keeps it).
    fn pe_rows(&self, samples: &[PeSample]) -> Vec<[f64; 12]> {
        let mut acc: Vec<[f64; 12]> = vec![[0.0; 12]; self.steps];
        let mut qsize: Vec<Option<f64>> = vec![None; self.steps];
        let mut prev_t: Option<f64> = None;
        for p in samples {
            let t = p.header.real_time;
            let from = prev_t.unwrap_or(t - self.dt).min(t);
            prev_t = Some(t);
            let (k0, k1) = (self.step_of(from), self.step_of(t));
            for (k, row) in acc.iter_mut().enumerate().take(k1 + 1).skip(k0) {
                let (a, b) = self.bounds(k);
                let share = if t > from {
                    ((b.min(t) - a.max(from)) / (t - from)).clamp(0.0, 1.0)
                } else {
                    f64::from(u8::from(k == k1))
                };
                for (i, sig) in Signal::PE.iter().enumerate() {
                    if is_delta(*sig) {
                        row[i] += share * pe_value(p, *sig, &Interval::default());
                    }
                }
            }
            qsize[k1] = Some(f64::from(p.pq_qsize));
        }
        // A step without a sample of this PE (blocked in GVT) keeps the
        // queue size last seen.
        let qi = Signal::PE.iter().position(|s| *s == Signal::QueueSize);
        let mut last = 0.0;
        for (row, q) in acc.iter_mut().zip(&qsize) {
            last = q.unwrap_or(last);
            if let Some(i) = qi {
                row[i] = last;
            }
        }
        acc
    }
}

/// The value of signal `sig` (the `i`th of [`Signal::PE`]) in one step
/// `iv` of a PE's RT series, from the step's `row` (see
/// [`RtGrid::pe_rows`]): efficiency from the step's events, GVT rate and
/// sample gap from the grid (`dt`), the others as they are.
fn rt_value(row: &[f64; 12], i: usize, sig: Signal, iv: &Interval, dt: f64) -> f64 {
    match sig {
        Signal::Efficiency => {
            let (done, rb) = (row[4], row[5]);
            let net = done - rb;
            if net > 0.0 {
                100.0 * (1.0 - rb / net)
            } else {
                0.0
            }
        }
        Signal::GvtRate => (iv.gvt_to - iv.gvt_from) / dt,
        Signal::SampleGap => dt,
        _ => row[i],
    }
}

/// Interval bounds of a PE's samples, in order.
fn intervals_of(samples: &[PeSample]) -> Vec<Interval> {
    let mut prev: Option<&PeSample> = None;
    samples
        .iter()
        .map(|s| {
            let iv = Interval {
                gvt_from: prev.map_or(0.0, |p| p.header.ts),
                gvt_to: s.header.ts,
                real_from: prev.map_or(s.header.real_time, |p| p.header.real_time),
                real_to: s.header.real_time,
            };
            prev = Some(s);
            iv
        })
        .collect()
}

fn pe_value(p: &PeSample, sig: Signal, iv: &Interval) -> f64 {
    let gap = iv.real_to - iv.real_from;
    match sig {
        Signal::EventProcessTime => f64::from(p.event_process_s),
        Signal::RollbackTime => f64::from(p.rollback_s),
        Signal::Rollbacks => f64::from(p.rb_total),
        Signal::SecondaryRollbacks => f64::from(p.rb_secondary),
        Signal::EventsProcessed => f64::from(p.nevent_processed),
        Signal::EventsRolledBack => f64::from(p.e_rbs),
        Signal::Efficiency => f64::from(p.efficiency),
        Signal::RemoteSent => f64::from(p.nsend_network),
        Signal::RemoteReceived => f64::from(p.nread_network),
        Signal::QueueSize => f64::from(p.pq_qsize),
        Signal::GvtRate if gap > 0.0 => (iv.gvt_to - iv.gvt_from) / gap,
        Signal::GvtRate => 0.0,
        Signal::SampleGap => gap,
        Signal::TimeAheadOfGvt => 0.0,
    }
}

/// Whether a PE signal is a count or a time summed over an interval (as
/// opposed to a value at an instant, or one derived from others).
fn is_delta(sig: Signal) -> bool {
    !matches!(
        sig,
        Signal::QueueSize
            | Signal::TimeAheadOfGvt
            | Signal::Efficiency
            | Signal::GvtRate
            | Signal::SampleGap
    )
}

fn lp_value(l: &LpSample, sig: Signal) -> f64 {
    match sig {
        Signal::EventsProcessed => f64::from(l.nevent_processed),
        Signal::EventsRolledBack => f64::from(l.e_rbs),
        Signal::Efficiency => f64::from(l.efficiency),
        Signal::RemoteSent => f64::from(l.nsend_network),
        Signal::RemoteReceived => f64::from(l.nread_network),
        _ => 0.0,
    }
}

fn kp_value(k: &KpSample, sig: Signal) -> f64 {
    match sig {
        Signal::EventsProcessed => f64::from(k.nevent_processed),
        Signal::EventsRolledBack => f64::from(k.e_rbs),
        Signal::Rollbacks => f64::from(k.rb_total),
        Signal::Efficiency => f64::from(k.efficiency),
        Signal::TimeAheadOfGvt => f64::from(k.time_ahead_gvt),
        _ => 0.0,
    }
}
