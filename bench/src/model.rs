//! Performance models: training time of `model train` against the rows
//! and the predictors of the table, in process on the release build, for
//! the default profile (5 folds) and Eiger 2016's (no cross-validation).
//! The tables are generated: inputs uniform over three decades, the target
//! a known law of the first two inputs with 2 % noise, the other inputs
//! noise that selection must leave out.

use std::time::Instant;

use chimbuko_mpi::model::folds::SplitMix;
use chimbuko_mpi::model::table::Table;
use chimbuko_mpi::model::train::{train, Profile, TrainOptions};

use crate::harness::{f, Bench};
use crate::plot;

/// A table of `rows` rows and `predictors` inputs.
fn table(rows: usize, predictors: usize, seed: u64) -> Table {
    let mut rng = SplitMix::new(seed);
    let mut columns: Vec<String> = (0..predictors).map(|i| format!("x{i}")).collect();
    columns.push("runtime".into());
    let mut t = Table::new(columns, "generated");
    for _ in 0..rows {
        let x: Vec<f64> = (0..predictors)
            .map(|_| 10f64.powf(rng.uniform() * 3.0))
            .collect();
        let law = 3.0 + 0.002 * x[0] * x[0] + if predictors > 1 { 5.0 * x[1] } else { 0.0 };
        let noise = 1.0 + 0.02 * (rng.uniform() * 2.0 - 1.0) * 1.7320508;
        let mut row = x;
        row.push(law * noise);
        t.rows.push(row);
    }
    t
}

/// Seconds to train, and the number of terms chosen.
fn time_training(t: &Table, profile: Profile) -> anyhow::Result<(f64, usize)> {
    let opts = TrainOptions::new("runtime", profile);
    let start = Instant::now();
    let trained = train(t, &opts).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok((
        start.elapsed().as_secs_f64(),
        trained.model.clusters[0].terms.len(),
    ))
}

/// The section.
pub(crate) fn model_section(b: &mut Bench) -> anyhow::Result<()> {
    let (row_counts, predictor_counts, wide_rows): (Vec<usize>, Vec<usize>, usize) = if b.quick {
        (vec![1_000, 10_000], vec![1, 2, 4], 1_000)
    } else {
        (
            vec![1_000, 10_000, 100_000, 1_000_000],
            vec![1, 2, 4, 8, 16],
            10_000,
        )
    };
    b.section(
        "Performance models: training time",
        "`model train` in process (release build), on generated tables whose target is \
         `3 + 0.002·x0² + 5·x1` with 2 % noise; further inputs are noise. The default profile \
         scores every candidate on 5 folds; eiger-2016 trains and scores on all rows. The pool \
         grows with the predictors p: 1 + 7p unary functions, p(p+1)/2 products and p(p−1) \
         quotients (489 candidates at p = 16).",
    );
    let mut rows_out = Vec::new();
    let mut series_default = Vec::new();
    let mut series_2016 = Vec::new();
    for &n in &row_counts {
        let t = table(n, 2, 7);
        let (d, dk) = time_training(&t, Profile::Default)?;
        let (e, ek) = time_training(&t, Profile::Eiger2016)?;
        series_default.push((n as f64, d));
        series_2016.push((n as f64, e));
        rows_out.push(vec![
            n.to_string(),
            "2".into(),
            f(d, 3),
            dk.to_string(),
            f(e, 3),
            ek.to_string(),
        ]);
    }
    for &p in &predictor_counts {
        let t = table(wide_rows, p, 11);
        let (d, dk) = time_training(&t, Profile::Default)?;
        let (e, ek) = time_training(&t, Profile::Eiger2016)?;
        rows_out.push(vec![
            wide_rows.to_string(),
            p.to_string(),
            f(d, 3),
            dk.to_string(),
            f(e, 3),
            ek.to_string(),
        ]);
    }
    b.table(
        &[
            "rows",
            "predictors",
            "default: s",
            "default: terms",
            "eiger-2016: s",
            "eiger-2016: terms",
        ],
        &rows_out,
    );
    plot::lines(
        &b.png("model-training"),
        "model train: seconds against rows (2 predictors)",
        "rows",
        "seconds",
        true,
        &[
            ("default (5 folds)".into(), series_default),
            ("eiger-2016 (no CV)".into(), series_2016),
        ],
    )?;
    b.image("model-training.png", "training time against rows");
    Ok(())
}
