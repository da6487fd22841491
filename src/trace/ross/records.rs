//! The records of ROSS's instrumentation files, as typed values.
//!
//! Every layout here is the native C struct layout of x86_64 (little-endian,
//! doubles 8-aligned), which is what ROSS writes with a plain `memcpy`; the
//! fields are decoded one by one with `from_le_bytes`, so a record costs a
//! few loads and no allocation. Payloads that only the model understands are
//! handed out as borrowed slices of the reader's buffer.
//!
//! Engine samples (PE, KP, LP) carry two kinds of counters: most are
//! **deltas** since the previous sample of the same file (sum them for
//! totals), while `pq_qsize` and `time_ahead_gvt` are **instantaneous**
//! values (never sum them). Times named `*_s` and `real_time` are TSC cycles
//! divided by the clock rate ROSS was given (see [`super::clock`]).
//!
//! Fields ROSS writes but never sets (the LP record's `s_process_event` and
//! its struct padding, the VT model sample's `real_time`) are not exposed.

/// Length of the header of an engine sample (`flag`, `sample_sz`, `ts`,
/// `real_time`).
pub const ENGINE_HEADER_LEN: usize = 24;
/// `flag` of a PE sample.
pub const FLAG_PE: i32 = 0;
/// `flag` of a KP sample.
pub const FLAG_KP: i32 = 1;
/// `flag` of an LP sample.
pub const FLAG_LP: i32 = 2;
/// `flag` of a model sample (and, at byte 44, of a VT model sample).
pub const FLAG_MODEL: i32 = 3;
/// `sample_sz` of a PE sample: its payload bytes.
pub const PE_SAMPLE_SZ: usize = 104;
/// `sample_sz` of a KP sample.
pub const KP_SAMPLE_SZ: usize = 44;
/// `sample_sz` of an LP sample.
pub const LP_SAMPLE_SZ: usize = 48;
/// `sample_sz` of a model sample: the size of its metadata, not of the
/// model's payload.
pub const MODEL_SAMPLE_SZ: i32 = 24;
/// Length of a model sample before its payload.
pub const MODEL_HEADER_LEN: usize = 48;
/// Length of an event-trace record before its payload.
pub const EVENT_HEADER_LEN: usize = 24;
/// Length of a VT model sample before its payload.
pub const VT_HEADER_LEN: usize = 48;

/// The header every engine sample starts with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleHeader {
    /// [`FLAG_PE`], [`FLAG_KP`] or [`FLAG_LP`].
    pub flag: i32,
    /// Virtual time: the GVT at the sample (for real-time and VT samples,
    /// the last GVT computed). `f64::MAX` marks the final real-time sample
    /// ([`SampleHeader::is_final`]).
    pub ts: f64,
    /// Seconds (TSC cycles / clock rate) since an arbitrary epoch, about the
    /// host's boot: comparable across ranks of one host only.
    pub real_time: f64,
}

impl SampleHeader {
    /// Whether this is the extra sample ROSS takes when the simulation ends
    /// (real-time file only): its `ts` is `DBL_MAX`, not a GVT.
    pub fn is_final(&self) -> bool {
        self.ts == f64::MAX
    }
}

/// One PE's engine counters at a sampling point (`flag` 0). Counters are
/// deltas since the previous sample of the same file unless marked
/// instantaneous; `*_s` fields are seconds spent since that sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeSample {
    /// Header shared by the PE, KP and LP records of the sampling point.
    pub header: SampleHeader,
    /// MPI rank of the PE.
    pub peid: u32,
    /// Events processed, including ones later rolled back and analysis-LP
    /// events (delta).
    pub nevent_processed: u32,
    /// Events aborted (delta).
    pub nevent_abort: u32,
    /// Events rolled back (delta).
    pub e_rbs: u32,
    /// Rollbacks, primary and secondary (delta).
    pub rb_total: u32,
    /// Secondary rollbacks (delta).
    pub rb_secondary: u32,
    /// Fossil-collection attempts (delta).
    pub fc_attempts: u32,
    /// Pending-event queue size: **instantaneous**, never summed.
    pub pq_qsize: u32,
    /// Remote events sent (delta).
    pub nsend_network: u32,
    /// Remote events received (delta).
    pub nread_network: u32,
    /// GVT computations since the previous sample (delta).
    pub ngvts: u32,
    /// Event ties detected in the PE queue (delta).
    pub pe_event_ties: u32,
    /// `MPI_Allreduce` calls of the GVT algorithm (delta).
    pub all_reduce_count: u32,
    /// Percent: `100 * (1 - e_rbs / (nevent_processed - e_rbs))` over the
    /// interval, 0 when the denominator is not positive; may be negative.
    pub efficiency: f32,
    /// Seconds reading the network (delta).
    pub net_read_s: f32,
    /// Seconds in other network work (delta).
    pub net_other_s: f32,
    /// Seconds computing GVT (delta).
    pub gvt_s: f32,
    /// Seconds in fossil collection (delta).
    pub fossil_collect_s: f32,
    /// Seconds aborting events (delta).
    pub event_abort_s: f32,
    /// Seconds in the model's forward event handlers (delta).
    pub event_process_s: f32,
    /// Seconds in the priority queue (delta).
    pub pq_s: f32,
    /// Seconds rolling back (delta).
    pub rollback_s: f32,
    /// Seconds in the cancel queue (delta).
    pub cancel_q_s: f32,
    /// Seconds in the AVL tree (delta).
    pub avl_s: f32,
    /// Seconds in the buddy allocator (delta).
    pub buddy_s: f32,
    /// Seconds in LZ4 (de)compression (delta).
    pub lz4_s: f32,
}

/// One KP's counters at a sampling point (`flag` 1); deltas unless marked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KpSample {
    /// Header shared with the PE record of the sampling point.
    pub header: SampleHeader,
    /// MPI rank of the PE the KP belongs to.
    pub peid: u32,
    /// Local index of the KP on its PE.
    pub kpid: u32,
    /// Events processed (delta).
    pub nevent_processed: u32,
    /// Events aborted (delta).
    pub nevent_abort: u32,
    /// Events rolled back (delta).
    pub e_rbs: u32,
    /// Rollbacks, primary and secondary (delta).
    pub rb_total: u32,
    /// Secondary rollbacks (delta).
    pub rb_secondary: u32,
    /// Remote events sent (delta).
    pub nsend_network: u32,
    /// Remote events received (delta).
    pub nread_network: u32,
    /// Virtual time of the KP's last processed event minus GVT:
    /// **instantaneous**, may be negative.
    pub time_ahead_gvt: f32,
    /// Percent, as for [`PeSample::efficiency`].
    pub efficiency: f32,
}

/// One LP's counters at a sampling point (`flag` 2); all deltas.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LpSample {
    /// Header shared with the PE record of the sampling point.
    pub header: SampleHeader,
    /// MPI rank of the PE the LP belongs to.
    pub peid: u32,
    /// Local index of the LP's KP on its PE.
    pub kpid: u32,
    /// Global LP id.
    pub lpid: u32,
    /// Events processed (delta).
    pub nevent_processed: u32,
    /// Events aborted (delta).
    pub nevent_abort: u32,
    /// Events rolled back (delta).
    pub e_rbs: u32,
    /// Remote events sent (delta).
    pub nsend_network: u32,
    /// Remote events received (delta).
    pub nread_network: u32,
    /// Percent, as for [`PeSample::efficiency`].
    pub efficiency: f32,
}

/// Which sampler took a model sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StatsType {
    /// Taken at a GVT (`stats_type` 1).
    Gvt,
    /// Taken on the real-time timer (`stats_type` 2).
    RealTime,
}

/// A model sample of `-model.bin` (`flag` 3): one LP's model-defined data
/// at a GVT or real-time sampling point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelSample<'a> {
    /// The LP's own virtual time (ahead of GVT when optimistic).
    pub ts: f64,
    /// Seconds since an arbitrary epoch, as [`SampleHeader::real_time`].
    pub real_time: f64,
    /// MPI rank of the PE.
    pub peid: u32,
    /// Local KP index.
    pub kpid: u32,
    /// Global LP id.
    pub lpid: u32,
    /// GVT at sampling (virtual time, single precision as ROSS stores it).
    pub gvt: f32,
    /// GVT-based or real-time sample.
    pub stats_type: StatsType,
    /// The model's bytes (`model_sz` of them); see [`super::schema`].
    pub payload: &'a [u8],
}

/// One record of the event trace (`-evtrace.bin`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceEvent<'a> {
    /// Global id of the sending LP.
    pub src_lp: u32,
    /// Global id of the receiving LP.
    pub dest_lp: u32,
    /// Virtual send time.
    pub send_vts: f32,
    /// Virtual receive time (not before `send_vts`).
    pub recv_vts: f32,
    /// Seconds (TSC) when recorded; single precision, so its resolution
    /// degrades with host uptime.
    pub real_ts: f32,
    /// Bytes from the destination LP type's trace callback (empty for
    /// analysis LPs).
    pub payload: &'a [u8],
}

/// A VT model sample, interleaved with the engine samples of
/// `-analysis-lps.bin` when the model registers a VT sampling callback.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VtModelSample<'a> {
    /// Global LP id.
    pub lpid: u64,
    /// KP id as ROSS writes it.
    pub kpid: u64,
    /// MPI rank of the PE.
    pub peid: u64,
    /// The sampled virtual time (not the GVT).
    pub ts: f64,
    /// The model's bytes (`sample_sz` of them).
    pub payload: &'a [u8],
}

/// One record of any ROSS instrumentation file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Record<'a> {
    /// An engine PE sample.
    Pe(PeSample),
    /// An engine KP sample.
    Kp(KpSample),
    /// An engine LP sample.
    Lp(LpSample),
    /// A GVT- or real-time model sample.
    Model(ModelSample<'a>),
    /// An event-trace record.
    Event(TraceEvent<'a>),
    /// A VT model sample.
    VtModel(VtModelSample<'a>),
}

impl Record<'_> {
    /// The PE (MPI rank) the record belongs to; `None` for trace events,
    /// which name LPs only.
    pub fn peid(&self) -> Option<u64> {
        match self {
            Record::Pe(s) => Some(s.peid.into()),
            Record::Kp(s) => Some(s.peid.into()),
            Record::Lp(s) => Some(s.peid.into()),
            Record::Model(s) => Some(s.peid.into()),
            Record::VtModel(s) => Some(s.peid),
            Record::Event(_) => None,
        }
    }
}

// Field decoders. Callers hand in slices whose length the reader checked,
// and offsets are constants of the layouts above; `read` copies into a
// fixed array, so after inlining the compiler sees through the bounds.

#[inline(always)]
fn read<const N: usize>(b: &[u8], off: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[off..off + N]);
    a
}

#[inline(always)]
pub(super) fn i32_at(b: &[u8], off: usize) -> i32 {
    i32::from_le_bytes(read(b, off))
}

#[inline(always)]
pub(super) fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(read(b, off))
}

#[inline(always)]
pub(super) fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(read(b, off))
}

#[inline(always)]
pub(super) fn f32_at(b: &[u8], off: usize) -> f32 {
    f32::from_le_bytes(read(b, off))
}

#[inline(always)]
pub(super) fn f64_at(b: &[u8], off: usize) -> f64 {
    f64::from_le_bytes(read(b, off))
}

/// The engine header at the start of `r` (at least 24 bytes).
pub(super) fn engine_header(r: &[u8; ENGINE_HEADER_LEN]) -> SampleHeader {
    SampleHeader {
        flag: i32_at(r, 0),
        ts: f64_at(r, 8),
        real_time: f64_at(r, 16),
    }
}

/// A PE sample from its 104 payload bytes.
pub(super) fn pe_sample(header: SampleHeader, p: &[u8; PE_SAMPLE_SZ]) -> PeSample {
    let u = |i: usize| u32_at(p, 4 * i);
    let f = |i: usize| f32_at(p, 4 * i);
    PeSample {
        header,
        peid: u(0),
        nevent_processed: u(1),
        nevent_abort: u(2),
        e_rbs: u(3),
        rb_total: u(4),
        rb_secondary: u(5),
        fc_attempts: u(6),
        pq_qsize: u(7),
        nsend_network: u(8),
        nread_network: u(9),
        ngvts: u(10),
        pe_event_ties: u(11),
        all_reduce_count: u(12),
        efficiency: f(13),
        net_read_s: f(14),
        net_other_s: f(15),
        gvt_s: f(16),
        fossil_collect_s: f(17),
        event_abort_s: f(18),
        event_process_s: f(19),
        pq_s: f(20),
        rollback_s: f(21),
        cancel_q_s: f(22),
        avl_s: f(23),
        buddy_s: f(24),
        lz4_s: f(25),
    }
}

/// A KP sample from its 44 payload bytes.
pub(super) fn kp_sample(header: SampleHeader, p: &[u8; KP_SAMPLE_SZ]) -> KpSample {
    let u = |i: usize| u32_at(p, 4 * i);
    KpSample {
        header,
        peid: u(0),
        kpid: u(1),
        nevent_processed: u(2),
        nevent_abort: u(3),
        e_rbs: u(4),
        rb_total: u(5),
        rb_secondary: u(6),
        nsend_network: u(7),
        nread_network: u(8),
        time_ahead_gvt: f32_at(p, 36),
        efficiency: f32_at(p, 40),
    }
}

/// An LP sample from its 48 payload bytes; bytes 32..40 (`s_process_event`,
/// never set by ROSS) and 44..48 (padding) are skipped.
pub(super) fn lp_sample(header: SampleHeader, p: &[u8; LP_SAMPLE_SZ]) -> LpSample {
    let u = |i: usize| u32_at(p, 4 * i);
    LpSample {
        header,
        peid: u(0),
        kpid: u(1),
        lpid: u(2),
        nevent_processed: u(3),
        nevent_abort: u(4),
        e_rbs: u(5),
        nsend_network: u(6),
        nread_network: u(7),
        efficiency: f32_at(p, 40),
    }
}

/// A model sample from its 48-byte header (already validated) and payload.
pub(super) fn model_sample<'a>(
    h: &[u8; MODEL_HEADER_LEN],
    stats_type: StatsType,
    payload: &'a [u8],
) -> ModelSample<'a> {
    ModelSample {
        ts: f64_at(h, 8),
        real_time: f64_at(h, 16),
        peid: u32_at(h, 24),
        kpid: u32_at(h, 28),
        lpid: u32_at(h, 32),
        gvt: f32_at(h, 36),
        stats_type,
        payload,
    }
}

/// An event-trace record from its 24-byte header and payload.
#[inline(always)]
pub(super) fn trace_event<'a>(h: &[u8; EVENT_HEADER_LEN], payload: &'a [u8]) -> TraceEvent<'a> {
    TraceEvent {
        src_lp: u32_at(h, 0),
        dest_lp: u32_at(h, 4),
        send_vts: f32_at(h, 8),
        recv_vts: f32_at(h, 12),
        real_ts: f32_at(h, 16),
        payload,
    }
}

/// A VT model sample from its 48-byte header and payload; bytes 32..40
/// (`real_time`, never set by ROSS) are skipped.
pub(super) fn vt_model_sample<'a>(h: &[u8; VT_HEADER_LEN], payload: &'a [u8]) -> VtModelSample<'a> {
    VtModelSample {
        lpid: u64_at(h, 0),
        kpid: u64_at(h, 8),
        peid: u64_at(h, 16),
        ts: f64_at(h, 24),
        payload,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pe_fields_land_at_their_offsets() {
        let mut p = [0u8; PE_SAMPLE_SZ];
        for i in 0..13u32 {
            p[4 * i as usize..4 * i as usize + 4].copy_from_slice(&(i + 100).to_le_bytes());
        }
        for i in 13..26u32 {
            let v = i as f32 + 0.5;
            p[4 * i as usize..4 * i as usize + 4].copy_from_slice(&v.to_le_bytes());
        }
        let h = SampleHeader {
            flag: FLAG_PE,
            ts: 1.0,
            real_time: 2.0,
        };
        let s = pe_sample(h, &p);
        assert_eq!((s.peid, s.nevent_processed, s.e_rbs), (100, 101, 103));
        assert_eq!((s.pq_qsize, s.all_reduce_count), (107, 112));
        assert_eq!((s.efficiency, s.net_read_s, s.lz4_s), (13.5, 14.5, 25.5));
        assert_eq!(s.event_process_s, 19.5);
    }

    #[test]
    fn lp_skips_garbage() {
        let mut p = [0xAAu8; LP_SAMPLE_SZ];
        for i in 0..8u32 {
            p[4 * i as usize..4 * i as usize + 4].copy_from_slice(&i.to_le_bytes());
        }
        p[40..44].copy_from_slice(&(-12.5f32).to_le_bytes());
        let h = SampleHeader {
            flag: FLAG_LP,
            ts: 0.0,
            real_time: 0.0,
        };
        let s = lp_sample(h, &p);
        assert_eq!((s.peid, s.kpid, s.lpid, s.nread_network), (0, 1, 2, 7));
        assert_eq!(s.efficiency, -12.5);
        assert!(h.ts < f64::MAX && !h.is_final());
    }
}
