//! LAPACK's SVD for the model trainer's rotation (`model::pca`): the
//! routine itself, `dgesdd`, because a model file exchanged with Eiger must
//! carry the signs of LAPACK's singular vectors (see `docs/models.md`).

/// The singular values and `Vᵀ` (k × m, column-major, k = min(n, m)) of
/// the column-major n × m matrix `z`, by LAPACK's `dgesdd` with
/// `jobz = 'S'`; `None` when LAPACK reports a failure.
pub fn right_singular_vectors(mut z: Vec<f64>, n: usize, m: usize) -> Option<(Vec<f64>, Vec<f64>)> {
    let k = n.min(m);
    let (ni, mi, ki) = (
        i32::try_from(n).ok()?,
        i32::try_from(m).ok()?,
        i32::try_from(k).ok()?,
    );
    let mut s = vec![0.0; k];
    let mut u = vec![0.0; n * k];
    let mut vt = vec![0.0; k * m];
    let mut iwork = vec![0i32; 8 * k];
    let mut info = 0;
    let mut query = [0.0];
    // SAFETY: every slice has the length LAPACK's documentation asks of it
    // for jobz = 'S' (a: lda·m, s: k, u: ldu·k, vt: ldvt·m, iwork: 8k), and
    // lwork = -1 only writes the optimal size into work[0].
    unsafe {
        lapack::dgesdd(
            b'S', ni, mi, &mut z, ni, &mut s, &mut u, ni, &mut vt, ki, &mut query, -1, &mut iwork,
            &mut info,
        );
    }
    if info != 0 || !query[0].is_finite() {
        return None;
    }
    let lwork = (query[0] as usize).max(1);
    let mut work = vec![0.0; lwork];
    // SAFETY: as above, with a work array of the size LAPACK asked for.
    unsafe {
        lapack::dgesdd(
            b'S',
            ni,
            mi,
            &mut z,
            ni,
            &mut s,
            &mut u,
            ni,
            &mut vt,
            ki,
            &mut work,
            i32::try_from(lwork).ok()?,
            &mut iwork,
            &mut info,
        );
    }
    (info == 0).then_some((s, vt))
}
