"""`model train --profile eiger-2016` writes Eiger's rotation, not just an
equivalent one: on tables whose predictors differ in scale (and some that
are correlated), the rotation and the means of the rotated columns in the
model file equal what Eiger's own steps give with numpy's SVD (LAPACK
`dgesdd`): `Z = (X - mean)/std`, `V` from `svd(Z)`, raw VARIMAX sweeping
column pairs j < l until the sum of squares changes by less than 1e-5 from
the sweep before (the first compared with the unrotated `V`), columns with
a non-zero singular value kept. The model file names rotated columns by
index, so this is what makes a file exchangeable with Eiger."""
import cmath
import math
import re
import subprocess

import numpy as np
import pytest


def eiger_rotation(x, knife_edge=True):
    """Eiger's PCA + VARIMAX rotation of the predictor rows `x` (n x m).

    With `knife_edge`, a pair whose `w = u - v^2` lies on the negative real
    axis up to rounding (always the case for two predictors) turns by the
    exact-arithmetic angle pi/4; without, by whatever the rounding of
    numpy's SVD gives, which is what Eiger itself does there."""
    z = x - x.mean(axis=0)
    std = z.std(axis=0, ddof=1)
    std[std == 0.0] = 1.0
    z = z / std
    _, s, vt = np.linalg.svd(z, full_matrices=False)
    a = vt.T.copy()
    rows, k = a.shape
    variance = (a * a).sum()
    for _ in range(100):
        for j in range(k - 1):
            for l in range(j + 1, k):
                w = a[:, j] + 1j * a[:, l]
                u = (w ** 4).sum() / rows
                v = (w ** 2).sum() / rows
                w = u - v * v
                if knife_edge and w.real < 0 and abs(w.imag) <= 1e-9 * abs(w.real):
                    w = complex(w.real, 0.0)
                phi = cmath.phase(w) / 4.0
                c, sn = math.cos(phi), math.sin(phi)
                aj, al = a[:, j].copy(), a[:, l].copy()
                a[:, j] = aj * c + al * sn
                a[:, l] = -aj * sn + al * c
        new = (a * a).sum()
        done = (new - variance) / new < 1e-5
        variance = new
        if done:
            break
    return a[:, np.nonzero(s ** 2)[0]]


def parse_array(line):
    """`[dims](...)` of a model file as a numpy array."""
    dims = [int(d) for d in re.match(r"\[([0-9,]+)\]", line).group(1).split(",")]
    numbers = [float(v) for v in re.findall(r"[-+0-9.eE]+(?=[,)])", line[line.index("]") + 1:])]
    return np.array(numbers).reshape(dims)


def tables():
    """Tables of 2-4 predictors on scales from 1e-2 to 1e4, a few with a
    predictor that is a noisy multiple of another."""
    rng = np.random.default_rng(2016)
    out = []
    # The shape that showed the swap: n in [58, 1126], p in [1, 32].
    n = rng.integers(58, 1127, 40).astype(float)
    p = rng.integers(1, 33, 40).astype(float)
    out.append(np.c_[n, p])
    for t in range(29):
        rows = int(rng.integers(12, 60))
        cols = int(rng.integers(2, 5))
        scales = 10.0 ** rng.integers(-2, 5, cols)
        x = np.round(rng.random((rows, cols)) * scales + scales, 6)
        if t % 4 == 0:
            x[:, -1] = np.round(x[:, 0] * 3.0 + rng.random(rows) * scales[0], 6)
        out.append(x)
    return out


@pytest.mark.parametrize("index", range(30))
def test_rotation_and_means_are_eigers(binary, tmp_path, index):
    x = tables()[index]
    rows, cols = x.shape
    names = [f"m{c}" for c in range(cols)]
    runtime = 1e-3 * x.sum(axis=1) + 0.5
    csv = tmp_path / "table.csv"
    with open(csv, "w") as f:
        f.write(",".join(["trial_id"] + names + ["runtime"]) + "\n")
        for i in range(rows):
            f.write(",".join([str(i)] + [repr(float(v)) for v in x[i]] + [repr(float(runtime[i]))]) + "\n")
    model = tmp_path / "table.model"
    subprocess.run(
        [str(binary), "model", "train", str(csv), "--profile", "eiger-2016", "-o", str(model)],
        check=True,
        capture_output=True,
    )
    lines = model.read_text().splitlines()
    assert lines[1:1 + cols] == names
    means = parse_array(lines[1 + cols])
    rotation = parse_array(lines[3 + cols])
    want = eiger_rotation(x)
    assert rotation.shape == want.shape
    # Same columns, same signs (the file keeps 12 significant digits).
    np.testing.assert_allclose(rotation, want, rtol=0, atol=1e-9)
    np.testing.assert_allclose(means, (x @ want).mean(axis=0), rtol=1e-9, atol=1e-9)
    # Where rounding decides Eiger's angle, what Eiger gives is ours or the
    # quarter turn of ours, depending on the BLAS under its numpy; elsewhere
    # it is ours exactly.
    plain = eiger_rotation(x, knife_edge=False)
    quarter = np.array([[0.0, 1.0], [-1.0, 0.0]])
    candidates = [want] + ([want @ quarter, want @ quarter.T] if cols == 2 else [])
    assert any(np.allclose(plain, c, rtol=0, atol=1e-9) for c in candidates), (plain, want)
