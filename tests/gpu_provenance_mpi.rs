//! GPU kernels in the provenance file: an anomalous kernel's host parent
//! (the CPU launch it was correlated with), and the reference's error when
//! the kernel carries two correlation ids (each matching a launch): which
//! launch started it cannot be told, so the record says so instead of
//! naming the first.

mod common;

use chimbuko_mpi::output::collect::MULTIPLE_HOST_IDS;
use chimbuko_mpi::provenance::read::Provenance;
use chimbuko_mpi::trace::adios::Engine;
use chimbuko_mpi::trace::writer::{StepData, TauStreamWriter};
use common::*;

const T0: u64 = 1_700_000_000_000_000;
const GPU: u64 = 9;
const LAUNCH: u64 = 0;
const KERNEL: u64 = 1;

fn func(thread: u64, et: u64, f: u64, ts: u64) -> [u64; 6] {
    [0, 0, thread, et, f, ts]
}

fn corr(thread: u64, id: u64, ts: u64) -> [u64; 6] {
    [0, 0, thread, 0, id, ts]
}

/// `n` launch/kernel pairs from `t`, kernel runtime `us`; the last kernel
/// gets the extra correlation id `extra` (matching one more launch).
fn pairs(step: &mut StepData, t: u64, first_id: u64, n: u64, us: u64, extra: Option<u64>) {
    for k in 0..n {
        let ts = t + k * 10_000;
        let id = first_id + k;
        step.funcs.push(func(0, 0, LAUNCH, ts));
        step.counters.push(corr(0, id, ts + 1));
        step.funcs.push(func(0, 1, LAUNCH, ts + 5));
        if let (Some(x), true) = (extra, k == n - 1) {
            // The second launch, with the second id.
            step.funcs.push(func(0, 0, LAUNCH, ts + 6));
            step.counters.push(corr(0, x, ts + 7));
            step.funcs.push(func(0, 1, LAUNCH, ts + 8));
        }
    }
    // Kernels run on the GPU stream after their launches (rows of one
    // thread in time order; the stream's rows follow the host's).
    for k in 0..n {
        let ts = t + k * 10_000 + 20;
        let id = first_id + k;
        step.funcs.push(func(GPU, 0, KERNEL, ts));
        step.counters.push(corr(GPU, id, ts));
        if let (Some(x), true) = (extra, k == n - 1) {
            step.counters.push(corr(GPU, x, ts + 1));
        }
        step.funcs.push(func(GPU, 1, KERNEL, ts + us));
    }
}

fn run(dir: &std::path::Path, extra: Option<u64>) -> Provenance {
    let attrs: Vec<(String, String)> = [
        ("event_type 0", "ENTRY"),
        ("event_type 1", "EXIT"),
        ("timer 0", "cudaLaunchKernel"),
        ("timer 1", "stencil_kernel"),
        ("counter 0", "Correlation ID"),
        ("MetaData:0:9:CUDA Context", "1"),
        ("MetaData:0:9:CUDA Device", "0"),
        ("MetaData:0:9:CUDA Stream", "7"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let mut s0 = StepData {
        new_attributes: attrs,
        ..Default::default()
    };
    // Step 0: 200 ordinary kernels of about 100 µs.
    pairs(&mut s0, T0, 1, 200, 100, None);
    // Step 1: 20 more, the last one 50x slower.
    let mut s1 = StepData::default();
    pairs(&mut s1, T0 + 10_000_000, 1000, 19, 100, None);
    pairs(&mut s1, T0 + 20_000_000, 2000, 1, 5000, extra);
    let path = dir.join("tau-metrics-gpu-0.bp");
    let mut w = TauStreamWriter::create(&path, Engine::BP4, vec![]).unwrap();
    w.write_step(&s0).unwrap();
    w.write_step(&s1).unwrap();
    w.close().unwrap();
    let out = dir.join("prov.h5");
    let mut c = mpirun(1);
    c.arg(exe())
        .args(["run", "--quiet", "--input"])
        .arg(dir.join("tau-metrics-gpu-{rank}.bp"))
        .arg("--out")
        .arg(&out);
    run_ok(&mut c);
    Provenance::load(&out).unwrap()
}

/// The gpu_parent row of the one anomalous kernel.
fn slow_kernel_parent(p: &Provenance) -> (String, String) {
    let anomalies = &p.collections[0];
    let kernels: Vec<_> = anomalies
        .records
        .iter()
        .filter(|r| u64::from(r.fid) == KERNEL && r.label == -1)
        .collect();
    assert_eq!(kernels.len(), 1, "one anomalous kernel");
    let r = kernels[0];
    assert_eq!(r.runtime_total, 5000);
    let row = &anomalies.gpu_parent[r.gpu_parent_start as usize];
    (
        row.event_id.as_str().to_string(),
        row.error.as_str().to_string(),
    )
}

#[test]
fn an_anomalous_kernel_names_its_launch() {
    let dir = tempfile::tempdir().unwrap();
    let p = run(dir.path(), None);
    let (event_id, error) = slow_kernel_parent(&p);
    assert_eq!(error, "");
    // The launch: rank 0, step 1, an entry of that step.
    assert!(event_id.starts_with("0:0:1:"), "{event_id}");
}

#[test]
fn a_kernel_with_two_correlation_ids_carries_the_error_in_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let p = run(dir.path(), Some(9000));
    let (event_id, error) = slow_kernel_parent(&p);
    assert_eq!(error, MULTIPLE_HOST_IDS);
    assert_eq!(event_id, "");
}
