//! Byte layouts of ROSS's records and their decoding.
//!
//! Every layout is the native C struct layout of x86_64 (little-endian,
//! `int`/`float` 4 bytes, doubles 8-aligned inside structs), which is what
//! ROSS writes with a plain `memcpy`. Fields are decoded one by one with
//! `from_le_bytes` from fixed-size arrays, so a record costs a few loads
//! and no allocation, and nothing here can read out of bounds.
//!
//! The `encode_*` functions write the same layouts back (for
//! [`super::writer`] and the `synth ross` generator).

use super::records::*;

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

// Encoders: the inverse of the decoders above, for writing files that the
// reader (and any tool reading ROSS's output) decodes to the same values.
// Bytes ROSS leaves unset (the LP record's `s_process_event` and padding,
// the VT model sample's `real_time`) are written as zeros.

fn put_engine_header(out: &mut Vec<u8>, flag: i32, sample_sz: usize, h: &SampleHeader) {
    out.extend_from_slice(&flag.to_le_bytes());
    out.extend_from_slice(&(sample_sz as i32).to_le_bytes());
    out.extend_from_slice(&h.ts.to_le_bytes());
    out.extend_from_slice(&h.real_time.to_le_bytes());
}

fn put_u32s(out: &mut Vec<u8>, vs: &[u32]) {
    vs.iter()
        .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
}

fn put_f32s(out: &mut Vec<u8>, vs: &[f32]) {
    vs.iter()
        .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
}

/// Appends a PE sample (24 + 104 bytes) to `out`; `flag` is written as
/// [`FLAG_PE`] whatever `s.header.flag` says.
pub fn encode_pe(s: &PeSample, out: &mut Vec<u8>) {
    put_engine_header(out, FLAG_PE, PE_SAMPLE_SZ, &s.header);
    #[rustfmt::skip]
    put_u32s(out, &[
        s.peid, s.nevent_processed, s.nevent_abort, s.e_rbs, s.rb_total, s.rb_secondary,
        s.fc_attempts, s.pq_qsize, s.nsend_network, s.nread_network, s.ngvts,
        s.pe_event_ties, s.all_reduce_count,
    ]);
    #[rustfmt::skip]
    put_f32s(out, &[
        s.efficiency, s.net_read_s, s.net_other_s, s.gvt_s, s.fossil_collect_s,
        s.event_abort_s, s.event_process_s, s.pq_s, s.rollback_s, s.cancel_q_s, s.avl_s,
        s.buddy_s, s.lz4_s,
    ]);
}

/// Appends a KP sample (24 + 44 bytes) to `out`, with `flag` [`FLAG_KP`].
pub fn encode_kp(s: &KpSample, out: &mut Vec<u8>) {
    put_engine_header(out, FLAG_KP, KP_SAMPLE_SZ, &s.header);
    #[rustfmt::skip]
    put_u32s(out, &[
        s.peid, s.kpid, s.nevent_processed, s.nevent_abort, s.e_rbs, s.rb_total,
        s.rb_secondary, s.nsend_network, s.nread_network,
    ]);
    put_f32s(out, &[s.time_ahead_gvt, s.efficiency]);
}

/// Appends an LP sample (24 + 48 bytes) to `out`, with `flag` [`FLAG_LP`]
/// and zeros for `s_process_event` and the padding.
pub fn encode_lp(s: &LpSample, out: &mut Vec<u8>) {
    put_engine_header(out, FLAG_LP, LP_SAMPLE_SZ, &s.header);
    #[rustfmt::skip]
    put_u32s(out, &[
        s.peid, s.kpid, s.lpid, s.nevent_processed, s.nevent_abort, s.e_rbs,
        s.nsend_network, s.nread_network,
    ]);
    out.extend_from_slice(&0u64.to_le_bytes());
    put_f32s(out, &[s.efficiency]);
    out.extend_from_slice(&[0u8; 4]);
}

/// Appends a model sample (48 bytes + its payload) to `out`.
pub fn encode_model(s: &ModelSample<'_>, out: &mut Vec<u8>) {
    out.extend_from_slice(&FLAG_MODEL.to_le_bytes());
    out.extend_from_slice(&MODEL_SAMPLE_SZ.to_le_bytes());
    out.extend_from_slice(&s.ts.to_le_bytes());
    out.extend_from_slice(&s.real_time.to_le_bytes());
    put_u32s(out, &[s.peid, s.kpid, s.lpid]);
    put_f32s(out, &[s.gvt]);
    let stats_type: i32 = match s.stats_type {
        StatsType::Gvt => 1,
        StatsType::RealTime => 2,
    };
    out.extend_from_slice(&stats_type.to_le_bytes());
    put_u32s(out, &[s.payload.len() as u32]);
    out.extend_from_slice(s.payload);
}

/// Appends an event-trace record (24 bytes + its payload) to `out`.
#[inline]
pub fn encode_event(e: &TraceEvent<'_>, out: &mut Vec<u8>) {
    put_u32s(out, &[e.src_lp, e.dest_lp]);
    put_f32s(out, &[e.send_vts, e.recv_vts, e.real_ts]);
    put_u32s(out, &[e.payload.len() as u32]);
    out.extend_from_slice(e.payload);
}

/// Appends a VT model sample (48 bytes + its payload) to `out`, with zeros
/// for its unset `real_time`.
pub fn encode_vt_model(s: &VtModelSample<'_>, out: &mut Vec<u8>) {
    for v in [s.lpid, s.kpid, s.peid] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&s.ts.to_le_bytes());
    out.extend_from_slice(&0f64.to_le_bytes());
    out.extend_from_slice(&(s.payload.len() as i32).to_le_bytes());
    out.extend_from_slice(&FLAG_MODEL.to_le_bytes());
    out.extend_from_slice(s.payload);
}

/// Appends any record to `out` in its file layout.
pub fn encode_record(rec: &Record<'_>, out: &mut Vec<u8>) {
    match rec {
        Record::Pe(s) => encode_pe(s, out),
        Record::Kp(s) => encode_kp(s, out),
        Record::Lp(s) => encode_lp(s, out),
        Record::Model(s) => encode_model(s, out),
        Record::Event(e) => encode_event(e, out),
        Record::VtModel(s) => encode_vt_model(s, out),
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
