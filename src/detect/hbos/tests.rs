//! Tests of `hbos`: scores and thresholds of worked examples, the held
//! bins against the dense scores, the ratchet, and bit-identical models
//! for any split of the executions over ranks.

use super::*;
use crate::detect::binned::testing;
use crate::detect::{Detector, Label, Wire};

fn example() -> Histogram {
    Histogram::from_parts(vec![2, 8, 1, 0, 0, 2], 101.0, 700.0, 100.0, 100.0).unwrap()
}

#[test]
fn worked_example_scores_and_threshold() {
    let m = HbosModel::from_histogram(example(), 0.99, initial_global_threshold());
    let want = [2.7004, 0.7004, 3.7004, 100.0001, 100.0001, 2.7004];
    for (s, w) in m.scores().iter().zip(want) {
        assert!((s - w).abs() < 1e-4, "{s} vs {w}");
    }
    assert!((m.local_threshold - 3.6704).abs() < 1e-4);
    assert_eq!(m.global_threshold, m.local_threshold);
    // The count-1 bin is an outlier; the peak and last bins are not.
    assert_eq!(m.judge(350.0).label, Label::Anomaly);
    assert_eq!(m.judge(250.0).label, Label::Normal);
    assert!((m.judge(250.0).score - 0.7004).abs() < 1e-4);
    assert_eq!(m.judge(650.0).label, Label::Normal);
    // Within 5 % of a bin width outside: the edge bins.
    assert_eq!(m.judge(96.0).label, Label::Normal);
    assert_eq!(m.judge(704.0).label, Label::Normal);
    // Outside, or in an empty bin: ≈ 100, outliers.
    for x in [90.0, 710.0, 550.0] {
        let v = m.judge(x);
        assert_eq!(v.label, Label::Anomaly);
        assert!((v.score - 100.0001).abs() < 1e-3);
    }
}

#[test]
fn a_runtime_in_the_model_never_gets_the_empty_bin_score() {
    // Runtimes above 256 µs share fine buckets of several integers;
    // where such a bucket straddles a bin edge its count is split with
    // rounding, and a count of 1 goes to one side only. Over many data
    // sets, every runtime in the model must score as a runtime seen.
    let mut seen_split = 0;
    for seed in 0..400u64 {
        let mut d = Hbos::with_params(Default::default(), 2);
        d.ensure_functions(1);
        let values: Vec<u64> = (0..40u64)
            .map(|i| 300 + (i * 7919 + seed * 104_729 + i * i * seed) % (150 + seed % 300))
            .collect();
        for &v in &values {
            d.observe(0, v);
        }
        let w = d.take_partial();
        crate::detect::reduce_step(&mut d, w, Wire::clone);
        let m = d.model(0).unwrap();
        for &v in &values {
            if let BinPos::In(b) = m.grid.get_bin(v as f64, EDGE_TOLERANCE) {
                seen_split += usize::from(m.histogram().counts[b] == 0);
            }
            let verdict = d.label(0, v);
            assert!(
                verdict.score < outside_score() - 1.0,
                "seed {seed}: runtime {v} of the model scores {}",
                verdict.score
            );
        }
    }
    // The data sets do hit the split (a runtime in a bin showing 0).
    assert!(seen_split > 0);
}

#[test]
fn the_held_bin_mask_scores_every_bin_as_the_search_does() {
    // Sparse counts over 200 bins (all under the mask) and over 600
    // (the bins from 256 on are searched): every bin's midpoint, and
    // the edges, score as the dense scores say.
    for nbin in [200usize, 600] {
        let counts: Vec<u64> = (0..nbin as u64)
            .map(|b| {
                if b % 7 == 3 || b % 64 == 63 {
                    1 + b % 5
                } else {
                    0
                }
            })
            .collect();
        let hist = Histogram::from_parts(counts, 0.0, nbin as f64, 0.0, 1.0).unwrap();
        let m = HbosModel::from_histogram(hist, 0.99, initial_global_threshold());
        assert!(m.held.len() > nbin / 7);
        let dense = m.scores();
        for (b, want) in dense.iter().enumerate() {
            let got = m.score(b as f64 + 0.5);
            assert_eq!(got.to_bits(), want.to_bits(), "{nbin} bins, bin {b}");
        }
        assert_eq!(m.score(-5.0), outside_score());
        assert_eq!(m.score(nbin as f64 + 5.0), outside_score());
    }
}

#[test]
fn ratchet_never_goes_down() {
    let m = HbosModel::from_histogram(example(), 0.99, 50.0);
    assert_eq!(m.global_threshold, 50.0);
    assert_eq!(m.judge(550.0).label, Label::Anomaly);
    assert_eq!(m.judge(350.0).label, Label::Normal);
    // A constant function: score 0 < initial g, so normal.
    let c = HbosModel::from_histogram(Histogram::delta(5.0, 10), 0.99, 1.00001f64.log2());
    assert_eq!(c.judge(5.0).label, Label::Normal);
    assert_eq!(c.judge(6.0).label, Label::Anomaly);
}

fn data(seed: u64, n: usize) -> Vec<(u32, u64)> {
    (0..n as u64)
        .map(|i| {
            let f = (i % 3) as u32;
            let x = (i * 7919 + seed * 104_729) % 1000;
            let v = match f {
                0 => 100 + x / 10,
                1 => 1000 + x * 3 + if i % 97 == 0 { 20_000 } else { 0 },
                _ => 5 + x % 4,
            };
            (f, v)
        })
        .collect()
}

#[test]
fn any_split_over_ranks_is_bit_identical() {
    let steps: Vec<Vec<(u32, u64)>> = (0..4).map(|s| data(s, 2000)).collect();
    let probes = [
        (0, 150),
        (1, 1500),
        (1, 21_000),
        (2, 5),
        (2, 9),
        (0, 10_000),
    ];
    testing::assert_partition_invariant(
        &|| Box::new(Hbos::with_params(HbosParams::default(), 2)) as Box<dyn Detector>,
        3,
        &steps,
        &probes,
    );
}
