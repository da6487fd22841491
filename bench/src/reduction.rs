//! Data reduction and provenance output: bytes of trace read versus bytes
//! of provenance written for `large.toml` on 2 AD ranks with the modal
//! detector (the throughput section's run, which runs first if it is
//! missing), records and bytes written per second, and the share of the
//! step time spent collecting and writing the output.

use std::path::Path;

use chimbuko_mpi::provenance::read::Provenance;

use crate::harness::{f, timing, Bench, PHASES};
use crate::throughput::throughput;

fn dir_bytes(p: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(p) else {
        return std::fs::metadata(p).map_or(0, |m| m.len());
    };
    rd.filter_map(|e| e.ok())
        .map(|e| {
            let path = e.path();
            if path.is_dir() {
                dir_bytes(&path)
            } else {
                e.metadata().map_or(0, |m| m.len())
            }
        })
        .sum()
}

/// Section 5: Trace bytes in / provenance bytes out, write throughput.
pub(crate) fn reduction(b: &mut Bench) -> anyhow::Result<()> {
    let file = b.work.join("throughput-modal-2.h5");
    if !file.exists() || b.write_summary.is_none() {
        throughput(b)?;
    }
    let summary = b.write_summary.clone().unwrap_or_default();
    let data = b.work.join("data").join("large");
    let trace: u64 = std::fs::read_dir(&data)?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".bp"))
        .map(|e| dir_bytes(&e.path()))
        .sum();
    let prov = std::fs::metadata(&file)?.len();
    let p = Provenance::load(&file)?;
    let anomalies = p.collections[0].records.len();
    let normals = p.collections[1].records.len();
    // Slowest rank's seconds per phase; `write` includes the final append.
    let write_s = timing(&summary, "write");
    let out_s = write_s + timing(&summary, "collect");
    let all_s: f64 = PHASES.iter().map(|p| timing(&summary, p)).sum();
    let records = (anomalies + normals) as f64;
    b.section(
        "Data reduction and provenance output",
        "What Chimbuko's approach is about: keep the anomalies with their context, not the \
         trace. `large.toml` analysed by 2 AD ranks with the modal detector (provenance file \
         with call stacks, windows of ±5 executions, messages, counters, normal samples, \
         global tables). The write rate is over the time spent in the collective appends and \
         the final write (slowest rank); the output share counts collecting records and \
         writing them, over all phases. Bytes per record include the global tables and the \
         model snapshots.",
    );
    b.table(
        &[
            "trace bytes read",
            "provenance bytes",
            "reduction factor",
            "anomaly records",
            "normal samples",
            "bytes per record",
            "records/s written",
            "MB/s written",
            "share of step time in output",
        ],
        &[vec![
            format!("{:.1} MB", trace as f64 / 1e6),
            format!("{:.2} MB", prov as f64 / 1e6),
            format!("{:.0}x", trace as f64 / prov.max(1) as f64),
            anomalies.to_string(),
            normals.to_string(),
            f(prov as f64 / records.max(1.0), 0),
            f(records / write_s.max(1e-9), 0),
            f(prov as f64 / 1e6 / write_s.max(1e-9), 1),
            format!("{:.1} %", 100.0 * out_s / all_s.max(1e-9)),
        ]],
    );
    Ok(())
}
