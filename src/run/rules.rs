//! Per-function rules of a run: functions never flagged (`--ignore-regex`,
//! `--ignore-file`) and per-function thresholds (`--threshold-file`),
//! applied to each function as its name is agreed.

use anyhow::Context;
use regex::Regex;

use super::options::RunOptions;
use crate::detect::Detector;
use crate::events::names::GlobalNames;

/// Which functions are ignored, and per-function thresholds.
#[derive(Debug, Default)]
pub struct FunctionRules {
    ignore_regex: Option<Regex>,
    ignore_names: std::collections::HashSet<String>,
    thresholds: std::collections::HashMap<String, f64>,
}

impl FunctionRules {
    /// Reads `--ignore-regex`, `--ignore-file` (one name per line, `#`
    /// comments) and `--threshold-file` (`<value> <function name>` lines).
    pub fn load(opts: &RunOptions) -> anyhow::Result<Self> {
        let mut rules = FunctionRules::default();
        if let Some(re) = &opts.ignore_regex {
            rules.ignore_regex =
                Some(Regex::new(re).with_context(|| format!("--ignore-regex {re:?}"))?);
        }
        if let Some(p) = &opts.ignore_file {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("reading --ignore-file {}", p.display()))?;
            for line in text.lines() {
                let name = line.trim();
                if !name.is_empty() && !name.starts_with('#') {
                    rules.ignore_names.insert(name.to_owned());
                }
            }
        }
        if let Some(p) = &opts.threshold_file {
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

    /// Whether function `name` is never flagged (listed, or matching the
    /// regex).
    pub fn is_ignored(&self, name: &str) -> bool {
        self.ignore_names.contains(name)
            || self.ignore_regex.as_ref().is_some_and(|r| r.is_match(name))
    }

    /// The `--threshold-file` threshold of function `name`, if listed.
    pub fn threshold(&self, name: &str) -> Option<f64> {
        self.thresholds.get(name).copied()
    }
}

/// The rules applied to the global function table: which functions are
/// ignored (by global index), and their thresholds set in the detector.
#[derive(Debug, Default)]
pub struct FunctionFilter {
    rules: FunctionRules,
    ignored: Vec<bool>,
}

impl FunctionFilter {
    /// A filter applying `rules`.
    pub fn new(rules: FunctionRules) -> Self {
        FunctionFilter {
            rules,
            ignored: Vec::new(),
        }
    }

    /// Applies the rules to functions `new` of the table, just agreed.
    pub fn add_functions(&mut self, new: &[u32], names: &GlobalNames, detector: &mut dyn Detector) {
        for &f in new {
            let name = names.functions.name(f);
            if self.ignored.len() <= f as usize {
                self.ignored.resize(f as usize + 1, false);
            }
            self.ignored[f as usize] = self.rules.is_ignored(name);
            if let Some(th) = self.rules.threshold(name) {
                detector.set_function_threshold(f, th);
            }
        }
    }

    /// Whether function `f` is never flagged.
    #[inline]
    pub fn is_ignored(&self, f: u32) -> bool {
        self.ignored.get(f as usize).copied().unwrap_or(false)
    }
}
