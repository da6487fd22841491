//! `chimbuko-mpi dump`: what a TAU stream holds, step by step.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use chimbuko_mpi::dump::{self, DumpOptions};
use chimbuko_mpi::trace::adios::{Engine, ReadOptions};
use chimbuko_mpi::trace::tau::TauReaderOptions;

/// The flags of `dump`.
#[derive(Args)]
pub struct DumpArgs {
    /// Stream path (`<prefix>-<binary>-<rank>.bp`; for SST the name without `.sst`).
    pub stream: PathBuf,
    /// ADIOS2 engine: auto (BP4/BP5 from each BP file's index header, SST
    /// when `<name>.sst` appears), BPFile, BP4, BP5 or SST.
    #[arg(long, default_value = "auto")]
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

/// Runs `dump`.
pub fn run_dump(a: DumpArgs) -> anyhow::Result<()> {
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
