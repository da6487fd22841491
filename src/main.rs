//! The `chimbuko-mpi` command line.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use chimbuko_mpi::dump::{self, DumpOptions};
use chimbuko_mpi::output::read::{export_json, print_inspect, Provenance};
use chimbuko_mpi::run::settings;
use chimbuko_mpi::synth;
use chimbuko_mpi::trace::adios::{Engine, ReadOptions};
use chimbuko_mpi::trace::tau::TauReaderOptions;

#[derive(Parser)]
#[command(
    name = "chimbuko-mpi",
    version,
    about = "In situ performance anomaly detection for TAU traces over MPI"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write synthetic TAU-format streams (and their ground truth) from a scenario file.
    Synth(synth::SynthArgs),
    /// Summarise what a TAU stream holds, step by step.
    Dump(DumpArgs),
    /// Analyse TAU streams on N AD ranks (under mpirun): label every execution.
    Run(Box<chimbuko_mpi::run::RunArgs>),
    /// Summarise a provenance file: run parameters, anomalies per function
    /// and rank, the worst anomalies with their call stacks.
    Inspect(InspectArgs),
    /// Export a provenance file as Chimbuko's JSON documents.
    Export(ExportArgs),
}

#[derive(Args)]
struct InspectArgs {
    /// Provenance file written by `run`.
    file: PathBuf,
    /// Rows of the per-function table.
    #[arg(long, default_value_t = 10)]
    top: usize,
}

#[derive(Args)]
struct ExportArgs {
    /// Write JSON documents (anomalies, normalexecs, metadata, func_stats,
    /// counter_stats, ad_model) with the field names of Chimbuko's schema.
    #[arg(long, required = true)]
    json: bool,
    /// Provenance file written by `run`.
    file: PathBuf,
    /// Directory for the JSON files (created if missing).
    out: PathBuf,
}

#[derive(Args)]
struct DumpArgs {
    /// Stream path (`<prefix>-<binary>-<rank>.bp`; for SST the name without `.sst`).
    stream: PathBuf,
    /// ADIOS2 engine: BPFile, BP4, BP5 or SST.
    #[arg(long, default_value = "BPFile")]
    engine: Engine,
    /// Seconds to wait for the stream to appear.
    #[arg(long, default_value_t = 10.0)]
    open_timeout: f64,
    /// Stop after this many seconds without a new step (streaming engines).
    #[arg(long)]
    step_timeout: Option<f64>,
    /// Program index written into every row.
    #[arg(long, default_value_t = 0)]
    program_idx: u64,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// With --json, include every row.
    #[arg(long)]
    rows: bool,
    /// Only totals and read throughput (benchmark mode).
    #[arg(long)]
    summary: bool,
}

fn run_dump(a: DumpArgs) -> anyhow::Result<()> {
    let reader = TauReaderOptions {
        engine: a.engine,
        program_idx: a.program_idx,
        adios: ReadOptions {
            open_timeout: Duration::from_secs_f64(a.open_timeout.max(0.0)),
            ..Default::default()
        },
        ..Default::default()
    };
    let opts = DumpOptions {
        rows: a.rows,
        totals_only: a.summary,
        step_timeout: a.step_timeout.map(|s| Duration::from_secs_f64(s.max(0.0))),
    };
    let s = dump::dump_stream(&a.stream, reader, &opts)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if a.json {
        serde_json::to_writer(&mut out, &s)?;
        use std::io::Write;
        writeln!(out)?;
    } else {
        dump::print_table(&s, &mut out)?;
    }
    Ok(())
}

fn run_inspect(a: InspectArgs) -> anyhow::Result<()> {
    let p = Provenance::load(&a.file)?;
    let stdout = std::io::stdout();
    print_inspect(&p, &mut stdout.lock(), a.top)?;
    Ok(())
}

fn run_export(a: ExportArgs) -> anyhow::Result<()> {
    let p = Provenance::load(&a.file)?;
    for (name, n) in export_json(&p, &a.out)? {
        println!("{}: {n} documents", a.out.join(name).display());
    }
    Ok(())
}

/// The command line, with `run`'s settings completed from the environment
/// and the config file (see `run::settings`).
fn command_line() -> anyhow::Result<(Vec<std::ffi::OsString>, Vec<settings::Setting>)> {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv.get(1).map(|a| a == "run") != Some(true) {
        return Ok((argv, Vec::new()));
    }
    let env = |k: &str| std::env::var(k).ok();
    let (rest, sources) = settings::complete_args(&argv[2..], &env)?;
    let eff = settings::effective(&rest, &sources);
    let mut full = argv[..2].to_vec();
    full.extend(rest);
    Ok((full, eff))
}

fn main() -> ExitCode {
    use chimbuko_mpi::tuning::{tune_allocator, AllocatorProfile};
    let is_run = std::env::args_os().nth(1).is_some_and(|a| a == "run");
    tune_allocator(if is_run {
        AllocatorProfile::Resident
    } else {
        AllocatorProfile::Throughput
    });
    let (argv, effective) = match command_line() {
        Ok(x) => x,
        Err(e) => {
            eprintln!("chimbuko-mpi: error: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let mut cli = Cli::parse_from(argv);
    if let Command::Run(a) = &mut cli.command {
        a.settings = effective;
    }
    let result = match cli.command {
        Command::Synth(a) => synth::run_cli(a),
        Command::Dump(a) => run_dump(a),
        Command::Run(a) => chimbuko_mpi::run::run_cli(*a),
        Command::Inspect(a) => run_inspect(a),
        Command::Export(a) => run_export(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is::<chimbuko_mpi::run::AlreadyReported>() => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("chimbuko-mpi: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
