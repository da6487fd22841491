//! The rotation Eiger projects its inputs on: principal components of the
//! standardised inputs, rotated by raw VARIMAX, so that each rotated column
//! is dominated by few inputs and correlated inputs share one column.
//!
//! Steps (reference §2.2): `Z = (X − mean)/std` (ddof 1, a zero std
//! becomes 1); `Z = U S Vᵀ`; VARIMAX on the columns of `V` (no Kaiser
//! normalisation), sweeping column pairs until the relative change of
//! `Σ A²` is below 1e-5 or after 100 sweeps; keep the columns whose
//! loading `s²` is non-zero. One input gives `R = [[1.0]]`; a failed
//! decomposition gives the identity. Each column's sign is fixed so that
//! its largest entry is positive: SVD signs are arbitrary, and this makes
//! the rotation (hence the model file) the same on every machine.

use nalgebra::DMatrix;

/// The rotation `R` (m × p, row-major rows of length p) for the rows `x`
/// of m inputs each.
pub fn rotation(x: &[Vec<f64>], m: usize) -> Vec<Vec<f64>> {
    if m == 1 {
        return vec![vec![1.0]];
    }
    let identity = || {
        (0..m)
            .map(|r| (0..m).map(|c| if r == c { 1.0 } else { 0.0 }).collect())
            .collect()
    };
    let n = x.len();
    if n < 2 {
        return identity();
    }
    let (mean, std) = column_mean_std(x, m);
    let z = DMatrix::from_fn(n, m, |r, c| (x[r][c] - mean[c]) / std[c]);
    if z.iter().any(|v| !v.is_finite()) {
        return identity();
    }
    let Some(svd) = nalgebra::linalg::SVD::try_new(z, false, true, f64::EPSILON, 0) else {
        return identity();
    };
    let Some(vt) = svd.v_t else {
        return identity();
    };
    // Components in order of decreasing singular value, as numpy gives them.
    let mut order: Vec<usize> = (0..svd.singular_values.len()).collect();
    order.sort_by(|a, b| svd.singular_values[*b].total_cmp(&svd.singular_values[*a]));
    let mut a: Vec<Vec<f64>> = (0..m)
        .map(|r| order.iter().map(|&k| vt[(k, r)]).collect())
        .collect();
    varimax(&mut a);
    let keep: Vec<usize> = order
        .iter()
        .enumerate()
        .filter(|(_, &k)| svd.singular_values[k].powi(2) != 0.0)
        .map(|(c, _)| c)
        .collect();
    if keep.is_empty() {
        return identity();
    }
    let mut r: Vec<Vec<f64>> = a
        .iter()
        .map(|row| keep.iter().map(|&c| row[c]).collect())
        .collect();
    fix_signs(&mut r);
    r
}

/// `x @ R` for one row of inputs into `out` (one entry per rotated
/// column): what training projects the table on and what a model applies
/// to each row it predicts.
pub fn project_into(x: &[f64], rotation: &[Vec<f64>], out: &mut [f64]) {
    for (c, o) in out.iter_mut().enumerate() {
        *o = x.iter().zip(rotation).map(|(v, r)| v * r[c]).sum();
    }
}

/// Column means and standard deviations (ddof 1; zero becomes 1).
pub fn column_mean_std(x: &[Vec<f64>], m: usize) -> (Vec<f64>, Vec<f64>) {
    let n = x.len() as f64;
    let mean: Vec<f64> = (0..m)
        .map(|c| x.iter().map(|r| r[c]).sum::<f64>() / n)
        .collect();
    let std: Vec<f64> = (0..m)
        .map(|c| {
            let ss: f64 = x.iter().map(|r| (r[c] - mean[c]).powi(2)).sum();
            let s = (ss / (n - 1.0)).sqrt();
            if s == 0.0 || !s.is_finite() {
                1.0
            } else {
                s
            }
        })
        .collect();
    (mean, std)
}

/// Raw VARIMAX of the loadings `a` (rows × columns), in place.
fn varimax(a: &mut [Vec<f64>]) {
    let d = a.len() as f64;
    let p = a.first().map_or(0, Vec::len);
    let total = |a: &[Vec<f64>]| a.iter().flatten().map(|v| v * v).sum::<f64>();
    let mut old = 0.0;
    for _ in 0..100 {
        for j in 0..p {
            for l in (j + 1)..p {
                // z = A_j + i·A_l; u = Σz⁴/D, v = Σz²/D; φ = arg(u − v²)/4.
                let (mut u_re, mut u_im, mut v_re, mut v_im) = (0.0, 0.0, 0.0, 0.0);
                for row in a.iter() {
                    let (x, y) = (row[j], row[l]);
                    let (z2_re, z2_im) = (x * x - y * y, 2.0 * x * y);
                    v_re += z2_re;
                    v_im += z2_im;
                    u_re += z2_re * z2_re - z2_im * z2_im;
                    u_im += 2.0 * z2_re * z2_im;
                }
                let (u_re, u_im, v_re, v_im) = (u_re / d, u_im / d, v_re / d, v_im / d);
                let (w_re, w_im) = (u_re - (v_re * v_re - v_im * v_im), u_im - 2.0 * v_re * v_im);
                let phi = w_im.atan2(w_re) / 4.0;
                let (c, s) = (phi.cos(), phi.sin());
                for row in a.iter_mut() {
                    let (x, y) = (row[j], row[l]);
                    row[j] = x * c + y * s;
                    row[l] = -x * s + y * c;
                }
            }
        }
        let new = total(a);
        if new == 0.0 || (new - old) / new < 1e-5 {
            break;
        }
        old = new;
    }
}

/// Makes the largest-magnitude entry of every column positive.
fn fix_signs(r: &mut [Vec<f64>]) {
    let p = r.first().map_or(0, Vec::len);
    for c in 0..p {
        let big =
            r.iter()
                .map(|row| row[c])
                .fold(0.0f64, |acc, v| if v.abs() > acc.abs() { v } else { acc });
        if big < 0.0 {
            for row in r.iter_mut() {
                row[c] = -row[c];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_input_is_the_identity() {
        assert_eq!(rotation(&[vec![1.0], vec![2.0]], 1), vec![vec![1.0]]);
    }

    #[test]
    fn rotation_is_orthonormal_and_separates_independent_inputs() {
        // Two independent inputs on very different scales: after
        // standardisation and VARIMAX each rotated column is one input.
        let x: Vec<Vec<f64>> = (0..40)
            .map(|i| vec![(i % 7) as f64 * 100.0, ((i * 13) % 11) as f64])
            .collect();
        let r = rotation(&x, 2);
        assert_eq!(r.len(), 2);
        let dot = |a: usize, b: usize| (0..2).map(|k| r[k][a] * r[k][b]).sum::<f64>();
        assert!((dot(0, 0) - 1.0).abs() < 1e-12 && dot(0, 1).abs() < 1e-12);
        for c in 0..2 {
            let big = r.iter().map(|row| row[c].abs()).fold(0.0, f64::max);
            assert!(big > 0.99, "column {c} of {r:?} is not one input");
        }
    }
}
