//! The provenance file of a ROSS analysis (`chimbuko-mpi ross --out`):
//! its tables, writing them (collectively, through parallel HDF5) and
//! reading them back (what `inspect` and `export --json` show of them is
//! in `crate::inspect::ross`).
//!
//! The file follows the layout of TAU runs where it applies: the same root
//! attributes (`schema_version`, `program`, `algorithm`,
//! `algorithm_params`, `ad_ranks`, `input_streams`, `command_line`,
//! `start_time`, `end_time`, `completed`) plus `source = "ross"`, and the
//! tables under `ross/`: the anomaly records with their context (the
//! neighbouring samples, the straggler senders), the PEs ranked by cost,
//! the per-entity statistics of every series, the interval bounds, the
//! peer comparison's model (each interval's peer median and spread), and
//! the run-wide slowdowns with their detector's record of every interval.
//! The row types are in `rows`.
//!
//! The analysis is the same on every AD rank, so rank 0 writes every row;
//! the others take part in the collective calls only.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;

mod rows;

pub use rows::*;

use crate::collectives::Collectives;
use crate::provenance::hdf5file::{FileAttr, ProvenanceFile};
use crate::provenance::table::{root_attrs, table};

/// Table names, in the order they are written.
const TABLES: [&str; 11] = [
    "ross/anomalies",
    "ross/evidence",
    "ross/senders",
    "ross/entities",
    "ross/series_stats",
    "ross/intervals",
    "ross/peer_model",
    "ross/trace_events_per_interval",
    "ross/run_wide",
    "ross/run_wide_evidence",
    "ross/run_model",
];

/// Writes the provenance file of a ROSS analysis (collective: every rank
/// calls it with the same tables; rank 0 writes the rows).
pub fn write_ross_provenance(
    path: &Path,
    coll: &Collectives,
    overwrite: bool,
    attrs: &[(&str, FileAttr)],
    t: &RossTables,
) -> anyhow::Result<()> {
    let mut f = ProvenanceFile::create(path, coll, overwrite)?;
    let write = coll.rank() == 0;
    f.set_attrs(attrs)?;
    f.set_attrs(&[("completed", FileAttr::U64(0))])?;
    fn put<T: crate::provenance::columns::DescribedRow>(
        f: &mut ProvenanceFile,
        write: bool,
        name: &str,
        rows: &[T],
    ) -> anyhow::Result<()> {
        f.recreate::<T>(name, rows.len() as u64)?;
        if write {
            f.write_rows(name, 0, rows)?;
        }
        Ok(())
    }
    let ctx = |name: &str| format!("{}: writing {name}", path.display());
    put(&mut f, write, TABLES[0], &t.anomalies).with_context(|| ctx(TABLES[0]))?;
    put(&mut f, write, TABLES[1], &t.evidence).with_context(|| ctx(TABLES[1]))?;
    put(&mut f, write, TABLES[2], &t.senders).with_context(|| ctx(TABLES[2]))?;
    put(&mut f, write, TABLES[3], &t.entities).with_context(|| ctx(TABLES[3]))?;
    put(&mut f, write, TABLES[4], &t.stats).with_context(|| ctx(TABLES[4]))?;
    put(&mut f, write, TABLES[5], &t.intervals).with_context(|| ctx(TABLES[5]))?;
    put(&mut f, write, TABLES[6], &t.model).with_context(|| ctx(TABLES[6]))?;
    put(&mut f, write, TABLES[7], &t.trace_per_interval).with_context(|| ctx(TABLES[7]))?;
    put(&mut f, write, TABLES[8], &t.run_wide).with_context(|| ctx(TABLES[8]))?;
    put(&mut f, write, TABLES[9], &t.run_wide_evidence).with_context(|| ctx(TABLES[9]))?;
    put(&mut f, write, TABLES[10], &t.run_model).with_context(|| ctx(TABLES[10]))?;
    let (rows, evidence, members) = crate::provenance::incidents::incident_rows(&t.incidents);
    put(&mut f, write, "incidents", &rows).with_context(|| ctx("incidents"))?;
    put(&mut f, write, "incident_evidence", &evidence).with_context(|| ctx("incident_evidence"))?;
    put(&mut f, write, "incident_members", &members).with_context(|| ctx("incident_members"))?;
    let floor: Vec<(&str, FileAttr)> = crate::provenance::incidents::floor_attrs(&t.incidents)
        .iter()
        .map(|(k, v)| (*k, FileAttr::F64(*v)))
        .collect();
    f.set_attrs(&floor)?;
    f.set_attrs(&[("completed", FileAttr::U64(1))])?;
    f.close()
}

/// A ROSS provenance file read back.
#[derive(Debug, Clone, Default)]
pub struct RossProvenance {
    /// Root attributes as text.
    pub attrs: BTreeMap<String, String>,
    /// The tables.
    pub tables: RossTables,
}

/// Whether the provenance file at `path` is that of a ROSS analysis.
pub fn is_ross_file(path: &Path) -> anyhow::Result<bool> {
    let f = hdf5::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    Ok(f.attr("source")
        .and_then(|a| a.read_scalar::<hdf5::types::VarLenUnicode>())
        .is_ok_and(|s| s.as_str() == "ross"))
}

impl RossProvenance {
    /// Reads the file at `path` (serial HDF5: no MPI needed).
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let f = hdf5::File::open(path).with_context(|| format!("opening {}", path.display()))?;
        let attrs = root_attrs(&f);
        let tables = RossTables {
            anomalies: table(&f, TABLES[0])?,
            evidence: table(&f, TABLES[1])?,
            senders: table(&f, TABLES[2])?,
            entities: table(&f, TABLES[3])?,
            stats: table(&f, TABLES[4])?,
            intervals: table(&f, TABLES[5])?,
            model: table(&f, TABLES[6])?,
            trace_per_interval: table(&f, TABLES[7])?,
            run_wide: table(&f, TABLES[8])?,
            run_wide_evidence: table(&f, TABLES[9])?,
            run_model: table(&f, TABLES[10])?,
            incidents: crate::provenance::incidents::read_incidents(&f, &|k| {
                attrs.get(k).and_then(|v| v.parse().ok())
            })?,
        };
        Ok(RossProvenance { attrs, tables })
    }
}
