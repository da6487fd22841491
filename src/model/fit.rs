//! The fits inside forward selection: the candidate functions' values
//! on a cluster's rows ([`Columns`], computed once and shared by every
//! fit), a design matrix from them, a fit on a fold's training rows scored
//! on its test rows, and the choice of the best candidate. Kept apart from
//! `train` so that the profiles there read as the algorithm, and the cost
//! of a selection (its inner loop) is in one place.

use nalgebra::{DMatrix, DVector};

use crate::model::folds::Fold;
use crate::model::function::Function;
use crate::model::lstsq;
use crate::model::model::{adjusted, r_squared};

/// The rows of one cluster: rotated inputs and target.
pub struct ClusterData {
    /// Rotated inputs, one row per table row of the cluster.
    pub xr: Vec<Vec<f64>>,
    /// The target.
    pub y: Vec<f64>,
    /// The source line of each row, for errors.
    pub lines: Vec<Option<usize>>,
}

/// A function's value, with Eiger 2016's overflow rule (non-finite → 0).
pub fn value(f: &Function, x: &[f64]) -> f64 {
    let v = f.eval(x);
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// The values of the candidate functions on a cluster's rows, one column
/// per function. Every fit of the selection reads its columns from here:
/// computed once for all candidates when that fits in memory (up to 16 M
/// values, 128 MB), else once per request.
pub struct Columns<'a> {
    /// The rows.
    pub data: &'a ClusterData,
    functions: Vec<Function>,
    cached: Vec<Vec<f64>>,
}

/// Values kept for all candidates at most (× 8 bytes).
const CACHE_VALUES: usize = 16 << 20;

impl<'a> Columns<'a> {
    /// The columns of `functions` on the rows.
    pub fn new(data: &'a ClusterData, functions: &[Function]) -> Columns<'a> {
        let cached = if data.y.len().saturating_mul(functions.len()) <= CACHE_VALUES {
            functions.iter().map(|f| Self::compute(data, f)).collect()
        } else {
            Vec::new()
        };
        Columns {
            data,
            functions: functions.to_vec(),
            cached,
        }
    }

    fn compute(data: &ClusterData, f: &Function) -> Vec<f64> {
        data.xr.iter().map(|x| value(f, x)).collect()
    }

    /// The column of candidate `i`.
    pub fn get(&self, i: usize) -> std::borrow::Cow<'_, [f64]> {
        match self.cached.get(i) {
            Some(c) => std::borrow::Cow::Borrowed(c),
            None => std::borrow::Cow::Owned(Self::compute(self.data, &self.functions[i])),
        }
    }
}

/// The design matrix of `columns` on `rows`.
pub fn design(columns: &[&[f64]], rows: &[usize]) -> DMatrix<f64> {
    DMatrix::from_fn(rows.len(), columns.len(), |r, c| columns[c][rows[r]])
}

/// Fits `columns` on the fold's train rows and scores them on its test
/// rows: (weights, R², adjusted R²); NaN scores when the fit fails.
pub fn fit_and_score(y: &[f64], fold: &Fold, columns: &[&[f64]]) -> (Vec<f64>, f64, f64) {
    let a = design(columns, &fold.train);
    let b = DVector::from_iterator(fold.train.len(), fold.train.iter().map(|&r| y[r]));
    let Some(sol) = lstsq::solve(&a, &b) else {
        return (vec![f64::NAN; columns.len()], f64::NAN, f64::NAN);
    };
    let t = design(columns, &fold.test);
    let pred = &t * DVector::from_column_slice(&sol.weights);
    let actual: Vec<f64> = fold.test.iter().map(|&r| y[r]).collect();
    let r2 = r_squared(&actual, pred.as_slice());
    let adj = adjusted(r2, fold.test.len(), columns.len());
    (sol.weights, r2, adj)
}

/// Scores of every available candidate added to the chosen columns, on
/// each fold: `score(fold results)` per candidate.
pub fn score_candidates<T>(
    columns: &Columns,
    chosen: &[usize],
    available: &[usize],
    folds: &[Fold],
    mut score: impl FnMut(Vec<(Vec<f64>, f64, f64)>) -> T,
) -> Vec<T> {
    let kept: Vec<std::borrow::Cow<[f64]>> = chosen.iter().map(|&i| columns.get(i)).collect();
    available
        .iter()
        .map(|&f| {
            let candidate = columns.get(f);
            let mut cols: Vec<&[f64]> = kept.iter().map(|c| c.as_ref()).collect();
            cols.push(candidate.as_ref());
            score(
                folds
                    .iter()
                    .map(|fold| fit_and_score(&columns.data.y, fold, &cols))
                    .collect(),
            )
        })
        .collect()
}

/// Forward selection over `available`: each round `score` gives every
/// candidate still available (with those already chosen) a score and a
/// result, and the first best one is taken while it beats the previous
/// round's score by more than `threshold` (a NaN score never does). Taken
/// candidates leave `available`. Returns the chosen ones in order, the last
/// score taken (`-inf` when none) and the result that came with it.
pub fn forward_select<R>(
    available: &mut Vec<usize>,
    threshold: f64,
    mut score: impl FnMut(&[usize], &[usize]) -> Vec<(f64, R)>,
) -> (Vec<usize>, f64, Option<R>) {
    let mut chosen = Vec::new();
    let (mut best, mut taken) = (f64::NEG_INFINITY, None);
    while !available.is_empty() {
        let mut results = score(&chosen, available);
        let scores: Vec<f64> = results.iter().map(|r| r.0).collect();
        let Some(i) = first_max(&scores) else { break };
        if scores[i] - best > threshold {
            chosen.push(available.remove(i));
            best = scores[i];
            taken = Some(results.swap_remove(i).1);
        } else {
            break;
        }
    }
    (chosen, best, taken)
}

/// The index of the first strict maximum (NaN never wins).
pub fn first_max(scores: &[f64]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, s) in scores.iter().enumerate() {
        if s.is_nan() {
            continue;
        }
        if best.is_none_or(|b| *s > scores[b]) {
            best = Some(i);
        }
    }
    best
}
