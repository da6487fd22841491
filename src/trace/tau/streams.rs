//! Which TAU streams a run reads: `--input` patterns with `{rank}` (and
//! `{binary}`), or TAU's default names `<trace-dir>/<prefix>-<binary>-<rank>.bp`;
//! with file engines the streams of each input are counted.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::bail;

use crate::trace::adios::Engine;
use crate::trace::source::StreamSpec;

/// The inputs of a TAU run (the `run` flags of the same names).
#[derive(Debug, Clone, Default)]
pub struct TauInputs {
    /// Stream path patterns with `{rank}` (and optionally `{binary}`), one
    /// per program of the workflow.
    pub inputs: Vec<String>,
    /// Binary name(s): fill `{binary}`, or name the streams TAU's way.
    pub binaries: Vec<String>,
    /// Directory of the streams when no pattern is given.
    pub trace_dir: PathBuf,
    /// Stream name prefix (`TAU_ADIOS2_FILENAME`) when no pattern is given.
    pub prefix: String,
    /// Application ranks per input: one value for all, or one per input;
    /// none: count the files (file engines only).
    pub app_ranks: Vec<u64>,
    /// Program index of each input (default: the input's position).
    pub program_idx: Vec<u32>,
    /// The engine the streams are written with.
    pub engine: Engine,
    /// How long to wait for an input's first stream to appear.
    pub open_timeout: Duration,
}

/// The stream path patterns: `--input` with `{binary}` filled in, or TAU's
/// default names from `--binary`, `--trace-dir` and `--prefix`.
fn input_patterns(inputs: &TauInputs) -> anyhow::Result<Vec<String>> {
    if inputs.inputs.is_empty() {
        if inputs.binaries.is_empty() {
            bail!(
                "no input: give --input 'DIR/tau-metrics-APP-{{rank}}.bp' (repeatable), or \
                 --binary APP (TAU's naming <trace-dir>/<prefix>-APP-<rank>.bp)"
            );
        }
        return Ok(inputs
            .binaries
            .iter()
            .map(|b| {
                inputs
                    .trace_dir
                    .join(format!("{}-{b}-{{rank}}.bp", inputs.prefix))
                    .display()
                    .to_string()
            })
            .collect());
    }
    let mut out = Vec::new();
    for (i, pattern) in inputs.inputs.iter().enumerate() {
        if pattern.contains("{binary}") {
            let b = match inputs.binaries.len() {
                1 => &inputs.binaries[0],
                n if i < n => &inputs.binaries[i],
                _ => bail!(
                    "--input {pattern:?} contains {{binary}}: give --binary (one, or one per --input)"
                ),
            };
            out.push(pattern.replace("{binary}", b));
        } else {
            out.push(pattern.clone());
        }
    }
    Ok(out)
}

/// All streams of the run, in input order then application rank.
///
/// With file engines and no `--app-ranks`, the streams of each input are
/// counted once its rank-0 stream exists, waiting up to `--open-timeout`
/// for it (the application may still be starting).
pub fn list_streams(inputs: &TauInputs) -> anyhow::Result<Vec<StreamSpec>> {
    let patterns = input_patterns(inputs)?;
    let n = patterns.len();
    let pick = |v: &[u64], i: usize| -> Option<u64> {
        match v.len() {
            0 => None,
            1 => Some(v[0]),
            _ => v.get(i).copied(),
        }
    };
    if inputs.app_ranks.len() > 1 && inputs.app_ranks.len() != n {
        bail!("--app-ranks: give one value, or one per --input ({n})");
    }
    if !inputs.program_idx.is_empty() && inputs.program_idx.len() != n {
        bail!("--program-idx: give one value per --input ({n})");
    }
    let mut out: Vec<StreamSpec> = Vec::new();
    let mut seen = std::collections::HashMap::new();
    for (i, pattern) in patterns.iter().enumerate() {
        if !pattern.contains("{rank}") {
            bail!("--input {pattern:?} must contain {{rank}} where the application rank goes");
        }
        let program = inputs.program_idx.get(i).copied().unwrap_or(i as u32);
        let count = match pick(&inputs.app_ranks, i) {
            Some(c) => c,
            None if inputs.engine.is_file() => {
                // A directory that does not exist will not fill up: say so
                // at once instead of after the open timeout (job scripts
                // create the trace directory before the application
                // starts).
                let first = PathBuf::from(pattern.replace("{rank}", "0"));
                if let Some(dir) = first.parent().filter(|d| !d.as_os_str().is_empty()) {
                    if !dir.is_dir() {
                        bail!(
                            "--input {pattern:?}: directory {} does not exist (if the application creates it, create it before the run)",
                            dir.display()
                        );
                    }
                }
                count_files_within(pattern, inputs.open_timeout)
            }
            None => bail!("--app-ranks is required with engine {} (streams appear only when the application starts)", inputs.engine),
        };
        if count == 0 {
            bail!(
                "--input {pattern:?}: no stream found within the open timeout ({} s): {} does not exist",
                inputs.open_timeout.as_secs_f64(),
                pattern.replace("{rank}", "0")
            );
        }
        // An explicit BP4/BP5 on files of the other version would fail on
        // every stream: say so once, before anything starts.
        inputs
            .engine
            .for_reading(Path::new(&pattern.replace("{rank}", "0")))?;
        for r in 0..count {
            let path = PathBuf::from(pattern.replace("{rank}", &r.to_string()));
            if let Some(other) = seen.insert(path.clone(), i) {
                bail!(
                    "stream {} is named by --input {} and --input {} ({:?} and {:?}): each stream can be read by one AD rank only",
                    path.display(),
                    other + 1,
                    i + 1,
                    patterns[other],
                    pattern
                );
            }
            out.push(StreamSpec {
                waited_in_vain: false,
                program,
                app_rank: r,
                path,
                global_index: out.len(),
                input: i,
            });
        }
    }
    Ok(out)
}

/// Waits, up to the open timeout, until every stream of `specs` exists in
/// a form the engine reads, printing every few seconds how many have been
/// found (unless `quiet`): a run whose application is late, or whose path
/// has a typo, says so instead of staying silent. Streams still missing at
/// the end are marked, so that opening them does not wait a second time.
pub fn wait_for_streams(
    inputs: &TauInputs,
    specs: &mut [StreamSpec],
    quiet: bool,
) -> anyhow::Result<()> {
    const REPORT_EVERY: Duration = Duration::from_secs(5);
    let start = std::time::Instant::now();
    let mut found = vec![false; specs.len()];
    let mut last_report = start;
    loop {
        for (f, s) in found.iter_mut().zip(specs.iter()) {
            if !*f {
                *f = inputs.engine.for_reading(&s.path)?.is_some();
            }
        }
        let n = found.iter().filter(|f| **f).count();
        if n == specs.len() {
            return Ok(());
        }
        let waited = start.elapsed();
        if waited >= inputs.open_timeout {
            for (s, f) in specs.iter_mut().zip(&found) {
                s.waited_in_vain = !*f;
            }
            if !quiet {
                let missing = specs.iter().find(|s| s.waited_in_vain);
                eprintln!(
                    "run: {n} of {} stream(s) found within the open timeout ({:.0} s); the others fail (first missing: {})",
                    specs.len(),
                    inputs.open_timeout.as_secs_f64(),
                    missing.map_or(String::new(), |s| s.path.display().to_string())
                );
            }
            return Ok(());
        }
        if !quiet && last_report.elapsed() >= REPORT_EVERY {
            last_report = std::time::Instant::now();
            let missing = specs.iter().zip(&found).find(|(_, f)| !**f);
            eprintln!(
                "run: waiting for streams: {n} of {} found after {:.0} s (open timeout {:.0} s; waiting for {}{})",
                specs.len(),
                waited.as_secs_f64(),
                inputs.open_timeout.as_secs_f64(),
                missing.map_or(String::new(), |(s, _)| s.path.display().to_string()),
                if inputs.engine == Engine::SST { ".sst" } else { "" },
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Streams of a file pattern, once rank 0's exists (waiting up to `wait`).
fn count_files_within(pattern: &str, wait: Duration) -> u64 {
    let start = std::time::Instant::now();
    loop {
        let n = count_files(pattern);
        if n > 0 || start.elapsed() >= wait {
            return n;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

fn count_files(pattern: &str) -> u64 {
    let mut r = 0u64;
    while std::path::Path::new(&pattern.replace("{rank}", &r.to_string())).exists() {
        r += 1;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_file_check() {
        assert!(Engine::BP5.is_file() && !Engine::SST.is_file());
    }

    #[test]
    fn patterns_and_default_names() {
        let inputs = TauInputs {
            binaries: vec!["app".into()],
            trace_dir: PathBuf::from("/traces"),
            prefix: "tau-metrics".into(),
            ..Default::default()
        };
        assert_eq!(
            input_patterns(&inputs).unwrap(),
            vec!["/traces/tau-metrics-app-{rank}.bp"]
        );
        let with_binary = TauInputs {
            inputs: vec!["d/{binary}-{rank}.bp".into()],
            binaries: vec!["x".into()],
            app_ranks: vec![3],
            ..Default::default()
        };
        let specs = list_streams(&with_binary).unwrap();
        assert_eq!(specs.len(), 3);
        assert_eq!(specs[2].path, PathBuf::from("d/x-2.bp"));
        assert!(list_streams(&TauInputs::default()).is_err());
    }
}
