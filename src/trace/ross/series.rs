//! Regrouping records by PE, and totals of their counters.
//!
//! ROSS flushes its per-PE buffers collectively, rank after rank, so a file
//! is `[flush 1: rank 0 | rank 1 | …][flush 2: rank 0 | …]…` with no marks
//! between the blocks: records are in time order **per PE only**. Time
//! series are therefore built per `peid` ([`EngineSeries`]), never in file
//! order.
//!
//! Totals ([`EngineTotals`]) sum the delta counters of every sample of a
//! file, the final one included, so the real-time file's totals equal the
//! totals ROSS prints at the end. The instantaneous values (`pq_qsize`,
//! `time_ahead_gvt`) are kept as last and maximum, never summed.
//!
//! VT sampling repeats samples: every execution of an analysis LP's event
//! writes one, including executions later rolled back. For VT **model**
//! samples the repeat is well defined: the same LP (`peid`, `lpid`) at the
//! same sampled virtual time `ts`; the last one written is the execution
//! that was committed (a rolled-back event is executed again later, and the
//! final execution is never undone), so [`VtSamples`] keeps the last. VT
//! **engine** samples cannot be de-duplicated: they carry the GVT, not the
//! sampled time, and each one's deltas are counted from the sample before
//! it, rolled back or not, so dropping any would lose counts. They are kept
//! as they are.

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

    fn add(&mut self, processed: u32, abort: u32, rbs: u32, send: u32, read: u32) {
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
        self.counts.add(
            s.nevent_processed,
            s.nevent_abort,
            s.e_rbs,
            s.nsend_network,
            s.nread_network,
        );
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
                t.counts.add(
                    s.nevent_processed,
                    s.nevent_abort,
                    s.e_rbs,
                    s.nsend_network,
                    s.nread_network,
                );
                t.rb_total += u64::from(s.rb_total);
                t.rb_secondary += u64::from(s.rb_secondary);
                t.time_ahead_gvt_last = s.time_ahead_gvt;
                t.time_ahead_gvt_max = t.time_ahead_gvt_max.max(s.time_ahead_gvt);
            }
            Record::Lp(s) => {
                let t = self.lp.entry(s.lpid).or_default();
                t.samples += 1;
                t.peid = s.peid;
                t.counts.add(
                    s.nevent_processed,
                    s.nevent_abort,
                    s.e_rbs,
                    s.nsend_network,
                    s.nread_network,
                );
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

/// One PE's samples of one engine file, in the PE's own (chronological)
/// order. The final real-time sample (`ts == DBL_MAX`) is kept apart, as
/// it has no GVT; totals should still include it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PeSeries {
    /// PE samples.
    pub pe: Vec<PeSample>,
    /// KP samples (all KPs of the PE, as written).
    pub kp: Vec<KpSample>,
    /// LP samples (all LPs of the PE, as written).
    pub lp: Vec<LpSample>,
    /// The final sample's PE record, if any.
    pub final_pe: Option<PeSample>,
    /// The final sample's KP records.
    pub final_kp: Vec<KpSample>,
    /// The final sample's LP records.
    pub final_lp: Vec<LpSample>,
}

impl PeSeries {
    /// The first sample whose GVT (`ts`) or `real_time` is lower than the
    /// one before it, among this PE's PE, KP and LP samples (each list
    /// checked on its own): `(kind, index)`. `None` in real ROSS output.
    pub fn first_decrease(&self) -> Option<(&'static str, usize)> {
        fn check(
            kind: &'static str,
            hs: impl Iterator<Item = SampleHeader>,
        ) -> Option<(&'static str, usize)> {
            let mut prev: Option<SampleHeader> = None;
            for (i, h) in hs.enumerate() {
                if let Some(p) = prev {
                    if h.ts < p.ts || h.real_time < p.real_time {
                        return Some((kind, i));
                    }
                }
                prev = Some(h);
            }
            None
        }
        check("PE", self.pe.iter().map(|s| s.header))
            .or_else(|| check("KP", self.kp.iter().map(|s| s.header)))
            .or_else(|| check("LP", self.lp.iter().map(|s| s.header)))
    }
}

/// The samples of an engine file regrouped per PE. Holds every sample in
/// memory (engine files are small: one record per PE, KP or LP per
/// sampling point); use [`EngineTotals`] to stream.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EngineSeries {
    /// Per `peid`.
    pub pes: BTreeMap<u32, PeSeries>,
    /// Runs of consecutive records of one PE in file order: the PEs' flush
    /// blocks (equal to the number of PEs when ROSS flushed once).
    pub pe_blocks: u64,
    last_peid: Option<u32>,
}

impl EngineSeries {
    /// The series of every engine record `reader` delivers (others are
    /// skipped); fails with the reader's first error.
    pub fn read<R: std::io::Read>(reader: &mut RecordReader<R>) -> Result<Self, RossError> {
        let mut s = EngineSeries::default();
        while let Some(rec) = reader.next_record()? {
            s.add(&rec);
        }
        Ok(s)
    }

    /// Adds one record (non-engine records are ignored).
    pub fn add(&mut self, rec: &Record<'_>) {
        let peid = match rec {
            Record::Pe(s) => s.peid,
            Record::Kp(s) => s.peid,
            Record::Lp(s) => s.peid,
            _ => return,
        };
        if self.last_peid != Some(peid) {
            self.pe_blocks += 1;
            self.last_peid = Some(peid);
        }
        let pe = self.pes.entry(peid).or_default();
        match *rec {
            Record::Pe(s) if s.header.is_final() => pe.final_pe = Some(s),
            Record::Pe(s) => pe.pe.push(s),
            Record::Kp(s) if s.header.is_final() => pe.final_kp.push(s),
            Record::Kp(s) => pe.kp.push(s),
            Record::Lp(s) if s.header.is_final() => pe.final_lp.push(s),
            Record::Lp(s) => pe.lp.push(s),
            _ => {}
        }
    }
}

/// A VT model sample with its payload copied out of the reader's buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnedVtSample {
    /// Global LP id.
    pub lpid: u64,
    /// KP id as ROSS writes it.
    pub kpid: u64,
    /// MPI rank of the PE.
    pub peid: u64,
    /// The sampled virtual time.
    pub ts: f64,
    /// The model's bytes.
    pub payload: Vec<u8>,
}

/// VT model samples with rollback repeats removed: for each (`peid`,
/// `lpid`, `ts`) the last sample written is kept, as the committed one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VtSamples {
    by_key: BTreeMap<(u64, u64, u64), OwnedVtSample>,
    /// Samples replaced by a later one with the same key.
    pub repeats: u64,
}

impl VtSamples {
    /// Adds one sample, replacing an earlier one of the same LP and time.
    pub fn add(&mut self, s: &VtModelSample<'_>) {
        let owned = OwnedVtSample {
            lpid: s.lpid,
            kpid: s.kpid,
            peid: s.peid,
            ts: s.ts,
            payload: s.payload.to_vec(),
        };
        let key = (s.peid, s.lpid, order_key(s.ts));
        if self.by_key.insert(key, owned).is_some() {
            self.repeats += 1;
        }
    }

    /// Number of distinct samples kept.
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Whether no sample was kept.
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// The kept samples, ordered by PE, LP and virtual time.
    pub fn samples(&self) -> impl Iterator<Item = &OwnedVtSample> {
        self.by_key.values()
    }
}

/// A `u64` that orders like `x` under `f64::total_cmp`.
fn order_key(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
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
    fn order_key_orders_like_floats() {
        let xs = [-5.0, -0.0, 0.0, 1e-300, 2.5, 1e300, f64::MAX];
        for w in xs.windows(2) {
            assert!(order_key(w[0]) < order_key(w[1]), "{w:?}");
        }
    }

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

    #[test]
    fn vt_repeats_keep_the_last() {
        let mut v = VtSamples::default();
        let s = |ts: f64, p: &'static [u8]| VtModelSample {
            lpid: 3,
            kpid: 0,
            peid: 1,
            ts,
            payload: p,
        };
        v.add(&s(50.0, b"a"));
        v.add(&s(100.0, b"b"));
        v.add(&s(50.0, b"c"));
        assert_eq!((v.len(), v.repeats), (2, 1));
        let kept: Vec<&[u8]> = v.samples().map(|s| s.payload.as_slice()).collect();
        assert_eq!(kept, [b"c" as &[u8], b"b"]);
    }
}
