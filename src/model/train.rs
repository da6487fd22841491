//! Training a model from a table: forward selection of functions by
//! held-out adjusted R², in three profiles.
//!
//! - `eiger-2013` reproduces the algorithm that produced Eiger's golden
//!   models (reference §2), including its flaws: one pool shared by all
//!   folds (a function chosen by an earlier fold is missing from later
//!   ones), the kept model is the fold with the best test R², and its
//!   weights are that fold's training fit. 4 shuffled folds by default.
//! - `eiger-2016` is Eiger's last version: no cross-validation by default
//!   (train = test = all rows), the extended pool with quotients, and a
//!   function that overflows gives 0.
//! - `default`, the project's own: a fresh pool per fold; each candidate is
//!   scored by its mean held-out adjusted R² over the folds, so one
//!   selection is made from all of them; the chosen terms are refitted on
//!   all rows; each weight's standard error is reported; functions that
//!   are not finite on the rows are left out instead of failing or
//!   counting as 0. 5 seeded folds by default (none below 10 rows).
//!
//! `docs/models.md` says why the default differs.

use nalgebra::DVector;

use crate::model::fit::{design, forward_select, score_candidates, ClusterData, Columns};
use crate::model::folds::{CrossValidation, Fold};
use crate::model::function::{pool, Function, PoolFamilies, PoolOrder};
use crate::model::kmeans::{kmeans, Clusters};
use crate::model::lstsq;
use crate::model::model::{adjusted, r_squared, ClusterModel, Model, Term, TrainingInfo};
use crate::model::pca::{column_mean_std, project_into, rotation};
use crate::model::table::{Table, TableError};

/// A training algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// Eiger as of 2013 (the golden models).
    Eiger2013,
    /// Eiger as of 2016 (v4.0).
    Eiger2016,
    /// The project's default.
    Default,
}

impl Profile {
    /// The profile's name on the command line and in files.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Eiger2013 => "eiger-2013",
            Profile::Eiger2016 => "eiger-2016",
            Profile::Default => "default",
        }
    }

    /// The profile of a name (case-insensitive).
    pub fn parse(s: &str) -> Result<Profile, String> {
        match s.to_ascii_lowercase().as_str() {
            "eiger-2013" | "eiger2013" => Ok(Profile::Eiger2013),
            "eiger-2016" | "eiger2016" => Ok(Profile::Eiger2016),
            "default" => Ok(Profile::Default),
            _ => Err(format!(
                "unknown profile {s:?} (eiger-2013, eiger-2016, default)"
            )),
        }
    }

    fn pool_order(self) -> PoolOrder {
        match self {
            Profile::Eiger2013 => PoolOrder::Eiger2013,
            Profile::Eiger2016 => PoolOrder::Eiger2016,
            Profile::Default => PoolOrder::Default,
        }
    }

    /// The threshold when none is given: Eiger's 0 (add a term while the
    /// held-out score improves at all); the default profile asks for a
    /// gain of 0.001 so that noise does not buy terms.
    pub fn default_threshold(self) -> f64 {
        match self {
            Profile::Default => 1e-3,
            _ => 0.0,
        }
    }

    /// The cross-validation when none is given.
    pub fn default_cross_validation(self, rows: usize, seed: u64) -> CrossValidation {
        match self {
            Profile::Eiger2013 if rows >= 4 => CrossValidation::KFold { k: 4, seed },
            Profile::Default if rows >= 10 => CrossValidation::KFold { k: 5, seed },
            _ => CrossValidation::None,
        }
    }
}

/// What to train.
#[derive(Debug, Clone)]
pub struct TrainOptions {
    /// The modelled column.
    pub target: String,
    /// The input columns; `None`: every column but the target and the id
    /// columns.
    pub predictors: Option<Vec<String>>,
    /// Columns that identify rows and are never inputs unless named.
    pub id_columns: Vec<String>,
    /// The algorithm.
    pub profile: Profile,
    /// Minimum gain in held-out adjusted R² for one more term (`None`: the
    /// profile's default).
    pub threshold: Option<f64>,
    /// Number of k-means clusters, each with its own model.
    pub clusters: usize,
    /// Cross-validation (`None`: the profile's default).
    pub cross_validation: Option<CrossValidation>,
    /// Seed of the folds and the clusters.
    pub seed: u64,
    /// Families of the pool.
    pub families: PoolFamilies,
}

impl TrainOptions {
    /// Options for a target with everything else at its default.
    pub fn new(target: &str, profile: Profile) -> TrainOptions {
        TrainOptions {
            target: target.to_owned(),
            predictors: None,
            id_columns: vec!["trial_id".into(), "id".into()],
            profile,
            threshold: None,
            clusters: 1,
            cross_validation: None,
            seed: 0,
            families: PoolFamilies::default(),
        }
    }
}

/// What one fold's selection found.
#[derive(Debug, Clone, PartialEq)]
pub struct FoldReport {
    /// Cluster.
    pub cluster: usize,
    /// Fold.
    pub fold: usize,
    /// Functions in the order chosen.
    pub functions: Vec<Function>,
    /// Test R² of the fold's final selection.
    pub r2: f64,
    /// Test adjusted R².
    pub adjusted_r2: f64,
}

/// A trained model and how it was chosen.
#[derive(Debug, Clone)]
pub struct Trained {
    /// The model.
    pub model: Model,
    /// Each fold's selection (Eiger's profiles) or the shared selection
    /// (default profile, fold = usize::MAX).
    pub folds: Vec<FoldReport>,
}

/// Trains a model on a table.
pub fn train(table: &Table, opts: &TrainOptions) -> Result<Trained, TableError> {
    let (names, xcols, ycol) = resolve_columns(table, opts)?;
    let n = table.rows.len();
    check_trainable(table, &names, &xcols)?;
    let x: Vec<Vec<f64>> = table
        .rows
        .iter()
        .map(|r| xcols.iter().map(|&c| r[c]).collect())
        .collect();
    let y: Vec<f64> = table.rows.iter().map(|r| r[ycol]).collect();
    let m = names.len();
    let rot = rotation(&x, m);
    let p = rot[0].len();
    let xr: Vec<Vec<f64>> = x
        .iter()
        .map(|row| {
            let mut out = vec![0.0; p];
            project_into(row, &rot, &mut out);
            out
        })
        .collect();
    let (means, stds) = column_mean_std(&xr, p);
    if opts.clusters == 0 || opts.clusters > n {
        return Err(table.error(
            None,
            None,
            format!("{} clusters for {n} rows", opts.clusters),
        ));
    }
    let clusters = kmeans(&standardised(&xr, &means, &stds), opts.clusters, opts.seed);
    let threshold = opts.threshold.unwrap_or(opts.profile.default_threshold());
    let functions = pool(p, opts.profile.pool_order(), opts.families);
    let fits = fit_clusters(table, opts, &clusters, &xr, &y, &functions, threshold)?;
    let (r2, adjusted_r2, cv_adjusted_r2) = fits.summary;
    let model = Model {
        metrics: names,
        target: Some(opts.target.clone()),
        function: None,
        means,
        stds,
        rotation: rot,
        clusters: fits.blocks,
        training: Some(TrainingInfo {
            profile: opts.profile.name().into(),
            threshold,
            cross_validation: fits.cv_text,
            rows: n,
            r2,
            adjusted_r2,
            cv_adjusted_r2,
            table: table.source.clone(),
        }),
    };
    Ok(Trained {
        model,
        folds: fits.reports,
    })
}

/// Fails unless the table can be trained on: at least 2 rows, and no
/// predictor (`names`, in columns `xcols`) that is the same in every row
/// (a singular design).
fn check_trainable(table: &Table, names: &[String], xcols: &[usize]) -> Result<(), TableError> {
    let n = table.rows.len();
    if n < 2 {
        return Err(table.error(None, None, format!("{n} rows: a model needs at least 2")));
    }
    for (name, &c) in names.iter().zip(xcols) {
        let first = table.rows[0][c];
        if table.rows.iter().all(|r| r[c] == first) {
            return Err(table.error(
                None,
                Some(name),
                format!(
                    "constant column (every row is {first}): a singular design; leave it out of the predictors"
                ),
            ));
        }
    }
    Ok(())
}

/// The rows with each column centred on `means` and scaled by `stds`, so
/// that k-means weighs every column alike.
fn standardised(xr: &[Vec<f64>], means: &[f64], stds: &[f64]) -> Vec<Vec<f64>> {
    xr.iter()
        .map(|row| {
            row.iter()
                .zip(means)
                .zip(stds)
                .map(|((v, m), s)| (v - m) / s)
                .collect()
        })
        .collect()
}

/// What the selection made of every cluster.
struct ClusterFits {
    /// Each cluster's centre and terms.
    blocks: Vec<ClusterModel>,
    /// Every fold's selection, cluster after cluster.
    reports: Vec<FoldReport>,
    /// R², adjusted R² and cross-validated adjusted R² of cluster 0.
    summary: (f64, f64, Option<f64>),
    /// The cross-validation, in words (that of the last cluster).
    cv_text: String,
}

/// Selects and fits each cluster's terms from `functions` on its rows of
/// `xr` (rotated predictors) and `y`, with the profile's selection and
/// cross-validation.
fn fit_clusters(
    table: &Table,
    opts: &TrainOptions,
    clusters: &Clusters,
    xr: &[Vec<f64>],
    y: &[f64],
    functions: &[Function],
    threshold: f64,
) -> Result<ClusterFits, TableError> {
    let n = table.rows.len();
    let mut fits = ClusterFits {
        blocks: Vec::new(),
        reports: Vec::new(),
        summary: (f64::NAN, f64::NAN, None),
        cv_text: String::new(),
    };
    for (c, centre) in clusters.centres.iter().enumerate() {
        let rows: Vec<usize> = (0..n).filter(|&r| clusters.assignment[r] == c).collect();
        let data = ClusterData {
            xr: rows.iter().map(|&r| xr[r].clone()).collect(),
            y: rows.iter().map(|&r| y[r]).collect(),
            lines: rows.iter().map(|&r| table.line_of(r)).collect(),
        };
        let cv = opts
            .cross_validation
            .clone()
            .unwrap_or_else(|| opts.profile.default_cross_validation(rows.len(), opts.seed));
        fits.cv_text = describe_cv(&cv);
        let folds = cv
            .folds(rows.len())
            .map_err(|why| table.error(None, None, format!("cluster {c}: {why}")))?;
        let candidates = usable_functions(&data, functions, opts.profile, table)?;
        let pool = Pool {
            data: &data,
            functions: &candidates,
            folds: &folds,
            threshold,
            cluster: c,
        };
        let (terms, fold_reports, stats) = match opts.profile {
            Profile::Eiger2013 | Profile::Eiger2016 => eiger_selection(&pool),
            Profile::Default => default_selection(&pool),
        };
        if c == 0 {
            fits.summary = stats;
        }
        fits.reports.extend(fold_reports);
        fits.blocks.push(ClusterModel {
            centre: centre.clone(),
            terms,
        });
    }
    Ok(fits)
}

/// The cross-validation in words, for the model's training record.
fn describe_cv(cv: &CrossValidation) -> String {
    match cv {
        CrossValidation::None => "none".into(),
        CrossValidation::KFold { k, seed } => format!("kfold({k}, seed {seed})"),
        CrossValidation::TestRows(r) => format!("test-rows({})", r.len()),
    }
}

/// The predictor names, their columns, and the target's column.
fn resolve_columns(
    table: &Table,
    opts: &TrainOptions,
) -> Result<(Vec<String>, Vec<usize>, usize), TableError> {
    if table.rows.is_empty() {
        return Err(table.error(None, None, "empty table: no rows to train on"));
    }
    let ycol = table.column_index(&opts.target)?;
    let names: Vec<String> = match &opts.predictors {
        Some(list) => list.clone(),
        None => table
            .columns
            .iter()
            .filter(|c| **c != opts.target && !opts.id_columns.iter().any(|i| i == *c))
            .cloned()
            .collect(),
    };
    if names.is_empty() {
        return Err(table.error(
            None,
            None,
            "no predictor columns: the table has only the target",
        ));
    }
    if names.contains(&opts.target) {
        return Err(table.error(
            None,
            Some(&opts.target),
            "the target cannot also be a predictor",
        ));
    }
    let cols = names
        .iter()
        .map(|n| table.column_index(n))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((names, cols, ycol))
}

/// The pool functions usable on the cluster's rows, under the profile's
/// rule for values that are not finite: `eiger-2013` fails (Eiger raised),
/// `eiger-2016` keeps them (they evaluate as 0), the default drops them.
fn usable_functions(
    data: &ClusterData,
    functions: &[Function],
    profile: Profile,
    table: &Table,
) -> Result<Vec<Function>, TableError> {
    let mut out = Vec::new();
    for f in functions {
        let bad = data.xr.iter().position(|x| !f.eval(x).is_finite());
        match (bad, profile) {
            (None, _) | (Some(_), Profile::Eiger2016) => out.push(*f),
            (Some(r), Profile::Eiger2013) => {
                return Err(table.error(
                    data.lines[r],
                    None,
                    format!("function {f} overflows on this row (eiger-2013 stops, as Eiger did; eiger-2016 would count it as 0)"),
                ))
            }
            (Some(_), Profile::Default) => {}
        }
    }
    Ok(out)
}

type Selection = (Vec<Term>, Vec<FoldReport>, (f64, f64, Option<f64>));

/// What a selection chooses from: one cluster's rows, the candidate
/// functions, the folds and the least gain in score that adds a function.
struct Pool<'a> {
    data: &'a ClusterData,
    functions: &'a [Function],
    folds: &'a [Fold],
    threshold: f64,
    cluster: usize,
}

impl<'a> Pool<'a> {
    /// The candidates' columns, and every candidate available.
    fn columns(&self) -> (Columns<'a>, Vec<usize>) {
        let columns = Columns::new(self.data, self.functions);
        (columns, (0..self.functions.len()).collect())
    }
}

/// Eiger's selection: per fold, forward selection from the shared pool;
/// the fold with the best test R² wins.
fn eiger_selection(pool: &Pool<'_>) -> Selection {
    let (functions, cluster) = (pool.functions, pool.cluster);
    // One pool for all folds, as Eiger's code had it (see the module doc).
    let (columns, mut available) = pool.columns();
    let mut best: Option<(f64, f64, Vec<Term>)> = None;
    let mut reports = Vec::new();
    for (k, fold) in pool.folds.iter().enumerate() {
        let one_fold = std::slice::from_ref(fold);
        let (chosen, best_adj, taken) = forward_select(&mut available, pool.threshold, |c, a| {
            score_candidates(&columns, c, a, one_fold, |mut r| {
                let (w, r2, adj) = r.remove(0);
                (adj, (w, r2))
            })
        });
        let (weights, r2) = taken.unwrap_or((Vec::new(), 0.0));
        let chosen: Vec<Function> = chosen.iter().map(|&i| functions[i]).collect();
        reports.push(FoldReport {
            cluster,
            fold: k,
            functions: chosen.clone(),
            r2,
            adjusted_r2: best_adj,
        });
        let terms: Vec<Term> = chosen
            .iter()
            .zip(&weights)
            .map(|(f, w)| Term {
                function: *f,
                weight: *w,
                stderr: None,
            })
            .collect();
        if best.as_ref().is_none_or(|b| r2 > b.0) {
            best = Some((r2, best_adj, terms));
        }
    }
    let (r2, adj, terms) = best.unwrap_or((0.0, f64::NAN, Vec::new()));
    (terms, reports, (r2, adj, None))
}

/// The default selection: candidates scored by their mean held-out
/// adjusted R² over all folds, then a refit on all rows.
fn default_selection(pool: &Pool<'_>) -> Selection {
    let (data, functions) = (pool.data, pool.functions);
    let (columns, mut available) = pool.columns();
    let (chosen, best, _) = forward_select(&mut available, pool.threshold, |c, a| {
        score_candidates(&columns, c, a, pool.folds, |r| {
            (r.iter().map(|x| x.2).sum::<f64>() / r.len() as f64, ())
        })
    });
    // The refit on all rows gives the weights, their errors and the R².
    let all: Vec<usize> = (0..data.y.len()).collect();
    let kept: Vec<std::borrow::Cow<[f64]>> = chosen.iter().map(|&i| columns.get(i)).collect();
    let cols: Vec<&[f64]> = kept.iter().map(|c| c.as_ref()).collect();
    let a = design(&cols, &all);
    let sol = lstsq::solve(&a, &DVector::from_column_slice(&data.y));
    let (r2, adj) = match &sol {
        Some(s) if !chosen.is_empty() => {
            let pred = &a * DVector::from_column_slice(&s.weights);
            let r2 = r_squared(&data.y, pred.as_slice());
            (r2, adjusted(r2, all.len(), chosen.len()))
        }
        _ => (0.0, f64::NAN),
    };
    let chosen: Vec<Function> = chosen.iter().map(|&i| functions[i]).collect();
    let terms = match sol {
        Some(s) => chosen
            .iter()
            .enumerate()
            .map(|(i, f)| Term {
                function: *f,
                weight: s.weights[i],
                stderr: Some(s.stderr[i]),
            })
            .collect(),
        None => Vec::new(),
    };
    let report = FoldReport {
        cluster: pool.cluster,
        fold: usize::MAX,
        functions: chosen,
        r2,
        adjusted_r2: adj,
    };
    let cv = if best.is_finite() { Some(best) } else { None };
    (terms, vec![report], (r2, adj, cv))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fit::first_max;

    fn table(f: impl Fn(f64) -> f64) -> Table {
        let mut t = Table::new(vec!["n".into(), "t".into()], "synthetic");
        for i in 1..=40 {
            let n = i as f64 * 10.0;
            t.rows.push(vec![n, f(n)]);
            t.lines.push(i + 1);
        }
        t
    }

    #[test]
    fn default_profile_recovers_a_known_law() {
        // t = 3 + 0.5 n + 0.01 n²: the constant, n and n² with their weights.
        let t = table(|n| 3.0 + 0.5 * n + 0.01 * n * n);
        let mut opts = TrainOptions::new("t", Profile::Default);
        opts.threshold = Some(0.0);
        let tr = train(&t, &opts).unwrap();
        let terms = &tr.model.clusters[0].terms;
        let mut enc: Vec<String> = terms.iter().map(|t| t.function.encode()).collect();
        enc.sort();
        assert_eq!(enc, ["0", "1 0 1", "1 0 2"]);
        for t in terms {
            let want = match t.function.encode().as_str() {
                "0" => 3.0,
                "1 0 1" => 0.5,
                _ => 0.01,
            };
            assert!((t.weight - want).abs() < 1e-9 * want.max(1.0), "{t:?}");
        }
        let info = tr.model.training.unwrap();
        assert!(info.r2 > 0.999999);
    }

    #[test]
    fn constant_and_missing_columns_are_refused() {
        let mut t = table(|n| n);
        t.columns.push("c".into());
        for r in &mut t.rows {
            r.push(5.0);
        }
        let e = train(&t, &TrainOptions::new("t", Profile::Default)).unwrap_err();
        assert!(
            e.to_string().contains("column \"c\"") && e.to_string().contains("constant"),
            "{e}"
        );
        let e = train(&t, &TrainOptions::new("nope", Profile::Default)).unwrap_err();
        assert!(e.to_string().contains("nope"), "{e}");
        let empty = Table::new(vec!["a".into(), "t".into()], "e.csv");
        assert!(train(&empty, &TrainOptions::new("t", Profile::Default)).is_err());
    }

    #[test]
    fn first_max_skips_nan_and_keeps_the_first_tie() {
        assert_eq!(first_max(&[f64::NAN, 1.0, 2.0, 2.0]), Some(2));
        assert_eq!(first_max(&[f64::NAN]), None);
    }
}
