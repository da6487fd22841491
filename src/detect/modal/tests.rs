//! Tests of `modal`: modes separated and judged, bursts and recurring
//! slowdowns, few executions, and the same model for any split over ranks.

use super::*;
use crate::detect::binned::testing;
use crate::detect::Detector;

/// Deterministic standard-normal-like draws (sum of 12 uniforms − 6).
fn z(seed: &mut u64) -> f64 {
    let mut s = 0.0;
    for _ in 0..12 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s += (*seed >> 11) as f64 / (1u64 << 53) as f64;
    }
    s - 6.0
}

fn normal(seed: &mut u64, mean: f64, sd: f64) -> u64 {
    (mean + sd * z(seed)).round().max(0.0) as u64
}

fn model_of(values: &[u64]) -> ModalModel {
    let mut h = FineHist::default();
    values.iter().for_each(|&v| h.push(v));
    derive(&ModalParams::default(), &h, &StepDelta::default(), 6.0)
}

#[test]
fn separates_modes_and_flags_between_and_beyond() {
    let mut seed = 1;
    let mut v: Vec<u64> = Vec::new();
    for i in 0..20_000 {
        v.push(if i % 10 < 7 {
            normal(&mut seed, 200.0, 10.0)
        } else {
            normal(&mut seed, 1000.0, 30.0)
        });
    }
    // A small cluster between the modes (0.5 %) and a few far beyond.
    v.extend((0..100).map(|_| normal(&mut seed, 600.0, 10.0)));
    v.extend([4000, 4100, 3900]);
    let m = model_of(&v);
    assert_eq!(m.normal.len(), 2, "{m:?}");
    for x in [180, 200, 225, 950, 1000, 1080] {
        assert_eq!(m.judge(x).label, Label::Normal, "{x}: {:?}", m.judge(x));
    }
    for x in [600, 610, 400, 1400, 4000, 40] {
        assert_eq!(m.judge(x).label, Label::Anomaly, "{x}: {:?}", m.judge(x));
    }
    // The score is the robust z to the nearest mode: about 1 at 1 σ.
    let s = m.score(1030);
    assert!((0.7..1.3).contains(&s), "{s}");
}

#[test]
fn log_normal_tail_stays_normal() {
    let mut seed = 7;
    let v: Vec<u64> = (0..30_000)
        .map(|_| (150.0 * (0.3 * z(&mut seed)).exp()).round() as u64)
        .collect();
    let m = model_of(&v);
    let flagged = v
        .iter()
        .filter(|&&x| m.judge(x).label == Label::Anomaly)
        .count();
    assert_eq!(flagged, 0);
    assert_eq!(m.judge(150 * 20).label, Label::Anomaly);
}

#[test]
fn few_executions_and_constants() {
    // One clear outlier among five.
    let m = model_of(&[100, 101, 99, 100, 1000]);
    assert_eq!(m.judge(1000).label, Label::Anomaly);
    assert_eq!(m.judge(100).label, Label::Normal);
    // Two values: nothing to judge against, both normal.
    let m = model_of(&[100, 1000]);
    assert_eq!(m.judge(100).label, Label::Normal);
    assert_eq!(m.judge(1000).label, Label::Normal);
    // A constant function tolerates timer jitter but not 2x.
    let m = model_of(&[5; 50]);
    assert_eq!(m.judge(6).label, Label::Normal);
    assert_eq!(m.judge(12).label, Label::Anomaly);
    // Around 0 µs the timer resolution dominates.
    let m = model_of(&[0; 50]);
    assert_eq!(m.judge(1).label, Label::Normal);
    assert_eq!(m.judge(5).label, Label::Normal);
    assert_eq!(m.judge(20).label, Label::Anomaly);
}

#[test]
fn burst_in_the_current_step_cannot_vouch_for_itself() {
    let mut seed = 3;
    let mut d = Modal::with_params(ModalParams::default(), 2);
    d.ensure_functions(1);
    let mut ranks: Vec<Box<dyn Detector>> = vec![Box::new(d)];
    for s in 0..4 {
        let mut rows: Vec<(u32, u64)> = (0..1000)
            .map(|_| (0, normal(&mut seed, 30.0, 4.0)))
            .collect();
        if s == 3 {
            // 20 % of this step's calls are 3 ms slower.
            rows.extend((0..250).map(|_| (0, 3000 + normal(&mut seed, 30.0, 4.0))));
        }
        testing::step(&mut ranks, &[rows]);
    }
    // The burst is 7 % of all executions, above min_share, but 0 % of
    // the history: anomalous.
    assert_eq!(ranks[0].label(0, 3030).label, Label::Anomaly);
    assert_eq!(ranks[0].label(0, 31).label, Label::Normal);
}

#[test]
fn a_recurring_far_slower_mode_stays_anomalous_and_a_second_path_does_not() {
    let mut seed = 5;
    let mut d = Modal::with_params(ModalParams::default(), 2);
    d.ensure_functions(2);
    let mut ranks: Vec<Box<dyn Detector>> = vec![Box::new(d)];
    for _ in 0..6 {
        // Function 0: 8 % of the exchanges 50x slower, every step.
        let mut rows: Vec<(u32, u64)> = (0..1000)
            .map(|i| {
                let x = normal(&mut seed, 3000.0, 100.0);
                (0, if i % 12 == 0 { 50 * x } else { x })
            })
            .collect();
        // Function 1: a second code path, 3x slower, 10 % of calls.
        rows.extend((0..1000).map(|i| {
            let x = normal(&mut seed, 200.0, 8.0);
            (1, if i % 10 == 0 { 3 * x } else { x })
        }));
        testing::step(&mut ranks, &[rows]);
    }
    assert_eq!(ranks[0].label(0, 150_000).label, Label::Anomaly);
    assert_eq!(ranks[0].label(0, 3000).label, Label::Normal);
    assert_eq!(ranks[0].label(1, 600).label, Label::Normal);
    assert_eq!(ranks[0].label(1, 200).label, Label::Normal);
}

#[test]
fn any_split_over_ranks_is_bit_identical() {
    let mut seed = 11;
    let steps: Vec<Vec<(u32, u64)>> = (0..4)
        .map(|_| {
            (0..3000)
                .map(|i| {
                    let f = (i % 3) as u32;
                    let v = match f {
                        0 if i % 2 == 0 => normal(&mut seed, 200.0, 10.0),
                        0 => normal(&mut seed, 1000.0, 30.0),
                        1 => normal(&mut seed, 20.0, 3.0) + (i % 500 == 1) as u64 * 3000,
                        _ => 7,
                    };
                    (f, v)
                })
                .collect()
        })
        .collect();
    let probes = [
        (0, 210),
        (0, 600),
        (0, 1000),
        (1, 20),
        (1, 3020),
        (2, 7),
        (2, 30),
    ];
    testing::assert_partition_invariant(
        &|| Box::new(Modal::with_params(ModalParams::default(), 2)) as Box<dyn Detector>,
        3,
        &steps,
        &probes,
    );
}

#[test]
fn tabled_log_runtimes_are_the_computed_ones() {
    use super::density::{log_runtime, LOG_TABLE};
    let beyond = [LOG_TABLE as u64, 1 << 20, u64::MAX];
    for x in (0..LOG_TABLE as u64 + 10).chain(beyond) {
        assert_eq!(
            log_runtime(x).to_bits(),
            (x as f64).ln_1p().to_bits(),
            "x={x}"
        );
    }
}
