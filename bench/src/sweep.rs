//! The byte sweep of the collective-scaling section: bytes sent and
//! received per AD rank per step by the name agreement and the model
//! reduction, from 2 to 64 AD ranks (oversubscribed on this machine: the
//! times mean little, the byte counts are exact), for 10^3, 10^4 and 10^5
//! functions, in the SPMD worst case of the agreement: every function
//! appears on every application rank in the first (and only) step, so
//! every AD rank offers every name.
//!
//! Each case is an end-to-end `chimbuko-mpi run` (default detector, no
//! provenance file) on a scenario of one step whose loop calls every
//! function once, with as many application ranks as the largest AD rank
//! count (every AD rank has a stream); names are TAU-style (signature,
//! file and lines). Where such runs do not fit this machine (10^5
//! functions: every stream carries all names, and an AD rank that reads
//! one holds about 300 MB), the agreement bytes come from the agreement
//! probe ([`crate::probe`], the library's `agree_names` on the same names
//! under mpirun) and the reduction bytes from one run on 2 AD ranks
//! of 2 application ranks (the reduction's payload does not depend on the
//! number of ranks). The probe also runs where the end-to-end runs do, and
//! the table says whether both counted the same bytes; it also gives the
//! mean over ranks, which the run summary does not report.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Instant;

use anyhow::Context;
use serde_json::Value;

use crate::harness::{f, num, Bench};
use crate::plot;

/// Name of function `i` of the SPMD scenarios: a TAU-style signature with
/// file and lines (about 70 bytes, like the names TAU's compiler-based
/// instrumentation writes for C++ code).
fn spmd_name(i: usize) -> String {
    let line = 20 + (i % 64) * 24;
    format!(
        "void Block<{}>::kernel_{i}(double *, int) [{{src/block_{}.cpp}} {{{line},1}}-{{{},1}}]",
        i % 4 + 1,
        i / 64,
        line + 18
    )
}

/// Every function name of the SPMD scenario of `n` functions: the
/// wrapper, the loop and the `n` functions the loop calls.
pub(crate) fn spmd_names(n: usize) -> Vec<String> {
    ["main".to_string(), "loop".to_string()]
        .into_iter()
        .chain((0..n).map(spmd_name))
        .collect()
}

/// The SPMD scenario: `ranks` application ranks, one step in which the
/// loop calls each of the `n` functions once.
fn spmd_scenario(n: usize, ranks: usize) -> String {
    let names = spmd_names(n);
    let mut t = String::new();
    let _ = writeln!(
        t,
        "seed = 1\nbinary = \"spmd\"\nranks = {ranks}\nsteps = 1\n\
         events_per_step = {}\nroot = \"loop\"",
        2 * n + 8
    );
    let _ = writeln!(
        t,
        "[[function]]\nname = \"main\"\nruntime = {{ dist = \"constant\", value = 5 }}"
    );
    let kids: Vec<String> = names[2..]
        .iter()
        .map(|s| format!("{{ function = \"{s}\" }}"))
        .collect();
    let _ = writeln!(
        t,
        "[[function]]\nname = \"loop\"\nruntime = {{ dist = \"constant\", value = 5 }}\n\
         children = [{}]",
        kids.join(", ")
    );
    for s in &names[2..] {
        let _ = writeln!(
            t,
            "[[function]]\nname = \"{s}\"\nruntime = {{ dist = \"normal\", mean = 20, std = 2 }}"
        );
    }
    t
}

/// Per-step bytes of one end-to-end run (largest rank), and its
/// collective calls per step.
#[derive(Clone, Copy)]
pub(crate) struct RunBytes {
    pub(crate) agree_sent: f64,
    pub(crate) agree_received: f64,
    pub(crate) reduce_sent: f64,
    pub(crate) reduce_received: f64,
    pub(crate) status_received: f64,
    pub(crate) calls: f64,
    /// Application ranks (streams) of the run.
    pub(crate) streams: usize,
}

impl RunBytes {
    fn of(s: &Value) -> RunBytes {
        let (out, got) = (
            &s["collective_bytes_per_step"],
            &s["collective_bytes_received_per_step"],
        );
        RunBytes {
            agree_sent: num(&out["agree"]),
            agree_received: num(&got["agree"]),
            reduce_sent: num(&out["reduce"]),
            reduce_received: num(&got["reduce"]),
            status_received: num(&got["status"]),
            calls: num(&s["collective_calls_per_step"]),
            streams: num(&s["streams"]) as usize,
        }
    }

    /// Reduction bytes received per function of a run of `n` functions
    /// (its functions include the wrapper and the loop).
    pub(crate) fn reduce_received_per_function(&self, n: usize) -> f64 {
        self.reduce_received / (n + 2) as f64
    }
}

/// The probe's agreement bytes of one (functions, AD ranks) case.
#[derive(Clone, Copy, Default)]
pub(crate) struct Probe {
    pub(crate) sent_max: f64,
    pub(crate) sent_mean: f64,
    pub(crate) received_max: f64,
    pub(crate) received_mean: f64,
}

/// What the sweep measured.
pub(crate) struct Sweep {
    /// AD rank counts, ascending.
    pub(crate) ranks: Vec<usize>,
    /// Function counts, ascending.
    pub(crate) sizes: Vec<usize>,
    /// Unique name bytes (sum of the names' lengths) per function count.
    pub(crate) unique: BTreeMap<usize, f64>,
    /// End-to-end runs, by (functions, AD ranks).
    pub(crate) runs: BTreeMap<(usize, usize), RunBytes>,
    /// Probe results, by (functions, AD ranks).
    pub(crate) probes: BTreeMap<(usize, usize), Probe>,
}

impl Sweep {
    /// The agreement bytes of a case: the probe's, else the run's (max
    /// over ranks; the run has no mean).
    pub(crate) fn agree(&self, n: usize, p: usize) -> Option<Probe> {
        self.probes.get(&(n, p)).copied().or_else(|| {
            self.runs.get(&(n, p)).map(|r| Probe {
                sent_max: r.agree_sent,
                sent_mean: f64::NAN,
                received_max: r.agree_received,
                received_mean: f64::NAN,
            })
        })
    }

    /// The run of `n` functions on the most AD ranks: the reduction's
    /// received bytes grow towards their bound with P (a rank receives
    /// (P − 1)/P of the shared models), and the calls per step are those of
    /// the two-hop exchanges from 16 ranks on.
    pub(crate) fn run_of(&self, n: usize) -> Option<RunBytes> {
        self.runs
            .iter()
            .rfind(|((m, _), _)| *m == n)
            .map(|(_, r)| *r)
    }
}

/// Function counts past which the end-to-end runs on every rank count
/// would not fit this machine: streams × functions name attributes to read
/// and hold (10^5 functions on 64 streams and 64 AD ranks: 4 minutes and 21 GB
/// when tried).
const RUN_NAMES_LIMIT: usize = 1_000_000;

/// Runs the sweep and writes its table, plot and note.
pub(crate) fn sweep(b: &mut Bench) -> anyhow::Result<Sweep> {
    let (ranks, sizes): (Vec<usize>, Vec<usize>) = if b.quick {
        (vec![2, 4, 8], vec![1000])
    } else {
        (vec![2, 4, 8, 16, 32, 64], vec![1000, 10_000, 100_000])
    };
    let app_ranks = *ranks.last().unwrap_or(&2);
    let mut s = Sweep {
        unique: sizes
            .iter()
            .map(|&n| {
                (
                    n,
                    spmd_names(n).iter().map(|s| s.len()).sum::<usize>() as f64,
                )
            })
            .collect(),
        ranks: ranks.clone(),
        sizes: sizes.clone(),
        runs: BTreeMap::new(),
        probes: BTreeMap::new(),
    };
    let t = Instant::now();
    for &n in &sizes {
        let (streams, on) = if n * app_ranks <= RUN_NAMES_LIMIT {
            (app_ranks, ranks.clone())
        } else {
            (2, vec![2])
        };
        let name = format!("spmd-{n}-{streams}");
        let dir = b.synth_text(&name, &spmd_scenario(n, streams))?;
        let input = dir.join("tau-metrics-spmd-{rank}.bp").display().to_string();
        for &p in &on {
            let r = b.run(
                p,
                &[
                    "--input".into(),
                    input.clone(),
                    "--no-provenance".into(),
                    "--algorithm".into(),
                    "modal".into(),
                    // Without it the counts would include the iteration
                    // that finds the streams' end (an empty step).
                    "--max-steps".into(),
                    "1".into(),
                ],
            )?;
            anyhow::ensure!(
                num(&r.summary["steps"]) == 1.0,
                "sweep run of {n} functions: {} steps",
                r.summary["steps"]
            );
            eprintln!("bench: sweep: {n} functions, {p} AD ranks: {:.1} s", r.wall);
            s.runs.insert((n, p), RunBytes::of(&r.summary));
        }
    }
    let runs_seconds = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let probe_out = b.work.join("agree-probe.jsonl");
    let _ = std::fs::remove_file(&probe_out);
    let exe = std::env::current_exe()?;
    for &p in &ranks {
        let mut c = b.mpirun(p);
        c.arg(&exe).args(["probe", "agree"]).arg(&probe_out);
        c.args(sizes.iter().map(|n| n.to_string()));
        let out = c.output().context("running the agreement probe")?;
        anyhow::ensure!(
            out.status.success(),
            "agreement probe on {p} ranks: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for line in std::fs::read_to_string(&probe_out)?.lines() {
        let v: Value = serde_json::from_str(line)?;
        s.probes.insert(
            (num(&v["n"]) as usize, num(&v["p"]) as usize),
            Probe {
                sent_max: num(&v["sent_max"]),
                sent_mean: num(&v["sent_mean"]),
                received_max: num(&v["received_max"]),
                received_mean: num(&v["received_mean"]),
            },
        );
    }
    let probe_seconds = t.elapsed().as_secs_f64();
    report(b, &s, app_ranks, runs_seconds, probe_seconds)?;
    Ok(s)
}

/// The sweep's table, plot and note.
fn report(
    b: &mut Bench,
    s: &Sweep,
    app_ranks: usize,
    runs_seconds: f64,
    probe_seconds: f64,
) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    let mut series = Vec::new();
    let mut mismatches = Vec::new();
    for &n in &s.sizes {
        let unique = s.unique[&n];
        let mut line = Vec::new();
        for &p in &s.ranks {
            let Some(a) = s.agree(n, p) else { continue };
            let run = s.runs.get(&(n, p));
            let reduce = run.or(s.run_of(n).as_ref()).copied();
            let source = match (run, s.probes.get(&(n, p))) {
                (Some(r), Some(q))
                    if r.agree_sent == q.sent_max && r.agree_received == q.received_max =>
                {
                    "run = probe".to_string()
                }
                (Some(r), Some(_)) => {
                    mismatches.push(format!("{n} functions on {p} ranks"));
                    format!(
                        "run ≠ probe (run: {} sent, {} received)",
                        f(r.agree_sent, 0),
                        f(r.agree_received, 0)
                    )
                }
                (Some(_), None) => "run".into(),
                (None, _) => "probe; reduce: run on 2 ranks".into(),
            };
            let mean = |v: f64| if v.is_nan() { "—".into() } else { f(v, 0) };
            let ratio = a.received_max / unique;
            line.push((p as f64, ratio));
            rows.push(vec![
                n.to_string(),
                p.to_string(),
                f(unique, 0),
                format!("{} / {}", f(a.sent_max, 0), mean(a.sent_mean)),
                format!("{} / {}", f(a.received_max, 0), mean(a.received_mean)),
                f(ratio, 2),
                reduce.map_or("—".into(), |r| f(r.reduce_sent, 0)),
                reduce.map_or("—".into(), |r| f(r.reduce_received, 0)),
                reduce.map_or("—".into(), |r| {
                    f(a.received_max + r.reduce_received + r.status_received, 0)
                }),
                source,
            ]);
        }
        series.push((format!("{n} functions"), line));
    }
    let pmax = *s.ranks.last().unwrap_or(&2);
    let per_function: Vec<String> = s
        .sizes
        .iter()
        .filter_map(|&n| {
            let r = s.run_of(n)?;
            Some(format!(
                "{:.0} B received per function at {n} functions, {} application ranks",
                r.reduce_received_per_function(n),
                r.streams
            ))
        })
        .collect();
    b.note(&format!(
        "**Bytes per AD rank, 2 to {pmax} AD ranks.** The SPMD worst case of the name \
         agreement: one step in which each of {app_ranks} application ranks calls every \
         function once, so every AD rank offers every name; default detector (modal), \
         `--no-provenance`, `--max-steps 1` (without it the counts would include the \
         empty iteration that finds the streams' end). Names are TAU-style (`void Block<3>::kernel_42(double *, int) \
         [{{src/block_0.cpp}} {{1028,1}}-{{1046,1}}]`, {:.0} bytes on average); the unique \
         name bytes are the sum of the scenario's name lengths. Bytes are those of the one \
         step (sent: what the rank contributes; received: what is delivered to it, \
         other ranks' contributions to an all-to-all or allgather and the result of a \
         reduction), `max / mean` over ranks (the run summary gives the largest rank only; \
         the mean comes from the agreement probe). The reduction's bytes do not grow with \
         the AD rank count: its two rounds are allreduces (sent = received), and the \
         models each rank derives for 1/P of the functions travel in an allgather, in \
         which a rank sends its own and receives the others' once ((P − 1)/P of them: \
         half at 2 ranks, nearly all from 16 on). They depend on the step's \
         data: modal's payload per function follows the bucket groups the step's runtimes \
         fall in, on any rank, and the widths of their power sums ({per_function}). More than 2 AD ranks are \
         oversubscribed on this 2-core machine, so the sweep reports no times. `measured \
         by`: an end-to-end `chimbuko-mpi run`, the agreement probe (`chimbuko-bench \
         probe agree`: the library's `agree_names` on the same names under mpirun, used \
         where runs do not fit this machine: at 10^5 functions every AD rank holding a \
         stream holds its 10^5 name attributes, about 300 MB), or both with equal counts. \
         Runs took {runs_seconds:.0} s, the probes {probe_seconds:.0} s.",
        s.unique.values().zip(&s.sizes).map(|(u, &n)| u / (n + 2) as f64).sum::<f64>()
            / s.sizes.len().max(1) as f64,
        per_function = per_function.join(", "),
    ));
    b.table(
        &[
            "functions",
            "AD ranks",
            "unique name B",
            "agree B sent (max / mean)",
            "agree B received (max / mean)",
            "received ÷ unique (max)",
            "reduce B sent",
            "reduce B received",
            "total B received (max)",
            "measured by",
        ],
        &rows,
    );
    plot::lines(
        &b.png("collectives-bytes.png"),
        "Name agreement: bytes received per rank ÷ unique name bytes",
        "AD ranks",
        "received ÷ unique (largest rank)",
        true,
        &series,
    )?;
    b.image(
        "collectives-bytes.png",
        "agreement bytes received vs AD ranks",
    );
    let mut flat = Vec::new();
    for &n in &s.sizes {
        let at = |p: usize| s.agree(n, p).map(|a| a.received_max);
        let (Some(lo), Some(hi)) = (at(s.ranks[0]), at(pmax)) else {
            continue;
        };
        let mid = s.ranks.iter().rev().nth(1).and_then(|&p| at(p));
        flat.push(format!(
            "{n} functions: {} at {} ranks, {} at {pmax}{}",
            f(lo / s.unique[&n], 2),
            s.ranks[0],
            f(hi / s.unique[&n], 2),
            mid.map_or(String::new(), |m| format!(
                " ({:+.1} % from {} ranks)",
                (hi / m - 1.0) * 100.0,
                s.ranks[s.ranks.len() - 2]
            ))
        ));
    }
    b.note(&format!(
        "Received bytes stay flat as P grows (received ÷ unique name bytes, largest \
         rank: {}). A rank receives the union of the names once, less the share it \
         publishes itself (a fraction 1/P, hence the rise from 2 ranks), plus 8 bytes per \
         offered copy of the names it owns (every AD rank offers each name: P copies of \
         1/P of the names), 8 bytes per name it provides, 8 bytes of header \
         (program, length) per name of the union, and 12 bytes per other rank (the \
         length words of the two all-to-alls and the allgather, the only part that \
         grows with P: 756 bytes at 64 ranks). So received ≈ (P−1)/P · (unique + 16 · \
         names) + 12 · (P − 1) below 16 ranks. From 16 ranks on the exchanges take two \
         hops over a grid of ranks (rows, then columns; see the cost model): the hashes \
         and the provider lists are received twice (once to forward), each payload with \
         an 8-byte frame, and the length words come from a row and a column only \
         (12 · (R + C − 2) bytes instead of 12 · (P − 1)). Within 2× of the unique name \
         bytes as long as names average a few tens of bytes (short synthetic names like \
         `f42` would give about 4×).{}",
        flat.join("; "),
        if mismatches.is_empty() {
            String::new()
        } else {
            format!(
                " **The probe and the run disagree for {}.**",
                mismatches.join(", ")
            )
        }
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chimbuko_mpi::synth::scenario::Scenario;

    #[test]
    fn the_spmd_scenario_calls_every_name_once_per_loop() {
        let sc = Scenario::from_toml(&spmd_scenario(50, 3)).expect("valid scenario");
        let names: Vec<String> = sc.functions.iter().map(|f| f.name.clone()).collect();
        assert_eq!(names, spmd_names(50));
        assert_eq!(sc.functions[1].children.len(), 50);
        assert_eq!((sc.ranks, sc.steps), (3, 1));
        // One loop (2 events per function, plus main and loop) fits the
        // step, so every function is in it.
        assert!(sc.events_per_step >= 2 * 50 + 4);
    }

    #[test]
    fn names_are_unique_and_tau_like() {
        let names = spmd_names(1000);
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        let mean = names[2..].iter().map(String::len).sum::<usize>() as f64 / 1000.0;
        assert!((60.0..100.0).contains(&mean), "{mean}");
    }
}
