//! Unit tests of the log reader, on small logs written inline: the three
//! forms, id resolution and merging, and the errors each names.

use super::records::split_glued;
use super::*;

fn load(text: &str) -> Result<EigerTable, TableError> {
    merge_logs(&[parse_log(text, "t.log")?])
}

const SERIAL_HEAD: &str = "CONNECT;localhost;test;user;pw\n\
    DataCollection;example;test dc\n\
    DataCollection_commit;example;test dc\n\
    Machine;test;test machine\n\
    Machine_commit;test;test machine\n\
    Application;test;test application\n\
    Application_commit;test;test application\n\
    Dataset;1;test;test dataset;test dataset url\n\
    Dataset_commit;1;test;test dataset;test dataset url\n\
    Metric;2 ;size;matrix size\n\
    Metric_commit;nondeterministic;size;matrix size\n\
    Metric;0 ;runtime;runtime of this matmul\n\
    Metric_commit;result;runtime;runtime of this matmul\n";

/// The serial writer's record of one trial (all trials share ids 1).
fn serial_trial(size: &str, runtime: &str) -> String {
    format!(
        "Trial;1 ;1 ;1 ;1 ;0\nTrial_commit;1 ;1 ;1 ;1 ;0\nExecution;1 ;1\n\
         Execution_commit;1 ;1NondeterministicMetric;1 ;1 ;{size}\n\
         NondeterministicMetric_commit;1 ;1 ;{size}\n\
         NondeterministicMetric;1 ;2 ;{runtime}\n\
         NondeterministicMetric_commit;1 ;2 ;{runtime}\n"
    )
}

#[test]
fn serial_log_with_glued_lines_and_repeated_ids() {
    let text = format!(
        "{SERIAL_HEAD}{}{}",
        serial_trial("10", "1.35740001496742479e-05"),
        serial_trial("20", "8.63530003698542714e-05")
    );
    let log = parse_log(&text, "t.log").unwrap();
    assert_eq!(log.form, LogForm::Serial);
    assert_eq!(log.trial_count(), 2);
    assert_eq!(log.execution_count(), 2);
    let t = merge_logs(&[log]).unwrap();
    assert_eq!(t.table.columns, ["trial_id", "size", "runtime"]);
    assert_eq!(
        t.table.rows,
        vec![
            vec![1.0, 10.0, 1.3574000149674248e-05],
            vec![2.0, 20.0, 8.635300036985427e-05]
        ]
    );
    // The rows' lines are those of the glued execution commits.
    assert_eq!(t.table.lines, [17, 24]);
    assert_eq!(
        t.metric_types,
        [
            ("size".to_owned(), MetricType::Nondeterministic),
            ("runtime".to_owned(), MetricType::Result)
        ]
    );
    assert_eq!(t.default_target(), Some("runtime"));
}

#[test]
fn glued_lines_split_after_the_second_id() {
    assert_eq!(
        split_glued("Execution_commit;12 ;3NondeterministicMetric;1 ;1 ;10"),
        ["Execution_commit;12 ;3", "NondeterministicMetric;1 ;1 ;10"]
    );
    // Two executions committed in a row, then the end of the file.
    assert_eq!(
        split_glued("Execution_commit;1 ;1Execution_commit;2 ;1"),
        ["Execution_commit;1 ;1", "Execution_commit;2 ;1"]
    );
    assert_eq!(
        split_glued("Execution_commit;1 ;1"),
        ["Execution_commit;1 ;1"]
    );
    assert_eq!(split_glued("Trial_commit;1 ;1"), ["Trial_commit;1 ;1"]);
    let records = split_records("Execution_commit;1 ;1Trial;1\r\n\nCONNECT;x\n");
    let keywords: Vec<_> = records.iter().map(|r| (r.line, r.keyword)).collect();
    assert_eq!(
        keywords,
        [(1, "Execution_commit"), (1, "Trial"), (3, "CONNECT")]
    );
}

#[test]
fn serial_ids_follow_the_writer_maps() {
    // Distinct trial keys get distinct ids; an execution refers to the
    // trial by that id, and a value to the execution by its id.
    let text = "Machine_commit;m1;a\nMachine_commit;m2;b\n\
        Metric_commit;nondeterministic;x;d\nMetric_commit;result;y;d\n\
        MachineMetric_commit;2 ;1 ;7\n\
        Trial_commit;0 ;1 ;0 ;0 ;0\nTrial_commit;0 ;2 ;0 ;0 ;0\n\
        Execution_commit;2 ;2Execution_commit;1 ;1\n\
        NondeterministicMetric_commit;1 ;2 ;5\n\
        NondeterministicMetric_commit;2 ;2 ;6\n\
        NondeterministicMetric_commit;1 ;1 ;0.25\n\
        MachineMetric_commit;1 ;1 ;9\n";
    let t = load(text).unwrap();
    assert_eq!(t.table.columns, ["trial_id", "x", "y"]);
    // Execution 1 belongs to trial 2 (machine m2), execution 2 to
    // trial 1 (machine m1); rows come in trial order. Execution 2 has
    // no x of its own and takes m1's; execution 1's own x overrides
    // m2's.
    assert_eq!(
        t.table.rows,
        vec![vec![1.0, 9.0, 6.0], vec![2.0, 0.25, 5.0]]
    );
}

#[test]
fn serial_runs_appended_continue_trial_ids() {
    // The second run restarts the metric map (its metric 1 is "b") but
    // numbers trials and executions after the first run's, so its
    // execution 1 is still the first run's.
    let text = "CONNECT;h;d;u;p\nMetric_commit;result;a;d\n\
        Trial_commit;0 ;0 ;0 ;0 ;0\nExecution_commit;1 ;0\n\
        NondeterministicMetric_commit;1 ;1 ;1\n\
        CONNECT;h;d;u;p\nMetric_commit;result;b;d\nMetric_commit;result;a;d\n\
        Trial_commit;0 ;0 ;0 ;0 ;0\nExecution_commit;2 ;0\n\
        NondeterministicMetric_commit;2 ;1 ;2\nNondeterministicMetric_commit;2 ;2 ;3\n\
        NondeterministicMetric_commit;1 ;1 ;4\n";
    let t = load(text).unwrap();
    assert_eq!(t.table.columns, ["trial_id", "a", "b"]);
    assert_eq!(t.table.rows, vec![vec![1.0, 1.0, 4.0], vec![2.0, 3.0, 2.0]]);
    assert_eq!(t.table.lines, [4, 10]);
}

const RANK_HEAD: &str = "VERSION;2\nFORMAT;character\nCONNECT;localhost;test;user;pw\n\
    C;example;test dc;1\nH;test;test machine;1\nA;test;test application;1\n\
    S;1;test;test dataset;test dataset url;1\n\
    v;nondeterministic;size;matrix size;1\nv;result;runtime;runtime of this matmul;2\n";

#[test]
fn per_rank_logs_merge_by_name_with_local_ids() {
    let rank0 = format!(
        "{RANK_HEAD}T;1 ;1 ;1 ;1 ;0;1\nE;1 ;1;1\nN;1 ;1 ;10\nN;1 ;2 ;0.5\n\
         T;1 ;1 ;1 ;1 ;0;1\nE;1 ;1;1\nN;1 ;1 ;20\nN;1 ;2 ;0.75\nVERSION;2\n"
    );
    // Rank 1 declares the metrics in the other order, so its local ids
    // differ; names match them up.
    let rank1 = "VERSION;2\nFORMAT;character\nCONNECT;localhost;test;user;pw\n\
        v;result;runtime;runtime of this matmul;1\nv;nondeterministic;size;matrix size;2\n\
        H;test;test machine;4\nT;0 ;4 ;0 ;0 ;0;9\nE;9 ;4;3\nN;3 ;2 ;30\nN;3 ;1 ;1.5\n\
        VERSION;2\n";
    let logs = [
        parse_log(&rank0, "r0.log").unwrap(),
        parse_log(rank1, "r1.log").unwrap(),
    ];
    assert_eq!(logs[0].form, LogForm::PerRank);
    let t = merge_logs(&logs).unwrap();
    assert_eq!(t.table.columns, ["trial_id", "size", "runtime"]);
    assert_eq!(
        t.table.rows,
        vec![
            vec![1.0, 10.0, 0.5],
            vec![2.0, 20.0, 0.75],
            vec![3.0, 30.0, 1.5]
        ]
    );
    assert_eq!(t.table.source, "r0.log, r1.log");
    assert_eq!(t.row_origins[2], ("r1.log".to_owned(), 8));
}

#[test]
fn dataset_and_machine_values_fill_rows() {
    let text = "VERSION;2\nFORMAT;character\nCONNECT;h;d;u;p\n\
        A;app;x;1\nS;1;small;x;u;1\nS;1;large;x;u;2\nH;m;x;1\n\
        v;deterministic;n;x;1\nv;machine;ghz;x;2\nv;result;t;x;3\n\
        D;1 ;1 ;100\nD;2 ;1 ;1000\nR;1 ;2 ;2.5\n\
        T;0 ;1 ;1 ;2 ;0;1\nE;1 ;1;1\nN;1 ;3 ;9\n\
        T;0 ;1 ;1 ;1 ;0;2\nE;2 ;1;2\nN;2 ;3 ;1\nE;2 ;1;3\nN;3 ;3 ;1.25\n";
    let t = load(text).unwrap();
    assert_eq!(t.table.columns, ["trial_id", "n", "ghz", "t"]);
    assert_eq!(
        t.table.rows,
        vec![
            vec![1.0, 1000.0, 2.5, 9.0],
            vec![2.0, 100.0, 2.5, 1.0],
            vec![2.0, 100.0, 2.5, 1.25]
        ]
    );
    assert_eq!(t.default_target(), Some("t"));
}

#[test]
fn single_file_form_values_belong_to_trials() {
    let text = "VERSION;2\nFORMAT;character\nCONNECT;eiger.db\n\
        C;dc;x;1\nA;app;x;1\nS;1;ds;x;u;1\nH;m;x;1\n\
        T;1;1;1;1;1\nT;1;1;1;1;2\n\
        v;nondeterministic;size;x;1\nv;nondeterministic;runtime;x;2\n\
        N;2;1;20\nN;2;2;0.2\nN;1;1;10\nN;1;2;0.1\nDISCONNECT\n";
    let log = parse_log(text, "t.log").unwrap();
    assert_eq!(log.form, LogForm::SingleFile);
    let t = merge_logs(&[log]).unwrap();
    assert_eq!(
        t.table.rows,
        vec![vec![1.0, 10.0, 0.1], vec![2.0, 20.0, 0.2]]
    );
    assert_eq!(t.table.lines, [8, 9]);
    assert_eq!(t.default_target(), None);
    // Executions are not part of this form.
    let bad = text.replace("DISCONNECT", "E;1;1;1\nDISCONNECT");
    let e = load(&bad).unwrap_err();
    assert_eq!(e.line, Some(16));
    assert!(e.message.contains("no executions"), "{e}");
}

#[test]
fn unknown_and_null_ids_are_refused() {
    let cases = [
        ("E;2 ;1;1\n", "unknown trial id 2"),
        ("E;1 ;1;1\nN;5 ;1 ;3\n", "unknown execution id 5"),
        ("E;1 ;1;1\nN;1 ;7 ;3\n", "unknown metric id 7"),
        ("E;0 ;1;1\n", "trial id 0 (the null id)"),
        ("T;1 ;3 ;1 ;1 ;0;2\n", "unknown machine id 3"),
        ("D;4 ;1 ;3\n", "unknown dataset id 4"),
        ("H;m;x;0\n", "id 0, the null id"),
    ];
    for (tail, message) in cases {
        let text = format!("{RANK_HEAD}T;1 ;1 ;1 ;1 ;0;1\n{tail}");
        let e = load(&text).unwrap_err();
        assert!(e.message.contains(message), "{tail:?}: {e}");
        assert_eq!(e.source, "t.log");
        assert_eq!(e.line, Some(10 + tail.lines().count()), "{tail:?}: {e}");
    }
}

#[test]
fn malformed_records_are_refused() {
    let cases = [
        ("N;1 ;1 ;fast\n", "\"fast\" is not a number"),
        ("N;1 ;1 ;nan\n", "not a finite number"),
        ("N;1 ;1\n", "N record with 2 fields; expected 3"),
        ("E;x ;1;1\n", "\"x\" is not an id"),
        ("E;-1 ;1;1\n", "\"-1\" is not an id"),
        ("Q;1\n", "unknown record \"Q\""),
        ("v;fast;speed;x;3\n", "unknown metric type \"fast\""),
        (
            "v;result;size;x;3\n",
            "\"size\" is result here but was nondeterministic at line 8",
        ),
        ("FORMAT;full\n", "only \"character\""),
        ("VERSION;3\n", "only version 2"),
    ];
    for (tail, message) in cases {
        let text = format!("{RANK_HEAD}T;1 ;1 ;1 ;1 ;0;1\nE;1 ;1;1\n{tail}");
        let e = load(&text).unwrap_err();
        assert!(e.message.contains(message), "{tail:?}: {e}");
        assert_eq!(e.line, Some(12), "{tail:?}: {e}");
    }
    let e = load("").unwrap_err();
    assert!(e.message.contains("empty log"), "{e}");
    // A serial log has no one-letter records.
    let e = load("CONNECT;a;b;c;d\nT;1\n").unwrap_err();
    assert_eq!(
        (e.line, e.message.as_str()),
        (Some(2), "unknown record \"T\"")
    );
    let e = load("Metric_commit;result;a;b;c\n").unwrap_err();
    assert!(
        e.message.contains("expected 3 (type;name;description)"),
        "{e}"
    );
}

#[test]
fn incomplete_rows_name_the_trial() {
    let text = format!(
        "{RANK_HEAD}T;1 ;1 ;1 ;1 ;0;1\nE;1 ;1;1\nN;1 ;1 ;10\nN;1 ;2 ;1\n\
         T;1 ;1 ;1 ;1 ;0;2\nE;2 ;1;2\nN;2 ;1 ;20\n"
    );
    let e = load(&text).unwrap_err();
    assert_eq!(e.line, Some(14));
    assert_eq!(e.column.as_deref(), Some("runtime"));
    assert!(
        e.message
            .contains("trial 2 has no value for metric \"runtime\""),
        "{e}"
    );
}

#[test]
fn contradicting_values_are_refused() {
    let text = format!("{RANK_HEAD}T;1 ;1 ;1 ;1 ;0;1\nE;1 ;1;1\nN;1 ;1 ;10\nN;1 ;1 ;11\n");
    let e = load(&text).unwrap_err();
    assert_eq!(e.line, Some(13));
    assert!(e.message.contains("is 11 here but was 10"), "{e}");
    // The same value twice is only a repetition.
    let text =
        format!("{RANK_HEAD}T;1 ;1 ;1 ;1 ;0;1\nE;1 ;1;1\nN;1 ;1 ;10\nN;1 ;1 ;10\nN;1 ;2 ;1\n");
    assert_eq!(load(&text).unwrap().table.rows, vec![vec![1.0, 10.0, 1.0]]);
}

#[test]
fn metric_types_must_agree_across_logs() {
    let a = parse_log("Metric_commit;result;t;x\n", "a.log").unwrap();
    let b = parse_log("Metric_commit;other;t;x\n", "b.log").unwrap();
    let e = merge_logs(&[a, b]).unwrap_err();
    assert_eq!((e.source.as_str(), e.line), ("b.log", Some(1)));
    assert!(
        e.message.contains("other here but result in a.log, line 1"),
        "{e}"
    );
}

#[test]
fn metric_names_cannot_clash_with_trial_id() {
    let e = load(
        "Metric_commit;result;trial_id;x\nTrial_commit;0 ;0 ;0 ;0 ;0\n\
         Execution_commit;1 ;0NondeterministicMetric_commit;1 ;1 ;3\n",
    )
    .unwrap_err();
    assert_eq!(e.column.as_deref(), Some("trial_id"));
}

#[test]
fn metric_types_by_name() {
    for t in [
        MetricType::Result,
        MetricType::Deterministic,
        MetricType::Nondeterministic,
        MetricType::Machine,
        MetricType::Other,
    ] {
        assert_eq!(MetricType::from_name(t.name()), Some(t));
    }
    assert_eq!(MetricType::from_name("Result"), None);
    let types = [
        ("a".to_owned(), MetricType::Other),
        ("b".to_owned(), MetricType::Result),
    ];
    assert_eq!(default_target(&types), Some("b"));
}
