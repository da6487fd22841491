//! Scenario files (TOML, `kind = "coupled"`) of a coupled synthetic
//! application: every rank iterates compute phases, a halo exchange with
//! its ring neighbours and an optional `MPI_Allreduce`, and the ranks wait
//! for each other as MPI makes them (see `scenarios/incidents-*.toml`).

use serde::Deserialize;

use crate::synth::scenario::{check_dist, default_start, unit, Dist};

/// How the ranks exchange their halo each iteration.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Exchange {
    /// `MPI_Sendrecv`: send to the right neighbour, receive from the left
    /// (a one-way ring).
    Sendrecv,
    /// `MPI_Irecv` and `MPI_Isend` to both neighbours, then `MPI_Waitall`.
    IsendWaitall,
}

/// One compute phase of an iteration: a function with its own time and
/// optional callees (called once each, in order, inside it).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseSpec {
    /// Function name.
    pub name: String,
    /// Self (exclusive) time of one call, µs.
    pub runtime: Dist,
    /// Functions it calls, each with its own self time.
    #[serde(default)]
    pub calls: Vec<CalleeSpec>,
    /// Run after the halo exchange (before the `MPI_Allreduce`) instead of
    /// before it.
    #[serde(default)]
    pub after_exchange: bool,
}

/// A callee of a compute phase.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalleeSpec {
    /// Function name.
    pub name: String,
    /// Self time of one call, µs.
    pub runtime: Dist,
}

/// Ranks that normally compute faster or slower than the others.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImbalanceSpec {
    /// The ranks.
    pub ranks: Vec<u64>,
    /// Factor on their compute self times (> 0).
    pub factor: f64,
    /// Only these phases (default: all), with their callees.
    #[serde(default)]
    pub phases: Option<Vec<String>>,
}

/// What an injection does.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum InjectKind {
    /// `add_us` more self time in `function` (a compute phase or callee).
    Delay,
    /// The rank's halo message is `factor` times larger (`sendrecv` only:
    /// the oversized send is in the execution that waits for it).
    Message,
    /// The rank stops for `add_us` inside `MPI_Allreduce` from the moment
    /// it enters it (a process stopped or descheduled inside MPI): the
    /// others arrive and wait until it comes back.
    Stall,
}

/// One injected problem, on one rank, in chosen iterations.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InjectSpec {
    /// What it does.
    pub kind: InjectKind,
    /// The rank it strikes.
    pub rank: u64,
    /// The function it slows (`delay` only).
    #[serde(default)]
    pub function: Option<String>,
    /// The iterations it strikes.
    pub iterations: Vec<u64>,
    /// Microseconds added (`delay`, `stall`).
    #[serde(default)]
    pub add_us: f64,
    /// Message size factor (`message`).
    #[serde(default = "unit")]
    pub factor: f64,
}

fn default_binary() -> String {
    "coupled".into()
}

fn default_bandwidth() -> f64 {
    1000.0
}

fn default_latency() -> f64 {
    5.0
}

fn default_period() -> u64 {
    100_000
}

/// A coupled scenario.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoupledScenario {
    /// Always `"coupled"` (tells this format from the per-rank one).
    pub kind: String,
    /// Free text saying what the scenario models.
    #[serde(default)]
    pub description: String,
    /// Seed of every random draw.
    pub seed: u64,
    /// Binary name, used in stream names `<prefix>-<binary>-<rank>.bp`.
    #[serde(default = "default_binary")]
    pub binary: String,
    /// Application ranks (≥ 2).
    pub ranks: u64,
    /// Iterations of every rank.
    pub iterations: u64,
    /// Application time between two I/O steps (µs), as TAU's
    /// `TAU_ADIOS2_PERIOD` cuts them.
    #[serde(default = "default_period")]
    pub period_us: u64,
    /// Timestamp of the first event (µs since the epoch).
    #[serde(default = "default_start")]
    pub start_time_us: u64,
    /// How the halo is exchanged.
    pub exchange: Exchange,
    /// Bytes of each halo message.
    pub message_bytes: u64,
    /// Network bandwidth, bytes per µs (default 1000: 1 GB/s).
    #[serde(default = "default_bandwidth")]
    pub bandwidth_bytes_per_us: f64,
    /// Network latency, µs (default 5).
    #[serde(default = "default_latency")]
    pub latency_us: f64,
    /// An `MPI_Allreduce` every this many iterations (0: never).
    #[serde(default)]
    pub allreduce_every: u64,
    /// The compute phases of an iteration, in order.
    #[serde(rename = "phase")]
    pub phases: Vec<PhaseSpec>,
    /// Ranks whose compute takes `factor` times as long as the others'
    /// (they hold more or fewer cells): their normal, not an injection.
    #[serde(rename = "imbalance", default)]
    pub imbalances: Vec<ImbalanceSpec>,
    /// The injected problems.
    #[serde(rename = "inject", default)]
    pub injections: Vec<InjectSpec>,
}

impl CoupledScenario {
    /// Parses and checks a scenario.
    pub fn from_toml(text: &str) -> anyhow::Result<Self> {
        let s: CoupledScenario = toml::from_str(text)?;
        s.validate()?;
        Ok(s)
    }

    /// Whether a scenario file's text is of this kind.
    pub fn is_coupled(text: &str) -> bool {
        toml::from_str::<toml::Table>(text)
            .ok()
            .and_then(|t| {
                t.get("kind")
                    .and_then(|k| k.as_str().map(|s| s == "coupled"))
            })
            .unwrap_or(false)
    }

    /// Every function name a phase or callee has, in order of use.
    pub fn compute_names(&self) -> Vec<&str> {
        self.phases
            .iter()
            .flat_map(|p| {
                std::iter::once(p.name.as_str()).chain(p.calls.iter().map(|c| c.name.as_str()))
            })
            .collect()
    }

    /// Checks values and references so that the simulation cannot fail.
    pub fn validate(&self) -> anyhow::Result<()> {
        use anyhow::ensure;
        ensure!(self.kind == "coupled", "kind must be \"coupled\"");
        ensure!(self.ranks >= 2, "a coupled scenario needs at least 2 ranks");
        ensure!(self.iterations >= 1, "iterations must be at least 1");
        ensure!(self.period_us >= 1, "period_us must be at least 1");
        ensure!(
            self.bandwidth_bytes_per_us > 0.0 && self.bandwidth_bytes_per_us.is_finite(),
            "bandwidth_bytes_per_us must be a positive number"
        );
        ensure!(
            self.latency_us >= 0.0 && self.latency_us.is_finite(),
            "latency_us must be a number ≥ 0"
        );
        ensure!(!self.phases.is_empty(), "at least one [[phase]] is needed");
        let names = self.compute_names();
        for (i, n) in names.iter().enumerate() {
            ensure!(!names[..i].contains(n), "function {n:?} is defined twice");
            ensure!(
                !n.starts_with("MPI_") && *n != "main" && *n != "timestep" && *n != "halo_exchange",
                "{n:?} is a name the application uses itself"
            );
        }
        for p in &self.phases {
            check_dist(&p.runtime, &format!("phase {} runtime", p.name))?;
            for c in &p.calls {
                check_dist(&c.runtime, &format!("callee {} runtime", c.name))?;
            }
        }
        for b in &self.imbalances {
            ensure!(
                b.factor > 0.0 && b.factor.is_finite(),
                "imbalance factor must be a positive number"
            );
        }
        for j in &self.injections {
            ensure!(
                j.rank < self.ranks,
                "injection on rank {} of {}",
                j.rank,
                self.ranks
            );
            ensure!(!j.iterations.is_empty(), "an injection needs iterations");
            match j.kind {
                InjectKind::Delay => {
                    let f = j.function.as_deref().unwrap_or("");
                    ensure!(
                        names.contains(&f),
                        "delay injection: unknown function {f:?}"
                    );
                    ensure!(j.add_us > 0.0, "delay injection needs add_us > 0");
                }
                InjectKind::Message => {
                    ensure!(
                        self.exchange == Exchange::Sendrecv,
                        "message injection needs exchange = \"sendrecv\""
                    );
                    ensure!(j.factor > 1.0, "message injection needs factor > 1");
                }
                InjectKind::Stall => {
                    ensure!(
                        self.allreduce_every > 0,
                        "stall injection needs an MPI_Allreduce (allreduce_every > 0)"
                    );
                    ensure!(j.add_us > 0.0, "stall injection needs add_us > 0");
                }
            }
        }
        Ok(())
    }
}
