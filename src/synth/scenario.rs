//! Scenario files (TOML) describing a synthetic TAU-traced application.
//!
//! See `scenarios/demo.toml` for an annotated example, and
//! `scenarios/modelled.toml` for runtime laws (self time as a function of
//! message size or of a counter; checked and evaluated in [`super::law`]).
//! These are the types and their draws; `load.rs` parses and checks a file.

use serde::Deserialize;

use super::rng::Rng;

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

impl Dist {
    /// A draw from the distribution.
    pub fn sample(&self, rng: &mut Rng) -> f64 {
        match self {
            Dist::Constant { value } => *value,
            Dist::Normal { mean, std } => mean + std * rng.normal(),
            Dist::Lognormal { median, sigma } => median * (sigma * rng.normal()).exp(),
            Dist::Multimodal { modes } => {
                let pick = &modes[rng.weighted(modes.iter().map(|m| m.weight))];
                pick.mean + pick.std * rng.normal()
            }
            Dist::LognormalModes { modes } => {
                let pick = &modes[rng.weighted(modes.iter().map(|m| m.weight))];
                pick.median * (pick.sigma * rng.normal()).exp()
            }
            Dist::Choice { values, weights } => {
                let i = match weights {
                    Some(w) => rng.weighted(w.iter().copied()),
                    None => rng.below(values.len() as u64) as usize,
                };
                values[i]
            }
        }
    }
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
    /// `"lognormal"`: the prediction times `exp(noise_std · z)`, a long
    /// right tail (the jitter of short MPI calls).
    Lognormal,
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
    /// Factor applied to the execution's message size (its
    /// `message_bytes` draw; > 0, default 1): an oversized message, which
    /// with `factor` also takes that much longer.
    #[serde(default = "unit")]
    pub bytes_factor: f64,
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

/// Serde's default of factors and exponents that are 1 unless given (also
/// of the coupled scenarios).
pub(super) fn unit() -> f64 {
    1.0
}

fn default_binary() -> String {
    "app".into()
}
/// Serde's default first timestamp (µs since the epoch: November 2023),
/// the same for the coupled scenarios.
pub(super) fn default_start() -> u64 {
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
    pub families: Vec<FamilySpec>,
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
}

/// `count` functions named `<name><k>` (k = 0 … count − 1) with the same
/// self-time distribution; a child call naming the family calls one member,
/// drawn by a Zipf law (member `k` with weight `1 / (k + 1)^zipf`): a few
/// members are called often, most of them rarely, and the rare ones are
/// first seen in late steps.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamilySpec {
    /// Family name; members are `<name><k>` (e.g. `kernel<42>`).
    pub name: String,
    /// Number of members (≥ 1).
    pub count: usize,
    /// Self time of every member's executions, µs.
    pub runtime: Dist,
    /// Zipf exponent of the member draw (≥ 0; 0 = uniform; default 1).
    #[serde(default = "unit")]
    pub zipf: f64,
    /// Rotate the members by application rank, so that ranks call
    /// different members most (default false: every rank the same).
    #[serde(default)]
    pub by_rank: bool,
    /// Move the members by this many places each step (default 0): the
    /// popular members change over the run, as in a code that goes through
    /// phases using other instantiations, so new names keep coming.
    #[serde(default)]
    pub rotate_per_step: usize,
}

impl FamilySpec {
    /// The name of member `k`.
    pub fn member(&self, k: usize) -> String {
        format!("{}<{k}>", self.name)
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
