//! Inputs and per-function rules of a run.

use std::path::PathBuf;

use anyhow::{bail, Context};
use regex::Regex;

use super::RunArgs;

/// One application stream.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StreamSpec {
    pub program: u32,
    pub app_rank: u64,
    pub path: PathBuf,
    /// Position in the list of all streams of the run.
    pub global_index: usize,
    /// Which `--input` it came from.
    pub input: usize,
}

/// The stream path patterns: `--input` with `{binary}` filled in, or TAU's
/// default names from `--binary`, `--trace-dir` and `--prefix`.
pub fn input_patterns(args: &RunArgs) -> anyhow::Result<Vec<String>> {
    if args.inputs.is_empty() {
        if args.binaries.is_empty() {
            bail!(
                "no input: give --input 'DIR/tau-metrics-APP-{{rank}}.bp' (repeatable), or \
                 --binary APP (TAU's naming <trace-dir>/<prefix>-APP-<rank>.bp)"
            );
        }
        return Ok(args
            .binaries
            .iter()
            .map(|b| {
                args.trace_dir
                    .join(format!("{}-{b}-{{rank}}.bp", args.prefix))
                    .display()
                    .to_string()
            })
            .collect());
    }
    let mut out = Vec::new();
    for (i, pattern) in args.inputs.iter().enumerate() {
        if pattern.contains("{binary}") {
            let b = match args.binaries.len() {
                1 => &args.binaries[0],
                n if i < n => &args.binaries[i],
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
pub fn expand_inputs(args: &RunArgs) -> anyhow::Result<Vec<StreamSpec>> {
    let patterns = input_patterns(args)?;
    let n = patterns.len();
    let pick = |v: &[u64], i: usize| -> Option<u64> {
        match v.len() {
            0 => None,
            1 => Some(v[0]),
            _ => v.get(i).copied(),
        }
    };
    if args.app_ranks.len() > 1 && args.app_ranks.len() != n {
        bail!("--app-ranks: give one value, or one per --input ({n})");
    }
    if !args.program_idx.is_empty() && args.program_idx.len() != n {
        bail!("--program-idx: give one value per --input ({n})");
    }
    let mut out: Vec<StreamSpec> = Vec::new();
    let mut seen = std::collections::HashMap::new();
    for (i, pattern) in patterns.iter().enumerate() {
        if !pattern.contains("{rank}") {
            bail!("--input {pattern:?} must contain {{rank}} where the application rank goes");
        }
        let program = args.program_idx.get(i).copied().unwrap_or(i as u32);
        let count = match pick(&args.app_ranks, i) {
            Some(c) => c,
            None if args.engine.is_file() => {
                let wait = std::time::Duration::from_secs_f64(args.open_timeout.max(0.0));
                count_files_within(pattern, wait)
            }
            None => bail!("--app-ranks is required with engine {} (streams appear only when the application starts)", args.engine),
        };
        if count == 0 {
            bail!(
                "--input {pattern:?}: no stream found within the open timeout ({} s): {} does not exist",
                args.open_timeout,
                pattern.replace("{rank}", "0")
            );
        }
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

/// The streams of the run, the same on every AD rank: rank 0 expands the
/// inputs (counting files at one moment on one file system view) and shares
/// the list or its error; every rank also checks that all were started
/// with the same settings, and that there are at least as many streams as
/// AD ranks. Every rank returns the same error.
pub fn agree_on_streams(
    coll: &crate::collectives::Collectives,
    args: &RunArgs,
) -> anyhow::Result<Vec<StreamSpec>> {
    let mine = if coll.rank() == 0 {
        match expand_inputs(args) {
            Ok(specs) => serde_json::json!({ "ok": specs }),
            Err(e) => serde_json::json!({ "err": format!("{e:#}") }),
        }
    } else {
        serde_json::Value::Null
    };
    let settings = serde_json::to_string(&args.settings).unwrap_or_default();
    let mut msg = serde_json::to_vec(&serde_json::json!({ "streams": mine, "settings": settings }))
        .unwrap_or_default();
    msg.shrink_to_fit();
    let all = coll.allgather_bytes(&msg);
    let decode = |b: &[u8]| serde_json::from_slice::<serde_json::Value>(b).unwrap_or_default();
    let first = decode(&all[0]);
    let differing: Vec<usize> = all
        .iter()
        .enumerate()
        .filter(|(_, b)| decode(b)["settings"] != first["settings"])
        .map(|(r, _)| r)
        .collect();
    if !differing.is_empty() {
        bail!(
            "AD ranks {differing:?} were started with settings that differ from AD rank 0's \
             (in an MPMD launch give every AD rank the same flags and environment)"
        );
    }
    if let Some(e) = first["streams"]["err"].as_str() {
        bail!("{e}");
    }
    let specs: Vec<StreamSpec> = serde_json::from_value(first["streams"]["ok"].clone())
        .context("decoding the stream list shared by AD rank 0")?;
    let size = coll.size();
    if specs.len() < size {
        bail!(
            "{size} AD ranks but only {} stream(s): each stream is read by exactly one AD rank, \
             so use at most {} AD rank(s)",
            specs.len(),
            specs.len()
        );
    }
    Ok(specs)
}

/// Streams of a file pattern, once rank 0's exists (waiting up to `wait`).
fn count_files_within(pattern: &str, wait: std::time::Duration) -> u64 {
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

/// The contiguous block of streams of AD rank `rank` of `size`.
pub fn block_of(all: &[StreamSpec], rank: usize, size: usize) -> Vec<StreamSpec> {
    let n = all.len();
    let (lo, hi) = (rank * n / size, (rank + 1) * n / size);
    all[lo..hi].to_vec()
}

/// Which functions are ignored, and per-function thresholds.
#[derive(Debug, Default)]
pub struct FunctionRules {
    ignore_regex: Option<Regex>,
    ignore_names: std::collections::HashSet<String>,
    thresholds: std::collections::HashMap<String, f64>,
}

impl FunctionRules {
    pub fn load(args: &RunArgs) -> anyhow::Result<Self> {
        let mut rules = FunctionRules::default();
        if let Some(re) = &args.ignore_regex {
            rules.ignore_regex =
                Some(Regex::new(re).with_context(|| format!("--ignore-regex {re:?}"))?);
        }
        if let Some(p) = &args.ignore_file {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("reading --ignore-file {}", p.display()))?;
            for line in text.lines() {
                let name = line.trim();
                if !name.is_empty() && !name.starts_with('#') {
                    rules.ignore_names.insert(name.to_owned());
                }
            }
        }
        if let Some(p) = &args.threshold_file {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("reading --threshold-file {}", p.display()))?;
            for (no, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let (value, name) = line.split_once(char::is_whitespace).with_context(|| {
                    format!(
                        "{}:{}: expected `<value> <function name>`",
                        p.display(),
                        no + 1
                    )
                })?;
                let value: f64 = value
                    .parse()
                    .ok()
                    .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                    .with_context(|| {
                        format!(
                            "{}:{}: {value:?} is not a non-negative number",
                            p.display(),
                            no + 1
                        )
                    })?;
                rules.thresholds.insert(name.trim().to_owned(), value);
            }
        }
        Ok(rules)
    }

    pub fn is_ignored(&self, name: &str) -> bool {
        self.ignore_names.contains(name)
            || self.ignore_regex.as_ref().is_some_and(|r| r.is_match(name))
    }

    pub fn threshold(&self, name: &str) -> Option<f64> {
        self.thresholds.get(name).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::adios::Engine;

    fn spec(i: usize) -> StreamSpec {
        StreamSpec {
            program: 0,
            app_rank: i as u64,
            path: PathBuf::new(),
            global_index: i,
            input: 0,
        }
    }

    #[test]
    fn blocks_cover_every_stream_once() {
        let all: Vec<StreamSpec> = (0..7).map(spec).collect();
        for size in 1..=7 {
            let got: Vec<usize> = (0..size)
                .flat_map(|r| block_of(&all, r, size))
                .map(|s| s.global_index)
                .collect();
            assert_eq!(got, (0..7).collect::<Vec<_>>());
        }
    }

    #[test]
    fn engine_file_check() {
        assert!(Engine::BP5.is_file() && !Engine::SST.is_file());
    }
}
