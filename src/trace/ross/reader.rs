//! Streaming reader over one ROSS instrumentation file, in bounded memory.
//!
//! A file is a bare chain of variable-length records with no magic, no
//! index and no chunk marks, so it can only be read front to back, each
//! record's size field locating the next. The reader keeps one buffer
//! (1 MiB by default), refilled from the file as records are consumed; a
//! record is decoded in place and its payload is lent out as a slice of the
//! buffer, so reading allocates nothing per record and memory stays the
//! buffer's size whatever the file's.
//!
//! Every header is checked before its record is delivered (pitfall 8.1 of the
//! reference: the size fields are the only way to notice a foreign file or a
//! lost alignment). The first record that fails ends the file with a
//! [`RossError`] naming the file and the record's byte offset; the records
//! before it have all been delivered, and asking again returns the same
//! error. No input makes the reader panic.
//!
//! Besides reading a finished file front to back, the reader reads a byte
//! range of it (one AD rank's share), a file that is still being written
//! (following it), and event traces in a fast loop. This file
//! is long because those modes share the framing and buffer logic of every record
//! kind and belong together.

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

use super::error::RossError;
use super::files::FileKind;
use super::layout::*;
use super::records::*;

/// Buffer length a reader starts with.
pub const DEFAULT_BUFFER_LEN: usize = 1 << 20;

/// Longest record a reader accepts by default. ROSS drops any record that
/// does not fit its per-PE buffer (`--buffer-size`, 8 MB by default), so a
/// longer size field means misaligned or foreign data, not a big record.
pub const DEFAULT_MAX_RECORD_LEN: usize = 64 << 20;

/// How the reader cuts the next record, decided from its header alone.
#[derive(Debug, Clone, Copy)]
enum Layout {
    Pe,
    Kp,
    Lp,
    Model(StatsType),
    Event,
    VtModel,
}

/// What the bytes at the next record's start say.
enum Frame {
    /// A record of this layout and total length.
    Record(Layout, usize),
    /// Not enough bytes buffered to decide: at least this many are needed,
    /// for the part named.
    Need(usize, &'static str),
    /// Not a record of this file's kind.
    Bad(String),
}

/// Reads the records of one file, one at a time.
///
/// ```no_run
/// use chimbuko_mpi::trace::ross::{FileKind, Record, RecordReader};
/// let mut r = RecordReader::open("stats-output/ross-stats-rt.bin", FileKind::Rt)?;
/// let mut processed = 0u64;
/// while let Some(rec) = r.next_record()? {
///     if let Record::Pe(pe) = rec {
///         processed += u64::from(pe.nevent_processed);
///     }
/// }
/// # Ok::<(), chimbuko_mpi::trace::ross::RossError>(())
/// ```
#[derive(Debug)]
pub struct RecordReader<R = File> {
    src: R,
    path: PathBuf,
    kind: FileKind,
    buf: Vec<u8>,
    /// Start of the next record in `buf`.
    pos: usize,
    /// End of the bytes read into `buf`.
    end: usize,
    /// File offset of `buf[0]`.
    base: u64,
    eof: bool,
    failed: Option<RossError>,
    max_record: usize,
    records: u64,
    /// Offset at which reading stops (a record boundary), if not the end.
    limit: Option<u64>,
    /// Whether the file may still grow (see [`RecordReader::following`]).
    growing: bool,
}

impl RecordReader<File> {
    /// Opens `path` as a file of `kind`.
    pub fn open(path: impl AsRef<Path>, kind: FileKind) -> Result<Self, RossError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| RossError::io(path, None, &e))?;
        Ok(RecordReader::new(file, path, kind))
    }

    /// Opens `path` as a file of `kind` and reads the records from byte
    /// `start` (a record boundary) up to byte `end` (another one, or the
    /// end of the file): one share of a file split among AD ranks.
    pub fn open_range(
        path: impl AsRef<Path>,
        kind: FileKind,
        start: u64,
        end: u64,
    ) -> Result<Self, RossError> {
        use std::io::{Seek, SeekFrom};
        let path = path.as_ref();
        let mut file = File::open(path).map_err(|e| RossError::io(path, None, &e))?;
        file.seek(SeekFrom::Start(start))
            .map_err(|e| RossError::io(path, Some(start), &e))?;
        let len = file
            .metadata()
            .map_err(|e| RossError::io(path, None, &e))?
            .len();
        let mut r = RecordReader::new(file, path, kind);
        r.base = start;
        // A range to the end of the file reads like the whole file (a
        // truncated last record is reported as such).
        r.limit = (end < len).then_some(end);
        Ok(r)
    }

    /// For a followed file, before reading what landed since the last
    /// call: forgets the bytes read ahead of the next record and reads them
    /// again from the file. A region not yet written when it was read (a
    /// collective write lands rank by rank) read as zeros; it may hold the
    /// real bytes now.
    pub fn refresh(&mut self) -> Result<(), RossError> {
        use std::io::{Seek, SeekFrom};
        if self.failed.is_some() || self.end == self.pos {
            return Ok(());
        }
        let at = self.offset();
        self.src
            .seek(SeekFrom::Start(at))
            .map_err(|e| RossError::io(&self.path, Some(at), &e))?;
        self.end = self.pos;
        self.eof = false;
        Ok(())
    }

    /// Opens `path` as the kind its name says (`<prefix>-<suffix>.bin`).
    pub fn open_by_name(path: impl AsRef<Path>) -> Result<Self, RossError> {
        let path = path.as_ref();
        let kind = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(FileKind::parse_file_name)
            .map(|(_, k)| k)
            .ok_or_else(|| {
                RossError::new(
                    super::error::RossErrorKind::NotFound,
                    path,
                    None,
                    "not a ROSS stats file name (<prefix>-{gvt,rt,analysis-lps,evtrace,model}.bin)",
                )
            })?;
        Self::open(path, kind)
    }
}

impl<R: Read> RecordReader<R> {
    /// A reader of `kind` over `src`; `path` names it in errors.
    pub fn new(src: R, path: impl Into<PathBuf>, kind: FileKind) -> Self {
        RecordReader {
            src,
            path: path.into(),
            kind,
            buf: Vec::new(),
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
            failed: None,
            max_record: DEFAULT_MAX_RECORD_LEN,
            records: 0,
            limit: None,
            growing: false,
        }
    }

    /// Reads the file as one that is still being written: bytes missing at
    /// the end (a record not yet complete, a region not yet written) end
    /// the records *for now* instead of failing; a later call reads on from
    /// the same record once more bytes have landed. Combine with
    /// [`RecordReader::set_limit`] to read only up to a size known to be
    /// complete. [`RecordReader::stop_following`] makes what is left an
    /// error once the file is known to be final.
    pub fn following(mut self) -> Self {
        self.growing = true;
        self
    }

    /// Stops reading at byte `limit` of the file: records are delivered
    /// while they start before it, and a record that would cross it is
    /// treated as missing bytes. `limit` must be a record boundary (or the
    /// end of what has landed); it may be moved forward later.
    pub fn set_limit(&mut self, limit: u64) {
        self.limit = Some(limit);
    }

    /// The file is final: read on to its end as a finished file (a
    /// truncated or bad last record is then an error, as in a post-hoc
    /// read).
    pub fn stop_following(&mut self) {
        self.growing = false;
        self.limit = None;
    }

    /// Sets the length of the read buffer (at least 64 bytes; the buffer
    /// still grows to hold a longer record, up to the record limit). Only
    /// before the first record: once reading started the buffer holds data,
    /// and the call changes nothing.
    pub fn with_buffer_len(mut self, len: usize) -> Self {
        if self.base == 0 && self.end == 0 {
            self.buf = vec![0; len.max(64)];
        }
        self
    }

    /// Sets the longest record accepted, in bytes (header included).
    pub fn with_max_record_len(mut self, len: usize) -> Self {
        self.max_record = len;
        self
    }

    /// The file's kind.
    pub fn kind(&self) -> FileKind {
        self.kind
    }

    /// The file's path, as errors name it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Byte offset in the file of the next record.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Records delivered so far.
    pub fn records_read(&self) -> u64 {
        self.records
    }

    /// The next record, `None` at the end of the file, or the error that
    /// stops the file (returned again on every later call).
    pub fn next_record(&mut self) -> Result<Option<Record<'_>>, RossError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let (layout, len) = loop {
            let vis = self.visible_end();
            let at_limit = self.limit.is_some_and(|l| self.base + vis as u64 >= l);
            match frame(self.kind, &self.buf[self.pos..vis], self.max_record) {
                Frame::Record(layout, len) => break (layout, len),
                // A followed file may hold a region not yet written (zeros)
                // at its growing edge: it is checked again later, and
                // becomes an error only when the file is final.
                Frame::Bad(_) if self.growing => return Ok(None),
                Frame::Bad(msg) => return Err(self.fail(msg)),
                Frame::Need(need, what) => {
                    let have = vis - self.pos;
                    if at_limit || self.eof {
                        if have == 0 && (at_limit || !self.growing) {
                            return Ok(None);
                        }
                        if self.growing {
                            // Retry the read next time: more may land.
                            self.eof = false;
                            return Ok(None);
                        }
                        if at_limit {
                            return Err(self.fail(format!(
                                "the {what} needs {need} bytes and crosses the end of the \
                                 range read, {have} bytes after its start"
                            )));
                        }
                        return Err(self.fail(format!(
                            "truncated record: the {what} needs {need} bytes, the file ends \
                             {have} bytes after its start"
                        )));
                    }
                    self.fill(need)?;
                }
            }
        };
        let start = self.pos;
        self.pos += len;
        self.records += 1;
        match decode(layout, &self.buf[start..start + len]) {
            Some(rec) => Ok(Some(rec)),
            // Unreachable: `frame` checked the length against the layout.
            None => Err(RossError::format(
                &self.path,
                self.base + start as u64,
                "record shorter than its layout",
            )),
        }
    }

    /// Calls `f` on every event record from here to the end (or the limit,
    /// or what has landed of a followed file): the same records and errors
    /// as calling [`RecordReader::next_record`] in a loop, faster. Records
    /// wholly in the buffer are framed and checked in one tight loop; the
    /// rest (a record across a refill, a bad one, the end) goes through
    /// `next_record`. Records of other kinds are skipped.
    #[inline]
    pub fn for_each_event(&mut self, mut f: impl FnMut(&TraceEvent<'_>)) -> Result<(), RossError> {
        loop {
            if self.kind == FileKind::EvTrace && self.failed.is_none() {
                let vis = self.visible_end();
                let buf = &self.buf[..vis];
                let mut pos = self.pos;
                while let Some(h) = buf
                    .get(pos..)
                    .and_then(|b| b.first_chunk::<EVENT_HEADER_LEN>())
                {
                    // Anything `frame_event` would refuse goes the slow way,
                    // which reports it.
                    let sane = event_times_hold(f32_at(h, 8), f32_at(h, 12), f32_at(h, 16));
                    let len = EVENT_HEADER_LEN.saturating_add(u32_at(h, 20) as usize);
                    if !sane || len > self.max_record || pos + len > vis {
                        break;
                    }
                    f(&trace_event(h, &buf[pos + EVENT_HEADER_LEN..pos + len]));
                    pos += len;
                    self.records += 1;
                }
                self.pos = pos;
            }
            match self.next_record()? {
                Some(Record::Event(e)) => f(&e),
                Some(_) => {}
                None => return Ok(()),
            }
        }
    }

    /// End of the buffered bytes that may be looked at: up to the limit.
    #[inline]
    fn visible_end(&self) -> usize {
        match self.limit {
            Some(l) => (l.saturating_sub(self.base) as usize).clamp(self.pos, self.end),
            None => self.end,
        }
    }

    /// Records an error at the next record's offset and returns it.
    fn fail(&mut self, message: String) -> RossError {
        let e = RossError::format(&self.path, self.offset(), message);
        self.failed = Some(e.clone());
        e
    }

    /// Reads until `need` bytes from the next record's start are buffered
    /// or the file ends.
    fn fill(&mut self, need: usize) -> Result<(), RossError> {
        if self.buf.is_empty() {
            self.buf = vec![0; DEFAULT_BUFFER_LEN];
        }
        if self.pos + need > self.buf.len() {
            // Move the partial record to the front; at most one record's
            // bytes are copied per refill.
            self.buf.copy_within(self.pos..self.end, 0);
            self.base += self.pos as u64;
            self.end -= self.pos;
            self.pos = 0;
            if need > self.buf.len() {
                self.buf.resize(need, 0);
            }
        }
        while self.end - self.pos < need {
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => self.end += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    let err = RossError::io(&self.path, Some(self.offset()), &e);
                    self.failed = Some(err.clone());
                    return Err(err);
                }
            }
        }
        Ok(())
    }
}

/// Whether a chain of valid records of `kind` starts at `bytes[0]`: at
/// least `records` of them, or, when `bytes` runs to the end of the file
/// (`at_eof`), records up to exactly its end. A cheap test of a candidate
/// record boundary in the middle of a file (see `ross::share`).
pub fn chain_holds(kind: FileKind, bytes: &[u8], records: usize, at_eof: bool) -> bool {
    let mut pos = 0;
    for _ in 0..records {
        if pos == bytes.len() {
            return at_eof;
        }
        match frame(kind, &bytes[pos..], DEFAULT_MAX_RECORD_LEN) {
            Frame::Record(_, len) => pos += len,
            Frame::Bad(_) => return false,
            // The window is too short to see the whole chain: not proven.
            Frame::Need(..) => return false,
        }
    }
    true
}

/// Decides the next record from the bytes buffered at its start.
#[inline]
fn frame(kind: FileKind, b: &[u8], max_record: usize) -> Frame {
    match kind {
        FileKind::EvTrace => frame_event(b, max_record),
        FileKind::Model => frame_model(b, max_record),
        FileKind::Gvt | FileKind::Rt => frame_engine(b, false, max_record),
        FileKind::AnalysisLps => frame_engine(b, true, max_record),
    }
}

/// A record of `len` bytes of `layout`, or a request for more bytes.
#[inline(always)]
fn sized(b: &[u8], layout: Layout, len: usize, what: &'static str, max: usize) -> Frame {
    if len > max {
        Frame::Bad(format!(
            "{what} of {len} bytes is longer than the reader's limit of {max} bytes: \
             its size field is wrong or this is not a ROSS file"
        ))
    } else if b.len() < len {
        Frame::Need(len, what)
    } else {
        Frame::Record(layout, len)
    }
}

/// Whether an event record's times can be ROSS's: ROSS refuses to
/// schedule an event before its sender's time, and all three times are
/// non-negative clocks; anything else is not a record.
#[inline(always)]
fn event_times_hold(send: f32, recv: f32, real: f32) -> bool {
    send.is_finite()
        && recv.is_finite()
        && real.is_finite()
        && send >= 0.0
        && real >= 0.0
        && recv >= send
}

fn frame_event(b: &[u8], max: usize) -> Frame {
    let Some(h) = b.first_chunk::<EVENT_HEADER_LEN>() else {
        return Frame::Need(EVENT_HEADER_LEN, "event record header");
    };
    let send = f32_at(h, 8);
    let recv = f32_at(h, 12);
    let real = f32_at(h, 16);
    if !event_times_hold(send, recv, real) {
        return Frame::Bad(format!(
            "not an event record: send_vts {send:?}, recv_vts {recv:?}, real_ts {real:?} \
             (expected finite, non-negative, recv_vts >= send_vts)"
        ));
    }
    let payload = u32_at(h, 20) as usize;
    sized(
        b,
        Layout::Event,
        EVENT_HEADER_LEN.saturating_add(payload),
        "event record",
        max,
    )
}

fn frame_model(b: &[u8], max: usize) -> Frame {
    if b.len() < 8 {
        return Frame::Need(MODEL_HEADER_LEN, "model sample header");
    }
    let (flag, sz) = (i32_at(b, 0), i32_at(b, 4));
    if flag != FLAG_MODEL || sz != MODEL_SAMPLE_SZ {
        return Frame::Bad(format!(
            "not a model sample: flag {flag}, sample_sz {sz} (expected {FLAG_MODEL}, \
             {MODEL_SAMPLE_SZ})"
        ));
    }
    let Some(h) = b.first_chunk::<MODEL_HEADER_LEN>() else {
        return Frame::Need(MODEL_HEADER_LEN, "model sample header");
    };
    let stats_type = match i32_at(h, 40) {
        1 => StatsType::Gvt,
        2 => StatsType::RealTime,
        other => {
            return Frame::Bad(format!(
                "not a model sample: stats_type {other} (expected 1 or 2)"
            ))
        }
    };
    let payload = u32_at(h, 44) as usize;
    sized(
        b,
        Layout::Model(stats_type),
        MODEL_HEADER_LEN.saturating_add(payload),
        "model sample",
        max,
    )
}

fn frame_engine(b: &[u8], vt_allowed: bool, max: usize) -> Frame {
    if b.len() < 8 {
        return Frame::Need(ENGINE_HEADER_LEN, "engine sample header");
    }
    let (flag, sz) = (i32_at(b, 0), i32_at(b, 4));
    let (layout, payload, what) = match (flag, sz) {
        (FLAG_PE, 104) => (Layout::Pe, PE_SAMPLE_SZ, "PE sample"),
        (FLAG_KP, 44) => (Layout::Kp, KP_SAMPLE_SZ, "KP sample"),
        (FLAG_LP, 48) => (Layout::Lp, LP_SAMPLE_SZ, "LP sample"),
        _ if vt_allowed => return frame_vt(b, flag, sz, max),
        _ => return Frame::Bad(bad_engine_header(flag, sz)),
    };
    sized(b, layout, ENGINE_HEADER_LEN + payload, what, max)
}

/// A record of the analysis-LP file that is not an engine sample: a VT
/// model sample has its `flag` (3) at byte 44 and `sample_sz` at byte 40.
/// Its first 8 bytes are the low and high words of a 64-bit LP id, so they
/// never read as a valid engine header (the high word would have to be 44,
/// 48 or 104).
fn frame_vt(b: &[u8], flag: i32, sz: i32, max: usize) -> Frame {
    let Some(h) = b.first_chunk::<VT_HEADER_LEN>() else {
        return Frame::Need(VT_HEADER_LEN, "VT model sample header");
    };
    let (vt_sz, vt_flag) = (i32_at(h, 40), i32_at(h, 44));
    if vt_flag != FLAG_MODEL || vt_sz < 0 {
        return Frame::Bad(format!(
            "{}; nor a VT model sample: flag {vt_flag} and sample_sz {vt_sz} at bytes 44 and 40 \
             (expected {FLAG_MODEL} and a size)",
            bad_engine_header(flag, sz)
        ));
    }
    sized(
        b,
        Layout::VtModel,
        VT_HEADER_LEN + vt_sz as usize,
        "VT model sample",
        max,
    )
}

fn bad_engine_header(flag: i32, sz: i32) -> String {
    format!(
        "not an engine sample: flag {flag}, sample_sz {sz} (expected 0/104 PE, 1/44 KP or \
         2/48 LP)"
    )
}

/// Decodes a record whose layout and length `frame` established.
#[inline]
fn decode(layout: Layout, rec: &[u8]) -> Option<Record<'_>> {
    Some(match layout {
        Layout::Event => {
            let (h, payload) = rec.split_first_chunk::<EVENT_HEADER_LEN>()?;
            Record::Event(trace_event(h, payload))
        }
        Layout::Pe => {
            let (h, p) = rec.split_first_chunk::<ENGINE_HEADER_LEN>()?;
            Record::Pe(pe_sample(engine_header(h), p.first_chunk()?))
        }
        Layout::Kp => {
            let (h, p) = rec.split_first_chunk::<ENGINE_HEADER_LEN>()?;
            Record::Kp(kp_sample(engine_header(h), p.first_chunk()?))
        }
        Layout::Lp => {
            let (h, p) = rec.split_first_chunk::<ENGINE_HEADER_LEN>()?;
            Record::Lp(lp_sample(engine_header(h), p.first_chunk()?))
        }
        Layout::Model(stats_type) => {
            let (h, payload) = rec.split_first_chunk::<MODEL_HEADER_LEN>()?;
            Record::Model(model_sample(h, stats_type, payload))
        }
        Layout::VtModel => {
            let (h, payload) = rec.split_first_chunk::<VT_HEADER_LEN>()?;
            Record::VtModel(vt_model_sample(h, payload))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A VT model sample header for LP `lpid` with `sz` payload bytes.
    fn vt_header(lpid: u64, sz: i32) -> Vec<u8> {
        let mut h = lpid.to_le_bytes().to_vec();
        h.extend([0u8; 32]);
        h.extend(sz.to_le_bytes());
        h.extend(FLAG_MODEL.to_le_bytes());
        h
    }

    #[test]
    fn vt_headers_never_read_as_engine_headers() {
        // LP ids 0, 1 and 2 put a valid engine flag in the first word; the
        // second word (the id's high half) is 0, never a valid sample_sz.
        for lpid in [0u64, 1, 2, 3, 1 << 31] {
            let h = vt_header(lpid, 8);
            assert!(matches!(
                frame(FileKind::AnalysisLps, &h, 1 << 20),
                Frame::Need(56, _)
            ));
            assert!(matches!(frame(FileKind::Gvt, &h, 1 << 20), Frame::Bad(_)));
        }
        assert!(matches!(
            frame(FileKind::AnalysisLps, &vt_header(5, -1), 99),
            Frame::Bad(_)
        ));
    }

    #[test]
    fn sizes_over_the_limit_are_refused_before_reading() {
        let h = vt_header(5, i32::MAX);
        match frame(FileKind::AnalysisLps, &h, 1 << 20) {
            Frame::Bad(m) => assert!(m.contains("longer than the reader's limit"), "{m}"),
            _ => panic!("accepted"),
        }
    }
}
