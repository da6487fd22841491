//! Collective scaling: what the collectives of a step (agreement on names,
//! model reduction, status exchange) cost as functions and AD ranks grow.
//!
//! Three parts: (1) time per step versus the number of functions on 1, 2
//! and 4 AD ranks, with SSTD and modal (a generated scenario of `n` leaf
//! functions under one loop, 40 steps; the run with the median collective
//! time of three, one with `--quick`); (2) the byte sweep ([`crate::sweep`]):
//! bytes sent and received per rank from 2 to 64 AD ranks; (3) the cost
//! model ([`crate::costmodel`]) fitted to the 2-rank times of (1) and
//! projected, with the bytes of (2), to 10^3 … 10^5 AD ranks, with the
//! fitted constants and with a cluster interconnect's.

use std::fmt::Write as _;

use crate::costmodel::{self, fit_nonnegative, Net, Payload, CLUSTER};
use crate::harness::{f, num, timing, Bench};
use crate::plot;
use crate::probe::ALLREDUCE_BYTES;
use crate::sweep::Sweep;

/// Steps of the collective-scaling scenarios: enough that the one-time
/// agreement on names (first step) and the ranks' different start-up are a
/// small part of the average per step.
pub(crate) const COLLECTIVE_STEPS: usize = 40;

/// A scenario with `n` leaf functions under one loop.
pub(crate) fn functions_scenario(n: usize) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "seed = 1\nbinary = \"fn{n}\"\nranks = 4\nsteps = {COLLECTIVE_STEPS}"
    );
    let _ = writeln!(t, "events_per_step = {}\nroot = \"loop\"", 2 * n + 8);
    let _ = writeln!(
        t,
        "[[function]]\nname = \"main\"\nruntime = {{ dist = \"constant\", value = 5 }}"
    );
    let _ = writeln!(
        t,
        "[[function]]\nname = \"loop\"\nruntime = {{ dist = \"constant\", value = 5 }}"
    );
    let kids: Vec<String> = (0..n)
        .map(|i| format!("{{ function = \"f{i}\" }}"))
        .collect();
    let _ = writeln!(t, "children = [{}]", kids.join(", "));
    for i in 0..n {
        let _ = writeln!(
            t,
            "[[function]]\nname = \"f{i}\"\nruntime = {{ dist = \"normal\", mean = 20, std = 2 }}"
        );
    }
    t
}

/// One case of the time table (the median run of its repeats).
struct Timed {
    n: usize,
    np: usize,
    alg: &'static str,
    /// Seconds per step of agree + reduce + status (slowest rank).
    seconds: f64,
    calls: f64,
    /// Reduction and status bytes received per step.
    payload: f64,
    /// Agreement bytes received per step (averaged over the steps).
    agree_received: f64,
    cells: Vec<String>,
}

/// Section: collective time and bytes versus functions and AD ranks, and
/// the cost model.
pub(crate) fn collectives(b: &mut Bench) -> anyhow::Result<()> {
    let sizes: &[usize] = if b.quick {
        &[100, 1000]
    } else {
        &[100, 1000, 10000]
    };
    let mut cases: Vec<Timed> = Vec::new();
    // (detector, AD ranks, ms per step) at 10^4 functions.
    let mut update_10k: Vec<(&str, usize, f64)> = Vec::new();
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for &np in &[1usize, 2, 4] {
        let mut line = Vec::new();
        for &n in sizes {
            let dir = b.synth_text(&format!("functions-{n}"), &functions_scenario(n))?;
            let input = dir
                .join(format!("tau-metrics-fn{n}-{{rank}}.bp"))
                .display()
                .to_string();
            // Every detector where the model-update target is judged (10^4
            // functions, 1 and 2 AD ranks); SSTD and modal elsewhere.
            let algs: &[&'static str] = if n == 10000 && np <= 2 && !b.quick {
                &["sstd", "modal", "hbos", "copod"]
            } else {
                &["sstd", "modal"]
            };
            for &alg in algs {
                // The first collective of a step also absorbs the ranks'
                // imbalance in reading, which on this shared 2-core host
                // jumps from run to run: the run with the median collective
                // time of three is reported.
                let repeats = if b.quick { 1 } else { 3 };
                let mut runs = Vec::new();
                for _ in 0..repeats {
                    let r = b.run(
                        np,
                        &[
                            "--input".into(),
                            input.clone(),
                            "--no-provenance".into(),
                            "--algorithm".into(),
                            alg.into(),
                            // Not the empty iteration that finds the end.
                            "--max-steps".into(),
                            COLLECTIVE_STEPS.to_string(),
                        ],
                    )?;
                    let s = &r.summary;
                    let steps = num(&s["steps"]).max(1.0);
                    let t: f64 = ["agree", "reduce", "status"]
                        .iter()
                        .map(|p| timing(s, p))
                        .sum::<f64>()
                        / steps;
                    runs.push((t, steps, r));
                }
                runs.sort_by(|a, b| a.0.total_cmp(&b.0));
                let (t, steps, r) = &runs[runs.len() / 2];
                let (t, steps) = (*t, *steps);
                let s = &r.summary;
                let (out, got) = (
                    &s["collective_bytes_per_step"],
                    &s["collective_bytes_received_per_step"],
                );
                let ms = |phase: &str| f(timing(s, phase) / steps * 1e3, 3);
                cases.push(Timed {
                    n,
                    np,
                    alg,
                    seconds: t,
                    calls: num(&s["collective_calls_per_step"]),
                    payload: num(&got["reduce"]) + num(&got["status"]),
                    agree_received: num(&got["agree"]),
                    cells: vec![
                        n.to_string(),
                        if np > 2 {
                            format!("{np} (oversubscribed)")
                        } else {
                            np.to_string()
                        },
                        alg.to_string(),
                        ms("agree"),
                        ms("reduce"),
                        ms("status"),
                        f(t * 1e3, 3),
                        f(num(&out["reduce"]), 0),
                        f(num(&s["collective_calls_per_step"]), 1),
                    ],
                });
                if alg == "modal" {
                    line.push((n as f64, t * 1e3));
                }
                if n == 10000 && np <= 2 {
                    update_10k.push((alg, np, t * 1e3));
                }
                if (n, np, alg) == (1000, 2, "sstd") {
                    b.target(
                        "collective time per step, 1,000 functions, 2 AD ranks (SSTD)",
                        "< 1 ms",
                        format!("{:.3} ms", t * 1e3),
                        t * 1e3 < 1.0,
                    );
                }
            }
        }
        series.push((format!("{np} AD rank(s), modal"), line));
    }
    if !update_10k.is_empty() {
        let listed: Vec<String> = update_10k
            .iter()
            .map(|(alg, np, ms)| {
                format!(
                    "{alg} {ms:.1} ({np} rank{})",
                    if *np > 1 { "s" } else { "" }
                )
            })
            .collect();
        b.target(
            "model update plus collectives per step, 10^4 functions all active, 1 and 2 AD \
             ranks, every detector",
            "< 5 ms",
            format!("{} ms", listed.join(", ")),
            update_10k.iter().all(|u| u.2 < 5.0),
        );
    }
    // Communication: the time on P ranks less the 1-rank time of the same
    // case (the model update and the agreement's bookkeeping, no messages).
    let single = |c: &Timed| {
        cases
            .iter()
            .find(|o| o.np == 1 && o.n == c.n && o.alg == c.alg)
            .map_or(0.0, |o| o.seconds)
    };
    let (fitted, probe_rows) = allreduce_fit(b)?;
    let rows: Vec<Vec<String>> = cases
        .iter()
        .map(|c| {
            let mut r = c.cells.clone();
            if c.np == 1 {
                r.extend(["—".to_string(), "—".to_string()]);
            } else {
                let model = costmodel::step_seconds(
                    c.np as f64,
                    c.calls,
                    c.payload,
                    c.agree_received,
                    fitted,
                );
                r.push(f((c.seconds - single(c)) * 1e3, 3));
                r.push(f(model * 1e3, 3));
            }
            r
        })
        .collect();
    b.section(
        "Collective scaling",
        &format!(
            "**Time per step.** The collectives of a step (agreement on names, model \
             reduction, status exchange; slowest rank, per step, averaged over \
             {COLLECTIVE_STEPS} steps) versus the number of functions, on 1, 2 and 4 AD ranks \
             of this 2-core machine, 4 application ranks, every function called in every \
             step; the run with the median time of three. The reduce column includes the \
             model update (merging the reduced partials and re-deriving the active \
             functions' models: all of them on 1 rank; on P ranks the binned detectors \
             derive 1/P of them each and receive the others' models in one more round, an \
             allgather, hence their larger reduce bytes from 2 ranks on; on 1 rank no detector \
             sends a reduction wire, the rank's partial being merged where it lies, so the reduce \
             bytes there are the active set's alone); at 10^4 functions on 1 and 2 ranks every \
             detector is measured. 4 AD ranks are oversubscribed (2 \
             per core): their times include waiting for a core. No machine with more cores \
             was available, so there are no times from more ranks on real cores; the byte \
             sweep below goes to 64 ranks, where the byte counts are exact. `comm` is the \
             time less the 1-rank time of the same case (which is the model update and the \
             agreement's bookkeeping, no messages; the rows of one case differ by more than \
             that when this shared machine's speed changes between runs, or when the model \
             update of a detector, which the collective waits for, is uneven over ranks); \
             `model` is the cost model below with the constants fitted to this machine's \
             allreduce, charged with the bytes a rank receives. The reduction's bytes grow \
             with the functions, not with the ranks (from 2 ranks on: the shared models a \
             rank receives go from half of them to (P − 1)/P); the agreement's bytes are \
             in the sweep."
        ),
    );
    b.table(
        &[
            "functions",
            "AD ranks",
            "detector",
            "agree ms",
            "reduce ms",
            "status ms",
            "total ms/step",
            "reduce B/step",
            "calls/step",
            "comm ms/step",
            "model ms/step",
        ],
        &rows,
    );
    plot::lines(
        &b.png("collectives.png"),
        "Collective time per step vs functions (modal)",
        "functions",
        "ms per step",
        true,
        &series,
    )?;
    b.image("collectives.png", "collective time vs functions");
    b.note(&update_cost_note(&cases));
    let sweep = crate::sweep::sweep(b)?;
    let update = cases
        .iter()
        .filter(|c| c.np == 1 && c.alg == "modal")
        .max_by_key(|c| c.n)
        .map(|c| (c.n, c.seconds));
    projection(b, &sweep, fitted, &probe_rows, update)
}

/// What one AD rank's model update costs per function at the largest
/// count measured on 1 rank: the exact derivation of every active
/// function's model, which no collective can shorten (the note under the
/// time table).
fn update_cost_note(cases: &[Timed]) -> String {
    let Some(n) = cases.iter().filter(|c| c.np == 1).map(|c| c.n).max() else {
        return String::new();
    };
    let per: Vec<String> = cases
        .iter()
        .filter(|c| c.np == 1 && c.n == n)
        .map(|c| format!("{} {:.2} µs", c.alg, c.seconds / n as f64 * 1e6))
        .collect();
    format!(
        "**Model update per function.** On 1 AD rank, where no message is sent, the time per \
         step at {n} functions is the model update (and the agreement's bookkeeping): {} per \
         function and step. That is the \
         exact derivation of every active function's model from its global histogram (modal: \
         smoothing on a grid of about a hundred cells, segmentation into modes, quantiles; \
         HBOS and COPOD: rebinning and scoring) or, for SSTD, the moments alone. With every \
         function active in every step it bounds the update from below whatever the \
         collectives cost: on P ranks the binned detectors derive 1/P of the models each and \
         receive the others'.",
        per.join(", ")
    )
}

/// Times one allreduce of 8 B … 4 MB on 2 and 4 ranks (the allreduce
/// probe) and fits α and β to the 2-rank times (real cores; 4 ranks are
/// oversubscribed): least squares on the relative error, both ≥ 0, of the
/// 2-rank model `α + β·m` (recursive doubling: one round). Returns the
/// constants and the rows of the probe's table.
fn allreduce_fit(b: &mut Bench) -> anyhow::Result<(Net, Vec<Vec<String>>)> {
    let out = b.work.join("allreduce-probe.jsonl");
    let _ = std::fs::remove_file(&out);
    let exe = std::env::current_exe()?;
    for p in [2usize, 4] {
        let mut c = b.mpirun(p);
        c.arg(&exe).args(["probe", "allreduce"]).arg(&out);
        let o = c.output()?;
        anyhow::ensure!(
            o.status.success(),
            "allreduce probe on {p} ranks: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let mut t = std::collections::BTreeMap::new();
    for line in std::fs::read_to_string(&out)?.lines() {
        let v: serde_json::Value = serde_json::from_str(line)?;
        t.insert(
            (num(&v["p"]) as usize, num(&v["bytes"]) as usize),
            num(&v["seconds"]),
        );
    }
    let points: Vec<(f64, f64, f64)> = ALLREDUCE_BYTES
        .iter()
        .filter_map(|&m| t.get(&(2, m)).map(|&s| (1.0 / s, m as f64 / s, 1.0)))
        .collect();
    let (alpha, beta) = fit_nonnegative(&points);
    let net = Net { alpha, beta };
    let us = |v: Option<&f64>| v.map_or("—".into(), |s| f(s * 1e6, 2));
    let rows = ALLREDUCE_BYTES
        .iter()
        .map(|&m| {
            vec![
                m.to_string(),
                us(t.get(&(2, m))),
                f(costmodel::allreduce(2.0, m as f64, net) * 1e6, 2),
                us(t.get(&(4, m))),
                f(costmodel::allreduce(4.0, m as f64, net) * 1e6, 2),
            ]
        })
        .collect();
    Ok((net, rows))
}

/// The measured payload of `n` functions: the reduction at the largest
/// bytes per function the sweep measured (the modal detector's payload
/// per function follows the bucket groups and power-sum widths of a step's
/// runtimes, so it varies a little between the scenarios), and the agreement's bytes and the
/// calls per step of `n` functions, scaled from the largest measured count
/// below `n` (or the smallest above it) where `n` itself was not measured
/// (`--quick`).
fn payload(s: &Sweep, n: usize) -> Option<(Payload, usize)> {
    let from = s
        .sizes
        .iter()
        .rev()
        .find(|&&m| m <= n)
        .or(s.sizes.first())
        .copied()?;
    let k = n as f64 / from as f64;
    let pmax = *s.ranks.last()?;
    let run = s.run_of(from)?;
    let agree = s.agree(from, pmax)?;
    let per_function = reduce_per_function(s);
    Some((
        Payload {
            reduce: per_function * (n + 2) as f64 + run.status_received,
            calls_first: run.calls,
            agree: (agree.received_max - costmodel::agree_overhead(pmax as f64)).max(0.0) * k,
        },
        from,
    ))
}

/// The largest reduction bytes received per function of the sweep's runs, each
/// on its most AD ranks.
fn reduce_per_function(s: &Sweep) -> f64 {
    s.sizes
        .iter()
        .filter_map(|&m| s.run_of(m).map(|r| r.reduce_received_per_function(m)))
        .fold(0.0, f64::max)
}

/// The cost model's note, the projection table and the targets.
fn projection(
    b: &mut Bench,
    s: &Sweep,
    fitted: Net,
    probe_rows: &[Vec<String>],
    update: Option<(usize, f64)>,
) -> anyhow::Result<()> {
    let pmax = *s.ranks.last().unwrap_or(&2);
    let mut rows = Vec::new();
    let mut at_target = None;
    let per_function = reduce_per_function(s);
    for n in [1000usize, 10_000, 100_000] {
        let Some((pay, from)) = payload(s, n) else {
            continue;
        };
        for p in [1000usize, 10_000, 100_000] {
            let pf = p as f64;
            let ms = |v: f64| f(v * 1e3, 3);
            rows.push(vec![
                if from == n {
                    n.to_string()
                } else {
                    format!("{n} (scaled from {from})")
                },
                p.to_string(),
                f(pay.reduce, 0),
                f(pay.agree + costmodel::agree_overhead(pf), 0),
                ms(pay.first(pf, fitted)),
                ms(pay.later(pf, fitted)),
                ms(pay.first(pf, CLUSTER)),
                ms(pay.first_linear(pf, CLUSTER)),
                ms(pay.later(pf, CLUSTER)),
            ]);
            if (n, p) == (10_000, 10_000) {
                at_target = Some((pay, from));
            }
        }
    }
    let mut text = format!(
        "**Cost model.** Per step a rank makes `c` collective calls (measured: the run \
         summary's calls per step). The one that carries the payload `m` (model reduction, \
         the shared models and the status vector: the bytes a rank receives) is costed as an \
         allreduce (an upper bound for the models' allgather), the cheaper of \
         recursive doubling, `log2(P)·(α + β·m)`, and Rabenseifner's reduce-scatter + \
         allgather, `2·log2(P)·α + 2·β·m·(P−1)/P` (the large payloads); every other call \
         costs `log2(P)·α`; the agreement adds `β·R` for the `R` bytes a rank receives. So \
         per step `t(P) = allreduce(P, m) + (c − 1)·log2(P)·α + β·R`. A step in which some \
         rank has a new name makes {extra} more calls than a later one (two all-to-alls of \
         counts, two `MPI_Alltoallv` of hashes, the allgather of lengths, the \
         `MPI_Allgatherv` of the union, the check) and receives the union of the names; a \
         later step's agreement is one 8-byte allreduce. `log2(P)·α` is right for the \
         allreduces and the all-to-alls of 4-byte counts (recursive doubling, Bruck), not \
         for the two `MPI_Alltoallv` and the `MPI_Allgatherv` of a large union: MPI \
         libraries run those as linear or pairwise exchanges (Open MPI and MPICH have no \
         logarithmic `MPI_Alltoallv`) and a ring or neighbour exchange, one message per \
         other rank of the communicator. So from 16 AD ranks on the agreement runs them in \
         two hops over an R × C grid of ranks (R · C = P, the most square factorisation; \
         `collectives/routed.rs`): along rows, then along columns, `(R − 1) + (C − 1)` \
         messages per exchange instead of `P − 1` (198 instead of 9,999 at 10^4 ranks), \
         each hash crossing two links (the sweep's received bytes include the second hop). \
         The `linear` column charges the three exchanges that many latencies (exact for \
         pairwise and ring; an upper bound for the linear exchange, whose messages overlap); \
         the other columns are what log-latency algorithms (Bruck) would give. \
         **Fit.** α and β are fitted to the time of one allreduce (the library's \
         `allreduce_sum`, the fastest of three batches, slowest rank; table below) of 8 B … \
         4 MB on 2 ranks, the only count on real cores, where the model is `α + β·m`: \
         least squares on the relative error, both constants ≥ 0, give α = {:.2} µs and \
         β = {:.3} ns/B ({:.1} GB/s) on this machine's shared memory{}. The 4-rank times \
         (oversubscribed: 2 ranks per core) are shown against the model, not fitted. \
         **Projection** to 10^3 … 10^5 AD ranks of the collective time per step, with these \
         constants and with a cluster interconnect's, α = 2 µs and β = 0.1 ns/B (10 \
         GB/s). Assumptions: the bytes per rank per step are those the sweep measured \
         (default detector, modal): the agreement's at {pmax} AD ranks, which do not grow \
         with P except for its length words, 12 bytes per other rank (added), and the \
         reduction's at the largest bytes per function a rank received at the sweep's \
         largest rank count ({per_function:.0} B; the shared models' part grows as (P − 1)/P, \
         nearly all at {pmax} ranks); every function is \
         active in every step (the SPMD worst case the sweep measures; with a fraction f \
         active the reduction payload shrinks almost by f, all but the active-set bitset \
         of n/8 bytes); the calls per step are the sweep's; α and β do not depend on P (no \
         topology, no congestion, no contention with the application's traffic). The \
         model update itself (the reduction's computation, in the 1-rank rows of the time \
         table{}) does not depend on P and comes on top of these times.",
        fitted.alpha * 1e6,
        fitted.beta * 1e9,
        if fitted.beta > 0.0 {
            1.0 / fitted.beta / 1e9
        } else {
            f64::INFINITY
        },
        if fitted.alpha == 0.0 {
            " (α below what these points resolve: the payload term explains them alone)"
        } else {
            ""
        },
        update.map_or(String::new(), |(n, t)| format!(
            ": {:.1} ms per step for modal at {n} functions",
            t * 1e3
        )),
        extra = costmodel::AGREE_EXTRA_CALLS,
    );
    if let Some((pay, from)) = at_target {
        let first = pay.first(1e4, CLUSTER);
        let linear = pay.first_linear(1e4, CLUSTER);
        let later = pay.later(1e4, CLUSTER);
        // Bruck's all-to-all forwards each block about log2(P)/2 times:
        // the hash exchange (8 bytes per offered name) is the large one.
        let hashes = 8.0 * (10_000.0 + 2.0);
        let bruck = CLUSTER.beta * hashes * (1e4f64.log2() / 2.0 - 1.0);
        let scaled = if from == 10_000 {
            String::new()
        } else {
            format!(" (bytes scaled from {from} functions)")
        };
        let _ = write!(
            text,
            " At 10^4 ranks and 10^4 functions on the cluster interconnect{scaled}: {:.2} ms \
             per step without new names; a step in which every name is new takes {:.2} ms \
             with log-latency algorithms (Bruck's forwarding of the 8-byte name hashes, left \
             out of the model, would add {:.3} ms) and {:.1} ms with linear ones over the \
             100 × 100 grid (3 × 198 message latencies; 3 × 9,999 without the grid would be \
             about 60 ms).",
            later * 1e3,
            first * 1e3,
            bruck * 1e3,
            linear * 1e3,
        );
        b.target(
            "projected collective time per step without new names, 10^4 AD ranks, 10^4 \
             functions, 2 µs / 10 GB/s",
            "< 10 ms",
            format!("{:.2} ms{scaled}", later * 1e3),
            later < 0.010,
        );
        b.target(
            "projected collective time of a step in which every name is new, 10^4 AD ranks, \
             10^4 functions, 2 µs / 10 GB/s",
            "< 10 ms",
            format!(
                "{:.2} ms with log-latency all-to-allv and allgatherv; {:.1} ms with \
                 linear ones over the two-hop grid (198 messages each){scaled}",
                first * 1e3,
                linear * 1e3
            ),
            linear < 0.010,
        );
    }
    b.note(&text);
    b.table(
        &[
            "allreduce B",
            "2 ranks µs",
            "model µs",
            "4 ranks µs (oversubscribed)",
            "model µs",
        ],
        probe_rows,
    );
    b.note("Projected collective time per step:");
    b.table(
        &[
            "functions",
            "AD ranks P",
            "reduce + status B/rank/step",
            "agree B received/rank (all names new)",
            "all names new ms (fit here)",
            "later step ms (fit here)",
            "all names new ms (2 µs, 10 GB/s)",
            "all names new, linear ms (2 µs, 10 GB/s)",
            "later step ms (2 µs, 10 GB/s)",
        ],
        &rows,
    );
    // The agreement target: received bytes within 2× of the unique name
    // bytes at the largest rank count, for every function count.
    let worst = s
        .sizes
        .iter()
        .filter_map(|&n| s.agree(n, pmax).map(|a| (a.received_max / s.unique[&n], n)))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((ratio, n)) = worst {
        b.target(
            &format!("name agreement: bytes received per rank at {pmax} AD ranks"),
            "within 2× of the unique name bytes",
            format!("{ratio:.2}× (worst case: {n} functions)"),
            ratio <= 2.0,
        );
    }
    Ok(())
}
