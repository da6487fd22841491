//! Inputs and per-function rules of a run.

use std::path::PathBuf;

use anyhow::{bail, Context};
use regex::Regex;

use super::RunArgs;

/// One application stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSpec {
    pub program: u32,
    pub app_rank: u64,
    pub path: PathBuf,
    /// Position in the list of all streams of the run.
    pub global_index: usize,
    /// Which `--input` it came from.
    pub input: usize,
}

/// All streams of the run, in input order then application rank.
pub fn expand_inputs(args: &RunArgs) -> anyhow::Result<Vec<StreamSpec>> {
    let n = args.inputs.len();
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
    let mut out = Vec::new();
    for (i, pattern) in args.inputs.iter().enumerate() {
        if !pattern.contains("{rank}") {
            bail!("--input {pattern:?} must contain {{rank}} where the application rank goes");
        }
        let program = args.program_idx.get(i).copied().unwrap_or(i as u32);
        let count = match pick(&args.app_ranks, i) {
            Some(c) => c,
            None if args.engine.is_file() => count_files(pattern),
            None => bail!("--app-ranks is required with engine {} (streams appear only when the application starts)", args.engine),
        };
        if count == 0 {
            bail!(
                "--input {pattern:?}: no stream found ({} does not exist)",
                pattern.replace("{rank}", "0")
            );
        }
        for r in 0..count {
            out.push(StreamSpec {
                program,
                app_rank: r,
                path: PathBuf::from(pattern.replace("{rank}", &r.to_string())),
                global_index: out.len(),
                input: i,
            });
        }
    }
    Ok(out)
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
