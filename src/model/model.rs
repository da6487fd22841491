//! A trained model and its evaluation, with Eiger's semantics (reference
//! §4): inputs taken by name in the model's order, rotated (`X @ R`), the
//! nearest cluster chosen, and the prediction `|Σ w_j f_j(x)|` — Eiger
//! takes the absolute value so that no prediction is negative.
//!
//! Also Eiger's four statistics of a model on a table (trials, MAPE, MSE,
//! RMSE), with its formulas.

use serde::{Deserialize, Serialize};

use crate::model::function::Function;
use crate::model::kmeans::nearest;
use crate::model::pca::{column_mean_std, project_into};
use crate::model::pyfmt::py_repr;
use crate::model::table::{Table, TableError};

/// One term: a function and its weight.
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    /// The function of the rotated inputs.
    pub function: Function,
    /// Its weight.
    pub weight: f64,
    /// The weight's standard error, when the training estimated it.
    pub stderr: Option<f64>,
}

/// The model of one cluster of rows.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterModel {
    /// The cluster's k-means centre, in the normalised rotated space.
    pub centre: Vec<f64>,
    /// Its terms, in the order forward selection chose them.
    pub terms: Vec<Term>,
}

/// How a model was trained (kept in the JSON form only: Eiger's text
/// format has no place for it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct TrainingInfo {
    /// `eiger-2013`, `eiger-2016` or `default`.
    pub profile: String,
    /// Minimum gain in held-out adjusted R² to add a term.
    pub threshold: f64,
    /// `none`, `kfold(K, seed S)` or `test-rows(N)`.
    pub cross_validation: String,
    /// Rows trained on.
    pub rows: usize,
    /// R² of the kept model on its scoring rows (held-out rows for Eiger's
    /// profiles, all rows after the refit for the default).
    pub r2: f64,
    /// Adjusted R² on the same rows.
    pub adjusted_r2: f64,
    /// Mean held-out adjusted R² across folds (default profile).
    pub cv_adjusted_r2: Option<f64>,
    /// Where the table came from.
    pub table: String,
}

/// A performance model.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// The input metrics, in the order of the rotation's rows.
    pub metrics: Vec<String>,
    /// The modelled metric, when known (Eiger's text format does not say).
    pub target: Option<String>,
    /// The traced function the model is of, for models trained from a
    /// provenance file (JSON form only).
    pub function: Option<String>,
    /// Means of the rotated inputs over the training rows (empty in
    /// Eiger's legacy format).
    pub means: Vec<f64>,
    /// Standard deviations of the rotated inputs (ddof 1, 0 → 1).
    pub stds: Vec<f64>,
    /// The rotation R (m rows of p), `Xr = X @ R`.
    pub rotation: Vec<Vec<f64>>,
    /// One model per cluster.
    pub clusters: Vec<ClusterModel>,
    /// How it was trained, when known.
    pub training: Option<TrainingInfo>,
}

impl Model {
    /// The number of rotated columns.
    pub fn rotated_columns(&self) -> usize {
        self.rotation.first().map_or(0, Vec::len)
    }

    /// Checks that the parts fit together: a rotation row per metric, a
    /// mean, std and centre entry per rotated column, and functions that
    /// read existing columns.
    pub fn validate(&self) -> Result<(), String> {
        let m = self.metrics.len();
        let p = self.rotated_columns();
        if m == 0 {
            return Err("the model has no input metrics".into());
        }
        if self.rotation.len() != m || self.rotation.iter().any(|r| r.len() != p) || p == 0 {
            return Err(format!(
                "the rotation is not {m} rows (one per metric) of equal, non-zero length"
            ));
        }
        if !self.means.is_empty() && (self.means.len() != p || self.stds.len() != p) {
            return Err(format!(
                "means and stds must have {p} entries (the rotated columns)"
            ));
        }
        if self.clusters.is_empty() {
            return Err("the model has no cluster block".into());
        }
        for (c, cl) in self.clusters.iter().enumerate() {
            if self.clusters.len() > 1 && cl.centre.len() != p {
                return Err(format!(
                    "cluster {c}: centre has {} entries, not {p}",
                    cl.centre.len()
                ));
            }
            for t in &cl.terms {
                if t.function.max_column().is_some_and(|i| i >= p) {
                    return Err(format!(
                        "cluster {c}: function {} reads a column past the {p} rotated columns",
                        t.function
                    ));
                }
            }
        }
        Ok(())
    }

    /// `x @ R` for one row of inputs.
    pub fn rotate(&self, x: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; self.rotated_columns()];
        project_into(x, &self.rotation, &mut out);
        out
    }

    /// The cluster whose centre is nearest to the rotated inputs `xr`
    /// normalised by `mu` and `sigma` (the first on ties).
    fn nearest_cluster(&self, xr: &[f64], mu: &[f64], sigma: &[f64]) -> usize {
        let z: Vec<f64> = xr
            .iter()
            .zip(mu)
            .zip(sigma)
            .map(|((v, m), s)| (v - m) / s)
            .collect();
        nearest(self.clusters.iter().map(|c| c.centre.as_slice()), &z)
    }

    /// The prediction of one cluster's terms on rotated inputs.
    pub fn cluster_prediction(&self, cluster: usize, xr: &[f64]) -> f64 {
        self.clusters[cluster]
            .terms
            .iter()
            .map(|t| t.weight * t.function.eval(xr))
            .sum::<f64>()
            .abs()
    }

    /// Predictions for rows of inputs (in the model's metric order). The
    /// cluster of each row is the nearest centre to its rotated inputs
    /// normalised by the evaluated rows' own mean and std, as Eiger does.
    pub fn predict_rows(&self, rows: &[Vec<f64>]) -> Vec<f64> {
        let xr: Vec<Vec<f64>> = rows.iter().map(|r| self.rotate(r)).collect();
        if self.clusters.len() == 1 {
            return xr.iter().map(|x| self.cluster_prediction(0, x)).collect();
        }
        let (mu, sigma) = column_mean_std(&xr, self.rotated_columns());
        xr.iter()
            .map(|x| self.cluster_prediction(self.nearest_cluster(x, &mu, &sigma), x))
            .collect()
    }

    /// The prediction for one row on its own (the detector's case): the
    /// cluster is chosen with the training means and stds, since a single
    /// row has no spread of its own. The model detector calls this for
    /// every execution of a modelled function, so the rotated inputs of
    /// the usual small model stay on the stack.
    pub fn predict_one(&self, x: &[f64]) -> f64 {
        let p = self.rotated_columns();
        let mut stack = [0.0f64; 16];
        let mut heap = Vec::new();
        let xr: &mut [f64] = if p <= stack.len() {
            &mut stack[..p]
        } else {
            heap.resize(p, 0.0);
            &mut heap
        };
        project_into(x, &self.rotation, xr);
        let cluster = if self.clusters.len() == 1 || self.means.is_empty() {
            0
        } else {
            self.nearest_cluster(xr, &self.means, &self.stds)
        };
        self.cluster_prediction(cluster, xr)
    }

    /// The model's inputs from a table: the columns of its metrics, by
    /// name, row by row.
    pub fn inputs_from(&self, table: &Table) -> Result<Vec<Vec<f64>>, TableError> {
        let idx: Vec<usize> = self
            .metrics
            .iter()
            .map(|m| {
                table.column_index(m).map_err(|mut e| {
                    e.message = format!(
                        "the model's input metric {m:?} is not a column of the table (columns: {})",
                        table.columns.join(", ")
                    );
                    e
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(table
            .rows
            .iter()
            .map(|r| idx.iter().map(|&i| r[i]).collect())
            .collect())
    }
}

/// Eiger's statistics of predictions against actual values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Statistics {
    /// Number of trials (rows).
    pub trials: usize,
    /// Mean absolute percent error, `100·Σ|(a−p)/a|/N` (Eiger calls it
    /// "Mean Average Percent Error").
    pub mape: f64,
    /// Mean squared error, `Σ(a−p)²/N`.
    pub mse: f64,
    /// Root mean squared error.
    pub rmse: f64,
}

impl Statistics {
    /// The statistics of `predicted` against `actual`.
    pub fn of(actual: &[f64], predicted: &[f64]) -> Statistics {
        let n = actual.len();
        let mut ape = 0.0;
        let mut se = 0.0;
        for (a, p) in actual.iter().zip(predicted) {
            ape += ((a - p) / a).abs();
            se += (a - p) * (a - p);
        }
        let mse = se / n as f64;
        Statistics {
            trials: n,
            mape: 100.0 * ape / n as f64,
            mse,
            rmse: mse.sqrt(),
        }
    }

    /// The four lines Eiger prints.
    pub fn eiger_lines(&self) -> String {
        format!(
            "Number of experiment trials: {}\nMean Average Percent Error: {}\nMean Squared Error: {}\nRoot Mean Squared Error: {}\n",
            self.trials,
            py_repr(self.mape),
            py_repr(self.mse),
            py_repr(self.rmse)
        )
    }
}

/// R² of predictions (`1 − SS_err/SS_tot`, around the actual values' mean).
pub fn r_squared(actual: &[f64], predicted: &[f64]) -> f64 {
    let n = actual.len() as f64;
    let mean = actual.iter().sum::<f64>() / n;
    let ss_tot: f64 = actual.iter().map(|a| (a - mean) * (a - mean)).sum();
    let ss_err: f64 = actual
        .iter()
        .zip(predicted)
        .map(|(a, p)| (a - p) * (a - p))
        .sum();
    1.0 - ss_err / ss_tot
}

/// Adjusted R² for `n` rows and `k` terms: `1 − (1 − R²)(n − 1)/(n − k − 1)`.
pub fn adjusted(r2: f64, n: usize, k: usize) -> f64 {
    1.0 - (1.0 - r2) * (n as f64 - 1.0) / (n as f64 - k as f64 - 1.0)
}
