//! `chimbuko-bench`: speed, scale, memory and detection quality of
//! chimbuko-mpi as reproducible facts. Generates the scenarios with
//! `chimbuko-mpi synth`, runs `chimbuko-mpi run` under mpirun, reads the
//! run summaries and provenance files, and writes `docs/benchmarks.md`
//! with one table and one PNG plot (`docs/img/`) per section.
//!
//! `scripts/bench.sh` builds and runs it; `scripts/bench.sh --quick` is the
//! small variant CI runs: it checks that every section runs and that the
//! detection quality stays above the engine's bars (no assertion on time).
//! `chimbuko-bench probe ...` is not for people: the collective-scaling
//! section runs it under mpirun (see `probe.rs`).

mod collectives;
mod costmodel;
mod document;
mod harness;
mod incidents;
mod latency;
mod manyfuncs;
mod memory;
mod model;
mod plot;
mod probe;
mod quality;
mod reader;
mod reduction;
mod report;
mod ross;
mod scaling;
mod sweep;
mod threads;
mod throughput;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Parser;

use crate::document::{Document, RunRow};
use crate::harness::{machine, today, Bench, Section};
use crate::{
    collectives::collectives, latency::latency, manyfuncs::manyfuncs, memory::memory,
    model::model_section, quality::quality, reader::reader, reduction::reduction,
    report::report_section, ross::ross_section, throughput::throughput,
};

#[derive(Parser)]
#[command(about = "Benchmarks and detection-quality harness of chimbuko-mpi")]
struct Args {
    /// The chimbuko-mpi binary (release build).
    #[arg(long)]
    bin: PathBuf,
    /// Working directory for generated traces and run outputs.
    #[arg(long, default_value = "out/bench")]
    work: PathBuf,
    /// Where benchmarks.md and img/ go.
    #[arg(long, default_value = "docs")]
    docs: PathBuf,
    /// Small sizes; check the quality bars (for CI).
    #[arg(long)]
    quick: bool,
    /// Only these sections (reader, throughput, threads, latency, incidents, collectives,
    /// memory, manyfuncs, reduction, quality, ross, model, report, scaling);
    /// default all but scaling.
    #[arg(long)]
    only: Vec<String>,
    /// Thread counts per AD rank of the scaling section (default: 1, 2,
    /// 4, … up to the CPUs available).
    #[arg(long, value_delimiter = ',')]
    thread_counts: Vec<usize>,
    /// Runs per measurement of the scaling section, the median kept
    /// (default 3).
    #[arg(long)]
    repeats: Option<usize>,
}
fn main() -> anyhow::Result<()> {
    // The MPI probes the collective-scaling section runs under mpirun.
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("probe") {
        return probe::main(&argv[2..]);
    }
    let a = Args::parse();
    let root = std::env::current_dir()?;
    let img = a.docs.join("img");
    std::fs::create_dir_all(&img)?;
    std::fs::create_dir_all(a.work.join("data"))?;
    plot::init_font()?;
    let mut b = Bench {
        bin: std::fs::canonicalize(&a.bin).with_context(|| format!("{}", a.bin.display()))?,
        work: std::fs::canonicalize(&a.work)?,
        img,
        quick: a.quick,
        report: String::new(),
        write_summary: None,
        missed: Vec::new(),
        targets: Vec::new(),
        root,
        thread_counts: a.thread_counts.clone(),
        repeats: a.repeats,
    };
    // The scaling section needs a machine with many cores: only on request.
    let want = |s: &str| (a.only.is_empty() && s != "scaling") || a.only.iter().any(|o| o == s);
    let started = Instant::now();
    let sections: [(&str, Section); 14] = [
        ("reader", reader),
        ("throughput", throughput),
        ("threads", threads::threads),
        ("latency", latency),
        ("incidents", incidents::incidents),
        ("collectives", collectives),
        ("memory", memory),
        ("manyfuncs", manyfuncs),
        ("reduction", reduction),
        ("quality", quality),
        ("ross", ross_section),
        ("model", model_section),
        ("report", report_section),
        ("scaling", scaling::scaling),
    ];
    for (name, run) in sections {
        if want(name) {
            eprintln!("bench: {name} ...");
            let t = Instant::now();
            run(&mut b).with_context(|| format!("section {name}"))?;
            eprintln!("bench: {name} done in {:.0} s", t.elapsed().as_secs_f64());
        }
    }
    let mut command = String::from("scripts/bench.sh");
    if a.quick {
        command.push_str(" --quick");
    }
    for o in &a.only {
        command.push_str(&format!(" --only {o}"));
    }
    eprintln!(
        "bench: sections took {:.0} s",
        started.elapsed().as_secs_f64()
    );
    let run = RunRow {
        sections: None,
        date: today(),
        machine: machine(),
        command,
    };
    let notes =
        std::fs::read_to_string(b.root.join("docs/benchmarks-notes.md")).unwrap_or_default();
    let made = Document::sections_of(&b.report);
    let targets = std::mem::take(&mut b.targets);
    let out = a.docs.join("benchmarks.md");
    let doc = match std::fs::read_to_string(&out) {
        // A run of some sections keeps the others of the document there is.
        Ok(old) if !a.only.is_empty() => {
            let mut doc = Document::parse(&old, &notes);
            doc.merge(made, targets, run);
            doc
        }
        _ => Document {
            runs: vec![run],
            targets,
            sections: made,
        },
    };
    let doc = doc.render(&notes);
    std::fs::write(&out, doc)?;
    eprintln!("bench: wrote {}", out.display());
    if !b.missed.is_empty() {
        for m in &b.missed {
            eprintln!("bench: quality bar missed: {m}");
        }
        bail!("{} quality bar(s) missed", b.missed.len());
    }
    Ok(())
}
