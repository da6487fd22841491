//! Step latency breakdown: median and p99 of the per-step time of each
//! phase of a step on 1 AD rank, from the `ad_perf` table of the provenance
//! file that the throughput section's modal run on 1 AD rank wrote (that
//! section runs first if the file is missing).

use chimbuko_mpi::provenance::read::Provenance;

use crate::harness::{f, strings, Bench, PHASES};
use crate::plot;
use crate::throughput::throughput;

/// Section 2: Per-step phase times: median and p99, from the provenance file.
pub(crate) fn latency(b: &mut Bench) -> anyhow::Result<()> {
    let file = b.work.join("throughput-modal-1.h5");
    if !file.exists() {
        throughput(b)?;
    }
    let p = Provenance::load(&file)?;
    let mut rows = Vec::new();
    let mut med = Vec::new();
    let mut p99 = Vec::new();
    for (i, phase) in PHASES.iter().enumerate() {
        let mut v: Vec<f64> = p
            .ad_perf
            .iter()
            .map(|r| {
                [
                    r.read, r.agree, r.build, r.reduce, r.label, r.link, r.collect, r.write,
                    r.trim, r.status,
                ][i] * 1e3
            })
            .collect();
        v.sort_by(|a, b| a.total_cmp(b));
        let q = |x: f64| {
            v.get(((v.len() as f64 - 1.0) * x).round() as usize)
                .copied()
                .unwrap_or(0.0)
        };
        rows.push(vec![phase.to_string(), f(q(0.5), 3), f(q(0.99), 3)]);
        med.push(q(0.5));
        p99.push(q(0.99));
    }
    let steps = p.ad_perf.len();
    b.section(
        "Step latency breakdown",
        &format!(
            "Per-step time of each phase on 1 AD rank (modal detector, `large.toml`, {steps} \
             steps of ~400k function events over 4 streams), from the `ad_perf` table of the \
             provenance file. `write` is the collective HDF5 append, done every \
             `--flush-steps` (10) steps, hence its p99."
        ),
    );
    b.table(&["phase", "median ms", "p99 ms"], &rows);
    plot::bars(
        &b.png("latency.png"),
        "Per-step phase time (1 AD rank, large.toml)",
        "ms per step",
        &strings(&PHASES),
        &[("median".into(), med), ("p99".into(), p99)],
    )?;
    b.image("latency.png", "phase times per step");
    Ok(())
}
