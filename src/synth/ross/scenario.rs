//! The `[ross]` scenario format (TOML) of `synth ross`; the module doc of
//! [`super`] describes every key.

use anyhow::{bail, Context};
use serde::Deserialize;

/// Built-in scenario, used when `synth ross` is given no file.
pub const DEFAULT_ROSS_SCENARIO: &str = include_str!("../../../scenarios/ross-phold.toml");

/// A whole scenario file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RossScenario {
    /// Free text.
    #[serde(default)]
    pub description: String,
    /// The simulated run.
    pub ross: RossRun,
    /// Injected anomalies.
    #[serde(default)]
    pub anomaly: Vec<RossAnomaly>,
}

/// The `[ross]` table: the PHOLD-like run and the files it writes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RossRun {
    /// Seed of every random draw.
    pub seed: u64,
    /// Number of PEs (MPI ranks).
    pub pes: u32,
    /// KPs per PE (KP ids are local to their PE).
    pub kps_per_pe: u32,
    /// LPs per KP (LP ids are global: `pe*kps*lps + kp*lps + i`).
    pub lps_per_kp: u32,
    /// GVT intervals simulated; one GVT sample per PE at the end of each.
    pub intervals: u32,
    /// Virtual time GVT advances per interval.
    pub gvt_step: f64,
    /// Events each PE processes per interval (the optimistic scheduler's
    /// constant batch).
    pub events_per_interval: u32,
    /// Fraction of events sent to an LP on another PE.
    pub remote_fraction: f64,
    /// Baseline fraction of processed events that are rolled back.
    pub rollback_fraction: f64,
    /// Mean events rolled back per rollback.
    pub events_per_rollback: f64,
    /// Fraction of rollbacks that are secondary.
    pub secondary_fraction: f64,
    /// Minimum virtual delay of an event (PHOLD's lookahead).
    pub lookahead: f64,
    /// Mean of the exponential part of an event's virtual delay.
    pub mean_delay: f64,
    /// Real seconds a GVT interval takes without anomalies.
    pub interval_real_s: f64,
    /// Real seconds of one forward event handler.
    pub event_s: f64,
    /// Period of the real-time sampler (ROSS's `--rt-interval`), seconds.
    pub rt_interval_s: f64,
    /// `real_time` at the start of the run (seconds since host boot).
    pub start_real_time: f64,
    /// Bytes a PE buffers before a collective flush (`--buffer-size`).
    pub buffer_size: u64,
    /// File name prefix (`--stats-prefix`).
    pub prefix: String,
    /// Which files and records to write.
    pub files: RossFiles,
}

impl Default for RossRun {
    fn default() -> Self {
        RossRun {
            seed: 1,
            pes: 4,
            kps_per_pe: 4,
            lps_per_kp: 4,
            intervals: 100,
            gvt_step: 1.0,
            events_per_interval: 256,
            remote_fraction: 0.25,
            rollback_fraction: 0.05,
            events_per_rollback: 4.0,
            secondary_fraction: 0.25,
            lookahead: 0.1,
            mean_delay: 1.0,
            interval_real_s: 0.02,
            event_s: 2e-5,
            rt_interval_s: 0.1,
            start_real_time: 1000.0,
            buffer_size: 8_000_000,
            prefix: "ross-stats".into(),
            files: RossFiles::default(),
        }
    }
}

/// What the event trace holds (ROSS's `--event-trace`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceMode {
    /// No event trace.
    None,
    /// Every forward execution, rolled-back ones included.
    Full,
    /// One straggler per primary rollback.
    Rollback,
    /// Every committed event.
    Commit,
}

/// Which samplers write model samples (`--model-stats`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelMode {
    /// No model file.
    None,
    /// At every GVT sample.
    Gvt,
    /// At every real-time sample.
    Rt,
    /// Both, interleaved.
    Both,
}

/// The `[ross.files]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RossFiles {
    /// Write `<prefix>-gvt.bin`.
    pub gvt: bool,
    /// Write `<prefix>-rt.bin`.
    pub rt: bool,
    /// Event trace mode (`<prefix>-evtrace.bin`).
    pub evtrace: TraceMode,
    /// Model samples (`<prefix>-model.bin`).
    pub model: ModelMode,
    /// PE records in engine files (`--pe-data`).
    pub pe_data: bool,
    /// KP records (`--kp-data`).
    pub kp_data: bool,
    /// LP records (`--lp-data`).
    pub lp_data: bool,
    /// Bytes of each model sample's payload (its first 4, when there are 4,
    /// hold the LP's events processed since its previous model sample).
    pub model_sz: u32,
    /// Bytes of each event-trace record's payload (zeros).
    pub event_payload_sz: u32,
}

impl Default for RossFiles {
    fn default() -> Self {
        RossFiles {
            gvt: true,
            rt: true,
            evtrace: TraceMode::Full,
            model: ModelMode::None,
            pe_data: true,
            kp_data: true,
            lp_data: false,
            model_sz: 4,
            event_payload_sz: 0,
        }
    }
}

/// One injected anomaly (`[[anomaly]]`), active in the intervals whose
/// starting GVT lies in `[gvt_from, gvt_to)`.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RossAnomaly {
    /// A PE whose event handlers take `factor` times longer.
    SlowPe {
        /// The slow PE.
        pe: u32,
        /// Start of the window (GVT).
        gvt_from: f64,
        /// End of the window (GVT, exclusive).
        gvt_to: f64,
        /// Slowdown of the PE's handlers (> 1).
        factor: f64,
    },
    /// An LP that receives `factor` times its share of events.
    HotspotLp {
        /// The LP (global id).
        lp: u32,
        /// Start of the window (GVT).
        gvt_from: f64,
        /// End of the window (GVT, exclusive).
        gvt_to: f64,
        /// Events sent to the LP, relative to an ordinary LP (> 1).
        factor: f64,
    },
    /// Every PE's event handlers take `factor` times longer at once (a
    /// run-wide slowdown: system noise, a shared file system, an
    /// oversubscribed node): no PE stands out from its peers.
    SlowRun {
        /// Start of the window (GVT).
        gvt_from: f64,
        /// End of the window (GVT, exclusive).
        gvt_to: f64,
        /// Slowdown of every PE's handlers (> 1).
        factor: f64,
    },
    /// A PE stopped by the operating system (SIGSTOP) for `factor`
    /// seconds inside an event handler in each interval of the window:
    /// every other PE waits for it in GVT.
    PausedPe {
        /// The stopped PE.
        pe: u32,
        /// Start of the window (GVT).
        gvt_from: f64,
        /// End of the window (GVT, exclusive).
        gvt_to: f64,
        /// Seconds it stays stopped per interval (> 0).
        factor: f64,
    },
    /// An LP whose events take `factor` times longer to process: its PE's
    /// handler time grows by that LP's share of its events.
    CpuHeavyLp {
        /// The LP (global id).
        lp: u32,
        /// Start of the window (GVT).
        gvt_from: f64,
        /// End of the window (GVT, exclusive).
        gvt_to: f64,
        /// Slowdown of the LP's handlers (> 1).
        factor: f64,
    },
    /// A storm of remote events: every PE processes `factor` times its
    /// events to advance GVT one step, most of them rolled back.
    RemoteStorm {
        /// Start of the window (GVT).
        gvt_from: f64,
        /// End of the window (GVT, exclusive).
        gvt_to: f64,
        /// Events processed per GVT step, relative to the usual (> 1).
        factor: f64,
    },
}

impl RossAnomaly {
    /// The GVT window `[from, to)`.
    pub fn window(&self) -> (f64, f64) {
        match *self {
            RossAnomaly::SlowPe {
                gvt_from, gvt_to, ..
            }
            | RossAnomaly::HotspotLp {
                gvt_from, gvt_to, ..
            }
            | RossAnomaly::SlowRun {
                gvt_from, gvt_to, ..
            }
            | RossAnomaly::PausedPe {
                gvt_from, gvt_to, ..
            }
            | RossAnomaly::CpuHeavyLp {
                gvt_from, gvt_to, ..
            }
            | RossAnomaly::RemoteStorm {
                gvt_from, gvt_to, ..
            } => (gvt_from, gvt_to),
        }
    }

    /// The factor.
    pub fn factor(&self) -> f64 {
        match *self {
            RossAnomaly::SlowPe { factor, .. }
            | RossAnomaly::HotspotLp { factor, .. }
            | RossAnomaly::SlowRun { factor, .. }
            | RossAnomaly::PausedPe { factor, .. }
            | RossAnomaly::CpuHeavyLp { factor, .. }
            | RossAnomaly::RemoteStorm { factor, .. } => factor,
        }
    }

    /// `slow_pe`, `hotspot_lp`, `slow_run`, `paused_pe`, `cpu_heavy_lp` or
    /// `remote_storm`.
    pub fn kind(&self) -> &'static str {
        match self {
            RossAnomaly::SlowPe { .. } => "slow_pe",
            RossAnomaly::HotspotLp { .. } => "hotspot_lp",
            RossAnomaly::SlowRun { .. } => "slow_run",
            RossAnomaly::PausedPe { .. } => "paused_pe",
            RossAnomaly::CpuHeavyLp { .. } => "cpu_heavy_lp",
            RossAnomaly::RemoteStorm { .. } => "remote_storm",
        }
    }
}

impl RossScenario {
    /// Parses a scenario (not yet validated: overrides come first).
    pub fn from_toml(text: &str) -> anyhow::Result<Self> {
        toml::from_str(text).context("not a valid [ross] scenario")
    }

    /// LPs per PE.
    pub fn lps_per_pe(&self) -> u32 {
        self.ross.kps_per_pe * self.ross.lps_per_kp
    }

    /// LPs of the whole run.
    pub fn total_lps(&self) -> u64 {
        u64::from(self.ross.pes) * u64::from(self.lps_per_pe())
    }

    /// GVT at the end of the run.
    pub fn end_gvt(&self) -> f64 {
        f64::from(self.ross.intervals) * self.ross.gvt_step
    }

    /// The interval indices whose starting GVT lies in `[from, to)`.
    pub fn intervals_in(&self, (from, to): (f64, f64)) -> std::ops::Range<u32> {
        let step = self.ross.gvt_step;
        let first = (from / step).ceil().max(0.0) as u32;
        let mut end = (to / step).ceil().max(0.0) as u32;
        end = end.min(self.ross.intervals);
        first.min(end)..end
    }

    /// Checks every value and every anomaly against the run.
    pub fn validate(&self) -> anyhow::Result<()> {
        let r = &self.ross;
        let positive = [
            ("pes", f64::from(r.pes)),
            ("kps_per_pe", f64::from(r.kps_per_pe)),
            ("lps_per_kp", f64::from(r.lps_per_kp)),
            ("intervals", f64::from(r.intervals)),
            ("gvt_step", r.gvt_step),
            ("events_per_interval", f64::from(r.events_per_interval)),
            ("events_per_rollback", r.events_per_rollback),
            ("interval_real_s", r.interval_real_s),
            ("rt_interval_s", r.rt_interval_s),
            ("buffer_size", r.buffer_size as f64),
        ];
        for (k, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                bail!("[ross] {k} must be positive, got {v}");
            }
        }
        let fractions = [
            ("remote_fraction", r.remote_fraction),
            ("rollback_fraction", r.rollback_fraction),
            ("secondary_fraction", r.secondary_fraction),
        ];
        for (k, v) in fractions {
            if !(0.0..=0.9).contains(&v) {
                bail!("[ross] {k} must be in [0, 0.9], got {v}");
            }
        }
        let non_negative = [
            ("lookahead", r.lookahead),
            ("mean_delay", r.mean_delay),
            ("event_s", r.event_s),
            ("start_real_time", r.start_real_time),
        ];
        for (k, v) in non_negative {
            if !(v.is_finite() && v >= 0.0) {
                bail!("[ross] {k} must be finite and >= 0, got {v}");
            }
        }
        if self.total_lps() > u64::from(u32::MAX) {
            bail!("[ross] {} LPs do not fit 32-bit LP ids", self.total_lps());
        }
        if r.prefix.is_empty() || r.prefix.contains(['/', '\\']) {
            bail!(
                "[ross] prefix {:?} must be a non-empty file name part",
                r.prefix
            );
        }
        let f = &r.files;
        if !(f.gvt || f.rt || f.evtrace != TraceMode::None || f.model != ModelMode::None) {
            bail!("[ross.files] selects no file to write");
        }
        if (f.gvt || f.rt) && !(f.pe_data || f.kp_data || f.lp_data) {
            bail!("[ross.files] engine files need at least one of pe_data, kp_data, lp_data");
        }
        for (i, a) in self.anomaly.iter().enumerate() {
            self.validate_anomaly(a)
                .with_context(|| format!("[[anomaly]] #{} ({})", i + 1, a.kind()))?;
        }
        Ok(())
    }

    fn validate_anomaly(&self, a: &RossAnomaly) -> anyhow::Result<()> {
        match *a {
            RossAnomaly::SlowPe { pe, .. } | RossAnomaly::PausedPe { pe, .. }
                if pe >= self.ross.pes =>
            {
                bail!("pe {pe} is out of range: the run has {} PEs", self.ross.pes)
            }
            RossAnomaly::HotspotLp { lp, .. } | RossAnomaly::CpuHeavyLp { lp, .. }
                if u64::from(lp) >= self.total_lps() =>
            {
                bail!(
                    "lp {lp} is out of range: the run has {} LPs",
                    self.total_lps()
                )
            }
            _ => {}
        }
        // A pause is seconds; every other factor a multiplier.
        let least = if matches!(a, RossAnomaly::PausedPe { .. }) {
            0.0
        } else {
            1.0
        };
        if !(a.factor().is_finite() && a.factor() > least) {
            bail!("factor must be > {least}, got {}", a.factor());
        }
        let (from, to) = a.window();
        if !(from.is_finite() && to.is_finite() && from < to) {
            bail!("window [{from}, {to}) is empty or not finite");
        }
        if from < 0.0 || to > self.end_gvt() {
            bail!(
                "window [{from}, {to}) is outside the run's GVT range [0, {}]",
                self.end_gvt()
            );
        }
        if self.intervals_in((from, to)).is_empty() {
            bail!(
                "window [{from}, {to}) holds no interval start (GVT steps of {})",
                self.ross.gvt_step
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_scenario_is_valid_and_windows_map_to_intervals() {
        let sc = RossScenario::from_toml(DEFAULT_ROSS_SCENARIO).unwrap();
        sc.validate().unwrap();
        assert_eq!(sc.total_lps(), 64);
        assert_eq!(sc.intervals_in((40.0, 60.0)), 40..60);
        assert_eq!(sc.intervals_in((39.5, 60.5)), 40..61);
        assert_eq!(sc.intervals_in((0.0, 1e9)), 0..100);
        assert!(sc.intervals_in((10.2, 10.8)).is_empty());
    }
}
