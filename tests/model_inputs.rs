//! Eiger's storage read into training tables (`model::input`): the MySQL
//! dump of Eiger's matmul example and the same 50 trials written in each
//! of Eiger's three log forms must all give `training.csv`, the table
//! Eiger trained its golden models on, bit for bit; damaged inputs must be
//! refused with the file and line of the damage.

use std::path::{Path, PathBuf};

use chimbuko_mpi::model::input::eiger_log::{self, LogForm, MetricType};
use chimbuko_mpi::model::input::sql_dump;
use chimbuko_mpi::model::table::{Table, TableError};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/eiger")
}

/// `training.csv` as text with `\n` line ends (the file, written by
/// Python's csv module, ends its lines with `\r\n`).
fn training_text() -> String {
    std::fs::read_to_string(fixtures().join("training.csv"))
        .unwrap()
        .replace("\r\n", "\n")
}

fn training() -> Table {
    Table::read_csv(&fixtures().join("training.csv")).unwrap()
}

/// Same columns and the same values, bit for bit.
fn assert_same_table(got: &Table, want: &Table) {
    assert_eq!(got.columns, want.columns, "{}", got.source);
    assert_eq!(got.rows.len(), want.rows.len(), "{}", got.source);
    for (i, (g, w)) in got.rows.iter().zip(&want.rows).enumerate() {
        let g: Vec<u64> = g.iter().map(|v| v.to_bits()).collect();
        let w: Vec<u64> = w.iter().map(|v| v.to_bits()).collect();
        assert_eq!(g, w, "{} row {i}", got.source);
    }
}

#[test]
fn dump_gives_training_csv() {
    let path = fixtures().join("database_dump.sql");
    let table = sql_dump::read_dump(&path).unwrap();
    assert_eq!(table.to_csv(), training_text());
    assert_same_table(&table, &training());
    // Every execution row is on the line of the executions INSERT.
    assert!(table.lines.iter().all(|&l| l == 145), "{:?}", table.lines);

    let typed = sql_dump::load_dump(&path).unwrap();
    assert_eq!(
        typed.metric_types,
        [
            ("size".to_owned(), MetricType::Nondeterministic),
            ("runtime".to_owned(), MetricType::Result)
        ]
    );
    assert_eq!(typed.default_target(), Some("runtime"));
}

#[test]
fn serial_log_gives_training_csv() {
    let path = fixtures().join("logs/fakeeiger.log");
    let text = std::fs::read_to_string(&path).unwrap();
    let log = eiger_log::parse_log(&text, "fakeeiger.log").unwrap();
    assert_eq!(log.form, LogForm::Serial);
    assert_eq!((log.trial_count(), log.execution_count()), (50, 50));

    let loaded = eiger_log::load_logs(&[path]).unwrap();
    assert_same_table(&loaded.table, &training());
    assert_eq!(loaded.table.to_csv(), training_text());
    assert_eq!(loaded.default_target(), Some("runtime"));
}

#[test]
fn per_rank_logs_give_training_csv() {
    let dir = fixtures().join("logs/mpi");
    let paths = [
        dir.join("mpifakeeiger.0.log"),
        dir.join("mpifakeeiger.1.log"),
    ];
    let loaded = eiger_log::load_logs(&paths).unwrap();
    assert_same_table(&loaded.table, &training());
    assert_eq!(loaded.table.to_csv(), training_text());
    // Rank 1's trials are numbered after rank 0's, and each row knows its
    // file.
    assert!(loaded.row_origins[24].0.ends_with("mpifakeeiger.0.log"));
    assert!(loaded.row_origins[25].0.ends_with("mpifakeeiger.1.log"));
    assert_eq!(loaded.row_origins[25].1, 11);
    assert_eq!(
        eiger_log::read_logs(&paths).unwrap().rows,
        loaded.table.rows
    );
}

#[test]
fn single_file_log_gives_training_csv() {
    let path = fixtures().join("logs/eiger-2016.log");
    let loaded = eiger_log::load_logs(&[path]).unwrap();
    assert_same_table(&loaded.table, &training());
    assert_eq!(loaded.table.to_csv(), training_text());
    // The 2016 library has no result type.
    assert_eq!(loaded.default_target(), None);
}

/// An error's file and line, checked, and its message.
fn assert_at(e: &TableError, source: &str, line: usize, words: &str) {
    assert_eq!(e.source, source, "{e}");
    assert_eq!(e.line, Some(line), "{e}");
    assert!(e.message.contains(words), "{e}");
}

#[test]
fn truncated_dump_names_the_statement() {
    let text = std::fs::read_to_string(fixtures().join("database_dump.sql")).unwrap();
    // Cut inside the nondeterministic_metrics INSERT (line 364).
    let at = text.find("(25,2,").unwrap();
    let e = sql_dump::parse_dump(&text[..at], "cut.sql").unwrap_err();
    assert_at(&e, "cut.sql", 364, "truncated");
    // A row cut short but closed.
    let broken = text.replacen("(3,1,30),", "(3,1),", 1);
    let e = sql_dump::parse_dump(&broken, "short.sql").unwrap_err();
    assert_at(&e, "short.sql", 364, "2 values");
}

#[test]
fn bad_dump_values_name_the_line() {
    let text = std::fs::read_to_string(fixtures().join("database_dump.sql")).unwrap();
    let e =
        sql_dump::parse_dump(&text.replacen("(3,1,30)", "(3,1,'thirty')", 1), "x.sql").unwrap_err();
    assert_at(&e, "x.sql", 364, "not a finite number");
    let e = sql_dump::parse_dump(&text.replacen("(3,1,30)", "(3,9,30)", 1), "x.sql").unwrap_err();
    assert_at(&e, "x.sql", 364, "metric 9");
}

#[test]
fn bad_logs_name_file_and_line() {
    let rank0 = std::fs::read_to_string(fixtures().join("logs/mpi/mpifakeeiger.0.log")).unwrap();
    // Line 11 is the first execution: E;1 ;1;1.
    let lines: Vec<&str> = rank0.lines().collect();
    assert_eq!(lines[10], "E;1 ;1;1");

    let unknown = rank0.replacen("E;1 ;1;1", "E;7 ;1;1", 1);
    let e = eiger_log::parse_log(&unknown, "r0.log").unwrap_err();
    assert_at(&e, "r0.log", 11, "unknown trial id 7");

    let nan = rank0.replacen("N;1 ;2 ;", "N;1 ;2 ;x", 1);
    let e = eiger_log::parse_log(&nan, "r0.log").unwrap_err();
    assert_at(&e, "r0.log", 13, "is not a number");

    let serial = std::fs::read_to_string(fixtures().join("logs/fakeeiger.log")).unwrap();
    // Metric 3 was never committed; the record is glued onto line 17.
    let unknown = serial.replacen(
        "1 ;1NondeterministicMetric;1 ;1 ;10",
        "1 ;1NondeterministicMetric_commit;1 ;3 ;10",
        1,
    );
    let e = eiger_log::parse_log(&unknown, "fakeeiger.log").unwrap_err();
    assert_at(&e, "fakeeiger.log", 17, "unknown metric id 3");

    // Through the file reader: the path is the source.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fakeeiger.log");
    std::fs::write(&path, &unknown).unwrap();
    let e = eiger_log::read_logs(std::slice::from_ref(&path)).unwrap_err();
    assert_at(&e, &path.display().to_string(), 17, "unknown metric id 3");
}
