//! Least squares by singular value decomposition, as Eiger solves it
//! (numpy's `lstsq` with the machine-epsilon cut-off): singular values at
//! or below `ε · σ_max` count as zero, so a rank-deficient design gets the
//! minimum-norm solution instead of a failure. The SVD is `nalgebra`'s.
//!
//! Also the weights' standard errors for the default profile:
//! `σ² · (AᵀA)⁻¹` with `σ² = RSS / (n − rank)`, computed from the same SVD
//! (`V · diag(1/s²) · Vᵀ`), so a near-singular design shows as large
//! uncertainties instead of silently wild weights.

use nalgebra::{DMatrix, DVector};

/// A least-squares solution.
#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    /// The weights, one per column of the design.
    pub weights: Vec<f64>,
    /// The numerical rank of the design.
    pub rank: usize,
    /// Standard error of each weight (NaN where it cannot be estimated:
    /// no residual degrees of freedom, or a rank-deficient design).
    pub stderr: Vec<f64>,
}

/// Solves `min ‖A w − b‖` for `A` (rows × cols) and `b`; `None` when the
/// decomposition does not converge or the input is not finite.
pub fn solve(a: &DMatrix<f64>, b: &DVector<f64>) -> Option<Solution> {
    if a.ncols() == 0 || a.nrows() == 0 || a.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let svd = nalgebra::linalg::SVD::try_new(a.clone(), true, true, f64::EPSILON, 0)?;
    let smax = svd.singular_values.iter().cloned().fold(0.0, f64::max);
    let cutoff = f64::EPSILON * smax;
    let rank = svd.singular_values.iter().filter(|s| **s > cutoff).count();
    let w = svd.solve(b, cutoff).ok()?;
    let weights: Vec<f64> = w.iter().copied().collect();
    let stderr = standard_errors(a, b, &w, &svd, cutoff, rank);
    Some(Solution {
        weights,
        rank,
        stderr,
    })
}

/// `sqrt(diag(σ² · V diag(1/s²) Vᵀ))`, NaN where not estimable.
fn standard_errors(
    a: &DMatrix<f64>,
    b: &DVector<f64>,
    w: &DVector<f64>,
    svd: &nalgebra::linalg::SVD<f64, nalgebra::Dyn, nalgebra::Dyn>,
    cutoff: f64,
    rank: usize,
) -> Vec<f64> {
    let k = a.ncols();
    let n = a.nrows();
    if rank < k || n <= k {
        return vec![f64::NAN; k];
    }
    let resid = a * w - b;
    let sigma2 = resid.norm_squared() / (n - k) as f64;
    let Some(vt) = svd.v_t.as_ref() else {
        return vec![f64::NAN; k];
    };
    (0..k)
        .map(|j| {
            let mut var = 0.0;
            for (r, s) in svd.singular_values.iter().enumerate() {
                if *s > cutoff {
                    var += (vt[(r, j)] / s).powi(2);
                }
            }
            (sigma2 * var).sqrt()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_fit_and_standard_errors() {
        // y = 2 + 3x, no noise: exact weights, zero standard errors.
        let xs = [1.0, 2.0, 3.0, 4.0, 5.0];
        let a = DMatrix::from_fn(5, 2, |r, c| if c == 0 { 1.0 } else { xs[r] });
        let b = DVector::from_fn(5, |r, _| 2.0 + 3.0 * xs[r]);
        let s = solve(&a, &b).unwrap();
        assert!((s.weights[0] - 2.0).abs() < 1e-12 && (s.weights[1] - 3.0).abs() < 1e-12);
        assert_eq!(s.rank, 2);
        assert!(s.stderr.iter().all(|e| *e < 1e-12));
    }

    #[test]
    fn rank_deficient_design_gets_the_minimum_norm_solution() {
        // Two identical columns: the weight is shared equally.
        let a = DMatrix::from_fn(4, 2, |r, _| (r + 1) as f64);
        let b = DVector::from_fn(4, |r, _| 2.0 * (r + 1) as f64);
        let s = solve(&a, &b).unwrap();
        assert_eq!(s.rank, 1);
        assert!((s.weights[0] - 1.0).abs() < 1e-12 && (s.weights[1] - 1.0).abs() < 1e-12);
        assert!(s.stderr.iter().all(|e| e.is_nan()));
    }

    #[test]
    fn non_finite_input_is_refused() {
        let a = DMatrix::from_element(2, 1, f64::INFINITY);
        let b = DVector::from_element(2, 1.0);
        assert!(solve(&a, &b).is_none());
    }
}
