//! `chimbuko-mpi report`: a provenance file as one self-contained HTML page.

use std::path::PathBuf;

use clap::Args;

use chimbuko_mpi::report::{default_output, write_report};

/// The flags of `report`.
#[derive(Args)]
pub struct ReportArgs {
    /// Provenance file written by `run` or `ross`.
    file: PathBuf,
    /// The HTML file to write (default: the provenance file's name with
    /// `.html`).
    #[arg(short = 'o', long = "out", value_name = "FILE.html")]
    out: Option<PathBuf>,
}

/// Runs `report`.
pub fn run_report(a: ReportArgs) -> anyhow::Result<()> {
    let out = a.out.unwrap_or_else(|| default_output(&a.file));
    let w = write_report(&a.file, &out)?;
    println!("{}", w.path.display());
    eprintln!(
        "report: {} ({:.1} MB); open it in a browser, no server or network needed",
        w.path.display(),
        w.bytes as f64 / 1e6
    );
    Ok(())
}
