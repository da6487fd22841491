//! `chimbuko-mpi inspect` and `export`: the flags, parsed into the plain
//! options of `chimbuko_mpi::inspect::command`.

use std::path::PathBuf;

use clap::Args;

use chimbuko_mpi::inspect::command::{
    run_export as run_export_command, run_inspect as run_inspect_command, ExportCommand,
    InspectCommand,
};
use chimbuko_mpi::inspect::InspectOptions;

/// The flags of `inspect`.
#[derive(Args)]
pub struct InspectArgs {
    /// Provenance file written by `run` or `ross`.
    file: PathBuf,
    /// Rows of the per-function table.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Worst anomalies listed with their call stacks.
    #[arg(long, default_value_t = 5)]
    worst: usize,
    /// One JSON document on stdout instead of text (for scripts).
    #[arg(long)]
    json: bool,
    /// Also show the run's settings (every root attribute of the file,
    /// the configuration pretty-printed).
    #[arg(long)]
    settings: bool,
}

/// The flags of `export`.
#[derive(Args)]
#[command(group = clap::ArgGroup::new("format").required(true).multiple(true).args(["json", "csv"]))]
pub struct ExportArgs {
    /// Write JSON documents (anomalies, normalexecs, metadata, func_stats,
    /// counter_stats, ad_model) with the field names of Chimbuko's schema,
    /// and incidents; for the file of a ROSS analysis: anomalies,
    /// run_wide, entities, series_stats, metadata, incidents.
    #[arg(long)]
    json: bool,
    /// Write every table of the file as one CSV file named after its path
    /// (`anomalies/records` → `anomalies.records.csv`), strings as text.
    #[arg(long)]
    csv: bool,
    /// Provenance file written by `run` or `ross`.
    file: PathBuf,
    /// Directory for the exported files (created if missing).
    out: PathBuf,
}

/// Runs `inspect`.
pub fn run_inspect(a: InspectArgs) -> anyhow::Result<()> {
    let c = InspectCommand {
        file: a.file,
        json: a.json,
        options: InspectOptions {
            top: a.top,
            worst: a.worst,
            settings: a.settings,
        },
    };
    run_inspect_command(&c, &mut std::io::stdout().lock())
}

/// Runs `export`.
pub fn run_export(a: ExportArgs) -> anyhow::Result<()> {
    let c = ExportCommand {
        file: a.file,
        out: a.out,
        json: a.json,
        csv: a.csv,
    };
    run_export_command(&c, &mut std::io::stdout().lock())
}
