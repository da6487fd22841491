//! Totals of the counters of engine samples and event traces, accumulated
//! record by record in memory that grows with the number of PEs, KPs and
//! LPs, not with the number of samples.
//!
//! Engine counters are deltas since the previous sample of the same file,
//! so totals are their sums over every sample, the final real-time sample
//! (`ts == DBL_MAX`) included: that is what makes the real-time file's
//! totals equal the totals ROSS prints at the end. Each file (GVT,
//! real-time, VT) keeps its own previous snapshot, so totals of different
//! files are not added together. The instantaneous values (`pq_qsize`,
//! `time_ahead_gvt`) are kept as last and maximum, never summed.

use std::collections::BTreeMap;

use super::error::RossError;
use super::reader::RecordReader;
use super::records::*;

/// Event counters common to PE, KP and LP samples, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventCounts {
    /// Events processed, rolled back ones included.
    pub nevent_processed: u64,
    /// Events aborted.
    pub nevent_abort: u64,
    /// Events rolled back.
    pub e_rbs: u64,
    /// Remote events sent.
    pub nsend_network: u64,
    /// Remote events received.
    pub nread_network: u64,
}

impl EventCounts {
    /// Events processed and not rolled back.
    pub fn net_events(&self) -> i64 {
        self.nevent_processed as i64 - self.e_rbs as i64
    }

    /// Percent, with ROSS's formula: `100 * (1 - e_rbs / (processed -
    /// e_rbs))`, 0 when the denominator is not positive; may be negative.
    pub fn efficiency(&self) -> f64 {
        let net = self.net_events();
        if net <= 0 {
            0.0
        } else {
            100.0 * (1.0 - self.e_rbs as f64 / net as f64)
        }
    }

    /// Adds one PE, KP or LP sample's counters.
    #[inline]
    fn add(&mut self, sample: &impl SampledEventCounts) {
        let [processed, abort, rbs, send, read] = sample.event_counts();
        self.nevent_processed += u64::from(processed);
        self.nevent_abort += u64::from(abort);
        self.e_rbs += u64::from(rbs);
        self.nsend_network += u64::from(send);
        self.nread_network += u64::from(read);
    }

    fn merge(&mut self, o: &EventCounts) {
        self.nevent_processed += o.nevent_processed;
        self.nevent_abort += o.nevent_abort;
        self.e_rbs += o.e_rbs;
        self.nsend_network += o.nsend_network;
        self.nread_network += o.nread_network;
    }
}

/// The event counters that PE, KP and LP samples all carry, so that one
/// [`EventCounts::add`] sums those of any of the three.
trait SampledEventCounts {
    /// `nevent_processed`, `nevent_abort`, `e_rbs`, `nsend_network` and
    /// `nread_network`, in that order.
    fn event_counts(&self) -> [u32; 5];
}

/// Implements [`SampledEventCounts`] for sample types with the five
/// counter fields of that name.
macro_rules! sampled_event_counts {
    ($($sample:ty),*) => {
        $(
            impl SampledEventCounts for $sample {
                #[inline]
                fn event_counts(&self) -> [u32; 5] {
                    [
                        self.nevent_processed,
                        self.nevent_abort,
                        self.e_rbs,
                        self.nsend_network,
                        self.nread_network,
                    ]
                }
            }
        )*
    };
}

sampled_event_counts!(PeSample, KpSample, LpSample);

/// The `*_s` fields of a PE's samples, summed in `f64` (seconds at the
/// clock rate ROSS was given).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PeSeconds {
    /// Seconds reading the network.
    pub net_read_s: f64,
    /// Seconds in other network work.
    pub net_other_s: f64,
    /// Seconds computing GVT.
    pub gvt_s: f64,
    /// Seconds in fossil collection.
    pub fossil_collect_s: f64,
    /// Seconds aborting events.
    pub event_abort_s: f64,
    /// Seconds in the model's forward event handlers.
    pub event_process_s: f64,
    /// Seconds in the priority queue.
    pub pq_s: f64,
    /// Seconds rolling back.
    pub rollback_s: f64,
    /// Seconds in the cancel queue.
    pub cancel_q_s: f64,
    /// Seconds in the AVL tree.
    pub avl_s: f64,
    /// Seconds in the buddy allocator.
    pub buddy_s: f64,
    /// Seconds in LZ4 (de)compression.
    pub lz4_s: f64,
}

impl PeSeconds {
    /// Adds one sample's seconds.
    pub fn add(&mut self, s: &PeSample) {
        self.net_read_s += f64::from(s.net_read_s);
        self.net_other_s += f64::from(s.net_other_s);
        self.gvt_s += f64::from(s.gvt_s);
        self.fossil_collect_s += f64::from(s.fossil_collect_s);
        self.event_abort_s += f64::from(s.event_abort_s);
        self.event_process_s += f64::from(s.event_process_s);
        self.pq_s += f64::from(s.pq_s);
        self.rollback_s += f64::from(s.rollback_s);
        self.cancel_q_s += f64::from(s.cancel_q_s);
        self.avl_s += f64::from(s.avl_s);
        self.buddy_s += f64::from(s.buddy_s);
        self.lz4_s += f64::from(s.lz4_s);
    }
}

/// Totals of one PE over a file: sums of the deltas, last and maximum of
/// the instantaneous queue size.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PeTotals {
    /// PE samples seen.
    pub samples: u64,
    /// Event counters, summed.
    pub counts: EventCounts,
    /// Rollbacks, summed.
    pub rb_total: u64,
    /// Secondary rollbacks, summed.
    pub rb_secondary: u64,
    /// Fossil-collection attempts, summed.
    pub fc_attempts: u64,
    /// GVT computations, summed.
    pub ngvts: u64,
    /// Event ties, summed.
    pub pe_event_ties: u64,
    /// `MPI_Allreduce` calls, summed.
    pub all_reduce_count: u64,
    /// Seconds per engine activity, summed.
    pub seconds: PeSeconds,
    /// `pq_qsize` of the last sample (instantaneous).
    pub pq_qsize_last: u32,
    /// Largest `pq_qsize` seen (instantaneous).
    pub pq_qsize_max: u32,
}

impl PeTotals {
    /// Adds one PE sample.
    pub fn add(&mut self, s: &PeSample) {
        self.samples += 1;
        self.counts.add(s);
        self.rb_total += u64::from(s.rb_total);
        self.rb_secondary += u64::from(s.rb_secondary);
        self.fc_attempts += u64::from(s.fc_attempts);
        self.ngvts += u64::from(s.ngvts);
        self.pe_event_ties += u64::from(s.pe_event_ties);
        self.all_reduce_count += u64::from(s.all_reduce_count);
        self.seconds.add(s);
        self.pq_qsize_last = s.pq_qsize;
        self.pq_qsize_max = self.pq_qsize_max.max(s.pq_qsize);
    }
}

/// Totals of one KP over a file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KpTotals {
    /// KP samples seen.
    pub samples: u64,
    /// Event counters, summed.
    pub counts: EventCounts,
    /// Rollbacks, summed.
    pub rb_total: u64,
    /// Secondary rollbacks, summed.
    pub rb_secondary: u64,
    /// `time_ahead_gvt` of the last sample (instantaneous, virtual time).
    pub time_ahead_gvt_last: f32,
    /// Largest `time_ahead_gvt` seen (instantaneous, virtual time).
    pub time_ahead_gvt_max: f32,
}

/// Totals of one LP over a file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LpTotals {
    /// LP samples seen.
    pub samples: u64,
    /// PE of the LP.
    pub peid: u32,
    /// Event counters, summed.
    pub counts: EventCounts,
}

/// Totals of every PE, KP and LP of an engine file; memory grows with the
/// number of entities, not of samples.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EngineTotals {
    /// Per PE (`peid`).
    pub pe: BTreeMap<u32, PeTotals>,
    /// Per KP (`peid`, local `kpid`).
    pub kp: BTreeMap<(u32, u32), KpTotals>,
    /// Per LP (global `lpid`).
    pub lp: BTreeMap<u32, LpTotals>,
}

impl EngineTotals {
    /// Totals of every engine record `reader` delivers (other records are
    /// skipped); fails with the reader's first error.
    pub fn read<R: std::io::Read>(reader: &mut RecordReader<R>) -> Result<Self, RossError> {
        let mut t = EngineTotals::default();
        while let Some(rec) = reader.next_record()? {
            t.add(&rec);
        }
        Ok(t)
    }

    /// Adds one record (non-engine records are ignored).
    pub fn add(&mut self, rec: &Record<'_>) {
        match rec {
            Record::Pe(s) => self.pe.entry(s.peid).or_default().add(s),
            Record::Kp(s) => {
                let t = self.kp.entry((s.peid, s.kpid)).or_default();
                if t.samples == 0 {
                    t.time_ahead_gvt_max = s.time_ahead_gvt;
                }
                t.samples += 1;
                t.counts.add(s);
                t.rb_total += u64::from(s.rb_total);
                t.rb_secondary += u64::from(s.rb_secondary);
                t.time_ahead_gvt_last = s.time_ahead_gvt;
                t.time_ahead_gvt_max = t.time_ahead_gvt_max.max(s.time_ahead_gvt);
            }
            Record::Lp(s) => {
                let t = self.lp.entry(s.lpid).or_default();
                t.samples += 1;
                t.peid = s.peid;
                t.counts.add(s);
            }
            _ => {}
        }
    }

    /// Event counters summed over all PE records.
    pub fn pe_sum(&self) -> EventCounts {
        sum(self.pe.values().map(|t| &t.counts))
    }

    /// Event counters summed over all KP records.
    pub fn kp_sum(&self) -> EventCounts {
        sum(self.kp.values().map(|t| &t.counts))
    }

    /// Event counters summed over all LP records.
    pub fn lp_sum(&self) -> EventCounts {
        sum(self.lp.values().map(|t| &t.counts))
    }
}

fn sum<'a>(it: impl Iterator<Item = &'a EventCounts>) -> EventCounts {
    let mut s = EventCounts::default();
    it.for_each(|c| s.merge(c));
    s
}

/// Summary of an event trace, accumulated record by record.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceTotals {
    /// Records seen.
    pub records: u64,
    /// Payload bytes seen.
    pub payload_bytes: u64,
    /// Largest source or destination LP id seen.
    pub max_lp: u32,
    /// Largest receive virtual time seen.
    pub max_recv_vts: f32,
    /// Smallest and largest `real_ts` seen (seconds), if any record.
    pub real_ts_range: Option<(f32, f32)>,
}

impl TraceTotals {
    /// Summary of every event `reader` delivers (other records are
    /// skipped); fails with the reader's first error.
    pub fn read<R: std::io::Read>(reader: &mut RecordReader<R>) -> Result<Self, RossError> {
        let mut t = TraceTotals::default();
        while let Some(rec) = reader.next_record()? {
            if let Record::Event(e) = rec {
                t.add(&e);
            }
        }
        Ok(t)
    }

    /// Adds one event.
    #[inline]
    pub fn add(&mut self, e: &TraceEvent<'_>) {
        self.records += 1;
        self.payload_bytes += e.payload.len() as u64;
        self.max_lp = self.max_lp.max(e.src_lp).max(e.dest_lp);
        self.max_recv_vts = self.max_recv_vts.max(e.recv_vts);
        self.real_ts_range = Some(match self.real_ts_range {
            None => (e.real_ts, e.real_ts),
            Some((lo, hi)) => (lo.min(e.real_ts), hi.max(e.real_ts)),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn efficiency_matches_ross() {
        let c = EventCounts {
            nevent_processed: 78891,
            e_rbs: 13600,
            ..Default::default()
        };
        assert!((c.efficiency() - 79.17).abs() < 0.01);
        let all_rolled = EventCounts {
            nevent_processed: 10,
            e_rbs: 10,
            ..Default::default()
        };
        assert_eq!(all_rolled.efficiency(), 0.0);
    }
}
