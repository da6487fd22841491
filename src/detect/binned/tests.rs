//! Tests of `binned`: the payload per function on the wire, thresholds
//! and the shared model of the binned detectors.

use super::*;
use crate::detect::binned::testing;
use crate::detect::hbos::Hbos;
use crate::detect::modal::{Modal, ModalParams};
use crate::detect::reduce_step;

#[test]
fn payload_per_function_is_as_documented() {
    let mut d = Modal::with_params(ModalParams::default(), 2);
    d.ensure_functions(3);
    // Function 0 touches two bucket groups, function 1 one, function 2 none.
    for v in [100, 101, 5000] {
        d.observe(0, v);
    }
    d.observe(1, 7);
    let first = d.take_partial();
    let bytes = reduce_step(&mut d, first, |w| w.clone());
    // Function 0: Σx and Σx² fit one 32-bit limb, Σx³ ≈ 1.25·10^11 and
    // Σx⁴ ≈ 6.25·10^14 two; function 1 (one 7 µs call): one limb each.
    let want = payload_bytes_per_function(6, 2, 16)
        + payload_bytes_per_function(4, 1, 16)
        + payload_bytes_per_function(0, 0, 16);
    assert_eq!(bytes, want);
    assert_eq!(payload_bytes_per_function(0, 0, 16), 96);
    assert_eq!(want, 208 + 160 + 96);
    assert_eq!(d.count(0), 3);
    assert_eq!(d.model_json(0)["fine_histogram"]["groups_merged"], 2);
}

#[test]
fn any_split_over_ranks_and_steps_gives_the_same_histograms() {
    // The merged model (fine histogram) and the labelling histogram
    // derived from it do not depend on how the data were cut into steps
    // or ranks; only the ratchet (a max over the steps' thresholds) does.
    let data: Vec<(u32, u64)> = (0..6000u64)
        .map(|i| {
            (
                (i % 2) as u32,
                50 + (i * 7919) % 400 + (i % 301 == 0) as u64 * 5000,
            )
        })
        .collect();
    let make = || Box::new(Hbos::with_params(Default::default(), 2)) as Box<dyn Detector>;
    let one = testing::run_split(&make, 2, std::slice::from_ref(&data), 1, &|_, _| 0);
    let steps: Vec<Vec<(u32, u64)>> = data.chunks(1000).map(|c| c.to_vec()).collect();
    let many = testing::run_split(&make, 2, &steps, 3, &|s, i| s + i);
    for f in 0..2 {
        let (a, b) = (one.model_json(f), many.model_json(f));
        assert_eq!(
            a["fine_histogram"]["buckets"],
            b["fine_histogram"]["buckets"]
        );
        assert_eq!(a["histogram"], b["histogram"]);
        assert_eq!(a["count"], b["count"]);
        assert!(b["internal_global_threshold"].as_f64() >= a["internal_global_threshold"].as_f64());
    }
}

/// One step of 500 runtimes of function 0 around 100–150 µs, one in a
/// hundred 900 µs slower.
fn one_step_of_500(d: &mut dyn Detector) {
    d.ensure_functions(1);
    for i in 0..500u64 {
        d.observe(0, 100 + i % 50 + if i % 100 == 0 { 900 } else { 0 });
    }
    let first = d.take_partial();
    reduce_step(d, first, |w| w.clone());
}

#[test]
fn shared_models_decode_to_the_derived_ones_at_every_count_width() {
    use crate::detect::copod::Copod;
    // The model another rank decodes labels, scores and reports as the
    // one derived here, with the counts in narrow lanes (the real
    // count) and at full width (a count of 2^33).
    fn check<K: Kernel>(d: &BinnedDetector<K>) {
        let (k, model) = (d.kernel(), d.model(0).unwrap());
        for count in [d.count(0), 1 << 33] {
            let mut words = Vec::new();
            k.encode(model, count, &mut words);
            let mut back = k.empty_model();
            k.decode(&mut back, count, &words);
            assert_eq!(k.json(&back), k.json(model), "{} at {count}", k.name());
            for v in (0..3000).step_by(7) {
                assert_eq!(k.judge(&back, v), k.judge(model, v), "{} {v}", k.name());
            }
        }
    }
    let mut h = Hbos::with_params(Default::default(), 2);
    one_step_of_500(&mut h);
    check(&h);
    let mut c = Copod::with_params(Default::default(), 2);
    one_step_of_500(&mut c);
    check(&c);
    let mut m = Modal::with_params(ModalParams::default(), 2);
    one_step_of_500(&mut m);
    check(&m);
}

#[test]
fn snapshots_expose_the_labelling_model() {
    use crate::detect::copod::Copod;
    let mut h = Hbos::with_params(Default::default(), 2);
    one_step_of_500(&mut h);
    let s = h.model_snapshot(0);
    assert_eq!(s.hist_counts.len(), 200);
    assert_eq!(s.hist_counts.iter().sum::<u64>(), 500);
    assert_eq!(s.threshold, h.model(0).unwrap().global_threshold);
    assert!(s.hist_first_edge < 100.0 && s.hist_bin_width > 0.0);
    assert_eq!((s.minimum, s.maximum, s.count), (100, 1000, 500));
    let mut c = Copod::with_params(Default::default(), 2);
    one_step_of_500(&mut c);
    let s = c.model_snapshot(0);
    assert_eq!(s.hist_counts.iter().sum::<u64>(), 500);
    assert_eq!(s.threshold, c.model(0).unwrap().global_threshold);
    let mut m = Modal::with_params(ModalParams::default(), 2);
    one_step_of_500(&mut m);
    let s = m.model_snapshot(0);
    assert_eq!(s.threshold, 6.0);
    assert_eq!(s.modes.len(), 1);
    assert!(s.modes[0].low < 100.0 && s.modes[0].high > 150.0 && s.modes[0].high < 900.0);
    assert_eq!(m.label(0, 1000).label, Label::Anomaly);
}

#[test]
fn labels_wait_for_min_count_and_thresholds_apply() {
    let mut d = Hbos::with_params(Default::default(), 5);
    d.ensure_functions(1);
    for v in [10, 11, 12] {
        d.observe(0, v);
    }
    let first = d.take_partial();
    reduce_step(&mut d, first, |w| w.clone());
    assert_eq!(d.label(0, 11).label, Label::Unlabeled);
    d.set_function_threshold(0, 0.5);
    assert_eq!(d.threshold(0), 0.5);
    assert_eq!(d.model_snapshot(0).count, 3);
}
