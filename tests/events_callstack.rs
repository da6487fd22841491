//! Rebuilding executions from TAU rows (`chimbuko_mpi::events`): exact
//! outcomes on hand-built steps, every kind of broken input, GPU pairing,
//! and the real TAU fixture.
//!
//! The file is long because each way a call stack can break (missing
//! entries or exits, interleaved threads, GPU rows without partners) has its
//! own exact test on one shared hand-built map of names.

mod common;

use std::collections::HashMap;

use chimbuko_mpi::events::*;
use chimbuko_mpi::trace::format::*;
use chimbuko_mpi::trace::step::TraceStep;

const RANK: u64 = 3;
// Local event-type indices of the test map.
const ENTRY: u64 = 0;
const EXIT: u64 = 1;
const SEND: u64 = 2;
const RECV: u64 = 3;
// Local counter indices of the test map and their global indices.
const PLAIN: u64 = 0;
const CORR: u64 = 1;
const MONITOR: u64 = 2;
const G_PLAIN: u32 = 50;
const G_CORR: u32 = 51;
const G_MONITOR: u32 = 52;
// Local function indices; global = local + 100.
const A: u64 = 0;
const B: u64 = 1;
const C: u64 = 2;
const D: u64 = 3;

fn g(local: u64) -> u32 {
    local as u32 + 100
}

fn map() -> IndexMap {
    IndexMap {
        functions: (0..8).map(|i| Some(i + 100)).collect(),
        counters: vec![Some(G_PLAIN), Some(G_CORR), Some(G_MONITOR)],
        counter_roles: vec![
            CounterRole::Plain,
            CounterRole::CorrelationId,
            CounterRole::Monitoring,
        ],
        event_types: vec![
            Some(EventKind::Entry),
            Some(EventKind::Exit),
            Some(EventKind::Send),
            Some(EventKind::Recv),
        ],
    }
}

fn f(thread: u64, kind: u64, func: u64, ts: u64) -> FuncRow {
    [0, RANK, thread, kind, func, ts]
}

fn comm(thread: u64, kind: u64, tag: u64, partner: u64, bytes: u64, ts: u64) -> CommRow {
    [0, RANK, thread, kind, tag, partner, bytes, ts]
}

fn ctr(thread: u64, counter: u64, value: u64, ts: u64) -> CounterRow {
    [0, RANK, thread, counter, value, ts]
}

fn tau(
    step: usize,
    funcs: Vec<FuncRow>,
    comms: Vec<CommRow>,
    counters: Vec<CounterRow>,
) -> TraceStep {
    TraceStep {
        step,
        funcs: funcs.iter().map(FuncEvent::from_row).collect(),
        comms,
        counters,
        ..Default::default()
    }
}

fn id(step: u64, idx: u64) -> ExecId {
    ExecId {
        rank: RANK,
        step,
        idx,
    }
}

fn stream() -> CallStackBuilder {
    CallStackBuilder::new(2, RANK, "test-stream".into(), EventOptions::default())
}

fn by_id(ev: &StepEvents) -> HashMap<ExecId, &Execution> {
    ev.executions.iter().map(|e| (e.id, e)).collect()
}

fn ids(ev: &StepEvents) -> Vec<ExecId> {
    ev.executions.iter().map(|e| e.id).collect()
}

fn assert_no_issues(ev: &StepEvents) {
    assert!(ev.issues.is_empty(), "{}", ev.issues.summary("test", 0));
}

/// The recorded CPU/GPU partner of execution `x` of the step.
fn partner(ev: &StepEvents, x: ExecId) -> Option<ExecId> {
    let i = ev.executions.iter().position(|e| e.id == x)?;
    ev.gpu_partner_of(i)
}

#[test]
fn nested_calls_exact_times_parents_and_ids() {
    let mut s = stream();
    let t = tau(
        0,
        vec![
            f(0, ENTRY, A, 100),
            f(0, ENTRY, B, 110),
            f(0, ENTRY, C, 120),
            f(0, EXIT, C, 130),
            f(0, EXIT, B, 150),
            f(0, ENTRY, D, 160),
            f(0, EXIT, D, 190),
            f(0, EXIT, A, 200),
        ],
        vec![],
        vec![],
    );
    let ev = s.build_step(0, &t, &map());
    assert_no_issues(&ev);
    // Order of EXIT processing.
    assert_eq!(ids(&ev), vec![id(0, 2), id(0, 1), id(0, 3), id(0, 0)]);
    let e = by_id(&ev);
    let check = |i: u64,
                 func: u64,
                 entry: u64,
                 exit: u64,
                 incl: u64,
                 excl: u64,
                 parent: Option<ExecId>,
                 depth: u32,
                 kids: u32| {
        let x = e[&id(0, i)];
        assert_eq!(x.function, g(func), "{i}");
        assert_eq!((x.entry, x.exit), (entry, exit), "{i}");
        assert_eq!((x.inclusive(), x.exclusive), (incl, excl), "{i}");
        assert_eq!(x.parent(), parent, "{i}");
        assert_eq!(x.depth, depth, "{i}");
        assert_eq!(x.n_children, kids, "{i}");
        assert_eq!((x.program, x.rank(), x.thread), (2, RANK, 0), "{i}");
        assert!(!x.is_gpu && ev.comms_of(x).is_empty() && ev.counters_of(x).is_empty());
        assert_eq!(x.dropped_attachments(), 0);
        assert!(ev.correlation_ids_of(x).is_empty() && partner(&ev, x.id).is_none());
    };
    check(0, A, 100, 200, 100, 30, None, 0, 2);
    check(1, B, 110, 150, 40, 30, Some(id(0, 0)), 1, 1);
    check(2, C, 120, 130, 10, 10, Some(id(0, 1)), 2, 0);
    check(3, D, 160, 190, 30, 30, Some(id(0, 0)), 1, 0);
    assert_eq!((ev.first_ts, ev.last_ts), (Some(100), Some(200)));
    assert!(ev.gpu_pairs.is_empty() && ev.node_state.is_empty());
    assert_eq!(s.open_calls(), 0);
    assert!(s.finish().is_empty());
}

#[test]
fn exec_id_label_round_trips() {
    let x = ExecId {
        rank: 4,
        step: 17,
        idx: 250,
    };
    assert_eq!(x.to_string(), "4:17:250");
    assert_eq!("4:17:250".parse::<ExecId>(), Ok(x));
    assert!("4:17".parse::<ExecId>().is_err());
    assert!("4:17:2:1".parse::<ExecId>().is_err());
    assert!("root".parse::<ExecId>().is_err());
}

#[test]
fn comms_and_counters_attach_with_tie_rules() {
    let mut s = stream();
    let garbage = 18446744071900455069u64;
    let t = tau(
        0,
        vec![
            f(0, ENTRY, A, 100),
            f(0, ENTRY, B, 200),
            f(0, EXIT, B, 300),
            f(0, EXIT, A, 400),
            // A zero-length call claims what happens at its timestamp.
            f(0, ENTRY, C, 500),
            f(0, EXIT, C, 500),
        ],
        vec![
            comm(0, SEND, 7, 1, 64, 100),       // same ts as ENTRY A -> A
            comm(0, RECV, 8, 2, garbage, 150),  // inside A -> A, bytes unknown
            comm(0, SEND, 9, 5, 32, 200),       // same ts as ENTRY B -> B
            comm(0, RECV, 10, 6, 16, 300),      // same ts as EXIT B -> B
            comm(0, SEND, 11, 4, 1 << 40, 400), // same ts as EXIT A -> A; 2^40 is plausible
            comm(0, RECV, 12, 4, 8, 450),       // nothing open
            comm(0, SEND, 13, 4, 8, 500),       // zero-length C
        ],
        vec![
            ctr(0, PLAIN, 1, 50),  // nothing open
            ctr(0, PLAIN, 2, 100), // ENTRY A -> A
            ctr(0, PLAIN, 3, 200), // ENTRY B -> B
            ctr(0, PLAIN, 4, 300), // EXIT B -> B
            ctr(0, PLAIN, 5, 350), // A
            ctr(0, PLAIN, 6, 400), // EXIT A -> A
            ctr(0, PLAIN, 7, 500), // C
        ],
    );
    let ev = s.build_step(0, &t, &map());
    assert_eq!(ev.issues.count(EventIssueKind::UnattachedComm), 1);
    assert_eq!(ev.issues.count(EventIssueKind::UnattachedCounter), 1);
    assert_eq!(ev.issues.total(), 2);
    let e = by_id(&ev);
    let (a, b, c) = (e[&id(0, 0)], e[&id(0, 1)], e[&id(0, 2)]);
    let cm = |direction, src, dst, tag, bytes, ts| CommEvent {
        direction,
        src,
        dst,
        tag,
        bytes,
        ts,
    };
    use CommDirection::*;
    assert_eq!(
        ev.comms_of(a),
        vec![
            cm(Send, RANK, 1, 7, Some(64), 100),
            cm(Recv, 2, RANK, 8, None, 150),
            cm(Send, RANK, 4, 11, Some(1 << 40), 400),
        ]
    );
    assert_eq!(
        ev.comms_of(b),
        vec![
            cm(Send, RANK, 5, 9, Some(32), 200),
            cm(Recv, 6, RANK, 10, Some(16), 300)
        ]
    );
    assert_eq!(ev.comms_of(c), vec![cm(Send, RANK, 4, 13, Some(8), 500)]);
    let k = |value, ts| CounterEvent {
        counter: G_PLAIN,
        value,
        ts,
    };
    assert_eq!(ev.counters_of(a), vec![k(2, 100), k(5, 350), k(6, 400)]);
    assert_eq!(ev.counters_of(b), vec![k(3, 200), k(4, 300)]);
    assert_eq!(ev.counters_of(c), vec![k(7, 500)]);
    assert_eq!((c.inclusive(), c.exclusive), (0, 0));
    assert_eq!((ev.first_ts, ev.last_ts), (Some(50), Some(500)));
    let summary = ev.issues.summary("s", 0);
    assert!(
        summary.contains("thread 0: 1 comm event outside any call (first: comm row 5"),
        "{summary}"
    );
}

#[test]
fn call_spanning_three_steps_keeps_children_accounting() {
    let mut s = stream();
    let m = map();
    let e3 = s.build_step(3, &tau(3, vec![f(0, ENTRY, A, 100)], vec![], vec![]), &m);
    assert_no_issues(&e3);
    assert!(e3.executions.is_empty());
    assert_eq!(s.open_calls(), 1);
    let e4 = s.build_step(
        4,
        &tau(
            4,
            vec![
                f(0, ENTRY, B, 200),
                f(0, EXIT, B, 250),
                f(0, ENTRY, C, 260),
                f(0, EXIT, C, 300),
            ],
            vec![comm(0, SEND, 1, 0, 10, 255)],
            vec![ctr(0, PLAIN, 9, 310)],
        ),
        &m,
    );
    assert_no_issues(&e4);
    assert_eq!(ids(&e4), vec![id(4, 0), id(4, 1)]);
    for x in &e4.executions {
        assert_eq!(x.parent(), Some(id(3, 0)));
        assert_eq!(x.depth, 1);
    }
    assert_eq!(s.open_calls(), 1);
    assert_eq!(
        s.open_call_list(),
        vec![OpenCall {
            id: id(3, 0),
            thread: 0,
            function: g(A),
            entry: 100,
            depth: 0
        }]
    );
    let e5 = s.build_step(5, &tau(5, vec![f(0, EXIT, A, 400)], vec![], vec![]), &m);
    assert_no_issues(&e5);
    assert_eq!(e5.executions.len(), 1);
    let a = &e5.executions[0];
    assert_eq!(a.id, id(3, 0));
    assert_eq!((a.entry, a.exit, a.inclusive()), (100, 400, 300));
    assert_eq!(a.exclusive, 300 - 50 - 40);
    assert_eq!(a.n_children, 2);
    // Attached in step 4 while A was the innermost open call.
    assert_eq!(e5.comms_of(a).len(), 1);
    assert_eq!(e5.comms_of(a)[0].ts, 255);
    assert_eq!(
        e5.counters_of(a),
        vec![CounterEvent {
            counter: G_PLAIN,
            value: 9,
            ts: 310
        }]
    );
    assert_eq!(s.open_calls(), 0);
}

fn two_thread_rows(interleaved: bool) -> Vec<FuncRow> {
    let t0 = [
        f(0, ENTRY, A, 100),
        f(0, ENTRY, B, 120),
        f(0, EXIT, B, 140),
        f(0, EXIT, A, 200),
    ];
    let t1 = [
        f(1, ENTRY, C, 105),
        f(1, ENTRY, D, 125),
        f(1, EXIT, D, 145),
        f(1, EXIT, C, 210),
    ];
    if interleaved {
        t0.iter().zip(&t1).flat_map(|(a, b)| [*a, *b]).collect()
    } else {
        t0.iter().chain(&t1).copied().collect()
    }
}

/// Every execution is found by its id through the step's entry index (calls
/// entered this step) or its carried list (calls entered earlier), and the
/// observer sees each execution once, as it completes, in output order.
#[test]
fn executions_are_found_by_id_and_observed_as_they_complete() {
    let mut s = stream();
    let m = map();
    let e0 = s.build_step(
        0,
        &tau(
            0,
            vec![f(0, ENTRY, A, 100), f(1, ENTRY, B, 105)],
            vec![],
            vec![],
        ),
        &m,
    );
    assert!(e0.executions.is_empty());
    assert_eq!(e0.exec_of_entry, vec![StepEvents::NOT_HERE; 2]);
    let t1 = tau(
        1,
        vec![
            f(0, ENTRY, C, 110),
            f(0, EXIT, C, 120),
            f(0, ENTRY, D, 130), // still open at the end of the step
            f(1, EXIT, B, 140),
            f(0, EXIT, A, 999), // not open on top: D is; closes D then A
        ],
        vec![],
        vec![],
    );
    let mut seen = Vec::new();
    let mut out = StepEvents::default();
    s.build_step_into(1, &t1, &m, &mut out, &mut |e| seen.push(e.id));
    // C (1:0); thread 1's B (0:1); D closed implicitly (1:1); A (0:0).
    assert_eq!(ids(&out), vec![id(1, 0), id(0, 1), id(1, 1), id(0, 0)]);
    assert_eq!(
        seen,
        ids(&out),
        "each execution observed once, in output order"
    );
    assert_eq!(out.exec_of_entry, vec![0, 2]);
    // Carried calls sorted by id: A (0:0) at index 3, B (0:1) at index 1.
    assert_eq!(out.carried, vec![3, 1]);
    for (i, x) in out.executions.iter().enumerate() {
        assert_eq!(out.find(1, x.id), Some(i), "{}", x.id);
    }
    assert_eq!(out.find(1, id(1, 2)), None);
    assert_eq!(out.find(1, id(0, 7)), None);
}

#[test]
fn two_threads_grouped_and_interleaved() {
    let comms = vec![
        comm(1, SEND, 1, 0, 10, 110), // thread 1: C
        comm(0, SEND, 2, 1, 10, 130), // thread 0: B
        comm(1, RECV, 3, 0, 10, 145), // thread 1: EXIT D -> D
        comm(0, RECV, 4, 1, 10, 150), // thread 0: A
    ];
    for interleaved in [false, true] {
        let mut s = stream();
        let ev = s.build_step(
            1,
            &tau(1, two_thread_rows(interleaved), comms.clone(), vec![]),
            &map(),
        );
        assert_no_issues(&ev);
        let e = by_id(&ev);
        // Ids follow the ENTRY rows' positions in the array.
        let (a, b, c, d) = if interleaved {
            (id(1, 0), id(1, 2), id(1, 1), id(1, 3))
        } else {
            (id(1, 0), id(1, 1), id(1, 2), id(1, 3))
        };
        assert_eq!(e[&a].function, g(A));
        assert_eq!(e[&b].function, g(B));
        assert_eq!(e[&c].function, g(C));
        assert_eq!(e[&d].function, g(D));
        assert_eq!((e[&a].thread, e[&b].thread), (0, 0));
        assert_eq!((e[&c].thread, e[&d].thread), (1, 1));
        assert_eq!(e[&b].parent(), Some(a));
        assert_eq!(e[&d].parent(), Some(c));
        assert_eq!((e[&a].inclusive(), e[&a].exclusive), (100, 80));
        assert_eq!((e[&c].inclusive(), e[&c].exclusive), (105, 85));
        let tags = |x: &ExecId| ev.comms_of(e[x]).iter().map(|c| c.tag).collect::<Vec<_>>();
        assert_eq!(tags(&a), vec![4]);
        assert_eq!(tags(&b), vec![2]);
        assert_eq!(tags(&c), vec![1]);
        assert_eq!(tags(&d), vec![3]);
        assert_eq!((ev.first_ts, ev.last_ts), (Some(100), Some(210)));
    }
}

#[test]
fn exit_with_empty_stack_is_skipped() {
    let mut s = stream();
    let ev = s.build_step(
        0,
        &tau(
            0,
            vec![
                f(0, EXIT, A, 90),
                f(0, ENTRY, A, 100),
                f(0, EXIT, A, 120),
                f(0, EXIT, B, 130),
            ],
            vec![],
            vec![],
        ),
        &map(),
    );
    assert_eq!(ev.issues.count(EventIssueKind::EmptyStackExit), 2);
    assert_eq!(ev.issues.total(), 2);
    assert_eq!(ids(&ev), vec![id(0, 0)]);
    assert_eq!(ev.executions[0].inclusive(), 20);
    let summary = ev.issues.summary("tau-metrics-x-3.bp", 0);
    assert!(
        summary.starts_with(
            "tau-metrics-x-3.bp: step 0: thread 0: 2 EXIT with empty stack (first: function row 0"
        ),
        "{summary}"
    );
}

#[test]
fn exit_of_deeper_call_closes_the_calls_above_it() {
    let mut s = stream();
    let m = map();
    let ev = s.build_step(
        0,
        &tau(
            0,
            vec![
                f(0, ENTRY, D, 90),
                f(0, ENTRY, A, 100),
                f(0, ENTRY, B, 110),
                f(0, ENTRY, C, 120),
                f(0, EXIT, A, 150), // C and B lost their EXIT
            ],
            vec![],
            vec![],
        ),
        &m,
    );
    assert_eq!(ev.issues.count(EventIssueKind::ClosedImplicitly), 2);
    assert_eq!(ev.issues.total(), 2);
    assert_eq!(ids(&ev), vec![id(0, 3), id(0, 2), id(0, 1)]);
    let e = by_id(&ev);
    let c = e[&id(0, 3)];
    assert_eq!((c.exit, c.inclusive(), c.exclusive), (150, 30, 30));
    let b = e[&id(0, 2)];
    assert_eq!((b.exit, b.inclusive(), b.exclusive), (150, 40, 10));
    let a = e[&id(0, 1)];
    assert_eq!(
        (a.exit, a.inclusive(), a.exclusive, a.depth),
        (150, 50, 10, 1)
    );
    assert_eq!(a.parent(), Some(id(0, 0)));
    // D is still open and works normally afterwards.
    assert_eq!(s.open_calls(), 1);
    let ev = s.build_step(
        1,
        &tau(
            1,
            vec![f(0, ENTRY, B, 160), f(0, EXIT, B, 170), f(0, EXIT, D, 200)],
            vec![],
            vec![],
        ),
        &m,
    );
    assert_no_issues(&ev);
    assert_eq!(ids(&ev), vec![id(1, 0), id(0, 0)]);
    let d = &ev.executions[1];
    assert_eq!(
        (d.inclusive(), d.exclusive, d.n_children),
        (110, 110 - 50 - 10, 2)
    );
}

#[test]
fn attachments_follow_implicit_closes_and_open_calls_across_steps() {
    let mut s = stream();
    let m = map();
    let ev0 = s.build_step(
        0,
        &tau(
            0,
            vec![
                f(0, ENTRY, D, 90),
                f(0, ENTRY, A, 100),
                f(0, ENTRY, B, 110),
                f(0, ENTRY, C, 120),
                f(0, EXIT, A, 150), // C and B lost their EXIT
            ],
            vec![comm(0, SEND, 1, 0, 8, 95), comm(0, RECV, 2, 0, 8, 115)],
            vec![
                ctr(0, PLAIN, 1, 105),
                ctr(0, PLAIN, 2, 125),
                ctr(0, CORR, 77, 126),
            ],
        ),
        &m,
    );
    assert_eq!(ev0.issues.count(EventIssueKind::ClosedImplicitly), 2);
    assert_eq!(ev0.issues.total(), 2);
    let e = by_id(&ev0);
    let (a, b, c) = (e[&id(0, 1)], e[&id(0, 2)], e[&id(0, 3)]);
    let tags = |x: &Execution| ev0.comms_of(x).iter().map(|c| c.tag).collect::<Vec<_>>();
    let values = |x: &Execution| {
        ev0.counters_of(x)
            .iter()
            .map(|c| c.value)
            .collect::<Vec<_>>()
    };
    assert_eq!((tags(a), values(a)), (vec![], vec![1]));
    assert_eq!((tags(b), values(b)), (vec![2], vec![]));
    assert_eq!((tags(c), values(c)), (vec![], vec![2, 77]));
    assert_eq!(ev0.correlation_ids_of(c), vec![77]);
    assert!(ev0.correlation_ids_of(a).is_empty() && ev0.correlation_ids_of(b).is_empty());
    // Every attached event landed in the arenas exactly once; D's comm is
    // still pending with the open call.
    assert_eq!(
        (
            ev0.comms.len(),
            ev0.counters.len(),
            ev0.correlation_ids.len()
        ),
        (1, 3, 1)
    );
    // The owned form carries copies of the attachments.
    let owned = ev0.to_owned_execution(c);
    assert_eq!(owned.exec, *c);
    assert_eq!(owned.comms, ev0.comms_of(c));
    assert_eq!(owned.counters, ev0.counters_of(c));
    assert_eq!(owned.correlation_ids, vec![77]);
    // Ranges read against the wrong arenas never panic.
    let mut bad = *c;
    bad.attach.counters.start = u32::MAX;
    bad.attach.comms.len = u32::MAX;
    assert!(ev0.counters_of(&bad).is_empty() && ev0.comms_of(&bad).is_empty());
    assert!(StepEvents::default().counters_of(c).is_empty());

    // D, open across the step boundary, keeps its step-0 comm.
    s.recycle(ev0);
    let ev1 = s.build_step(
        1,
        &tau(
            1,
            vec![f(0, EXIT, D, 200)],
            vec![],
            vec![ctr(0, PLAIN, 3, 160)],
        ),
        &m,
    );
    assert_no_issues(&ev1);
    assert_eq!(ids(&ev1), vec![id(0, 0)]);
    let d = &ev1.executions[0];
    assert_eq!(
        ev1.comms_of(d)
            .iter()
            .map(|c| (c.tag, c.ts))
            .collect::<Vec<_>>(),
        vec![(1, 95)]
    );
    assert_eq!(
        ev1.counters_of(d)
            .iter()
            .map(|c| c.value)
            .collect::<Vec<_>>(),
        vec![3]
    );
    assert_eq!(s.open_calls(), 0);
}

#[test]
fn exit_of_function_not_open_is_skipped() {
    let mut s = stream();
    let ev = s.build_step(
        0,
        &tau(
            0,
            vec![
                f(0, ENTRY, A, 100),
                f(0, EXIT, D, 110),
                f(0, ENTRY, B, 120),
                f(0, EXIT, B, 130),
                f(0, EXIT, A, 140),
            ],
            vec![],
            vec![],
        ),
        &map(),
    );
    assert_eq!(ev.issues.count(EventIssueKind::MismatchedExit), 1);
    assert_eq!(ev.issues.total(), 1);
    assert_eq!(ids(&ev), vec![id(0, 1), id(0, 0)]);
    assert_eq!(ev.executions[1].exclusive, 30);
    assert_eq!(s.open_calls(), 0);
}

#[test]
fn exit_before_entry_is_skipped() {
    let mut s = stream();
    let ev = s.build_step(
        0,
        &tau(
            0,
            vec![
                f(0, ENTRY, A, 100),
                f(0, ENTRY, B, 110),
                f(0, EXIT, B, 105), // before B's entry
                f(0, EXIT, A, 108), // would close B (entered at 110) implicitly
                f(0, EXIT, B, 130),
                f(0, EXIT, A, 140),
            ],
            vec![],
            vec![],
        ),
        &map(),
    );
    assert_eq!(ev.issues.count(EventIssueKind::ExitBeforeEntry), 2);
    assert_eq!(ev.issues.total(), 2);
    assert_eq!(ids(&ev), vec![id(0, 1), id(0, 0)]);
    assert_eq!(ev.executions[0].inclusive(), 20);
    assert_eq!(ev.executions[1].inclusive(), 40);
}

#[test]
fn unknown_indices_are_counted_and_skipped() {
    let mut s = stream();
    let mut m = map();
    m.functions[C as usize] = None; // name not agreed yet
    let ev = s.build_step(
        0,
        &tau(
            0,
            vec![
                f(0, ENTRY, A, 100),
                f(0, ENTRY, C, 110), // unknown: skipped, but its ordinal is used up
                f(0, ENTRY, 9999, 115), // past the end of the map
                f(0, EXIT, 9999, 116),
                f(0, EXIT, C, 120),
                f(0, 77, B, 125),   // unknown event type
                f(0, SEND, B, 126), // comm type in a function row
                f(0, ENTRY, B, 130),
                f(0, EXIT, B, 140),
                f(0, EXIT, A, 150),
            ],
            vec![comm(0, ENTRY, 1, 1, 1, 135), comm(0, 42, 1, 1, 1, 136)],
            vec![ctr(0, 17, 1, 137), ctr(0, PLAIN, 5, 138)],
        ),
        &m,
    );
    assert_eq!(ev.issues.count(EventIssueKind::UnknownFunction), 4);
    assert_eq!(ev.issues.count(EventIssueKind::UnknownEventType), 4);
    assert_eq!(ev.issues.count(EventIssueKind::UnknownCounter), 1);
    assert_eq!(ev.issues.total(), 9);
    // A = 0, C = 1, 9999 = 2, B = 3.
    assert_eq!(ids(&ev), vec![id(0, 3), id(0, 0)]);
    let b = &ev.executions[0];
    assert_eq!(
        (b.function, b.parent(), b.inclusive()),
        (g(B), Some(id(0, 0)), 10)
    );
    assert!(ev.comms_of(b).is_empty());
    assert_eq!(ev.counters_of(b).len(), 1);
    assert_eq!(ev.executions[1].n_children, 1);
}

fn gpu_metadata(thread: u64) -> Vec<Attribute> {
    ["CUDA Context", "CUDA Device", "CUDA Stream"]
        .iter()
        .zip(["1", "0", "7"])
        .map(|(d, v)| {
            Attribute::Metadata(MetadataEntry {
                rank: RANK,
                thread,
                description: d.to_string(),
                value: v.to_string(),
            })
        })
        .collect()
}

const GPU: u64 = 9;

fn launch_rows(cid: u64) -> (Vec<FuncRow>, Vec<CounterRow>) {
    (
        vec![f(0, ENTRY, A, 100), f(0, EXIT, A, 110)],
        vec![ctr(0, CORR, cid, 105)],
    )
}

fn kernel_rows(cid: u64) -> (Vec<FuncRow>, Vec<CounterRow>) {
    (
        vec![f(GPU, ENTRY, B, 200), f(GPU, EXIT, B, 300)],
        vec![ctr(GPU, CORR, cid, 200)],
    )
}

#[test]
fn gpu_pairing_cpu_side_first() {
    let mut s = stream();
    let (mut funcs, mut counters) = launch_rows(42);
    let (kf, kc) = kernel_rows(42);
    funcs.extend(kf);
    counters.extend(kc);
    let mut t = tau(0, funcs, vec![], counters);
    t.new_attributes = gpu_metadata(GPU);
    let ev = s.build_step(0, &t, &map());
    assert_no_issues(&ev);
    assert_eq!(ev.gpu_pairs, vec![(id(0, 0), id(0, 1))]);
    let e = by_id(&ev);
    let (cpu, gpu) = (e[&id(0, 0)], e[&id(0, 1)]);
    assert!(!cpu.is_gpu && gpu.is_gpu);
    assert_eq!(ev.correlation_ids_of(cpu), vec![42]);
    assert_eq!(ev.correlation_ids_of(gpu), vec![42]);
    assert_eq!(partner(&ev, cpu.id), None); // completed before its partner
    assert_eq!(partner(&ev, gpu.id), Some(id(0, 0)));
    // The correlation counter is also an ordinary attached counter.
    assert_eq!(
        ev.counters_of(cpu),
        vec![CounterEvent {
            counter: G_CORR,
            value: 42,
            ts: 105
        }]
    );
    assert_eq!(
        s.gpu_location(GPU),
        Some(&GpuLocation {
            device: Some("0".into()),
            context: Some("1".into()),
            stream: Some("7".into())
        })
    );
    assert_eq!(s.gpu_location(0), None);
    assert_eq!(s.gpu_threads().count(), 1);
    assert_eq!(s.pending_correlations(), 0);
}

#[test]
fn gpu_pairing_gpu_side_first() {
    let mut s = stream();
    let (mut funcs, mut counters) = kernel_rows(42);
    let (lf, lc) = launch_rows(42);
    funcs.extend(lf);
    counters = {
        let mut all = lc;
        all.append(&mut counters);
        all // time sorted: CPU counter at 105, GPU at 200
    };
    let mut t = tau(0, funcs, vec![], counters);
    t.new_attributes = gpu_metadata(GPU);
    let ev = s.build_step(0, &t, &map());
    assert_no_issues(&ev);
    // Kernel rows come first in the array: kernel = idx 0, launch = idx 1.
    assert_eq!(ids(&ev), vec![id(0, 0), id(0, 1)]);
    assert_eq!(ev.gpu_pairs, vec![(id(0, 1), id(0, 0))]);
    assert_eq!(partner(&ev, id(0, 0)), None);
    assert_eq!(partner(&ev, id(0, 1)), Some(id(0, 0)));
}

#[test]
fn gpu_pairing_steps_apart() {
    let mut s = stream();
    let m = map();
    // GPU thread announced in step 0, launch completes in step 1 ...
    let mut t0 = tau(0, vec![], vec![], vec![]);
    t0.new_attributes = gpu_metadata(GPU);
    assert_no_issues(&s.build_step(0, &t0, &m));
    let (lf, lc) = launch_rows(5);
    let ev1 = s.build_step(1, &tau(1, lf, vec![], lc), &m);
    assert_no_issues(&ev1);
    assert!(ev1.gpu_pairs.is_empty());
    assert_eq!(s.pending_correlations(), 1);
    // ... the kernel six steps later (metadata not repeated).
    for step in 2..7 {
        let ev = s.build_step(step, &tau(step as usize, vec![], vec![], vec![]), &m);
        assert!(ev.gpu_pairs.is_empty());
    }
    let (kf, kc) = kernel_rows(5);
    let ev7 = s.build_step(7, &tau(7, kf, vec![], kc), &m);
    assert_no_issues(&ev7);
    assert_eq!(ev7.gpu_pairs, vec![(id(1, 0), id(7, 0))]);
    assert_eq!(ev7.gpu_partner_of(0), Some(id(1, 0)));
    assert!(ev7.executions[0].is_gpu);
    assert_eq!(s.pending_correlations(), 0);
    assert!(s.finish().is_empty());
}

#[test]
fn gpu_execution_with_several_correlation_ids() {
    let mut s = stream();
    let mut t = tau(
        0,
        vec![
            f(GPU, ENTRY, B, 200),
            f(GPU, EXIT, B, 300),
            f(0, ENTRY, A, 400),
            f(0, EXIT, A, 500),
        ],
        vec![],
        vec![
            ctr(GPU, CORR, 1, 210),
            ctr(GPU, CORR, 2, 220),
            ctr(0, CORR, 2, 410),
            ctr(0, CORR, 1, 420),
        ],
    );
    t.new_attributes = gpu_metadata(GPU);
    let ev = s.build_step(0, &t, &map());
    assert_eq!(
        ev.issues.count(EventIssueKind::MultipleCorrelationIdsOnGpu),
        1
    );
    assert_eq!(ev.issues.total(), 1);
    // Only id 1 of the kernel was registered; the launch's 2 stays pending.
    assert_eq!(ev.gpu_pairs, vec![(id(0, 1), id(0, 0))]);
    assert_eq!(s.pending_correlations(), 1);
    let end = s.finish();
    assert_eq!(end.count(EventIssueKind::UnmatchedCorrelationAtEnd), 1);
    assert!(!end.has_problems());
}

#[test]
fn monitoring_counters_go_to_node_state() {
    let mut s = stream();
    let ev = s.build_step(
        0,
        &tau(
            0,
            vec![f(0, ENTRY, A, 100), f(0, EXIT, A, 200)],
            vec![],
            vec![
                ctr(1, MONITOR, 77, 50),  // monitoring thread, nothing open
                ctr(0, MONITOR, 78, 150), // even with a call open
                ctr(0, PLAIN, 79, 160),
            ],
        ),
        &map(),
    );
    assert_no_issues(&ev);
    assert_eq!(
        ev.node_state,
        vec![
            CounterEvent {
                counter: G_MONITOR,
                value: 77,
                ts: 50
            },
            CounterEvent {
                counter: G_MONITOR,
                value: 78,
                ts: 150
            }
        ]
    );
    assert_eq!(ev.counters_of(&ev.executions[0]).len(), 1);
    assert_eq!(ev.counters_of(&ev.executions[0])[0].value, 79);
}

#[test]
fn attachments_are_capped_per_execution() {
    let mut s = CallStackBuilder::new(
        0,
        RANK,
        "s".into(),
        EventOptions {
            max_attached: 2,
            ..Default::default()
        },
    );
    let comms = (0..5).map(|i| comm(0, SEND, i, 1, 8, 110 + i)).collect();
    let counters = (0..3).map(|i| ctr(0, PLAIN, i, 120 + i)).collect();
    let ev = s.build_step(
        0,
        &tau(
            0,
            vec![f(0, ENTRY, A, 100), f(0, EXIT, A, 200)],
            comms,
            counters,
        ),
        &map(),
    );
    assert_no_issues(&ev);
    let a = &ev.executions[0];
    assert_eq!(
        ev.comms_of(a).iter().map(|c| c.tag).collect::<Vec<_>>(),
        vec![0, 1]
    );
    assert_eq!(
        ev.counters_of(a)
            .iter()
            .map(|c| c.value)
            .collect::<Vec<_>>(),
        vec![0, 1]
    );
    assert_eq!(a.dropped_attachments(), 4);
}

#[test]
fn depth_limit_bounds_the_stack() {
    let mut s = CallStackBuilder::new(
        0,
        RANK,
        "s".into(),
        EventOptions {
            max_depth: 2,
            ..Default::default()
        },
    );
    let ev = s.build_step(
        0,
        &tau(
            0,
            vec![
                f(0, ENTRY, A, 1),
                f(0, ENTRY, B, 2),
                f(0, ENTRY, C, 3),
                f(0, EXIT, B, 5),
            ],
            vec![],
            vec![],
        ),
        &map(),
    );
    assert_eq!(ev.issues.count(EventIssueKind::DepthLimit), 1);
    assert_eq!(ids(&ev), vec![id(0, 1)]);
    assert_eq!(s.open_calls(), 1);
}

#[test]
fn ids_depend_only_on_row_positions() {
    let m = map();
    let funcs = two_thread_rows(true);
    let run = |t: &TraceStep, m: &IndexMap| {
        let mut s = stream();
        let ev = s.build_step(6, t, m);
        let mut v: Vec<(ExecId, u32, u64)> = ev
            .executions
            .iter()
            .map(|e| (e.id, e.function, e.entry))
            .collect();
        v.sort();
        v
    };
    let plain = tau(6, funcs.clone(), vec![], vec![]);
    let first = run(&plain, &m);
    assert_eq!(first, run(&plain, &m));
    assert_eq!(
        first,
        vec![
            (id(6, 0), g(A), 100),
            (id(6, 1), g(C), 105),
            (id(6, 2), g(B), 120),
            (id(6, 3), g(D), 125),
        ]
    );
    // Comm/counter rows (attached or not) change nothing.
    let busy = tau(
        6,
        funcs.clone(),
        vec![comm(0, SEND, 1, 1, 1, 99), comm(1, RECV, 1, 1, 1, 130)],
        vec![ctr(1, PLAIN, 1, 101), ctr(5, PLAIN, 1, 102)],
    );
    assert_eq!(first, run(&busy, &m));
    // Neither does a function the map does not know yet: the others keep theirs.
    let mut partial = m.clone();
    partial.functions[B as usize] = None;
    let without_b: Vec<_> = first.iter().copied().filter(|x| x.1 != g(B)).collect();
    assert_eq!(run(&plain, &partial), without_b);
    // build_step_into reuses the output buffers and gives the same result.
    let mut s = stream();
    let mut out = StepEvents::default();
    s.build_step_into(6, &plain, &m, &mut out, &mut |_| {});
    let again = out.executions.clone();
    let mut s = stream();
    s.build_step_into(6, &plain, &m, &mut out, &mut |_| {});
    assert_eq!(out.executions, again);
    // So does build_step with buffers handed back through recycle.
    let mut s = stream();
    let ev = s.build_step(6, &plain, &m);
    assert_eq!(ev.executions, again);
    let mut s2 = stream();
    s2.recycle(ev);
    assert_eq!(s2.build_step(6, &plain, &m).executions, again);
}

#[test]
fn finish_reports_open_calls_without_problems() {
    let mut s = stream();
    let ev = s.build_step(
        0,
        &tau(
            0,
            vec![f(0, ENTRY, A, 1), f(0, ENTRY, B, 2), f(1, ENTRY, C, 3)],
            vec![],
            vec![],
        ),
        &map(),
    );
    assert_no_issues(&ev);
    assert_eq!(s.open_calls(), 3);
    let end = s.finish();
    assert_eq!(end.count(EventIssueKind::OpenAtEnd), 3);
    assert!(!end.has_problems());
    assert_eq!(s.open_calls(), 0);
}

#[test]
fn never_panics_on_garbage_rows() {
    // A cheap deterministic generator; rows are nonsense on purpose.
    let mut x = 0x9E3779B97F4A7C15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let m = map();
    let mut s = stream();
    for step in 0..20u64 {
        let funcs = (0..200)
            .map(|_| {
                let r = next();
                f(
                    r % 3 + (r >> 60) * 100_000,
                    (r >> 8) % 5,
                    (r >> 16) % 10,
                    (r >> 24) % 1000,
                )
            })
            .collect();
        let comms = (0..30)
            .map(|_| {
                let r = next();
                comm(r % 3, (r >> 8) % 6, r, r >> 3, r >> 5, (r >> 24) % 1000)
            })
            .collect();
        let counters = (0..30)
            .map(|_| {
                let r = next();
                ctr(r % 4, (r >> 8) % 5, r, (r >> 24) % 1000)
            })
            .collect();
        let mut t = tau(step as usize, funcs, comms, counters);
        if step == 3 {
            t.new_attributes = gpu_metadata(2);
        }
        let ev = s.build_step(step, &t, &m);
        for e in &ev.executions {
            assert!(e.exit >= e.entry && e.exclusive <= e.inclusive());
        }
    }
    s.finish();
}

/// The real TAU trace: rank 0 of `main1` (22 steps, no GPU, no messages).
#[test]
fn real_tau_fixture_rank0() {
    use chimbuko_mpi::trace::adios::Engine;
    let path = common::fixture_dir().join("tau-metrics-main1-0.bp");
    let (steps, reader) = common::read_all(&path, common::reader_options(Engine::BP4));
    assert_eq!(steps.len(), 22);
    let dict = reader.dictionary();
    let m = IndexMap {
        functions: (0..dict.functions.len())
            .map(|i| dict.functions[i].as_ref().map(|_| i as u32))
            .collect(),
        counters: (0..dict.counters.len())
            .map(|i| dict.counters[i].as_ref().map(|_| i as u32))
            .collect(),
        counter_roles: dict
            .counters
            .iter()
            .map(|n| match n.as_deref() {
                Some(n) if n.starts_with("monitoring: ") => CounterRole::Monitoring,
                Some("Correlation ID") => CounterRole::CorrelationId,
                _ => CounterRole::Plain,
            })
            .collect(),
        event_types: dict.event_types.clone(),
    };
    let comp1 = dict
        .functions
        .iter()
        .position(|n| {
            n.as_deref()
                .is_some_and(|n| n.starts_with("component1_function"))
        })
        .expect("component1_function defined") as u32;
    let mut s = CallStackBuilder::new(0, 0, reader.stream().to_string(), EventOptions::default());
    let (mut n_comp1, mut long) = (0usize, Vec::new());
    let mut all_ids = std::collections::HashSet::new();
    let mut node_state = 0usize;
    for t in &steps {
        let ev = s.build_step(t.step as u64, t, &m);
        assert!(
            ev.issues.is_empty(),
            "{}",
            ev.issues.summary(s.stream_name(), t.step as u64)
        );
        assert_eq!(ev.first_ts.zip(ev.last_ts), t.time_range());
        node_state += ev.node_state.len();
        for e in &ev.executions {
            assert!(all_ids.insert(e.id), "duplicate id {}", e.id);
            assert!(e.exclusive <= e.inclusive());
            if e.function == comp1 {
                n_comp1 += 1;
                assert_eq!(e.thread, 0);
                if e.inclusive() >= 150_000 {
                    long.push((e.entry, e.exit));
                }
            }
        }
    }
    assert_eq!(n_comp1, 1000);
    assert!(node_state > 0);
    // The truth file lists the 200 ms calls of each rank.
    let truth = std::fs::read_to_string(common::fixture_dir().join("truth-main1.csv")).unwrap();
    let mut want: Vec<(u64, u64)> = truth
        .lines()
        .skip(1)
        .filter(|l| l.starts_with("0,"))
        .map(|l| {
            let f: Vec<&str> = l.rsplitn(4, ',').collect(); // inclusive, exit, entry, rest
            (f[2].parse().unwrap(), f[1].parse().unwrap())
        })
        .collect();
    want.sort();
    long.sort();
    assert_eq!(want.len(), 9);
    assert_eq!(long, want);
    // The monitoring thread's [PTHREAD] and .TAU application never exit.
    let open = s.open_call_list();
    assert!(open.len() >= 2, "{open:?}");
    assert!(open.iter().any(|o| o.thread == 1));
    let end = s.finish();
    assert!(!end.has_problems(), "{}", end.summary(s.stream_name(), 22));
    assert_eq!(end.count(EventIssueKind::OpenAtEnd), open.len() as u64);
}
