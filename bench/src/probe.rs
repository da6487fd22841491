//! MPI probes that the collective-scaling section runs under mpirun, on
//! the library's own `Collectives` (the code `chimbuko-mpi run` calls):
//!
//! - `chimbuko-bench probe agree OUT N...`: each rank offers the names of
//!   the SPMD scenario of `N` functions ([`crate::sweep::spmd_names`]: every
//!   name on every rank, the worst case of the agreement) to
//!   `Collectives::agree_names` and counts the bytes it sent and received
//!   with the library's counters. Rank 0 appends one JSON line per `N` to
//!   `OUT`: the largest and the mean bytes over ranks. End-to-end runs of
//!   10^5 functions on 64 AD ranks do not fit this machine (each AD rank
//!   holds the 10^5 name attributes of its stream, about 300 MB); the sweep
//!   checks that the probe's bytes equal a run's wherever both exist.
//! - `chimbuko-bench probe allreduce OUT`: the time of one
//!   `Collectives::allreduce_sum` of 8 B … 4 MB (the fastest of three
//!   batches, slowest rank), to which the cost model's α and β are fitted.

use std::io::Write as _;
use std::time::Instant;

use anyhow::{bail, ensure, Context};
use chimbuko_mpi::collectives::Collectives;

/// Payload sizes of the allreduce probe, bytes.
pub(crate) const ALLREDUCE_BYTES: [usize; 7] = [8, 64, 512, 4096, 32_768, 262_144, 4_194_304];

/// The probes' entry point; `args` are the words after `probe`.
pub(crate) fn main(args: &[String]) -> anyhow::Result<()> {
    let [kind, out, rest @ ..] = args else {
        bail!("probe agree|allreduce OUT [N...]");
    };
    let coll = Collectives::init()?;
    let lines = match kind.as_str() {
        "agree" => agree(&coll, rest)?,
        "allreduce" => allreduce(&coll),
        _ => bail!("unknown probe {kind:?}"),
    };
    if coll.rank() == 0 {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(out)
            .with_context(|| out.clone())?
            .write_all(lines.as_bytes())?;
    }
    Ok(())
}

/// The agreement probe: one JSON line per function count.
fn agree(coll: &Collectives, sizes: &[String]) -> anyhow::Result<String> {
    let p = coll.size() as f64;
    let mut lines = String::new();
    for n in sizes {
        let n: usize = n.parse().with_context(|| format!("size {n:?}"))?;
        let names: Vec<(u32, String)> = crate::sweep::spmd_names(n)
            .into_iter()
            .map(|s| (0, s))
            .collect();
        coll.barrier();
        let (sent, received) = (coll.bytes_sent(), coll.bytes_received());
        let agreed = coll.agree_names(&names);
        let mine = [coll.bytes_sent() - sent, coll.bytes_received() - received];
        ensure!(
            agreed.len() == names.len(),
            "agreement of {n} names returned {}",
            agreed.len()
        );
        let max = coll.allreduce_max(&mine);
        let sum = coll.allreduce_sum(&mine);
        lines.push_str(&format!(
            "{{\"n\": {n}, \"p\": {p}, \"sent_max\": {}, \"sent_mean\": {}, \
             \"received_max\": {}, \"received_mean\": {}}}\n",
            max[0],
            sum[0] as f64 / p,
            max[1],
            sum[1] as f64 / p,
        ));
    }
    Ok(lines)
}

/// The allreduce probe: one JSON line per payload size.
fn allreduce(coll: &Collectives) -> String {
    let p = coll.size();
    let mut lines = String::new();
    for bytes in ALLREDUCE_BYTES {
        let v = vec![1u64; bytes / 8];
        // About 8 MB per batch, at least 5 calls.
        let calls = (8_000_000 / bytes).clamp(5, 2000);
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            coll.barrier();
            let t = Instant::now();
            for _ in 0..calls {
                std::hint::black_box(coll.allreduce_sum(&v));
            }
            let mine = t.elapsed().as_secs_f64() / calls as f64;
            let slowest = coll.allreduce_max(&[(mine * 1e12) as u64])[0] as f64 / 1e12;
            best = best.min(slowest);
        }
        lines.push_str(&format!(
            "{{\"p\": {p}, \"bytes\": {bytes}, \"seconds\": {best}}}\n"
        ));
    }
    lines
}
