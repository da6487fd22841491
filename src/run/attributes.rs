//! What the provenance file says about the run itself: where it goes and
//! its root attributes (program, algorithm and parameters, inputs, command
//! line, start time, effective settings).

use std::path::PathBuf;

use super::options::RunOptions;
use crate::collectives::Collectives;
use crate::provenance::hdf5file::FileAttr;
use crate::trace::source::StreamSpec;
use crate::util::utc::{utc_compact, utc_iso8601};

/// Where the provenance goes: `--out`, none with `--no-provenance`, else a
/// name from the first input's binary and the (agreed) start time.
pub fn provenance_path(
    opts: &RunOptions,
    specs: &[StreamSpec],
    started_at: u64,
) -> Option<PathBuf> {
    if opts.no_provenance {
        return None;
    }
    if let Some(p) = &opts.out {
        return Some(p.clone());
    }
    let binary = specs
        .first()
        .and_then(|s| s.path.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .map(|n| binary_of_stream_name(&n))
        .unwrap_or_else(|| "run".into());
    Some(PathBuf::from(format!(
        "chimbuko-{binary}-{}.h5",
        utc_compact(started_at)
    )))
}

/// `tau-metrics-demo-0.bp` → `demo` (TAU's `<prefix>-<binary>-<rank>.bp`).
fn binary_of_stream_name(name: &str) -> String {
    let stem = name.strip_suffix(".bp").unwrap_or(name);
    let mut parts: Vec<&str> = stem.split('-').collect();
    if parts.len() >= 3 && parts.last().is_some_and(|r| r.parse::<u64>().is_ok()) {
        parts.pop();
        // Drop the prefix (`tau-metrics` by default): keep the binary.
        return parts.last().copied().unwrap_or("run").to_owned();
    }
    stem.to_owned()
}

/// Root attributes of the provenance file at the start of the run: the
/// same on every rank (the provenance output adds the progress and end
/// attributes).
pub fn root_attributes(
    coll: &Collectives,
    opts: &RunOptions,
    specs: &[StreamSpec],
    started_at: u64,
) -> Vec<(&'static str, FileAttr)> {
    let d = &opts.detector;
    let ad_ranks = coll.size();
    let streams: Vec<String> = specs.iter().map(|s| s.path.display().to_string()).collect();
    // Rank 0's command line (MPMD launches could give ranks different
    // ones; attributes must be identical on every rank).
    let mine: Vec<String> = std::env::args().collect();
    let command_line = coll.rank0_string(&mine.join(" "));
    let params = serde_json::json!({
        "algorithm": d.algorithm.name(),
        "sigma": d.sigma,
        "hbos_threshold": d.hbos_threshold,
        "hbos_max_bins": d.hbos_max_bins,
        "modal_threshold": d.modal_threshold,
        "modal_min_share": d.modal_min_share,
        "modal_min_spread": d.modal_min_spread,
        "min_count": d.min_count,
        "direction": d.direction.name(),
        "use_inclusive": opts.use_inclusive,
        "ignore_regex": opts.ignore_regex,
        "ignore_file": opts.ignore_file,
        "threshold_file": opts.threshold_file,
        "window": opts.window,
        "normal_samples": opts.normal_samples,
        "min_anomaly_us": opts.min_anomaly_us,
        "flush_steps": opts.flush_steps,
        "final_relabel": opts.final_relabel,
        "max_stored_anomalies": opts.max_stored_anomalies,
        "engine": opts.inputs.engine.to_string(),
        "models": d.models,
        "model_fallback": d.model_fallback.name(),
        "model_samples": opts.model_samples,
    });
    vec![
        (
            "schema_version",
            FileAttr::U64(crate::provenance::SCHEMA_VERSION),
        ),
        (
            "program",
            FileAttr::Str(format!("chimbuko-mpi {}", env!("CARGO_PKG_VERSION"))),
        ),
        ("algorithm", FileAttr::Str(d.algorithm.name().to_owned())),
        ("algorithm_params", FileAttr::Str(params.to_string())),
        ("ad_ranks", FileAttr::U64(ad_ranks as u64)),
        (
            "input_streams",
            FileAttr::Str(serde_json::to_string(&streams).unwrap_or_default()),
        ),
        ("command_line", FileAttr::Str(command_line)),
        ("start_time", FileAttr::Str(utc_iso8601(started_at))),
        ("final_relabel", FileAttr::U64(opts.final_relabel as u64)),
        (
            "configuration",
            FileAttr::Str(serde_json::to_string(&opts.settings).unwrap_or_default()),
        ),
    ]
}

pub use crate::util::utc::unix_seconds;
