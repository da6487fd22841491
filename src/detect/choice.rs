//! Which detector a run uses, with its parameters: the plain settings the
//! command line, the environment or a config file fill in, checked once
//! before the first step (the same answer on every rank, so a bad value
//! stops all ranks together).

use std::path::PathBuf;

use anyhow::bail;

use super::copod::{Copod, CopodParams};
use super::direction::{Directed, Direction};
use super::hbos::{Hbos, HbosParams};
use super::modal::{Modal, ModalParams};
use super::model::ModelDetector;
use super::size_classes::SizeClassed;
use super::sstd::{Sstd, SstdParams};
use super::Detector;

/// The detectors a run can use (see `docs/algorithms.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// Mean ± σ·stddev of the runtime (Chimbuko's SSTD).
    Sstd,
    /// Histogram-based outlier score (Chimbuko's HBOS).
    Hbos,
    /// Copula-based outlier detection (Chimbuko's COPOD).
    Copod,
    /// Robust distance to the nearest normal runtime mode.
    Modal,
    /// Ratio of the runtime to a performance model's prediction, for the
    /// functions with a model (`--models`); the others go to a fallback.
    Model,
}

impl Algorithm {
    /// Every detector of runtimes alone (all but [`Algorithm::Model`], which
    /// needs performance models and trace features).
    pub const ALL: [Algorithm; 4] = [
        Algorithm::Modal,
        Algorithm::Sstd,
        Algorithm::Hbos,
        Algorithm::Copod,
    ];

    /// The name `--algorithm` takes (lower case).
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Sstd => "sstd",
            Algorithm::Hbos => "hbos",
            Algorithm::Copod => "copod",
            Algorithm::Modal => "modal",
            Algorithm::Model => "model",
        }
    }
}

impl std::fmt::Display for Algorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Algorithm {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Algorithm::ALL
            .into_iter()
            .chain([Algorithm::Model])
            .find(|a| a.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                let names: Vec<&str> = Algorithm::ALL.iter().map(|a| a.name()).collect();
                format!(
                    "unknown algorithm {s:?} (one of {}, model)",
                    names.join(", ")
                )
            })
    }
}

/// The detector and its parameters (the `run` flags of the same names).
#[derive(Debug, Clone, PartialEq)]
pub struct DetectorSettings {
    /// Which detector.
    pub algorithm: Algorithm,
    /// SSTD: anomalies lie outside mean ± sigma·stddev.
    pub sigma: f64,
    /// HBOS and COPOD: score threshold as a fraction of the score range.
    pub hbos_threshold: f64,
    /// HBOS: bins of the labelling histogram.
    pub hbos_max_bins: usize,
    /// modal: robust distance beyond which a runtime is anomalous.
    pub modal_threshold: f64,
    /// modal: share of a function's executions a mode needs to be normal.
    pub modal_min_share: f64,
    /// modal: smallest scale of a mode, in ln(1 + µs).
    pub modal_min_spread: f64,
    /// A function is labelled once the global model holds this many of its
    /// executions.
    pub min_count: u64,
    /// Which side of the model an anomaly must lie on (`--direction`).
    pub direction: Direction,
    /// model: the performance models (a directory with `index.json`, or
    /// one JSON model naming its function).
    pub models: Option<PathBuf>,
    /// model: the detector of the functions without a model.
    pub model_fallback: Algorithm,
}

impl Default for DetectorSettings {
    fn default() -> Self {
        DetectorSettings {
            algorithm: Algorithm::Modal,
            sigma: 6.0,
            hbos_threshold: 0.99,
            hbos_max_bins: 200,
            modal_threshold: 6.0,
            modal_min_share: 0.05,
            modal_min_spread: 0.025,
            min_count: 2,
            direction: Direction::Slow,
            models: None,
            model_fallback: Algorithm::Modal,
        }
    }
}

impl DetectorSettings {
    /// The detector these settings describe, with its parameters checked,
    /// keeping only the anomalies on the side of `direction`.
    pub fn build(&self) -> anyhow::Result<Box<dyn Detector>> {
        let detector = self.build_two_sided()?;
        let detector = match self.direction {
            Direction::Both => detector,
            d => Box::new(Directed::new(detector, d)),
        };
        // Calls with messages are judged by their size class (the model
        // detector judges by its performance models instead).
        Ok(if detector.predictor().is_some() {
            detector
        } else {
            Box::new(SizeClassed::new(detector))
        })
    }

    /// The detector alone: Chimbuko's two-sided labels.
    fn build_two_sided(&self) -> anyhow::Result<Box<dyn Detector>> {
        let finite_positive = |v: f64, flag: &str| {
            if v.is_finite() && v > 0.0 {
                Ok(v)
            } else {
                Err(anyhow::anyhow!(
                    "--{flag} must be a positive number, got {v}"
                ))
            }
        };
        let share = |v: f64| {
            if (0.0..=1.0).contains(&v) {
                Ok(v)
            } else {
                Err(anyhow::anyhow!(
                    "--modal-min-share must lie in [0, 1], got {v}"
                ))
            }
        };
        Ok(match self.algorithm {
            Algorithm::Sstd => Box::new(Sstd::new(SstdParams {
                sigma: self.sigma,
                min_count: self.min_count,
            })),
            Algorithm::Hbos => {
                if self.hbos_max_bins == 0 {
                    bail!("--hbos-max-bins must be at least 1");
                }
                Box::new(Hbos::with_params(
                    HbosParams {
                        threshold: self.hbos_threshold,
                        max_bins: self.hbos_max_bins,
                    },
                    self.min_count,
                ))
            }
            Algorithm::Copod => Box::new(Copod::with_params(
                CopodParams {
                    threshold: self.hbos_threshold,
                },
                self.min_count,
            )),
            Algorithm::Modal => Box::new(Modal::with_params(
                ModalParams {
                    threshold: finite_positive(self.modal_threshold, "modal-threshold")?,
                    min_share: share(self.modal_min_share)?,
                    min_spread: finite_positive(self.modal_min_spread, "modal-min-spread")?,
                },
                self.min_count,
            )),
            Algorithm::Model => {
                let Some(path) = &self.models else {
                    bail!("--algorithm model needs --models FILE_OR_DIR (the performance models)");
                };
                if self.model_fallback == Algorithm::Model {
                    bail!("--model-fallback must be one of modal, sstd, hbos, copod");
                }
                let fallback = DetectorSettings {
                    algorithm: self.model_fallback,
                    ..self.clone()
                }
                .build_two_sided()?;
                Box::new(ModelDetector::load(
                    path,
                    finite_positive(self.sigma, "sigma")?,
                    self.min_count,
                    fallback,
                )?)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for a in Algorithm::ALL {
            assert_eq!(a.name().parse::<Algorithm>(), Ok(a));
        }
        assert_eq!("SSTD".parse::<Algorithm>(), Ok(Algorithm::Sstd));
        assert!("foo".parse::<Algorithm>().unwrap_err().contains("modal"));
    }

    #[test]
    fn bad_parameters_are_refused() {
        let bad = DetectorSettings {
            modal_min_share: 2.0,
            ..Default::default()
        };
        assert!(bad.build().is_err());
        let bins = DetectorSettings {
            algorithm: Algorithm::Hbos,
            hbos_max_bins: 0,
            ..Default::default()
        };
        assert!(bins.build().is_err());
    }
}
