//! Tests of the TAU generator as a whole: the shipped scenarios keep giving
//! the same rows (so that results measured on them stay comparable across
//! versions), and runtime laws give what they promise.

use std::collections::{HashMap, HashSet};

use super::generator::{ET_ENTRY, ET_SEND};
use super::law::{predict, CallInputs};
use super::{generate_rank, Scenario, TruthRow};
use crate::trace::format::*;
use crate::util::hash::fnv1a;

/// FNV-1a over every row, attribute and ground-truth row of all ranks: one
/// number that changes if any byte of the written streams would.
fn fingerprint(sc: &Scenario) -> u64 {
    let mut all: Vec<u8> = Vec::new();
    let mut eat = |bytes: &[u8]| all.extend_from_slice(bytes);
    for rank in 0..sc.ranks {
        let (steps, truth) = generate_rank(sc, rank);
        for s in &steps {
            let rows = s.funcs.iter().flatten();
            let rows = rows.chain(s.comms.iter().flatten());
            for v in rows.chain(s.counters.iter().flatten()) {
                eat(&v.to_le_bytes());
            }
            for (k, v) in &s.new_attributes {
                eat(k.as_bytes());
                eat(v.as_bytes());
            }
        }
        for t in &truth {
            eat(format!("{t:?}").as_bytes());
        }
    }
    fnv1a(all)
}

fn shipped(name: &str) -> Scenario {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(format!("{name}.toml"));
    let text = std::fs::read_to_string(&path).unwrap();
    let mut sc = Scenario::from_toml(&text).unwrap();
    // Small enough for a debug build; every feature still shows up.
    sc.steps = sc.steps.min(4);
    sc.events_per_step = sc.events_per_step.min(3000);
    sc
}

/// Fingerprints of the shipped scenarios, cut down by [`shipped`], taken
/// before runtime laws existed: a scenario that uses none must not change.
const PINNED: [(&str, u64); 12] = [
    ("bursty", 0xf4de_b058_bc5e_430b),
    ("deepchild", 0xa2d6_a14c_ebc7_3d57),
    ("demo", 0x9312_a0b1_5de6_ae53),
    ("drift", 0x1ef7_b913_858e_9de1),
    ("large", 0x1ed6_5727_ac1f_ba85),
    ("multimodal", 0x06de_a6b9_36a3_88bd),
    ("rare", 0x7c45_174b_c4e9_8dc0),
    ("reader-bench", 0x8ea6_9405_8e53_b4dd),
    ("ring", 0x2df1_30f9_1be8_ac7b),
    ("slownode", 0x7557_831c_095f_166a),
    ("twomodes", 0x82ea_97ac_9302_3319),
    ("unimodal", 0x5c7d_fbaf_ed44_c340),
];

#[test]
fn shipped_scenarios_give_the_same_rows_as_before() {
    // If a change of the generator is meant to change traces, say so in the
    // change and update the numbers; otherwise this guards against drift.
    let got: Vec<(&str, u64)> = PINNED
        .iter()
        .map(|(name, _)| (*name, fingerprint(&shipped(name))))
        .collect();
    assert_eq!(got, PINNED, "a shipped scenario's trace changed");
    // The built-in demo at its full size, too.
    let demo = Scenario::from_toml(super::DEMO_SCENARIO).unwrap();
    assert_eq!(fingerprint(&demo), 0x90b9_2327_27ad_3e46);
    // And the scenario with runtime laws, at its full size, so that results
    // measured on it stay comparable too.
    assert_eq!(fingerprint(&modelled()), 0x164d_0d78_d1ed_2579);
}

/// One execution as a reader of the trace sees it: what a performance
/// model would be given.
#[derive(Debug, Clone)]
struct Call {
    function: String,
    thread: u64,
    entry: u64,
    exit: u64,
    exclusive: u64,
    sent: u64,
    received: u64,
    counters: Vec<(String, u64)>,
}

/// A call open during the replay.
struct Open {
    call: Call,
    children_us: u64,
}

type Rows<'a, R> = std::iter::Peekable<std::slice::Iter<'a, R>>;

/// Attaches this thread's comm and counter rows before `ts` to the
/// innermost open call.
fn attach_before(
    stack: &mut [Open],
    thread: u64,
    ts: u64,
    comms: &mut Rows<'_, CommRow>,
    samples: &mut Rows<'_, CounterRow>,
    counter_names: &HashMap<u64, String>,
) {
    while let Some(r) = comms.next_if(|r| r[COMM_COL_TIMESTAMP] < ts) {
        if r[COL_THREAD] != thread {
            continue;
        }
        let top = &mut stack.last_mut().expect("a message outside any call").call;
        if r[COMM_COL_EVENT_TYPE] == ET_SEND {
            top.sent += r[COMM_COL_BYTES];
        } else {
            top.received += r[COMM_COL_BYTES];
        }
    }
    while let Some(r) = samples.next_if(|r| r[COUNTER_COL_TIMESTAMP] < ts) {
        if r[COL_THREAD] != thread {
            continue;
        }
        let top = &mut stack.last_mut().expect("a sample outside any call").call;
        let name = counter_names[&r[COUNTER_COL_COUNTER]].clone();
        top.counters.push((name, r[COUNTER_COL_VALUE]));
    }
}

/// Replays rank `rank`'s rows on per-thread call stacks: comm and counter
/// rows go to the innermost open call, as the AD attaches them; rows left
/// at the end of a step go to the call still open (its ENTRY was the
/// step's last row of that thread).
fn replay(sc: &Scenario, rank: u64) -> (Vec<Call>, Vec<TruthRow>) {
    let (steps, truth) = generate_rank(sc, rank);
    let (mut timers, mut counter_names) = (HashMap::new(), HashMap::new());
    let mut stacks: HashMap<u64, Vec<Open>> = HashMap::new();
    let mut calls = Vec::new();
    for s in &steps {
        for (k, v) in &s.new_attributes {
            if let Some(i) = k.strip_prefix("timer ") {
                timers.insert(i.parse::<u64>().unwrap(), v.clone());
            } else if let Some(i) = k.strip_prefix("counter ") {
                counter_names.insert(i.parse::<u64>().unwrap(), v.clone());
            }
        }
        for thread in 0..sc.threads {
            let mut comms = s.comms.iter().peekable();
            let mut samples = s.counters.iter().peekable();
            let stack = stacks.entry(thread).or_default();
            for r in s.funcs.iter().filter(|r| r[COL_THREAD] == thread) {
                let ts = r[FUNC_COL_TIMESTAMP];
                attach_before(stack, thread, ts, &mut comms, &mut samples, &counter_names);
                let function = timers[&r[FUNC_COL_FUNCTION]].clone();
                if r[FUNC_COL_EVENT_TYPE] == ET_ENTRY {
                    let call = Call {
                        function,
                        thread,
                        entry: ts,
                        exit: 0,
                        exclusive: 0,
                        sent: 0,
                        received: 0,
                        counters: Vec::new(),
                    };
                    stack.push(Open {
                        call,
                        children_us: 0,
                    });
                    continue;
                }
                let mut open = stack.pop().expect("an EXIT without its ENTRY");
                assert_eq!(open.call.function, function);
                let inclusive = ts - open.call.entry;
                open.call.exit = ts;
                open.call.exclusive = inclusive - open.children_us;
                if let Some(parent) = stack.last_mut() {
                    parent.children_us += inclusive;
                }
                calls.push(open.call);
            }
            let end = u64::MAX;
            attach_before(stack, thread, end, &mut comms, &mut samples, &counter_names);
        }
    }
    (calls, truth)
}

fn modelled() -> Scenario {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/modelled.toml");
    Scenario::from_toml(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every call of `function` in all ranks of `sc`, with its law's
/// prediction and whether the ground truth lists it.
fn law_calls(sc: &Scenario, function: &str) -> Vec<(Call, f64, bool)> {
    let spec = sc.functions.iter().find(|f| f.name == function).unwrap();
    let law = spec.runtime_law.as_ref().unwrap();
    let mut out = Vec::new();
    for rank in 0..sc.ranks {
        let (calls, truth) = replay(sc, rank);
        let key = |f: &str, t: u64, a: u64, b: u64| (f.to_owned(), t, a, b);
        let truth: HashSet<_> = truth
            .iter()
            .map(|r| key(&r.function, r.thread, r.entry_us, r.exit_us))
            .collect();
        for c in calls.into_iter().filter(|c| c.function == function) {
            let counter = law.counter.as_ref().map(|name| {
                let mine: Vec<u64> = c
                    .counters
                    .iter()
                    .filter(|(n, _)| n == name)
                    .map(|(_, v)| *v)
                    .collect();
                assert_eq!(mine.len(), 1, "one {name} sample per call");
                mine[0]
            });
            let inputs = CallInputs {
                bytes: c.sent,
                counter,
            };
            let anomalous = truth.contains(&key(&c.function, c.thread, c.entry, c.exit));
            out.push((c, predict(law, inputs), anomalous));
        }
    }
    out
}

/// Checks that each call's self time is its prediction (times `factor`
/// for the ground truth's calls) within the relative noise, and that the
/// noise has the declared spread.
fn check_law(calls: &[(Call, f64, bool)], factor: f64, noise_std: f64) {
    let mut rel = Vec::new();
    for (c, predicted, anomalous) in calls {
        let expect = if *anomalous {
            factor * predicted
        } else {
            *predicted
        };
        let r = c.exclusive as f64 / expect - 1.0;
        // Six standard deviations, plus the rounding to whole µs.
        let slack = 6.0 * noise_std + 0.5 / expect;
        assert!(
            r.abs() <= slack,
            "{c:?}: {} µs, predicted {expect}",
            c.exclusive
        );
        rel.push(r);
    }
    let n = rel.len() as f64;
    let sd = (rel.iter().map(|r| r * r).sum::<f64>() / n).sqrt();
    assert!((sd / noise_std - 1.0).abs() < 0.1, "noise sd {sd}");
}

#[test]
fn a_call_takes_base_plus_per_byte_times_its_message_size() {
    let sc = modelled();
    let calls = law_calls(&sc, "exchange");
    assert!(calls.len() > 50_000, "{} exchanges", calls.len());
    for (c, _, _) in &calls {
        // The send and the receive of one call carry the same drawn size.
        assert_eq!(c.sent, c.received, "{c:?}");
        assert!(c.counters.is_empty());
    }
    check_law(&calls, 3.0, 0.05);
}

#[test]
fn a_call_takes_base_plus_per_unit_times_its_counter() {
    let sc = modelled();
    let calls = law_calls(&sc, "compute");
    assert!(calls.len() > 25_000, "{} computes", calls.len());
    check_law(&calls, 3.0, 0.05);
}

#[test]
fn modelled_anomalies_are_exactly_the_truth_and_hide_among_large_calls() {
    let sc = modelled();
    let bytes: fn(&Call) -> u64 = |c| c.sent;
    let work: fn(&Call) -> u64 = |c| c.counters[0].1;
    let in_truth: usize = (0..sc.ranks).map(|r| generate_rank(&sc, r).1.len()).sum();
    let mut found = 0;
    // Function, its size, the largest size the anomalies hit, the
    // smallest size of the rare large calls.
    for (function, size, anomalies_up_to, large_from) in [
        ("exchange", bytes, 262_144, 262_145),
        ("compute", work, 5_000, 20_000),
    ] {
        let calls = law_calls(&sc, function);
        let n = calls.len() as f64;
        // Slow for its size: self time about three times the prediction;
        // nothing else comes near twice it.
        for (c, predicted, anomalous) in &calls {
            let slow = c.exclusive as f64 > 2.0 * predicted;
            assert_eq!(slow, *anomalous, "{c:?}, predicted {predicted}");
            if *anomalous {
                assert!(size(c) <= anomalies_up_to, "{c:?}");
            }
        }
        let anomalies: Vec<u64> = calls
            .iter()
            .filter(|x| x.2)
            .map(|x| x.0.exclusive)
            .collect();
        found += anomalies.len();
        let share = anomalies.len() as f64 / n;
        assert!(
            (0.005..=0.01).contains(&share),
            "{function}: {share} anomalous"
        );
        // Large but normal: 5–10% of the calls, none in the truth.
        let large: Vec<u64> = calls
            .iter()
            .filter(|x| size(&x.0) >= large_from)
            .inspect(|x| assert!(!x.2, "{:?}", x.0))
            .map(|x| x.0.exclusive)
            .collect();
        let share = large.len() as f64 / n;
        assert!((0.05..=0.10).contains(&share), "{function}: {share} large");
        // Hidden: for every anomaly, more than 5% of the calls are normal
        // and at least as long, so a detector of long runtimes that flags
        // it flags those too. And no anomaly is extreme: the median large
        // call takes longer than each.
        let mut normal: Vec<u64> = calls
            .iter()
            .filter(|x| !x.2)
            .map(|x| x.0.exclusive)
            .collect();
        normal.sort_unstable();
        for a in &anomalies {
            let as_long = normal.len() - normal.partition_point(|x| x < a);
            assert!(as_long as f64 > 0.05 * n, "{function}: {a} µs");
        }
        let mut large = large;
        large.sort_unstable();
        let longest = *anomalies.iter().max().unwrap();
        assert!(longest < large[large.len() / 2], "{function}: {longest} µs");
    }
    // The ground truth holds these anomalies and nothing else.
    assert_eq!(found, in_truth);
}

/// A family's members as the streams name them: `timer` attributes per
/// step, by rank.
fn family_names_per_step(sc: &Scenario, rank: u64) -> Vec<Vec<String>> {
    let (steps, _) = generate_rank(sc, rank);
    steps
        .iter()
        .map(|s| {
            s.new_attributes
                .iter()
                .filter(|(k, v)| k.starts_with("timer ") && v.starts_with("kernel<"))
                .map(|(_, v)| v.clone())
                .collect()
        })
        .collect()
}

/// A scenario whose `step` calls a `[[family]]` named `kernel` `calls`
/// times: `run` holds the run's keys (seed, ranks, steps, events per step)
/// and `family` the family's keys besides its name and runtime.
fn family_scenario(run: &str, calls: u32, family: &str) -> String {
    format!(
        r#"
        {run}
        root = "step"
        [[function]]
        name = "main"
        runtime = {{ dist = "constant", value = 5 }}
        [[function]]
        name = "step"
        runtime = {{ dist = "constant", value = 10 }}
        children = [{{ function = "kernel", calls = {calls} }}]
        [[family]]
        name = "kernel"
        runtime = {{ dist = "normal", mean = 12, std = 1 }}
        {family}
    "#
    )
}

#[test]
fn families_call_many_functions_most_of_them_rarely() {
    let text = family_scenario(
        "seed = 3\nranks = 2\nsteps = 6\nevents_per_step = 3000",
        10,
        "count = 5000\nby_rank = true",
    );
    let sc = Scenario::from_toml(&text).unwrap();
    assert_eq!(sc.functions.len(), 2 + 5000);
    assert_eq!(sc.functions[2].name, "kernel<0>");
    let r0 = family_names_per_step(&sc, 0);
    let r1 = family_names_per_step(&sc, 1);
    // New names in every step, late ones included (rare members).
    assert!(
        r0.iter().all(|s| !s.is_empty()),
        "{:?}",
        r0.iter().map(Vec::len).collect::<Vec<_>>()
    );
    let seen: std::collections::HashSet<&String> = r0.iter().flatten().collect();
    // Many distinct members, far fewer than were called (a Zipf law).
    assert!(seen.len() > 300 && seen.len() < 5000, "{}", seen.len());
    // Ranks favour different members: their first step's names differ.
    let first0: std::collections::HashSet<&String> = r0[0].iter().collect();
    let first1: std::collections::HashSet<&String> = r1[0].iter().collect();
    assert!(first0.intersection(&first1).count() < first0.len() / 2);
    // A family needs members and a valid exponent.
    let bad = text.replace("count = 5000", "count = 0");
    assert!(Scenario::from_toml(&bad).is_err());
}

#[test]
fn rotating_families_move_their_favourite_members_each_step() {
    // A Zipf exponent this steep calls the first member only; rotating by
    // 3 of 10 members a step calls members 0, 3, 6, 9, then 2 (wrapped).
    let text = family_scenario(
        "seed = 5\nranks = 1\nsteps = 5\nevents_per_step = 200",
        4,
        "count = 10\nzipf = 60.0\nrotate_per_step = 3",
    );
    let sc = Scenario::from_toml(&text).unwrap();
    let names = family_names_per_step(&sc, 0);
    let want: Vec<Vec<String>> = [0, 3, 6, 9, 2]
        .iter()
        .map(|k| vec![format!("kernel<{k}>")])
        .collect();
    assert_eq!(names, want);
}
