//! Thread scaling on a machine with many cores: one AD rank on
//! `large.toml` at 1, 2, 4, … worker threads (as many as the machine has,
//! or `--thread-counts`), every detector, and 2 AD ranks sharing the cores;
//! the model update plus collectives at 10^4 functions all active at the
//! same thread counts. Not part of the default run on a 2-core machine
//! (the `threads` section measures 1 and 2 threads there).

use crate::collectives::COLLECTIVE_STEPS;
use crate::harness::{f, large_args, num, timing, Bench, Run, ALGORITHMS};
use crate::threads::{inputs, median_run, update_args, update_ms};

/// The thread counts to measure: `--thread-counts`, or the powers of two
/// up to the CPUs this process may use.
fn thread_counts(b: &Bench) -> Vec<usize> {
    if !b.thread_counts.is_empty() {
        return b.thread_counts.clone();
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::iter::successors(Some(1usize), |t| Some(t * 2))
        .take_while(|&t| t <= cores)
        .collect()
}

/// Section: thread scaling on a many-core machine.
pub(crate) fn scaling(b: &mut Bench) -> anyhow::Result<()> {
    let repeats = b.repeats.unwrap_or(if b.quick { 1 } else { 3 }).max(1);
    let counts = thread_counts(b);
    let (input, many, n) = inputs(b)?;
    let out = b.work.join("scaling.h5");
    let mut rows = Vec::new();
    let mut update_rows = Vec::new();
    // Each detector's rate at one thread, for the speed-up column.
    let mut one: Vec<(&str, f64, f64)> = Vec::new();
    let most = counts.iter().copied().max().unwrap_or(1);
    // (AD ranks, threads each): one rank at each count, then two ranks
    // sharing the largest count's cores.
    let mut layouts: Vec<(usize, usize)> = counts.iter().map(|&t| (1, t)).collect();
    if most >= 4 {
        layouts.push((2, most / 2));
    }
    for alg in ALGORITHMS {
        for &(ranks, threads) in &layouts {
            let args = large_args(&input, alg, &out);
            let seconds = |r: &Run| num(&r.summary["seconds"]);
            let (r, fastest, slowest) = median_run(b, repeats, (ranks, threads), &args, seconds)?;
            let s = &r.summary;
            let events = 2.0 * num(&s["executions"]);
            let rate = events / num(&s["seconds"]) / 1e6;
            let update_args = update_args(&many, alg);
            let (u, lo, hi) = median_run(b, repeats, (ranks, threads), &update_args, update_ms)?;
            let ms = update_ms(&u);
            if ranks == 1 && threads == 1 {
                one.push((alg, rate, ms));
            }
            let base = one.iter().find(|o| o.0 == alg).copied();
            let speedup = base.map_or(String::new(), |o| f(rate / o.1, 2));
            let row = vec![
                alg.to_string(),
                format!("{ranks} × {threads}"),
                f(num(&s["seconds"]), 3),
                f(rate, 2),
                f(rate / ranks as f64, 2),
                format!(
                    "{}–{}",
                    f(events / slowest / 1e6, 2),
                    f(events / fastest / 1e6, 2)
                ),
                speedup,
                f(timing(s, "build"), 3),
                f(timing(s, "label"), 3),
                f(num(&s["peak_rss_mb"]), 0),
                f(r.wall, 2),
            ];
            eprintln!("bench: scaling {}", row.join(" | "));
            rows.push(row);
            let update_row = vec![
                alg.to_string(),
                format!("{ranks} × {threads}"),
                f(ms, 2),
                format!("{}–{}", f(lo, 2), f(hi, 2)),
                base.map_or(String::new(), |o| f(o.2 / ms, 2)),
            ];
            eprintln!("bench: scaling update {}", update_row.join(" | "));
            update_rows.push(update_row);
        }
    }
    // With two runs the harness keeps the slower one.
    let which = match repeats {
        1 => "one run".to_string(),
        2 => "the slower of 2 runs".to_string(),
        n => format!("the median of {n} runs"),
    };
    let binding = if std::env::var_os("CHIMBUKO_BENCH_NO_BINDING").is_some() {
        "not bound to cores (`mpirun --bind-to none`: this machine could not bind)"
    } else {
        "each rank bound to N cores with `mpirun --map-by slot:PE=N`"
    };
    b.section(
        "Thread scaling on many cores",
        &format!(
            "`large.toml` (4 streams, 10^7 function events, BP5 files in the page cache, with \
             the provenance file) on AD ranks × worker threads (`--threads N`, {binding}), \
             every detector; {which} by the analysis time, with the range of rates. With 2 AD ranks each \
             reads 2 of the 4 streams. Speed-up is against 1 AD rank × 1 thread on the same \
             machine."
        ),
    );
    b.table(
        &[
            "detector",
            "AD ranks × threads",
            "seconds",
            "M events/s",
            "M events/s per AD rank",
            "range",
            "speed-up",
            "build s",
            "label s",
            "peak RSS MB",
            "wall s",
        ],
        &rows,
    );
    b.note(&format!(
        "Model update plus collectives (agree + reduce + status) per step with {n} functions \
         all active, {which} of {COLLECTIVE_STEPS} steps:"
    ));
    b.table(
        &[
            "detector",
            "AD ranks × threads",
            "ms per step",
            "range",
            "speed-up",
        ],
        &update_rows,
    );
    Ok(())
}
