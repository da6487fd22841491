//! The records of ROSS's instrumentation files, as typed values.
//!
//! The byte layouts and their decoding are in [`super::layout`]. Payloads
//! that only the model understands are handed out as borrowed slices of the
//! reader's buffer.
//!
//! Engine samples (PE, KP, LP) carry two kinds of counters: most are
//! **deltas** since the previous sample of the same file (sum them for
//! totals), while `pq_qsize` and `time_ahead_gvt` are **instantaneous**
//! values (never sum them). Times named `*_s` and `real_time` are TSC cycles
//! divided by the clock rate ROSS was given (see [`super::clock`]).
//!
//! Fields ROSS writes but never sets (the LP record's `s_process_event` and
//! its struct padding, the VT model sample's `real_time`) are not exposed.

/// The header every engine sample starts with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleHeader {
    /// 0 PE, 1 KP or 2 LP ([`FLAG_PE`](super::layout::FLAG_PE) and the
    /// following constants).
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
