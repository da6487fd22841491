//! Simulated ranks for tests: every rank's detector runs the same
//! rounds as under MPI, with [`Wire::reduce_all`] as the reduction.
use crate::detect::{Detector, Wire};

/// One step on simulated ranks; `data[r]` is rank `r`'s (function,
/// runtime) list. Every rank ends with the same global model.
pub fn step(ranks: &mut [Box<dyn Detector>], data: &[Vec<(u32, u64)>]) {
    for (d, rows) in ranks.iter_mut().zip(data) {
        for &(f, v) in rows {
            d.observe(f, v);
        }
    }
    let mut wires: Vec<Wire> = ranks.iter_mut().map(|d| d.take_partial()).collect();
    loop {
        let reduced = Wire::reduce_all(&wires);
        for d in ranks.iter_mut() {
            d.merge_reduced(&reduced);
        }
        let next: Vec<Option<Wire>> = ranks.iter_mut().map(|d| d.next_round()).collect();
        if next.iter().any(|w| w.is_none()) {
            assert!(next.iter().all(|w| w.is_none()), "ranks disagree on rounds");
            return;
        }
        wires = next.into_iter().flatten().collect();
    }
}

/// Runs `steps` (each a list of (function, runtime)) split over
/// `nranks` ranks by `assign(step, index) -> rank`; returns rank 0.
pub fn run_split(
    make: &dyn Fn() -> Box<dyn Detector>,
    functions: usize,
    steps: &[Vec<(u32, u64)>],
    nranks: usize,
    assign: &dyn Fn(usize, usize) -> usize,
) -> Box<dyn Detector> {
    let mut ranks: Vec<Box<dyn Detector>> = (0..nranks).map(|_| make()).collect();
    for (i, r) in ranks.iter_mut().enumerate() {
        r.set_ranks(i, nranks);
        r.ensure_functions(functions);
    }
    for (s, rows) in steps.iter().enumerate() {
        let mut per_rank = vec![Vec::new(); nranks];
        for (i, &x) in rows.iter().enumerate() {
            per_rank[assign(s, i) % nranks].push(x);
        }
        step(&mut ranks, &per_rank);
    }
    let digest = ranks[0].digest();
    assert!(ranks.iter().all(|r| r.digest() == digest));
    ranks.swap_remove(0)
}

/// Which rank gets row `i` of step `s`.
type Assign = dyn Fn(usize, usize) -> usize;

/// The same data on 1 rank and on several partitions (ranks and
/// assignments) gives bit-identical models, labels and scores.
pub fn assert_partition_invariant(
    make: &dyn Fn() -> Box<dyn Detector>,
    functions: usize,
    steps: &[Vec<(u32, u64)>],
    probes: &[(u32, u64)],
) {
    let one = run_split(make, functions, steps, 1, &|_, _| 0);
    let splits: [(usize, &Assign); 3] = [
        (2, &|_, i| i),
        (3, &|s, i| i / 7 + s),
        (5, &|s, i| (i * 31 + s * 17) % 5),
    ];
    for (n, assign) in splits {
        let many = run_split(make, functions, steps, n, assign);
        assert_eq!(one.digest(), many.digest(), "{n} ranks: model digest");
        for f in 0..functions as u32 {
            assert_eq!(one.model_json(f), many.model_json(f), "{n} ranks: model");
        }
        for &(f, v) in probes {
            let (a, b) = (one.label(f, v), many.label(f, v));
            assert_eq!(a.label, b.label, "{n} ranks: label of {v}");
            assert_eq!(a.score.to_bits(), b.score.to_bits(), "{n} ranks: score");
        }
    }
}
