//! Cross-validation splits of a table's rows: none (train = test = all
//! rows, Eiger 2016's default, deterministic), k shuffled folds from a seed
//! (the layout of Eiger 2013's scikit-learn: `n/k` rows in each of the
//! first k − 1 test folds, the rest in the last), or test rows given
//! explicitly (how Eiger's golden models are reproduced).

use crate::util::hash::splitmix64;

/// One split: rows to fit on and rows to score on (indices into the rows
/// being modelled).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fold {
    /// Rows the weights are fitted on.
    pub train: Vec<usize>,
    /// Rows the fit is scored on.
    pub test: Vec<usize>,
}

/// How rows are split for cross-validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CrossValidation {
    /// One fold, train = test = all rows.
    None,
    /// K shuffled folds (seeded).
    KFold {
        /// Number of folds (≥ 2).
        k: usize,
        /// Seed of the shuffle.
        seed: u64,
    },
    /// One fold with these test rows (0-based); the others train.
    TestRows(Vec<usize>),
}

impl CrossValidation {
    /// The folds over `n` rows; an error when the split is impossible.
    pub fn folds(&self, n: usize) -> Result<Vec<Fold>, String> {
        match self {
            CrossValidation::None => Ok(vec![Fold {
                train: (0..n).collect(),
                test: (0..n).collect(),
            }]),
            CrossValidation::KFold { k, seed } => {
                if *k < 2 || *k > n {
                    return Err(format!(
                        "{k} folds cannot split {n} rows (need 2 ≤ folds ≤ rows)"
                    ));
                }
                let order = shuffled(n, *seed);
                let size = n / k;
                Ok((0..*k)
                    .map(|f| {
                        let end = if f + 1 == *k { n } else { (f + 1) * size };
                        let mut test: Vec<usize> = order[f * size..end].to_vec();
                        test.sort_unstable();
                        let train = complement(n, &test);
                        Fold { train, test }
                    })
                    .collect())
            }
            CrossValidation::TestRows(rows) => {
                let mut test = rows.clone();
                test.sort_unstable();
                test.dedup();
                if let Some(bad) = test.iter().find(|r| **r >= n) {
                    return Err(format!(
                        "test row {bad} is past the table's {n} rows (rows count from 0)"
                    ));
                }
                if test.is_empty() || test.len() == n {
                    return Err(
                        "the test rows must leave rows to train on, and be at least one".into(),
                    );
                }
                Ok(vec![Fold {
                    train: complement(n, &test),
                    test,
                }])
            }
        }
    }
}

/// The rows of `0..n` not in (sorted) `test`.
fn complement(n: usize, test: &[usize]) -> Vec<usize> {
    (0..n).filter(|r| test.binary_search(r).is_err()).collect()
}

/// A seeded random generator (SplitMix64: small, fast, and the same on
/// every platform, so a seed gives the same folds and clusters anywhere).
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    /// A generator from a seed.
    pub fn new(seed: u64) -> SplitMix {
        SplitMix(seed ^ 0x6A09_E667_F3BC_C908)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        splitmix64(&mut self.0)
    }

    /// Uniform in `0..n` (n > 0), without modulo bias worth noting for
    /// table sizes (128-bit multiply).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `0..n` in a seeded random order (Fisher–Yates).
pub fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut rng = SplitMix::new(seed);
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = rng.below(i + 1);
        v.swap(i, j);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kfold_layout_and_cover() {
        let folds = CrossValidation::KFold { k: 4, seed: 7 }.folds(50).unwrap();
        let sizes: Vec<usize> = folds.iter().map(|f| f.test.len()).collect();
        assert_eq!(sizes, [12, 12, 12, 14]);
        let mut all: Vec<usize> = folds.iter().flat_map(|f| f.test.clone()).collect();
        all.sort_unstable();
        assert_eq!(all, (0..50).collect::<Vec<_>>());
        for f in &folds {
            assert_eq!(f.train.len() + f.test.len(), 50);
        }
        assert_eq!(
            folds,
            CrossValidation::KFold { k: 4, seed: 7 }.folds(50).unwrap()
        );
        assert_ne!(
            folds,
            CrossValidation::KFold { k: 4, seed: 8 }.folds(50).unwrap()
        );
    }

    #[test]
    fn explicit_rows_and_errors() {
        let f = CrossValidation::TestRows(vec![3, 1]).folds(5).unwrap();
        assert_eq!(f[0].test, [1, 3]);
        assert_eq!(f[0].train, [0, 2, 4]);
        assert!(CrossValidation::TestRows(vec![9]).folds(5).is_err());
        assert!(CrossValidation::KFold { k: 6, seed: 0 }.folds(5).is_err());
    }
}
