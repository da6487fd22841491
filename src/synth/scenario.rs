//! Scenario files (TOML) describing a synthetic TAU-traced application.
//!
//! See `scenarios/demo.toml` for an annotated example, and
//! `scenarios/modelled.toml` for runtime laws (self time as a function of
//! message size or of a counter; checked and evaluated in [`super::law`]).

use std::collections::HashMap;

use serde::Deserialize;

/// Built-in demo scenario, used when no scenario file is given.
pub const DEMO_SCENARIO: &str = include_str!("../../scenarios/demo.toml");

/// A runtime distribution in microseconds (also used for counter values,
/// in the counter's unit); selected by the TOML key `dist`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(tag = "dist", rename_all = "lowercase", deny_unknown_fields)]
pub enum Dist {
    /// `dist = "constant"`: always the same value.
    Constant {
        /// The value (≥ 0).
        value: f64,
    },
    /// `dist = "normal"`: a normal distribution.
    Normal {
        /// Mean.
        mean: f64,
        /// Standard deviation (≥ 0).
        std: f64,
    },
    /// `median * exp(sigma * z)`: a heavy right tail.
    Lognormal {
        /// Median (> 0).
        median: f64,
        /// Standard deviation of the logarithm (≥ 0).
        sigma: f64,
    },
    /// A weighted mixture of normal modes (e.g. two code paths).
    Multimodal {
        /// The modes (at least one).
        modes: Vec<Mode>,
    },
    /// `dist = "lognormal_modes"`: a weighted mixture of lognormal modes,
    /// for quantities that span orders of magnitude with a distinct rare
    /// population (e.g. mostly small messages and a few very large ones).
    #[serde(rename = "lognormal_modes")]
    LognormalModes {
        /// The modes (at least one).
        modes: Vec<LogMode>,
    },
    /// `dist = "choice"`: one of a few exact values (e.g. message sizes),
    /// picked with probability proportional to its weight.
    Choice {
        /// The values (at least one).
        values: Vec<f64>,
        /// One weight (> 0) per value; equal weights without it.
        #[serde(default)]
        weights: Option<Vec<f64>>,
    },
}

/// One lognormal mode of a [`Dist::LognormalModes`] mixture.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LogMode {
    /// Relative weight (> 0; weights need not sum to 1).
    pub weight: f64,
    /// Median of the mode (> 0).
    pub median: f64,
    /// Standard deviation of the logarithm (≥ 0).
    pub sigma: f64,
}

/// One normal mode of a [`Dist::Multimodal`] mixture.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Mode {
    /// Relative weight (> 0; weights need not sum to 1).
    pub weight: f64,
    /// Mean of the mode.
    pub mean: f64,
    /// Standard deviation of the mode (≥ 0).
    pub std: f64,
}

/// A child call made by every execution of its parent.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChildSpec {
    /// Name of the called function (one of the scenario's `[[function]]`s),
    /// or of a `[[family]]`: each call then picks one of its members.
    pub function: String,
    /// Consecutive calls per execution of the parent (default 1).
    #[serde(default = "one")]
    pub calls: u32,
}

fn one() -> u32 {
    1
}

/// Direction of a point-to-point message.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CommKind {
    /// `"send"`: a SEND row.
    Send,
    /// `"recv"`: a RECV row.
    Recv,
}

/// Partner rank of a message: `"next"`, `"prev"` (ring neighbours) or a rank.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum Partner {
    /// A fixed application rank.
    Rank(u64),
    /// `"next"` (rank + 1) or `"prev"` (rank − 1), modulo the number of ranks.
    Named(String),
}

/// A message sent or received inside each execution of a function.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommSpec {
    /// Send or receive.
    pub kind: CommKind,
    /// The other rank of the message.
    pub partner: Partner,
    /// MPI tag written in the comm row (default 0).
    #[serde(default)]
    pub tag: u64,
    /// Message size in bytes. Without it, the size the execution drew from
    /// its function's `message_bytes` (the same for all such messages of
    /// one execution).
    #[serde(default)]
    pub bytes: Option<u64>,
}

/// A counter sampled inside each execution of a function.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CounterSpec {
    /// Counter name (a `counter <i>` attribute), e.g. `PAPI_TOT_INS`.
    pub name: String,
    /// Distribution of the sampled value (rounded to an unsigned integer).
    pub value: Dist,
}

/// One function of the call tree.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FunctionSpec {
    /// Function name (a `timer <i>` attribute); unique in the scenario.
    pub name: String,
    /// Self (exclusive) time of one execution, microseconds. Either this
    /// or `runtime_law`.
    #[serde(default)]
    pub runtime: Option<Dist>,
    /// Self time as a function of the execution's message size and/or a
    /// counter value, instead of `runtime`.
    #[serde(default)]
    pub runtime_law: Option<RuntimeLaw>,
    /// Size (bytes) of the messages of one execution, drawn per execution
    /// (rounded to an integer, at least 0): what `comm` entries without
    /// `bytes` carry, and the `bytes` of `runtime_law`.
    #[serde(default)]
    pub message_bytes: Option<Dist>,
    /// Slow change of the self time: multiplied by `1 + drift_per_step ·
    /// step` (a normal trend, e.g. a growing data structure; not injected
    /// anomalies).
    #[serde(default)]
    pub drift_per_step: f64,
    /// Calls made by every execution, in order (the call tree must be
    /// acyclic).
    #[serde(default)]
    pub children: Vec<ChildSpec>,
    /// Messages of every execution (written early in the call).
    #[serde(default)]
    pub comm: Vec<CommSpec>,
    /// Counters sampled by every execution (late in the call).
    #[serde(default)]
    pub counters: Vec<CounterSpec>,
}

/// Self time of an execution as a law of what it does (`runtime_law`):
///
/// `predicted = base + per_byte · bytes + per_unit · value(counter)`, then
/// noise: `predicted · (1 + noise_std · z)` (relative) or `predicted +
/// noise_std · z` (absolute, µs), `z` standard normal. `bytes` is the
/// execution's `message_bytes` draw and `value(counter)` the value of the
/// function's counter of that name written for the execution: exactly what
/// a performance model sees in the trace.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RuntimeLaw {
    /// Fixed cost of a call, µs (≥ 0; default 0).
    #[serde(default)]
    pub base: f64,
    /// Cost per message byte, µs (≥ 0; default 0; needs `message_bytes`).
    #[serde(default)]
    pub per_byte: f64,
    /// Name of one of the function's `counters` the runtime depends on.
    #[serde(default)]
    pub counter: Option<String>,
    /// Cost per unit of `counter`, µs (≥ 0; default 0).
    #[serde(default)]
    pub per_unit: f64,
    /// How the noise scales (default relative).
    #[serde(default)]
    pub noise: Noise,
    /// Standard deviation of the noise: a fraction of the prediction
    /// (relative) or µs (absolute); ≥ 0, default 0 (no noise).
    #[serde(default)]
    pub noise_std: f64,
}

/// How the noise of a [`RuntimeLaw`] scales.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Noise {
    /// `"relative"`: proportional to the prediction (a large call varies
    /// more in µs than a small one, as measured runtimes do).
    #[default]
    Relative,
    /// `"absolute"`: the same spread in µs whatever the prediction.
    Absolute,
}

/// Injected anomalies: executions of `function` whose self time is scaled by
/// `factor` and/or increased by `add_us`, with probability `rate`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnomalySpec {
    /// Name of the function whose executions are made anomalous.
    pub function: String,
    /// Probability that one execution is anomalous, in `[0, 1]`.
    pub rate: f64,
    /// Factor applied to the self time (> 0; default 1). For a function with
    /// a `runtime_law` it scales the law's value, so the call is slow for
    /// its size rather than merely long.
    #[serde(default = "unit")]
    pub factor: f64,
    /// Microseconds added to the self time after scaling (≥ 0; default 0).
    #[serde(default)]
    pub add_us: f64,
    /// Only these ranks (default: all).
    #[serde(default)]
    pub ranks: Option<Vec<u64>>,
    /// Only these threads (default: all).
    #[serde(default)]
    pub threads: Option<Vec<u64>>,
    /// Only steps in `[first, last]` (default: all).
    #[serde(default)]
    pub steps: Option<[u64; 2]>,
    /// Only executions whose message size (`message_bytes` draw) is in
    /// `[min, max]` bytes (default: all), e.g. to slow down small calls
    /// that then hide among normal large ones.
    #[serde(default)]
    pub bytes: Option<[u64; 2]>,
    /// Only executions whose value of the `runtime_law` counter is in
    /// `[min, max]` (default: all).
    #[serde(default)]
    pub counter_value: Option<[u64; 2]>,
    /// A rare variation that is normal behaviour, not an anomaly to find
    /// (a fast path, an early exit): applied like an anomaly but left out
    /// of the ground truth, so a detector that flags it loses precision.
    #[serde(default)]
    pub normal: bool,
}

fn unit() -> f64 {
    1.0
}

fn default_binary() -> String {
    "app".into()
}
fn default_start() -> u64 {
    1_700_000_000_000_000
}
fn default_wrappers() -> Vec<String> {
    vec!["main".into()]
}
fn default_ranks_per_node() -> u64 {
    4
}
fn default_host_prefix() -> String {
    "node".into()
}
fn yes() -> bool {
    true
}

/// A whole scenario.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Free text saying what the scenario models.
    #[serde(default)]
    pub description: String,
    /// Seed of every random draw: the same scenario and seed give the same
    /// streams.
    pub seed: u64,
    /// Binary name, used in stream names `<prefix>-<binary>-<rank>.bp`.
    #[serde(default = "default_binary")]
    pub binary: String,
    /// Number of application ranks (one stream each; ≥ 1).
    pub ranks: u64,
    /// Threads per rank, each looping over `root` (≥ 1; default 1).
    #[serde(default = "one64")]
    pub threads: u64,
    /// Number of I/O steps written per stream (≥ 1).
    pub steps: u64,
    /// Function events (ENTRY + EXIT rows) per rank per step, approximately:
    /// steps are cut when thread 0 has produced its share, as TAU cuts steps
    /// when thread 0 exits a function after the period.
    pub events_per_step: u64,
    /// Steps with `factor` times the usual events (load bursts).
    #[serde(rename = "burst", default)]
    pub bursts: Vec<BurstSpec>,
    /// Timestamp of the first event (µs since the epoch; default November
    /// 2023).
    #[serde(default = "default_start")]
    pub start_time_us: u64,
    /// Idle time between two calls of the root function (µs; default 1).
    #[serde(default = "one64")]
    pub gap_us: u64,
    /// The function each thread calls in a loop (e.g. a time step).
    pub root: String,
    /// Functions opened before the first step and closed at the very end
    /// (like TAU's `main`); they span every step.
    #[serde(default = "default_wrappers")]
    pub wrappers: Vec<String>,
    /// Ranks per node, for the `Hostname` metadata.
    #[serde(default = "default_ranks_per_node")]
    pub ranks_per_node: u64,
    /// Host names are this prefix and the node number (`node000`, ...).
    #[serde(default = "default_host_prefix")]
    pub hostname_prefix: String,
    /// Number each rank's functions and counters in the order it first
    /// uses them, as TAU does (ranks calling functions in different orders
    /// number them differently); false: every rank uses the scenario's
    /// numbering.
    #[serde(default = "yes")]
    pub shuffle_indices: bool,
    /// The functions of the call tree (`[[function]]` tables).
    #[serde(rename = "function")]
    pub functions: Vec<FunctionSpec>,
    /// Injected anomalies (`[[anomaly]]` tables).
    #[serde(rename = "anomaly", default)]
    pub anomalies: Vec<AnomalySpec>,
    /// Ranks that are normally slower (heterogeneous nodes): not anomalies.
    #[serde(rename = "slowdown", default)]
    pub slowdowns: Vec<SlowdownSpec>,
    /// Families of many functions that differ by name only (`[[family]]`
    /// tables), as template instantiations do in C++ codes.
    #[serde(rename = "family", default)]
    pub families: Vec<super::family::FamilySpec>,
}

/// Ranks whose self times are `factor` times longer, for all functions or
/// the ones listed: their normal behaviour, not injected anomalies.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlowdownSpec {
    /// The slower application ranks.
    pub ranks: Vec<u64>,
    /// Factor applied to their self times.
    pub factor: f64,
    /// Only these functions (default: all).
    #[serde(default)]
    pub functions: Option<Vec<String>>,
}

/// A step with more events than usual.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BurstSpec {
    /// The I/O step.
    pub step: u64,
    /// Multiplier of `events_per_step` in that step (≥ 1).
    pub factor: u64,
}

fn one64() -> u64 {
    1
}

impl Scenario {
    /// Function events per rank of step `step` (bursts included).
    pub fn events_in_step(&self, step: u64) -> u64 {
        let factor = self
            .bursts
            .iter()
            .filter(|b| b.step == step)
            .map(|b| b.factor)
            .max()
            .unwrap_or(1);
        self.events_per_step.saturating_mul(factor)
    }

    /// Parses a scenario file's text and [validates](Scenario::validate) it;
    /// the members of its families become functions of their own, after
    /// the `[[function]]`s.
    pub fn from_toml(text: &str) -> anyhow::Result<Scenario> {
        let mut s: Scenario = toml::from_str(text)?;
        s.validate()?;
        super::family::add_members(&mut s);
        Ok(s)
    }

    /// Checks references and ranges so generation cannot fail half-way.
    pub fn validate(&self) -> anyhow::Result<()> {
        use anyhow::{bail, ensure};
        ensure!(self.ranks >= 1, "ranks must be at least 1");
        ensure!(self.threads >= 1, "threads must be at least 1");
        ensure!(self.steps >= 1, "steps must be at least 1");
        ensure!(
            self.events_per_step >= 2,
            "events_per_step must be at least 2"
        );
        for b in &self.bursts {
            ensure!(b.factor >= 1, "burst factor must be at least 1");
        }
        let mut names = HashMap::new();
        for (i, f) in self.functions.iter().enumerate() {
            if names.insert(f.name.as_str(), i).is_some() {
                bail!("function {:?} is defined twice", f.name);
            }
            super::law::check_function(f)?;
            for c in &f.counters {
                check_dist(&c.value, &format!("{} counter {}", f.name, c.name))?;
            }
            for (k, c) in f.comm.iter().enumerate() {
                ensure!(
                    c.bytes.is_some() || f.message_bytes.is_some(),
                    "function {:?}: comm entry {} has no `bytes` and the function no `message_bytes`",
                    f.name,
                    k + 1
                );
                if let Partner::Named(n) = &c.partner {
                    ensure!(
                        n == "next" || n == "prev",
                        "function {:?}: comm partner must be \"next\", \"prev\" or a rank number, not {n:?}",
                        f.name
                    );
                }
            }
        }
        for fam in &self.families {
            ensure!(
                fam.count >= 1,
                "family {:?}: count must be at least 1",
                fam.name
            );
            ensure!(
                fam.zipf >= 0.0 && fam.zipf.is_finite(),
                "family {:?}: zipf must be a number ≥ 0",
                fam.name
            );
            ensure!(
                !names.contains_key(fam.name.as_str()),
                "family {:?} has the name of a function",
                fam.name
            );
            check_dist(&fam.runtime, &format!("family {} runtime", fam.name))?;
        }
        let is_family = |n: &str| self.families.iter().any(|f| f.name == n);
        let known = |n: &str, what: &str| -> anyhow::Result<()> {
            ensure!(
                names.contains_key(n),
                "{what} refers to unknown function {n:?}"
            );
            Ok(())
        };
        known(&self.root, "root")?;
        for w in &self.wrappers {
            known(w, "wrappers")?;
            ensure!(
                *w != self.root,
                "the root function cannot also be a wrapper"
            );
        }
        for f in &self.functions {
            for c in &f.children {
                if !is_family(&c.function) {
                    known(&c.function, &format!("function {:?} children", f.name))?;
                }
            }
        }
        self.check_acyclic(&names)?;
        for a in &self.anomalies {
            known(&a.function, "anomaly")?;
            ensure!(
                (0.0..=1.0).contains(&a.rate),
                "anomaly rate must be in [0, 1]"
            );
            ensure!(
                a.factor > 0.0 && a.add_us >= 0.0,
                "anomaly factor must be > 0 and add_us >= 0"
            );
            super::law::check_anomaly(a, &self.functions[names[a.function.as_str()]])?;
        }
        Ok(())
    }

    fn check_acyclic(&self, names: &HashMap<&str, usize>) -> anyhow::Result<()> {
        // Depth-first search with colours: 0 unvisited, 1 on stack, 2 done.
        fn visit(
            i: usize,
            s: &Scenario,
            names: &HashMap<&str, usize>,
            colour: &mut [u8],
        ) -> anyhow::Result<()> {
            match colour[i] {
                1 => anyhow::bail!("call tree has a cycle through {:?}", s.functions[i].name),
                2 => return Ok(()),
                _ => {}
            }
            colour[i] = 1;
            // Family members call nothing: a family ends the path.
            for c in &s.functions[i].children {
                if let Some(&j) = names.get(c.function.as_str()) {
                    visit(j, s, names, colour)?;
                }
            }
            colour[i] = 2;
            Ok(())
        }
        let mut colour = vec![0u8; self.functions.len()];
        for i in 0..self.functions.len() {
            visit(i, self, names, &mut colour)?;
        }
        Ok(())
    }
}

/// Checks that `d` can be sampled; `what` names the key in the error.
pub(super) fn check_dist(d: &Dist, what: &str) -> anyhow::Result<()> {
    let ok = match d {
        Dist::Constant { value } => value.is_finite() && *value >= 0.0,
        Dist::Normal { mean, std } => mean.is_finite() && std.is_finite() && *std >= 0.0,
        Dist::Lognormal { median, sigma } => *median > 0.0 && sigma.is_finite() && *sigma >= 0.0,
        Dist::Multimodal { modes } => {
            !modes.is_empty()
                && modes
                    .iter()
                    .all(|m| m.weight > 0.0 && m.std >= 0.0 && m.mean.is_finite())
        }
        Dist::LognormalModes { modes } => {
            !modes.is_empty()
                && modes.iter().all(|m| {
                    m.weight > 0.0
                        && m.weight.is_finite()
                        && m.median > 0.0
                        && m.median.is_finite()
                        && m.sigma.is_finite()
                        && m.sigma >= 0.0
                })
        }
        Dist::Choice { values, weights } => {
            !values.is_empty()
                && values.iter().all(|v| v.is_finite())
                && weights.as_ref().is_none_or(|w| {
                    w.len() == values.len() && w.iter().all(|x| *x > 0.0 && x.is_finite())
                })
        }
    };
    anyhow::ensure!(ok, "{what}: invalid distribution {d:?}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_key_is_refused_everywhere() {
        let ok = format!("{DEMO_SCENARIO}\n[[burst]]\nstep = 2\nfactor = 3\n");
        let sc = Scenario::from_toml(&ok).unwrap();
        assert_eq!(sc.bursts.len(), 1);
        let typo = format!("{DEMO_SCENARIO}\n[[burst]]\nstep = 2\nfactr = 3\n");
        let err = format!("{:#}", Scenario::from_toml(&typo).unwrap_err());
        assert!(err.contains("factr"), "{err}");
    }
}
