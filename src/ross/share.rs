//! How the AD ranks share the analysis of one ROSS run.
//!
//! The engine files (GVT, RT) hold one fixed-size sample per PE, KP and LP
//! per interval: kilobytes to a few megabytes. Every rank reads them whole
//! and builds the same series, so the peer comparison runs identically
//! everywhere and needs no communication.
//!
//! The event trace is the big file (24 bytes and a payload per event:
//! gigabytes for CODES runs). It is split into one byte range per rank.
//! The file is a bare chain of records with no marks, so a record boundary
//! can only be *known* by walking the chain from the start; walking it on
//! one rank first would cost as much as the counting itself. Instead the
//! ranges are guessed and then proven:
//!
//! 1. each rank `r > 0` looks near `r/size` of the file for the first
//!    offset from which 64 records in a row are valid ([`probe_start`]);
//!    the guesses are shared;
//! 2. each rank counts its range, reading the chain from its guessed start
//!    and stopping where the next rank's range begins;
//! 3. a rank whose chain does not end exactly at the next guess (a record
//!    crossing it) or meets a bad record says so. If none does, every guess
//!    lies on the chain that starts at byte 0 (by induction: rank 0 starts
//!    on it, and each rank's chain ends exactly where the next one starts),
//!    so the ranges are exactly the records a one-rank read sees.
//!    Otherwise rank 0 walks the chain ([`cut`], which stops at a bad
//!    record) and the ranks count again from proven boundaries.
//!
//! The counts are summed with integer reductions, exact whatever the
//! number of ranks and the reduction order: the summary and the provenance
//! are the same bytes for 1, 2 or 4 ranks. A bad record ends the file at
//! the same place for any number of ranks, and is reported the same way.

use std::path::Path;

use crate::collectives::Collectives;
use crate::trace::ross::reader::chain_holds;
use crate::trace::ross::{FileKind, RecordReader, RossError, RossErrorKind};

/// The collective operations the analysis needs: MPI ranks
/// ([`Collectives`]) or one process alone ([`Alone`]).
pub trait WorkShare {
    /// This rank's index.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// Element-wise sum over ranks (same length on every rank).
    fn sum(&self, v: &[u64]) -> Vec<u64>;
    /// Element-wise maximum over ranks.
    fn max(&self, v: &[u64]) -> Vec<u64>;
    /// Every rank's bytes, in rank order.
    fn all_bytes(&self, mine: &[u8]) -> Vec<Vec<u8>>;
}

/// One process, no MPI.
#[derive(Debug, Clone, Copy, Default)]
pub struct Alone;

impl WorkShare for Alone {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn sum(&self, v: &[u64]) -> Vec<u64> {
        v.to_vec()
    }
    fn max(&self, v: &[u64]) -> Vec<u64> {
        v.to_vec()
    }
    fn all_bytes(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        vec![mine.to_vec()]
    }
}

impl WorkShare for Collectives {
    fn rank(&self) -> usize {
        Collectives::rank(self)
    }
    fn size(&self) -> usize {
        Collectives::size(self)
    }
    fn sum(&self, v: &[u64]) -> Vec<u64> {
        self.allreduce_sum(v)
    }
    fn max(&self, v: &[u64]) -> Vec<u64> {
        self.allreduce_max(v)
    }
    fn all_bytes(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        self.allgather_bytes(mine)
    }
}

/// A file's byte ranges, one per rank, and the error that ended its chain.
#[derive(Debug, Clone)]
pub struct Ranges {
    /// `size + 1` record boundaries: rank `r` reads `cuts[r]..cuts[r+1]`.
    pub cuts: Vec<u64>,
    /// The bad record that ends the readable part, if any.
    pub error: Option<RossError>,
}

impl Ranges {
    /// Rank `r`'s range.
    pub fn of(&self, r: usize) -> (u64, u64) {
        (self.cuts[r], self.cuts[r + 1])
    }
}

/// Records in a row that make a guessed boundary credible.
const PROBE_RECORDS: usize = 64;
/// Bytes searched for a boundary from a guessed offset.
const PROBE_WINDOW: u64 = 1 << 20;

/// The first offset at or after `from` (and within [`PROBE_WINDOW`]) from
/// which a chain of valid records starts (see [`chain_holds`]), if any.
pub fn probe_start(path: &Path, kind: FileKind, from: u64) -> Result<Option<u64>, RossError> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).map_err(|e| RossError::io(path, None, &e))?;
    let len = f
        .metadata()
        .map_err(|e| RossError::io(path, None, &e))?
        .len();
    if from >= len {
        return Ok(None);
    }
    // The window plus room for the records that prove its last offsets.
    let want = (len - from).min(PROBE_WINDOW + (PROBE_RECORDS as u64) * 4096);
    let mut buf = vec![0u8; want as usize];
    f.seek(SeekFrom::Start(from))
        .and_then(|_| f.read_exact(&mut buf))
        .map_err(|e| RossError::io(path, Some(from), &e))?;
    let at_eof = from + want == len;
    let tries = (want as usize).min(PROBE_WINDOW as usize);
    Ok((0..tries)
        .find(|o| chain_holds(kind, &buf[*o..], PROBE_RECORDS, at_eof))
        .map(|o| from + o as u64))
}

/// Guessed ranges (step 1 of the module doc): rank 0 from byte 0, each
/// other rank from the boundary it found near its share; a rank that
/// found none gets an empty range.
pub fn guess_ranges(share: &dyn WorkShare, path: &Path, kind: FileKind) -> anyhow::Result<Ranges> {
    let len = std::fs::metadata(path)
        .map_err(|e| RossError::io(path, None, &e))?
        .len();
    let (r, n) = (share.rank() as u64, share.size() as u64);
    let mine = if r == 0 {
        Some(0)
    } else {
        probe_start(path, kind, len * r / n).unwrap_or(None)
    };
    let guesses: Vec<Option<u64>> = share
        .all_bytes(&mine.map_or(u64::MAX, |x| x).to_le_bytes())
        .iter()
        .map(|b| {
            let x = u64::from_le_bytes(b.as_slice().try_into().unwrap_or([0xff; 8]));
            (x != u64::MAX).then_some(x)
        })
        .collect();
    // A rank without a guess starts where the next one does; starts never
    // go backwards.
    let mut cuts = vec![len; guesses.len() + 1];
    for i in (0..guesses.len()).rev() {
        cuts[i] = guesses[i].unwrap_or(cuts[i + 1]).min(len);
    }
    cuts[0] = 0;
    for i in 1..cuts.len() {
        cuts[i] = cuts[i].max(cuts[i - 1]);
    }
    Ok(Ranges { cuts, error: None })
}

/// Walks the chain of `path` and cuts it into `parts` ranges of about
/// equal bytes, at record boundaries.
pub fn cut(path: &Path, kind: FileKind, parts: usize) -> Result<Ranges, RossError> {
    let len = std::fs::metadata(path)
        .map_err(|e| RossError::io(path, None, &e))?
        .len();
    let parts = parts.max(1);
    let mut cuts = vec![0u64];
    let mut reader = RecordReader::open(path, kind)?;
    let mut error = None;
    if parts > 1 {
        let mut next = 1;
        loop {
            let at = reader.offset();
            while next < parts && at >= len * next as u64 / parts as u64 {
                cuts.push(at);
                next += 1;
            }
            match reader.next_record() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
    } else {
        // One part: the counting pass itself finds the end and any error.
        reader.set_limit(len);
    }
    let end = if parts > 1 { reader.offset() } else { len };
    while cuts.len() <= parts {
        cuts.push(end);
    }
    for c in cuts.iter_mut() {
        *c = (*c).min(end);
    }
    Ok(Ranges { cuts, error })
}

/// [`cut`] on rank 0, shared with every rank. An error opening the file is
/// returned on every rank.
pub fn agree_ranges(share: &dyn WorkShare, path: &Path, kind: FileKind) -> anyhow::Result<Ranges> {
    let mine = if share.rank() == 0 {
        match cut(path, kind, share.size()) {
            Ok(r) => encode(&r),
            Err(e) => format!("E{e}").into_bytes(),
        }
    } else {
        Vec::new()
    };
    let first = share
        .all_bytes(&mine)
        .into_iter()
        .next()
        .unwrap_or_default();
    decode(&first, path, share.size())
}

/// `C` and the cuts, then `|` and the error's offset and message if any.
fn encode(r: &Ranges) -> Vec<u8> {
    let mut s = String::from("C");
    let cuts: Vec<String> = r.cuts.iter().map(u64::to_string).collect();
    s.push_str(&cuts.join(","));
    if let Some(e) = &r.error {
        s.push('|');
        s.push_str(&e.offset().map_or(String::new(), |o| o.to_string()));
        s.push('|');
        s.push_str(e.message());
    }
    s.into_bytes()
}

fn decode(b: &[u8], path: &Path, size: usize) -> anyhow::Result<Ranges> {
    let s = String::from_utf8_lossy(b);
    if let Some(msg) = s.strip_prefix('E') {
        anyhow::bail!("{msg}");
    }
    let body = s
        .strip_prefix('C')
        .ok_or_else(|| anyhow::anyhow!("{}: no ranges agreed", path.display()))?;
    let (cuts, err) = match body.split_once('|') {
        Some((c, e)) => (c, Some(e)),
        None => (body, None),
    };
    let cuts: Vec<u64> = cuts
        .split(',')
        .map(|c| c.parse::<u64>())
        .collect::<Result<_, _>>()?;
    anyhow::ensure!(
        cuts.len() == size + 1,
        "{}: ranges for another rank count",
        path.display()
    );
    let error = err.map(|e| {
        let (off, msg) = e.split_once('|').unwrap_or(("", e));
        RossError::new(RossErrorKind::Format, path, off.parse().ok(), msg)
    });
    Ok(Ranges { cuts, error })
}
