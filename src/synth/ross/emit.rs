//! Engine and model samples of one PE, from its cumulative counters.
//!
//! A PE's counters are kept cumulatively at three levels: per local LP
//! (events processed, aborted, rolled back, sent and read remotely), per KP
//! (rollbacks, secondary rollbacks) and per PE (GVT bookkeeping and the
//! twelve `*_s` times). A sample taken a fraction `f` into an interval sees
//! `base + floor(f * interval)` for every LP counter, and each file keeps
//! its own snapshot: the sample's deltas are the difference. KP counts are
//! the sums of their LPs' deltas and PE counts the sums of their KPs', so
//! KP and LP sums equal PE sums exactly, and a file's deltas add up to the
//! totals whatever its sampling points.

use std::io::{self, Write};

use crate::trace::ross::layout::{encode_kp, encode_lp, encode_model, encode_pe};
use crate::trace::ross::layout::{FLAG_KP, FLAG_LP, FLAG_PE};
use crate::trace::ross::{
    FlushWriter, KpSample, LpSample, ModelSample, PeSample, SampleHeader, StatsType,
};

/// Per-LP counters: processed, aborted, rolled back, sent remotely, read
/// remotely.
pub(super) const LP_PROCESSED: usize = 0;
pub(super) const LP_RBS: usize = 2;
pub(super) const LP_SEND: usize = 3;
pub(super) const LP_READ: usize = 4;
/// Indices of the `*_s` times, in the PE record's order.
pub(super) const T_NET_READ: usize = 0;
pub(super) const T_NET_OTHER: usize = 1;
pub(super) const T_GVT: usize = 2;
pub(super) const T_FOSSIL: usize = 3;
pub(super) const T_PROCESS: usize = 5;
pub(super) const T_PQ: usize = 6;
pub(super) const T_ROLLBACK: usize = 7;

/// Counters of one PE (cumulative, per interval, a snapshot or deltas).
#[derive(Debug, Clone, Default)]
pub(super) struct Counters {
    /// Per local LP.
    pub lp: Vec<[u64; 5]>,
    /// Per KP: rollbacks, secondary rollbacks.
    pub kp: Vec<[u64; 2]>,
    /// fc_attempts, ngvts, pe_event_ties, all_reduce_count.
    pub pe: [u64; 4],
    /// The `*_s` times.
    pub t: [f64; 12],
}

impl Counters {
    pub fn new(kps: usize, lps: usize) -> Self {
        Counters {
            lp: vec![[0; 5]; lps],
            kp: vec![[0; 2]; kps],
            ..Default::default()
        }
    }

    pub fn add(&mut self, o: &Counters) {
        for (a, b) in self.lp.iter_mut().zip(&o.lp) {
            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
        }
        for (a, b) in self.kp.iter_mut().zip(&o.kp) {
            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
        }
        self.pe.iter_mut().zip(&o.pe).for_each(|(x, y)| *x += y);
        self.t.iter_mut().zip(&o.t).for_each(|(x, y)| *x += y);
    }

    pub fn clear(&mut self) {
        self.lp.iter_mut().for_each(|a| *a = [0; 5]);
        self.kp.iter_mut().for_each(|a| *a = [0; 2]);
        self.pe = [0; 4];
        self.t = [0.0; 12];
    }
}

fn at(base: u64, int: u64, frac: f64) -> u64 {
    base + (int as f64 * frac).floor() as u64
}

/// Sets `delta` to the counters at `frac` of the interval minus `snap`,
/// and moves `snap` there.
fn take_deltas(
    base: &Counters,
    int: &Counters,
    frac: f64,
    snap: &mut Counters,
    delta: &mut Counters,
) {
    for i in 0..base.lp.len() {
        for k in 0..5 {
            let cur = at(base.lp[i][k], int.lp[i][k], frac);
            delta.lp[i][k] = cur - snap.lp[i][k];
            snap.lp[i][k] = cur;
        }
    }
    for i in 0..base.kp.len() {
        for k in 0..2 {
            let cur = at(base.kp[i][k], int.kp[i][k], frac);
            delta.kp[i][k] = cur - snap.kp[i][k];
            snap.kp[i][k] = cur;
        }
    }
    for k in 0..4 {
        let cur = at(base.pe[k], int.pe[k], frac);
        delta.pe[k] = cur - snap.pe[k];
        snap.pe[k] = cur;
    }
    for k in 0..12 {
        let cur = base.t[k] + int.t[k] * frac;
        delta.t[k] = (cur - snap.t[k]).max(0.0);
        snap.t[k] = cur;
    }
}

/// ROSS's efficiency: `100 * (1 - rbs / (processed - rbs))`, 0 when the
/// denominator is not positive.
pub(super) fn efficiency(processed: u64, rbs: u64) -> f32 {
    let net = processed as i64 - rbs as i64;
    if net <= 0 {
        0.0
    } else {
        (100.0 * (1.0 - rbs as f64 / net as f64)) as f32
    }
}

fn u32s(v: u64) -> u32 {
    v.min(u64::from(u32::MAX)) as u32
}

/// Where a PE's LPs and KPs are, and which records an engine file holds.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    pub pe: u32,
    pub lps_per_kp: usize,
    /// Global id of the PE's first LP.
    pub lp0: u32,
    pub pe_data: bool,
    pub kp_data: bool,
    pub lp_data: bool,
}

/// One sampling point of one PE.
#[derive(Debug, Clone, Copy)]
pub(super) struct Point<'a> {
    /// The header's `ts` (`f64::MAX` for the final real-time sample).
    pub ts: f64,
    /// The last GVT computed.
    pub gvt: f64,
    pub real_time: f64,
    /// How far into the interval (0 = its start, 1 = its end).
    pub frac: f64,
    /// Instantaneous queue size.
    pub pq_qsize: u32,
    /// Virtual time of each KP's last processed event.
    pub kp_vt: &'a [f64],
}

/// The counters of one PE and the snapshots of the files sampling it.
#[derive(Debug, Clone)]
pub(super) struct PeCounters {
    pub base: Counters,
    pub int: Counters,
    pub snap_gvt: Counters,
    pub snap_rt: Counters,
    delta: Counters,
    model_gvt: Vec<u64>,
    model_rt: Vec<u64>,
    payload: Vec<u8>,
}

impl PeCounters {
    pub fn new(kps: usize, lps: usize, model_sz: usize) -> Self {
        let c = Counters::new(kps, lps);
        PeCounters {
            base: c.clone(),
            int: c.clone(),
            snap_gvt: c.clone(),
            snap_rt: c.clone(),
            delta: c,
            model_gvt: vec![0; lps],
            model_rt: vec![0; lps],
            payload: vec![0; model_sz],
        }
    }

    /// Ends the interval: its counts join the base.
    pub fn close_interval(&mut self) {
        self.base.add(&self.int);
        self.int.clear();
    }

    /// Writes one engine sample (PE, then KP, then LP records, as the shape
    /// says) of the GVT file (`rt` false) or the real-time file.
    pub fn engine_sample<W: Write>(
        &mut self,
        s: &Shape,
        p: &Point<'_>,
        rt: bool,
        w: &mut FlushWriter<W>,
    ) -> io::Result<()> {
        let snap = if rt {
            &mut self.snap_rt
        } else {
            &mut self.snap_gvt
        };
        take_deltas(&self.base, &self.int, p.frac, snap, &mut self.delta);
        let d = &self.delta;
        let kps = kp_sums(d, s.lps_per_kp);
        if s.pe_data {
            write_pe_record(w, s, p, d, &kps)?;
        }
        if s.kp_data {
            write_kp_records(w, s, p, &kps)?;
        }
        if s.lp_data {
            write_lp_records(w, s, p, d)?;
        }
        Ok(())
    }

    /// Writes one model sample per LP of the PE (`rt`: real-time sampler);
    /// the payload's first 4 bytes, when there are 4, hold the LP's events
    /// processed since its previous model sample of the same sampler.
    pub fn model_samples<W: Write>(
        &mut self,
        s: &Shape,
        p: &Point<'_>,
        rt: bool,
        w: &mut FlushWriter<W>,
    ) -> io::Result<()> {
        let (snap, stats_type) = if rt {
            (&mut self.model_rt, StatsType::RealTime)
        } else {
            (&mut self.model_gvt, StatsType::Gvt)
        };
        for (i, last) in snap.iter_mut().enumerate() {
            let cur = at(
                self.base.lp[i][LP_PROCESSED],
                self.int.lp[i][LP_PROCESSED],
                p.frac,
            );
            let delta = u32s(cur - *last);
            *last = cur;
            if self.payload.len() >= 4 {
                self.payload[..4].copy_from_slice(&delta.to_le_bytes());
            }
            let kp = i / s.lps_per_kp;
            let rec = ModelSample {
                ts: p.kp_vt[kp].max(p.gvt),
                real_time: p.real_time,
                peid: s.pe,
                kpid: kp as u32,
                lpid: s.lp0 + i as u32,
                gvt: p.gvt as f32,
                stats_type,
                payload: &self.payload,
            };
            w.push_with(s.pe as usize, 48 + self.payload.len(), |b| {
                encode_model(&rec, b)
            })?;
        }
        Ok(())
    }
}

/// A KP's sample deltas: its LPs' five counters summed, and its own
/// rollbacks and secondary rollbacks.
type KpDeltas = ([u64; 5], [u64; 2]);

/// Each KP's deltas, from the LP and KP deltas `d` (`lps_per_kp` LPs per
/// KP, in order).
fn kp_sums(d: &Counters, lps_per_kp: usize) -> Vec<KpDeltas> {
    let mut kps = Vec::with_capacity(d.kp.len());
    for (k, rb) in d.kp.iter().enumerate() {
        let mut c = [0u64; 5];
        for lp in &d.lp[k * lps_per_kp..(k + 1) * lps_per_kp] {
            c.iter_mut().zip(lp).for_each(|(x, y)| *x += y);
        }
        kps.push((c, *rb));
    }
    kps
}

/// The header of a sample record of kind `flag` taken at `p`.
fn sample_header(flag: i32, p: &Point<'_>) -> SampleHeader {
    SampleHeader {
        flag,
        ts: p.ts,
        real_time: p.real_time,
    }
}

/// Writes the PE record of a sample: the sums of its KPs' deltas `kps`,
/// its own counters and times from `d`.
fn write_pe_record<W: Write>(
    w: &mut FlushWriter<W>,
    s: &Shape,
    p: &Point<'_>,
    d: &Counters,
    kps: &[KpDeltas],
) -> io::Result<()> {
    let mut c = [0u64; 5];
    let mut rb = [0u64; 2];
    for (kc, krb) in kps {
        c.iter_mut().zip(kc).for_each(|(x, y)| *x += y);
        rb.iter_mut().zip(krb).for_each(|(x, y)| *x += y);
    }
    let t = d.t.map(|v| v as f32);
    let rec = PeSample {
        header: sample_header(FLAG_PE, p),
        peid: s.pe,
        nevent_processed: u32s(c[0]),
        nevent_abort: u32s(c[1]),
        e_rbs: u32s(c[2]),
        rb_total: u32s(rb[0]),
        rb_secondary: u32s(rb[1]),
        fc_attempts: u32s(d.pe[0]),
        pq_qsize: p.pq_qsize,
        nsend_network: u32s(c[3]),
        nread_network: u32s(c[4]),
        ngvts: u32s(d.pe[1]),
        pe_event_ties: u32s(d.pe[2]),
        all_reduce_count: u32s(d.pe[3]),
        efficiency: efficiency(c[0], c[2]),
        net_read_s: t[0],
        net_other_s: t[1],
        gvt_s: t[2],
        fossil_collect_s: t[3],
        event_abort_s: t[4],
        event_process_s: t[5],
        pq_s: t[6],
        rollback_s: t[7],
        cancel_q_s: t[8],
        avl_s: t[9],
        buddy_s: t[10],
        lz4_s: t[11],
    };
    w.push_with(s.pe as usize, 128, |b| encode_pe(&rec, b))?;
    Ok(())
}

/// Writes the KP records of a sample, one per KP's deltas in `kps`.
fn write_kp_records<W: Write>(
    w: &mut FlushWriter<W>,
    s: &Shape,
    p: &Point<'_>,
    kps: &[KpDeltas],
) -> io::Result<()> {
    for (k, (c, rb)) in kps.iter().enumerate() {
        let rec = KpSample {
            header: sample_header(FLAG_KP, p),
            peid: s.pe,
            kpid: k as u32,
            nevent_processed: u32s(c[0]),
            nevent_abort: u32s(c[1]),
            e_rbs: u32s(c[2]),
            rb_total: u32s(rb[0]),
            rb_secondary: u32s(rb[1]),
            nsend_network: u32s(c[3]),
            nread_network: u32s(c[4]),
            time_ahead_gvt: (p.kp_vt[k] - p.gvt) as f32,
            efficiency: efficiency(c[0], c[2]),
        };
        w.push_with(s.pe as usize, 68, |b| encode_kp(&rec, b))?;
    }
    Ok(())
}

/// Writes the LP records of a sample, one per LP's deltas in `d`.
fn write_lp_records<W: Write>(
    w: &mut FlushWriter<W>,
    s: &Shape,
    p: &Point<'_>,
    d: &Counters,
) -> io::Result<()> {
    for (i, c) in d.lp.iter().enumerate() {
        let rec = LpSample {
            header: sample_header(FLAG_LP, p),
            peid: s.pe,
            kpid: (i / s.lps_per_kp) as u32,
            lpid: s.lp0 + i as u32,
            nevent_processed: u32s(c[0]),
            nevent_abort: u32s(c[1]),
            e_rbs: u32s(c[2]),
            nsend_network: u32s(c[3]),
            nread_network: u32s(c[4]),
            efficiency: efficiency(c[0], c[2]),
        };
        w.push_with(s.pe as usize, 72, |b| encode_lp(&rec, b))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_add_up_whatever_the_sampling_points() {
        let mut base = Counters::new(1, 2);
        let mut int = Counters::new(1, 2);
        int.lp[0] = [7, 0, 3, 1, 2];
        int.lp[1] = [5, 0, 1, 0, 0];
        int.t[T_PROCESS] = 1.0;
        let mut snap = Counters::new(1, 2);
        let mut delta = Counters::new(1, 2);
        let mut sum = [0u64; 5];
        for f in [0.0, 0.3, 0.31, 0.9, 1.0] {
            take_deltas(&base, &int, f, &mut snap, &mut delta);
            for lp in &delta.lp {
                sum.iter_mut().zip(lp).for_each(|(x, y)| *x += y);
            }
        }
        assert_eq!(sum, [12, 0, 4, 1, 2]);
        base.add(&int);
        int.clear();
        take_deltas(&base, &int, 0.0, &mut snap, &mut delta);
        assert!(delta.lp.iter().all(|l| *l == [0; 5]));
        assert_eq!(efficiency(10, 4), (100.0 * (1.0 - 4.0 / 6.0)) as f32);
        assert_eq!(efficiency(10, 10), 0.0);
        assert!(efficiency(10, 6) < 0.0);
    }
}
