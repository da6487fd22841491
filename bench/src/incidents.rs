//! Incident linking: what the `link` stage costs. Its share of the step
//! time on `large.toml` (1 and 2 AD ranks, modal detector, every run's
//! slowest-rank stage times from its summary), and on a 16-rank coupled
//! ring with injected delays (`incidents-ring.toml --ranks 16`) the bytes
//! the incident nodes' allgather sends and receives per AD rank and step at
//! 2, 4, 8 and 16 AD ranks, with the incidents found (which must not
//! change with the number of AD ranks); and the stage's cost when
//! thousands of executions a step are anomalous.

use serde_json::Value;

use crate::harness::{f, num, timing, Bench, ALGORITHMS, PHASES};

/// What `link` cost in a run: its share of the step time, its ms and the
/// step's ms per step, and the anomalies per step.
struct LinkCost {
    share: f64,
    link_ms: f64,
    step_ms: f64,
    anomalies_per_step: f64,
}

fn link_cost(s: &Value) -> LinkCost {
    let all: f64 = PHASES.iter().map(|p| timing(s, p)).sum();
    let link = timing(s, "link");
    let steps = num(&s["steps"]).max(1.0);
    LinkCost {
        share: link / all.max(1e-12),
        link_ms: link / steps * 1e3,
        step_ms: all / steps * 1e3,
        anomalies_per_step: num(&s["anomalies"]) / steps,
    }
}

/// Section: the cost of linking anomalies into incidents.
pub(crate) fn incidents(b: &mut Bench) -> anyhow::Result<()> {
    let input = b.large_input()?;
    let mut rows = Vec::new();
    let mut alone_share: f64 = 0.0;
    for np in [1usize, 2] {
        let repeats = if b.quick { 1 } else { 3 };
        let mut runs = Vec::new();
        for _ in 0..repeats {
            runs.push(b.run(
                np,
                &["--input".into(), input.clone(), "--no-provenance".into()],
            )?);
        }
        runs.sort_by(|a, b| {
            link_cost(&a.summary)
                .share
                .total_cmp(&link_cost(&b.summary).share)
        });
        let mid = &runs[runs.len() / 2].summary;
        let cost = link_cost(mid);
        if np == 1 {
            alone_share = cost.share;
        }
        rows.push(vec![
            np.to_string(),
            f(num(&mid["steps"]), 0),
            f(cost.anomalies_per_step, 0),
            f(cost.step_ms, 2),
            f(cost.link_ms, 3),
            format!("{:.2} %", cost.share * 100.0),
            f(num(&mid["collective_bytes_received_per_step"]["link"]), 0),
        ]);
    }
    b.section(
        "Incident linking",
        "**Share of the step.** The `link` stage (`docs/incidents.md`): each AD rank turns its \
         streams' anomalies that were slower than their model into incident nodes, the AD ranks \
         allgather them, and every rank links the same list. `large.toml` (modal detector, no \
         provenance file), the run with the median link share of three; times are the slowest \
         rank's, per step. Target: at most 5 % of the step time. On 1 AD rank the stage is \
         all work (counting each stream's messages by partner and tag, encoding the slow \
         anomalies, linking); from 2 AD ranks on its allgather is also the first collective \
         after `build` and `label`, so its time includes waiting for the rank that finished \
         them last (a wait the `status` exchange would otherwise absorb).",
    );
    b.table(
        &[
            "AD ranks",
            "steps",
            "anomalies/step",
            "step ms",
            "link ms",
            "link share",
            "link B received/step",
        ],
        &rows,
    );
    b.target(
        "incident linking, `large.toml`, 1 AD rank",
        "≤ 5 % of the step time",
        format!("{:.2} %", alone_share * 100.0),
        alone_share <= 0.05,
    );

    // The exchange at 2–16 AD ranks: a 16-rank ring with injected delays.
    let ring = b.synth(
        "incidents-ring16",
        Some("incidents-ring.toml"),
        &["--ranks", "16"],
    )?;
    let input = ring
        .join("tau-metrics-incidents_ring-{rank}.bp")
        .display()
        .to_string();
    let mut rows = Vec::new();
    let mut listed: Option<String> = None;
    let mut same = true;
    let counts: &[usize] = if b.quick { &[2, 4] } else { &[2, 4, 8, 16] };
    for &np in counts {
        let r = b.run(
            np,
            &["--input".into(), input.clone(), "--no-provenance".into()],
        )?;
        let s = &r.summary;
        let steps = num(&s["steps"]).max(1.0);
        let incidents = &s["incidents"];
        let key = incidents["incidents"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|i| format!("{}:{}:{}", i["cause"], i["root"], i["cost_s"]))
                    .collect::<Vec<_>>()
                    .join(";")
            })
            .unwrap_or_default();
        match &listed {
            None => listed = Some(key),
            Some(k) => same &= *k == key,
        }
        rows.push(vec![
            np.to_string(),
            f(steps, 0),
            f(num(&s["anomalies"]) / steps, 1),
            f(num(&s["collective_bytes_per_step"]["link"]), 0),
            f(num(&s["collective_bytes_received_per_step"]["link"]), 0),
            f(timing(s, "link") / steps * 1e3, 3),
            incidents["incidents"]
                .as_array()
                .map_or(0, |a| a.len())
                .to_string(),
        ]);
    }
    b.note(
        "**The exchange at 2–16 AD ranks.** `incidents-ring.toml --ranks 16` (16 application \
         ranks in a `MPI_Sendrecv` ring with an `MPI_Allreduce` every 5 iterations; delayed \
         ranks, a slow callee, oversized messages and stalls inside MPI injected), analysed by \
         2 to 16 AD ranks (oversubscribed on this machine: the times mean little, the byte \
         counts are exact). Bytes are the most any AD rank sent or received per step. A rank \
         sends its own streams' nodes (a node is 16 words plus 3 per message it sent or \
         received, 8 bytes each) and receives every rank's, so what it receives is the \
         run's anomalies of the step, whatever the number of AD ranks; what it sends shrinks \
         as its share of the streams does.",
    );
    b.table(
        &[
            "AD ranks",
            "steps",
            "anomalies/step",
            "link B sent/step",
            "link B received/step",
            "link ms/step",
            "incidents listed",
        ],
        &rows,
    );
    b.note(&format!(
        "Incidents listed identical at every AD rank count: {}.",
        if same { "yes" } else { "no" }
    ));
    if !same {
        b.missed
            .push("incidents differ between AD rank counts".to_string());
    }
    many_anomalies(b)
}

/// Part of [`incidents`]: the link stage when thousands of executions a
/// step are anomalous (the many-functions scenario of the model-update
/// benchmark, whose young histograms flag many), 1 AD rank, one run per
/// detector.
fn many_anomalies(b: &mut Bench) -> anyhow::Result<()> {
    let (_, many, n) = crate::threads::inputs(b)?;
    let mut rows = Vec::new();
    for alg in ALGORITHMS {
        let r = b.run(1, &crate::threads::update_args(&many, alg))?;
        let s = &r.summary;
        let cost = link_cost(s);
        let steps = num(&s["steps"]).max(1.0);
        rows.push(vec![
            alg.to_string(),
            f(steps, 0),
            f(num(&s["anomalies_in_situ"]) / steps, 0),
            f(num(&s["incidents"]["below_floor"]), 0),
            f(cost.step_ms, 2),
            f(cost.link_ms, 3),
            format!("{:.2} %", cost.share * 100.0),
        ]);
    }
    b.note(&format!(
        "**Many anomalies.** The model-update scenario ({n} functions all active, 1 AD rank, no \
         provenance file): young histograms flag many executions, most of them in the first \
         steps, and each becomes an incident node that looks for an open \
         occurrence of its rank close in time (`incidents/tau/open.rs` keeps them by rank and \
         time). Anomalies are those flagged in situ; occurrences are those closed below the \
         floor (none reaches it here)."
    ));
    b.table(
        &[
            "detector",
            "steps",
            "anomalies/step",
            "occurrences",
            "step ms",
            "link ms",
            "link share",
        ],
        &rows,
    );
    Ok(())
}
