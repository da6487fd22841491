//! Engine samples regrouped per PE, and VT model samples without their
//! rollback repeats.
//!
//! ROSS flushes its per-PE buffers collectively, rank after rank, so a file
//! is `[flush 1: rank 0 | rank 1 | …][flush 2: rank 0 | …]…` with no marks
//! between the blocks: records are in time order **per PE only**. Time
//! series are therefore built per `peid` ([`EngineSeries`]), never in file
//! order. The final real-time sample (`ts == DBL_MAX`) has no GVT and is
//! kept apart from the series.
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
/// sampling point); use [`super::totals::EngineTotals`] to
/// stream.
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
