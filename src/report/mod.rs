//! `chimbuko-mpi report`: a provenance file as one self-contained HTML page
//! that a user copies to a laptop and opens offline — the incidents that
//! cost the run time first, then what ran and how healthy it was, which
//! ranks and steps had the anomalies, every function with its model and
//! runtimes, and each anomaly with its call stack and timeline
//! (`docs/report.md`).
//!
//! - [`incidents`]: the Incidents view both pages open with;
//! - [`tau`]: the page of a `run` (TAU traces, any detector);
//! - [`ross`]: the page of a `ross` analysis;
//! - [`charts`]: the static charts (SVG drawn with plotters);
//! - [`page`]: the HTML document, with the inlined style and script
//!   (`assets/`).
//!
//! The room reads files only through `output` (HDF5 stays there).

pub mod charts;
pub mod incidents;
pub mod page;
pub mod ross;
pub mod tau;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use crate::provenance::read::{is_provenance_file, Provenance};
use crate::provenance::ross::{is_ross_file, RossProvenance};

/// What `write_report` wrote.
#[derive(Debug, Clone)]
pub struct ReportWritten {
    /// The HTML file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// `tau` or `ross`.
    pub kind: &'static str,
}

/// Writes the report of the provenance file `input` to `output`.
pub fn write_report(input: &Path, output: &Path) -> anyhow::Result<ReportWritten> {
    if !input.exists() {
        bail!("{}: no such file", input.display());
    }
    if !is_provenance_file(input)? {
        bail!(
            "{} is not a provenance file of chimbuko-mpi (an HDF5 file without the schema_version attribute that `run` and `ross` write)",
            input.display()
        );
    }
    let file_bytes = std::fs::metadata(input).map_or(0, |m| m.len());
    let (page, kind) = if is_ross_file(input)? {
        let p = RossProvenance::load(input)?;
        (ross::ross_page(&p, input), "ross")
    } else {
        let p = Provenance::load(input)?;
        (tau::tau_page(&p, input, file_bytes), "tau")
    };
    let html = page.render();
    std::fs::write(output, &html)
        .with_context(|| format!("writing the report {}", output.display()))?;
    Ok(ReportWritten {
        path: output.to_path_buf(),
        bytes: html.len() as u64,
        kind,
    })
}

/// The default report path of `input`: beside it, `.html` for `.h5`.
pub fn default_output(input: &Path) -> PathBuf {
    input.with_extension("html")
}
