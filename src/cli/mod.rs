//! The command line: clap structs, the flag > environment > config-file
//! layering of `run`'s settings, and dispatch to the subcommands.
//!
//! Nothing below this room sees clap: each subcommand's flags become the
//! plain options type its library module takes (`run::options::RunOptions`,
//! `synth::SynthOptions`, ...).

mod dump;
mod generate;
mod inspect;
mod model;
mod report;
mod ross;
mod run;
mod settings;
mod synth;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use chimbuko_mpi::run::options::{Setting, Source};
use chimbuko_mpi::run::{AlreadyReported, ExitStatus};
use chimbuko_mpi::sys::allocator::{tune_allocator, AllocatorProfile};

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
    /// Write synthetic TAU-format streams (and their ground truth) from a scenario file;
    /// `synth ross` writes synthetic ROSS instrumentation files instead.
    Synth(Box<synth::SynthArgs>),
    /// Summarise what a TAU stream holds, step by step.
    Dump(dump::DumpArgs),
    /// Analyse TAU streams on N AD ranks (under mpirun): label every execution.
    Run(Box<run::RunArgs>),
    /// Summarise a provenance file: run parameters, anomalies per function
    /// and rank, the worst anomalies with their call stacks.
    Inspect(inspect::InspectArgs),
    /// Export a provenance file as Chimbuko's JSON documents or as CSV tables.
    Export(inspect::ExportArgs),
    /// Draw a provenance file as one self-contained HTML page (overview,
    /// ranking, anomalies over time, functions, each anomaly's call stack
    /// and timeline) to open offline in a browser.
    Report(report::ReportArgs),
    /// Find what slowed a ROSS simulation from its instrumentation files:
    /// slow, rolling-back or hot PEs, KPs and LPs, when, and at what cost.
    Ross(ross::RossArgs),
    /// Performance models (Eiger-compatible): train a metric as a sum of
    /// simple functions of its inputs, test, show and convert models, and
    /// model functions from a run's samples or across runs.
    Model(model::ModelArgs),
}

/// Parses the command line and runs the subcommand.
pub fn main() -> ExitCode {
    // `generate` (man pages and completion scripts, for installers) is a
    // hidden command with its own parser, outside `Cli`, so that neither
    // `--help` nor the pages and scripts it generates list it.
    if std::env::args_os().nth(1).is_some_and(|a| a == "generate") {
        return match generate::run_generate(std::env::args_os().skip(1), Cli::command()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("chimbuko-mpi: error: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    let is_run = std::env::args_os().nth(1).is_some_and(|a| a == "run");
    tune_allocator(if is_run {
        AllocatorProfile::Resident
    } else {
        AllocatorProfile::Throughput
    });
    let (argv, effective, sources) = match command_line() {
        Ok(x) => x,
        Err(e) => {
            command_line_error(format_args!("{e:#}"));
            return ExitCode::FAILURE;
        }
    };
    let cli = match Cli::try_parse_from(&argv) {
        Ok(c) => c,
        Err(e) => return bad_command_line(e, &sources),
    };
    let result = match cli.command {
        Command::Synth(a) => (*a).run(),
        Command::Dump(a) => dump::run_dump(a),
        Command::Run(a) => chimbuko_mpi::run::run_on_mpi(&a.into_options(effective)),
        Command::Inspect(a) => inspect::run_inspect(a),
        Command::Export(a) => inspect::run_export(a),
        Command::Report(a) => report::run_report(a),
        Command::Ross(a) => ross::run_ross(a),
        Command::Model(a) => model::run_model(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is::<AlreadyReported>() => ExitCode::FAILURE,
        Err(e) if e.is::<ExitStatus>() => {
            ExitCode::from(e.downcast_ref::<ExitStatus>().map_or(1, |s| s.0))
        }
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chimbuko-mpi: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Whether the error is a write into a closed pipe (`inspect FILE | head`):
/// the reader took what it wanted, so the command ends quietly with status
/// 0, as other command-line tools do.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// A command line clap refused. A bad value that came from the
/// environment or the config file is reported as such (clap would name the
/// flag the user never typed); anything else is clap's own message.
fn bad_command_line(e: clap::Error, sources: &BTreeMap<String, Source>) -> ExitCode {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let flag = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) => s.clone(),
        _ => String::new(),
    };
    let long = flag
        .trim_start_matches("--")
        .split([' ', '='])
        .next()
        .unwrap_or("");
    let bad_value = matches!(
        e.kind(),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation
    );
    match settings::origin(long, sources) {
        Some(origin) if bad_value => {
            let value = match e.get(ContextKind::InvalidValue) {
                Some(ContextValue::String(v)) => v.clone(),
                _ => String::new(),
            };
            let why = e.to_string();
            let why = why
                .lines()
                .next()
                .unwrap_or("")
                .trim_start_matches("error: ");
            command_line_error(format_args!("{origin} = {value:?}: {why}"));
            ExitCode::from(2)
        }
        // The same usage error on every process of the launch: said once.
        _ if e.use_stderr() && !first_process() => ExitCode::from(2),
        _ => e.exit(),
    }
}

/// The command line and, for `run`, each setting's value and source.
type CommandLine = (Vec<OsString>, Vec<Setting>, BTreeMap<String, Source>);

/// The command line, with `run`'s settings completed from the environment
/// and the config file, and every effective setting with its source.
fn command_line() -> anyhow::Result<CommandLine> {
    let argv: Vec<OsString> = std::env::args_os().collect();
    if argv.get(1).map(|a| a == "run") != Some(true) {
        return Ok((argv, Vec::new(), BTreeMap::new()));
    }
    let env = |k: &str| std::env::var(k).ok();
    let names: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .collect();
    let unknown = settings::unknown_variables(names.iter().map(String::as_str));
    if !unknown.is_empty() && first_process() {
        let (verb, what) = if unknown.len() == 1 {
            ("is", "a setting")
        } else {
            ("are", "settings")
        };
        eprintln!(
            "chimbuko-mpi: warning: {} {verb} not {what} and {verb} ignored (settings are CHIMBUKO_<FLAG> for the flags of `run --help`)",
            unknown.join(", ")
        );
    }
    let (rest, sources) = settings::complete_args(&argv[2..], &env)?;
    let eff = settings::effective(&rest, &sources);
    let mut full = argv[..2].to_vec();
    full.extend(rest);
    Ok((full, eff, sources))
}

/// Whether this is the first process of its program in an MPI launch (or
/// not under MPI): errors and warnings about the command line, which every
/// process of the program finds alike before MPI starts, are printed once,
/// not by every rank. In an MPMD launch the first AD process counts, not
/// world rank 0 (an application process).
fn first_process() -> bool {
    chimbuko_mpi::util::launcher::rank_in_program_from_env().is_none_or(|r| r == 0)
}

/// Prints an error about the command line once per launch (see
/// [`first_process`]).
fn command_line_error(msg: std::fmt::Arguments<'_>) {
    if first_process() {
        eprintln!("chimbuko-mpi: error: {msg}");
    }
}
