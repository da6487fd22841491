//! The rotation Eiger projects its inputs on: principal components of the
//! standardised inputs, rotated by raw VARIMAX, so that each rotated column
//! is dominated by few inputs and correlated inputs share one column.
//!
//! Steps (reference §2.2): `Z = (X − mean)/std` (ddof 1, a zero std
//! becomes 1); `Z = U S Vᵀ` by LAPACK's `dgesdd`, the routine Eiger's
//! `svd` calls; VARIMAX on the columns of `V` (no Kaiser normalisation),
//! sweeping column pairs `j < l` until the relative change of `Σ A²` from
//! the sweep before (the first compared with the unrotated `V`) is below
//! 1e-5, or after 100 sweeps; keep the columns whose loading `s²` is
//! non-zero. One input gives `R = [[1.0]]`; a failed decomposition gives
//! the identity.
//!
//! Which rotated column holds which input, and its sign, follow from the
//! signs of `V`: a model file names its rotated columns by index, so a file
//! is exchangeable with Eiger only if `V` is LAPACK's own. That is why the
//! decomposition is `dgesdd` itself rather than another SVD: its signs
//! follow from its Householder reflections, not from a rule another
//! implementation could reproduce. (Reference LAPACK 3.11 and the OpenBLAS
//! that numpy ships give the same `V` on 2000 random tables of mixed
//! scales; `tests/python/test_eiger_rotation.py` checks ours against
//! numpy's.)

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
    // Column-major, as LAPACK reads it.
    let z: Vec<f64> = (0..m)
        .flat_map(|c| {
            let (mean, std) = (mean[c], std[c]);
            x.iter().map(move |row| (row[c] - mean) / std)
        })
        .collect();
    if z.iter().any(|v| !v.is_finite()) {
        return identity();
    }
    let Some((singular_values, vt)) = crate::sys::lapack::right_singular_vectors(z, n, m) else {
        return identity();
    };
    let k = singular_values.len();
    // V = Vᵀᵀ: row r of the loadings is input r, column c component c,
    // components in LAPACK's order (decreasing singular value).
    let mut a: Vec<Vec<f64>> = (0..m)
        .map(|r| (0..k).map(|c| vt[c + r * k]).collect())
        .collect();
    varimax(&mut a);
    let keep: Vec<usize> = (0..k)
        .filter(|&c| singular_values[c].powi(2) != 0.0)
        .collect();
    if keep.is_empty() {
        return identity();
    }
    a.iter()
        .map(|row| keep.iter().map(|&c| row[c]).collect())
        .collect()
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

/// The pair's rotation angle `arg(w)/4`, with `w = u − v²`.
///
/// On the negative real axis `arg` jumps from −π to π, and that is where
/// two standardised inputs always put `w`: their `V` is the 45° matrix for
/// any correlation, and `w = −1` exactly. The sign of `w`'s rounding-level
/// imaginary part then picks `φ = ±π/4`, i.e. which rotated column holds
/// which input; Eiger's own choice there follows the last bits of its
/// BLAS's `V` and differs between machines. We take the exact-arithmetic
/// angle, `arg = π`, whenever the imaginary part is within 1e-9 of `|w|`
/// (an angle within 3e-10 of the other choice, so no fit changes).
fn varimax_angle(w_re: f64, w_im: f64) -> f64 {
    let on_the_cut = w_re < 0.0 && w_im.abs() <= 1e-9 * w_re.abs();
    let w_im = if on_the_cut { 0.0 } else { w_im };
    w_im.atan2(w_re) / 4.0
}

/// Raw VARIMAX of the loadings `a` (rows × columns), in place.
fn varimax(a: &mut [Vec<f64>]) {
    let d = a.len() as f64;
    let p = a.first().map_or(0, Vec::len);
    let total = |a: &[Vec<f64>]| a.iter().flatten().map(|v| v * v).sum::<f64>();
    // Rotations keep Σ A², so in exact arithmetic the first sweep already
    // meets the criterion; comparing with the unrotated sum (as Eiger
    // does) makes that one sweep, where a start at 0 would force a second
    // one that can turn a pair by a further quarter angle.
    let mut old = total(a);
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
                let phi = varimax_angle(w_re, w_im);
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
