//! Writing ROSS instrumentation files as ROSS lays them out.
//!
//! ROSS appends each PE's records to a private buffer and, at a GVT where
//! some buffer is full enough (or at the end), flushes every buffer
//! collectively: rank r's block lands after the blocks of ranks < r, so a
//! file is `[flush 1: PE 0 | PE 1 | …][flush 2: PE 0 | …]…` (reference §2).
//! [`FlushWriter`] does the same on one output: records go into per-PE
//! buffers, and when a record would make its PE's buffer exceed the buffer
//! size, every buffer is written out in PE order first. Each flush is
//! appended whole and followed by `flush()`, so a reader following the
//! file as it grows sees the flushes arrive one by one.
//!
//! Records are encoded with the `encode_*` functions of [`super::layout`];
//! a record longer than the buffer size is kept (the buffer grows for it),
//! where ROSS would drop it.
//!
//! ```
//! use chimbuko_mpi::trace::ross::layout::encode_event;
//! use chimbuko_mpi::trace::ross::{FlushWriter, TraceEvent};
//! let mut w = FlushWriter::new(Vec::new(), 2, 1 << 20);
//! let e = TraceEvent { src_lp: 0, dest_lp: 1, send_vts: 0.5, recv_vts: 1.5, real_ts: 9.0, payload: &[] };
//! w.push_with(1, 24, |buf| encode_event(&e, buf))?;
//! let bytes = w.finish()?;
//! assert_eq!(bytes.len(), 24);
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io::{self, Write};
use std::time::Duration;

/// Per-PE buffers flushed collectively, in PE order, onto one output.
#[derive(Debug)]
pub struct FlushWriter<W: Write> {
    out: W,
    bufs: Vec<Vec<u8>>,
    buffer_size: usize,
    pace: Option<Duration>,
    bytes: u64,
    records: u64,
    flushes: u64,
}

impl<W: Write> FlushWriter<W> {
    /// A writer of `pes` PEs' records onto `out`, each PE buffering up to
    /// `buffer_size` bytes (ROSS's `--buffer-size`) between flushes.
    pub fn new(out: W, pes: usize, buffer_size: usize) -> Self {
        FlushWriter {
            out,
            bufs: vec![Vec::new(); pes],
            buffer_size: buffer_size.max(1),
            pace: None,
            bytes: 0,
            records: 0,
            flushes: 0,
        }
    }

    /// Sleeps this long after every flush but the last (so that a follower
    /// can read the file while it grows).
    pub fn with_pace(mut self, pace: Option<Duration>) -> Self {
        self.pace = pace;
        self
    }

    /// Appends one record of `len` bytes to PE `pe`'s buffer, written by
    /// `encode` (which must append exactly `len` bytes); when it would not
    /// fit, every buffer is flushed first. Returns whether a flush happened.
    ///
    /// Panics if `pe` is not below the number of PEs given to [`FlushWriter::new`].
    #[inline]
    pub fn push_with(
        &mut self,
        pe: usize,
        len: usize,
        encode: impl FnOnce(&mut Vec<u8>),
    ) -> io::Result<bool> {
        let used = self.bufs[pe].len();
        let flushed = used > 0 && used + len > self.buffer_size;
        if flushed {
            self.flush_blocks()?;
            if let Some(p) = self.pace {
                std::thread::sleep(p);
            }
        }
        let buf = &mut self.bufs[pe];
        let before = buf.len();
        encode(buf);
        debug_assert_eq!(buf.len() - before, len, "record length");
        self.records += 1;
        Ok(flushed)
    }

    /// Appends one encoded record to PE `pe`'s buffer, as
    /// [`FlushWriter::push_with`].
    pub fn push(&mut self, pe: usize, record: &[u8]) -> io::Result<bool> {
        self.push_with(pe, record.len(), |b| b.extend_from_slice(record))
    }

    /// Writes every PE's buffered records, PE 0 first, and flushes the
    /// output; nothing happens when all buffers are empty. Returns whether
    /// anything was written.
    pub fn flush_blocks(&mut self) -> io::Result<bool> {
        if self.bufs.iter().all(|b| b.is_empty()) {
            return Ok(false);
        }
        for b in &mut self.bufs {
            self.out.write_all(b)?;
            self.bytes += b.len() as u64;
            b.clear();
        }
        self.out.flush()?;
        self.flushes += 1;
        Ok(true)
    }

    /// Flushes what is left and hands the output back.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush_blocks()?;
        Ok(self.out)
    }

    /// Bytes written to the output so far.
    pub fn bytes_written(&self) -> u64 {
        self.bytes
    }

    /// Records pushed so far (written or still buffered).
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Flushes that wrote something, so far.
    pub fn flushes(&self) -> u64 {
        self.flushes
    }
}

#[cfg(test)]
mod tests {
    use super::super::files::FileKind;
    use super::super::layout::*;
    use super::super::reader::RecordReader;
    use super::super::records::*;
    use super::*;

    fn read_back(bytes: &[u8], kind: FileKind) -> Vec<String> {
        let mut r = RecordReader::new(bytes, "mem", kind);
        let mut out = Vec::new();
        while let Some(rec) = r.next_record().unwrap() {
            out.push(format!("{rec:?}"));
        }
        out
    }

    fn header(flag: i32) -> SampleHeader {
        SampleHeader {
            flag,
            ts: 12.5,
            real_time: 1234.25,
        }
    }

    fn pe() -> PeSample {
        PeSample {
            header: header(FLAG_PE),
            peid: 3,
            nevent_processed: 256,
            nevent_abort: 1,
            e_rbs: 40,
            rb_total: 9,
            rb_secondary: 2,
            fc_attempts: 3,
            pq_qsize: 77,
            nsend_network: 60,
            nread_network: 61,
            ngvts: 4,
            pe_event_ties: 5,
            all_reduce_count: 8,
            efficiency: -12.25,
            net_read_s: 0.5,
            net_other_s: 0.25,
            gvt_s: 1.5,
            fossil_collect_s: 0.125,
            event_abort_s: 0.0625,
            event_process_s: 2.5,
            pq_s: 0.75,
            rollback_s: 0.375,
            cancel_q_s: 0.01,
            avl_s: 0.02,
            buddy_s: 0.03,
            lz4_s: 0.04,
        }
    }

    #[test]
    fn engine_records_round_trip() {
        let kp = KpSample {
            header: header(FLAG_KP),
            peid: 3,
            kpid: 1,
            nevent_processed: 100,
            nevent_abort: 0,
            e_rbs: 10,
            rb_total: 3,
            rb_secondary: 1,
            nsend_network: 20,
            nread_network: 21,
            time_ahead_gvt: -0.5,
            efficiency: 88.5,
        };
        let lp = LpSample {
            header: header(FLAG_LP),
            peid: 3,
            kpid: 1,
            lpid: 99,
            nevent_processed: 50,
            nevent_abort: 0,
            e_rbs: 5,
            nsend_network: 7,
            nread_network: 8,
            efficiency: 88.75,
        };
        let mut bytes = Vec::new();
        encode_pe(&pe(), &mut bytes);
        encode_kp(&kp, &mut bytes);
        encode_lp(&lp, &mut bytes);
        assert_eq!(bytes.len(), 128 + 68 + 72);
        let want: Vec<String> = [Record::Pe(pe()), Record::Kp(kp), Record::Lp(lp)]
            .iter()
            .map(|r| format!("{r:?}"))
            .collect();
        for kind in [FileKind::Gvt, FileKind::Rt, FileKind::AnalysisLps] {
            assert_eq!(read_back(&bytes, kind), want);
        }
        // The unset LP bytes are zeros.
        assert!(bytes[196 + 24 + 32..196 + 24 + 40].iter().all(|b| *b == 0));
        assert!(bytes[196 + 24 + 44..].iter().all(|b| *b == 0));
    }

    #[test]
    fn model_event_and_vt_records_round_trip() {
        let payload = [1u8, 2, 3, 4, 5];
        let models = [StatsType::Gvt, StatsType::RealTime].map(|stats_type| ModelSample {
            ts: 3.5,
            real_time: 100.0,
            peid: 1,
            kpid: 2,
            lpid: 17,
            gvt: 3.0,
            stats_type,
            payload: &payload,
        });
        let mut bytes = Vec::new();
        models.iter().for_each(|m| encode_model(m, &mut bytes));
        assert_eq!(bytes.len(), 2 * (48 + 5));
        let want: Vec<String> = models
            .iter()
            .map(|m| format!("{:?}", Record::Model(*m)))
            .collect();
        assert_eq!(read_back(&bytes, FileKind::Model), want);

        let events = [
            TraceEvent {
                src_lp: 4,
                dest_lp: 9,
                send_vts: 1.0,
                recv_vts: 2.5,
                real_ts: 1000.5,
                payload: &[],
            },
            TraceEvent {
                src_lp: 9,
                dest_lp: 4,
                send_vts: 2.5,
                recv_vts: 2.5,
                real_ts: 1000.75,
                payload: &payload,
            },
        ];
        let mut bytes = Vec::new();
        events
            .iter()
            .for_each(|e| encode_record(&Record::Event(*e), &mut bytes));
        let want: Vec<String> = events
            .iter()
            .map(|e| format!("{:?}", Record::Event(*e)))
            .collect();
        assert_eq!(read_back(&bytes, FileKind::EvTrace), want);

        let vt = VtModelSample {
            lpid: 70,
            kpid: 1,
            peid: 2,
            ts: 40.0,
            payload: &payload,
        };
        let mut bytes = Vec::new();
        encode_pe(&pe(), &mut bytes);
        encode_vt_model(&vt, &mut bytes);
        let want = vec![
            format!("{:?}", Record::Pe(pe())),
            format!("{:?}", Record::VtModel(vt)),
        ];
        assert_eq!(read_back(&bytes, FileKind::AnalysisLps), want);
    }

    #[test]
    fn flushes_interleave_pe_blocks() {
        let mut w = FlushWriter::new(Vec::new(), 3, 10);
        for i in 0..6u8 {
            for pe in 0..3 {
                w.push(pe, &[pe as u8 * 10 + i; 4]).unwrap();
            }
        }
        assert_eq!(w.records(), 18);
        let out = w.finish().unwrap();
        // Two records fit a 10-byte buffer: flushes of [PE0 x2 | PE1 x2 | PE2 x2].
        let pes: Vec<u8> = out.chunks(4).map(|c| c[0] / 10).collect();
        assert_eq!(pes, [0, 0, 1, 1, 2, 2].repeat(3));
        let seq: Vec<u8> = out.chunks(4).filter(|c| c[0] < 10).map(|c| c[0]).collect();
        assert_eq!(seq, [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn flush_counts_and_empty_flush() {
        let mut w = FlushWriter::new(Vec::new(), 2, 100);
        assert!(!w.flush_blocks().unwrap());
        w.push(1, &[1, 2, 3]).unwrap();
        assert!(w.flush_blocks().unwrap());
        assert_eq!((w.flushes(), w.bytes_written()), (1, 3));
        // A record longer than the buffer is kept whole.
        assert!(!w.push(0, &[7; 300]).unwrap());
        assert_eq!(w.finish().unwrap().len(), 303);
    }
}
