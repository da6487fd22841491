//! Runtime laws of synthetic functions: `message_bytes`, `runtime_law` and
//! the anomaly filters `bytes` and `counter_value` (keys in
//! [`super::scenario`]), checked when a scenario is loaded and evaluated
//! for each execution.
//!
//! They exist to test performance models. With a plain runtime
//! distribution, a long call is an outlier; with a law, a call that moves
//! a megabyte is long *and normal*, and a small call three times slower
//! than its size predicts is anomalous although its runtime is ordinary.
//! A detector that models runtime against message size or a counter can
//! tell the two apart; one that only looks at runtimes cannot.

use anyhow::{bail, ensure};

use super::rng::Rng;
use super::scenario::{check_dist, AnomalySpec, FunctionSpec, Noise, RuntimeLaw};

/// What one execution does that its runtime may depend on, drawn when it
/// opens (before its self time) and written into the trace as it is used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallInputs {
    /// Message size in bytes: the `message_bytes` draw (0 without it),
    /// carried by the execution's `comm` messages that have no `bytes`.
    pub bytes: u64,
    /// Value of the `runtime_law` counter, written as that counter's
    /// sample for the execution (`None` without one).
    pub counter: Option<u64>,
}

/// A drawn value as the unsigned integer the trace holds (negative draws
/// become 0), the same rounding as every counter sample.
pub fn as_count(x: f64) -> u64 {
    x.round().max(0.0) as u64
}

/// Position of the `runtime_law` counter among the function's `counters`.
pub fn law_counter(f: &FunctionSpec) -> Option<usize> {
    let name = f.runtime_law.as_ref()?.counter.as_ref()?;
    f.counters.iter().position(|c| c.name == *name)
}

/// Draws the inputs of a new execution of `f`. A function without
/// `message_bytes` and without a law counter draws nothing, so scenarios
/// without laws keep their random sequence (and their traces) unchanged.
pub fn draw_inputs(f: &FunctionSpec, rng: &mut Rng) -> CallInputs {
    let bytes = f
        .message_bytes
        .as_ref()
        .map_or(0, |d| as_count(d.sample(rng)));
    let counter = law_counter(f).map(|k| as_count(f.counters[k].value.sample(rng)));
    CallInputs { bytes, counter }
}

/// The law's self time for `inputs` before noise (µs).
pub fn predict(law: &RuntimeLaw, inputs: CallInputs) -> f64 {
    law.base
        + law.per_byte * inputs.bytes as f64
        + law.per_unit * inputs.counter.unwrap_or(0) as f64
}

/// The law's self time for `inputs` with its noise (µs; the generator
/// applies drift, slowdowns, anomalies and its floor afterwards).
pub fn sample(law: &RuntimeLaw, inputs: CallInputs, rng: &mut Rng) -> f64 {
    let p = predict(law, inputs);
    if law.noise_std == 0.0 {
        return p;
    }
    let z = rng.normal();
    match law.noise {
        Noise::Relative => p * (1.0 + law.noise_std * z),
        Noise::Absolute => p + law.noise_std * z,
        Noise::Lognormal => p * (law.noise_std * z).exp(),
    }
}

/// Whether anomaly `a` may hit an execution with `inputs`: its `bytes` and
/// `counter_value` ranges (inclusive) hold.
pub fn in_ranges(a: &AnomalySpec, inputs: CallInputs) -> bool {
    let within = |r: Option<[u64; 2]>, v: u64| r.is_none_or(|[lo, hi]| lo <= v && v <= hi);
    within(a.bytes, inputs.bytes) && within(a.counter_value, inputs.counter.unwrap_or(0))
}

/// Checks the runtime keys of function `f`: exactly one of `runtime` and
/// `runtime_law`, and a law whose inputs exist.
pub fn check_function(f: &FunctionSpec) -> anyhow::Result<()> {
    let name = &f.name;
    if let Some(d) = &f.message_bytes {
        check_dist(d, &format!("function {name:?} message_bytes"))?;
    }
    match (&f.runtime, &f.runtime_law) {
        // The same wording as before laws existed for plain runtimes.
        (Some(d), None) => check_dist(d, name),
        (None, Some(law)) => check_law(f, law),
        (Some(_), Some(_)) => {
            bail!("function {name:?}: give `runtime` or `runtime_law`, not both")
        }
        (None, None) => bail!("function {name:?}: missing `runtime` (or `runtime_law`)"),
    }
}

fn check_law(f: &FunctionSpec, law: &RuntimeLaw) -> anyhow::Result<()> {
    let name = &f.name;
    for (key, v) in [
        ("base", law.base),
        ("per_byte", law.per_byte),
        ("per_unit", law.per_unit),
        ("noise_std", law.noise_std),
    ] {
        ensure!(
            v.is_finite() && v >= 0.0,
            "function {name:?}: runtime_law.{key} must be a number >= 0, not {v}"
        );
    }
    ensure!(
        law.per_byte == 0.0 || f.message_bytes.is_some(),
        "function {name:?}: runtime_law.per_byte needs the function's `message_bytes`"
    );
    match &law.counter {
        Some(c) => ensure!(
            f.counters.iter().any(|x| x.name == *c),
            "function {name:?}: runtime_law.counter {c:?} is not one of the function's `counters`"
        ),
        None => ensure!(
            law.per_unit == 0.0,
            "function {name:?}: runtime_law.per_unit needs runtime_law.counter"
        ),
    }
    Ok(())
}

/// Checks the `bytes` and `counter_value` filters of anomaly `a` on `f`.
pub fn check_anomaly(a: &AnomalySpec, f: &FunctionSpec) -> anyhow::Result<()> {
    let name = &a.function;
    for (key, r) in [("bytes", a.bytes), ("counter_value", a.counter_value)] {
        if let Some([lo, hi]) = r {
            ensure!(
                lo <= hi,
                "anomaly on {name:?}: {key} = [{lo}, {hi}] is empty (first > last)"
            );
        }
    }
    ensure!(
        a.bytes.is_none() || f.message_bytes.is_some(),
        "anomaly on {name:?}: `bytes` needs the function's `message_bytes`"
    );
    ensure!(
        a.bytes_factor == 1.0 || f.message_bytes.is_some(),
        "anomaly on {name:?}: `bytes_factor` needs the function's `message_bytes`"
    );
    ensure!(
        a.counter_value.is_none() || law_counter(f).is_some(),
        "anomaly on {name:?}: `counter_value` needs the function's runtime_law.counter"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::scenario::Scenario;

    /// A small valid scenario with a message-size law; tests edit it.
    const BASE: &str = r#"
seed = 1
ranks = 2
steps = 2
events_per_step = 100
root = "step"

[[function]]
name = "main"
runtime = { dist = "constant", value = 10 }

[[function]]
name = "step"
runtime = { dist = "constant", value = 10 }
children = [{ function = "send" }]

[[function]]
name = "send"
message_bytes = { dist = "choice", values = [10, 1000], weights = [3, 1] }
comm = [{ kind = "send", partner = "next" }]
runtime_law = { base = 5.0, per_byte = 0.01 }
"#;

    fn error_of(text: &str) -> String {
        format!("{:#}", Scenario::from_toml(text).unwrap_err())
    }

    fn law(base: f64, per_byte: f64, per_unit: f64, noise: Noise, noise_std: f64) -> RuntimeLaw {
        RuntimeLaw {
            base,
            per_byte,
            counter: Some("work".into()),
            per_unit,
            noise,
            noise_std,
        }
    }

    #[test]
    fn the_prediction_is_linear_in_bytes_and_counter() {
        let l = law(20.0, 0.002, 0.5, Noise::Relative, 0.0);
        let at = |bytes, counter| predict(&l, CallInputs { bytes, counter });
        assert_eq!(at(0, None), 20.0);
        assert_eq!(at(1000, None), 22.0);
        assert_eq!(at(1000, Some(10)), 27.0);
        // Without noise nothing is drawn: the random sequence is untouched.
        let mut rng = Rng::new(&[3]);
        assert_eq!(sample(&l, CallInputs::default(), &mut rng), 20.0);
        assert_eq!(rng.next_u64(), Rng::new(&[3]).next_u64());
    }

    #[test]
    fn noise_has_the_declared_spread() {
        let inputs = CallInputs {
            bytes: 50_000,
            counter: None,
        };
        for (noise, expect_sd) in [(Noise::Relative, 0.05 * 120.0), (Noise::Absolute, 0.05)] {
            let l = law(20.0, 0.002, 0.0, noise, 0.05);
            let mut rng = Rng::new(&[9]);
            let n = 100_000;
            let xs: Vec<f64> = (0..n).map(|_| sample(&l, inputs, &mut rng)).collect();
            let mean = xs.iter().sum::<f64>() / n as f64;
            let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
            assert!((mean - 120.0).abs() < 0.05, "{noise:?}: mean {mean}");
            assert!((sd / expect_sd - 1.0).abs() < 0.02, "{noise:?}: sd {sd}");
        }
    }

    #[test]
    fn anomaly_ranges_are_inclusive() {
        let mut sc = Scenario::from_toml(BASE).unwrap();
        sc.anomalies.push(AnomalySpec {
            function: "send".into(),
            rate: 1.0,
            factor: 3.0,
            add_us: 0.0,
            bytes_factor: 1.0,
            ranks: None,
            threads: None,
            steps: None,
            bytes: Some([10, 100]),
            counter_value: None,
            normal: false,
        });
        let a = &sc.anomalies[0];
        let with = |bytes| CallInputs {
            bytes,
            counter: None,
        };
        assert!(in_ranges(a, with(10)) && in_ranges(a, with(100)));
        assert!(!in_ranges(a, with(9)) && !in_ranges(a, with(101)));
    }

    #[test]
    fn a_call_without_noise_takes_exactly_its_law() {
        // Sizes 10 and 1000: 5.1 µs (rounded to 5) and 15 µs.
        let sc = Scenario::from_toml(BASE).unwrap();
        let (steps, truth) = crate::synth::generate_rank(&sc, 0);
        assert!(truth.is_empty());
        // One thread: its function rows are in time order across steps.
        let times: Vec<u64> = steps.iter().flat_map(|s| &s.funcs).map(|r| r[5]).collect();
        let mut seen = [0, 0];
        for m in steps.iter().flat_map(|s| &s.comms) {
            let (bytes, ts) = (m[6], m[7]);
            // The call holding the message (a leaf): its ENTRY is the last
            // function row before the message, its EXIT the next one.
            let after = times.partition_point(|&t| t <= ts);
            let took = times[after] - times[after - 1];
            match bytes {
                10 => seen[0] += 1,
                1000 => seen[1] += 1,
                b => panic!("size {b} not drawn from the choice"),
            }
            assert_eq!(took, (5.0 + 0.01 * bytes as f64).round() as u64);
        }
        assert!(seen[0] > seen[1] && seen[1] > 0, "{seen:?}");
    }

    #[test]
    fn a_fixed_size_wins_over_message_bytes() {
        let text = BASE.replace(
            r#"comm = [{ kind = "send", partner = "next" }]"#,
            r#"comm = [{ kind = "send", partner = "next" }, { kind = "recv", partner = "prev", bytes = 7 }]"#,
        );
        let sc = Scenario::from_toml(&text).unwrap();
        let (steps, _) = crate::synth::generate_rank(&sc, 1);
        let recv = crate::synth::generator::ET_RECV;
        for m in steps.iter().flat_map(|s| &s.comms) {
            if m[3] == recv {
                assert_eq!(m[6], 7);
            } else {
                assert!(m[6] == 10 || m[6] == 1000);
            }
        }
    }

    #[test]
    fn bad_laws_are_refused_naming_the_key() {
        let law_line = "runtime_law = { base = 5.0, per_byte = 0.01 }";
        let cases: [(String, &[&str]); 11] = [
            (
                BASE.replace(law_line, &format!("{law_line}\nruntime = {{ dist = \"constant\", value = 1 }}")),
                &["\"send\"", "`runtime` or `runtime_law`, not both"],
            ),
            (BASE.replace(law_line, ""), &["\"send\"", "missing `runtime`"]),
            (
                BASE.replace("message_bytes = { dist = \"choice\", values = [10, 1000], weights = [3, 1] }", "")
                    .replace("partner = \"next\" }", "partner = \"next\", bytes = 4 }"),
                &["runtime_law.per_byte", "message_bytes"],
            ),
            (
                BASE.replace(law_line, "runtime_law = { base = 5.0, counter = \"work\", per_unit = 1.0 }"),
                &["runtime_law.counter \"work\"", "counters"],
            ),
            (
                BASE.replace(law_line, "runtime_law = { base = 5.0, per_unit = 1.0 }"),
                &["runtime_law.per_unit"],
            ),
            (
                BASE.replace(law_line, "runtime_law = { base = -5.0 }"),
                &["runtime_law.base", "-5"],
            ),
            (
                BASE.replace(law_line, "runtime_law = { base = 5.0, noise = \"loud\" }"),
                &["loud"],
            ),
            (
                BASE.replace(law_line, "runtime_law = { base = 5.0, per_bytes = 1.0 }"),
                &["per_bytes"],
            ),
            (
                BASE.replace("weights = [3, 1]", "weights = [3]"),
                &["\"send\" message_bytes", "invalid distribution"],
            ),
            (
                format!("{BASE}\n[[anomaly]]\nfunction = \"send\"\nrate = 0.1\nfactor = 3.0\nbytes = [5, 1]\n"),
                &["bytes = [5, 1]", "empty"],
            ),
            (
                format!("{BASE}\n[[anomaly]]\nfunction = \"send\"\nrate = 0.1\ncounter_value = [0, 9]\n"),
                &["counter_value", "runtime_law.counter"],
            ),
        ];
        for (text, words) in &cases {
            let err = error_of(text);
            for w in *words {
                assert!(err.contains(w), "{err:?} lacks {w:?}");
            }
        }
        // A comm entry without a size needs `message_bytes`.
        let text = BASE
            .replace(
                "message_bytes = { dist = \"choice\", values = [10, 1000], weights = [3, 1] }",
                "",
            )
            .replace(law_line, "runtime = { dist = \"constant\", value = 1 }");
        let err = error_of(&text);
        assert!(err.contains("comm entry 1 has no `bytes`"), "{err}");
        // And an anomaly's size filter needs sizes.
        let text = format!(
            "{}\n[[anomaly]]\nfunction = \"step\"\nrate = 0.1\nbytes = [0, 9]\n",
            BASE
        );
        let err = error_of(&text);
        assert!(err.contains("anomaly on \"step\": `bytes` needs"), "{err}");
    }
}
