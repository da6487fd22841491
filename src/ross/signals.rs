//! Time series of the signals that matter in a ROSS run, per PE and per KP,
//! one point per GVT interval.
//!
//! ROSS's GVT file has one sample per PE (and per KP) at every sampled GVT,
//! taken collectively, so sample *k* of every PE covers the same GVT
//! interval: the points of different PEs line up by index, which is what
//! the peer comparison needs. Counters in a sample are deltas since the
//! previous sample (so a point is one interval's worth); `pq_qsize` and
//! `time_ahead_gvt` are instantaneous (the value at the interval's end).

use crate::trace::ross::{EngineSeries, KpSample, PeSample};

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

/// An entity of the simulation: a PE, or a KP of a PE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Entity {
    /// A PE (MPI rank).
    Pe(u32),
    /// A KP: (PE, local KP index).
    Kp(u32, u32),
}

impl Entity {
    /// The PE the entity belongs to.
    pub fn pe(self) -> u32 {
        match self {
            Entity::Pe(p) | Entity::Kp(p, _) => p,
        }
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
            out.intervals.insert(pe, intervals);
        }
        out
    }

    /// The intervals of `entity`'s PE.
    pub fn intervals_of(&self, entity: Entity) -> &[Interval] {
        self.intervals
            .get(&entity.pe())
            .map_or(&[][..], Vec::as_slice)
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
