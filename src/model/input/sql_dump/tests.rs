//! Unit tests of the dump reader, on small dumps written inline: MySQL's
//! quoting, truncated and malformed statements, and the join's checks.

use super::lexer::{statements, Tok};
use super::*;
use crate::model::input::eiger_table::MetricType;

/// A small Eiger database: two trials on two datasets, three
/// executions, inserted out of order.
const SMALL: &str = "-- MySQL dump\n\
    /*!40101 SET NAMES utf8 */;\n\
    CREATE TABLE `metrics` (\n  `ID` int(11) NOT NULL AUTO_INCREMENT,\n  \
    `type` enum('result','deterministic','nondeterministic','machine','other') DEFAULT NULL,\n  \
    `name` varchar(256) DEFAULT NULL,\n  `description` text,\n  PRIMARY KEY (`ID`),\n  \
    UNIQUE KEY `name` (`name`)\n) ENGINE=InnoDB;\n\
    INSERT INTO `metrics` VALUES (3,'result','time','it''s \\'t\\''),(1,'deterministic','n','a;b'),(2,'machine','ghz',NULL);\n\
    CREATE TABLE `executions` (`trialID` int, `ID` int, `machineID` int);\n\
    INSERT INTO `executions` VALUES (2,5,1),(1,4,1),(2,3,1);\n\
    INSERT INTO `trials` VALUES (2,1,1,1,20,0),(1,1,1,1,10,0);\n\
    INSERT INTO `deterministic_metrics` VALUES (10,1,100),(20,1,-2.5e3);\n\
    INSERT INTO `machine_metrics` (`metricID`, `metric`, `machineID`) VALUES (2,2.5,1);\n\
    # another comment\n\
    INSERT INTO `nondeterministic_metrics` VALUES (4,3,0.5),(3,3,1.5),(5,3,.25);\n";

/// The 1-based line of the first line of `text` that contains `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    1 + text.lines().position(|l| l.contains(needle)).unwrap()
}

#[test]
fn small_dump() {
    let t = parse_dump_with_types(SMALL, "s.sql").unwrap();
    assert_eq!(t.table.columns, ["trial_id", "n", "ghz", "time"]);
    // Ordered by trial, then execution (3 before 5); the executions'
    // column order comes from their CREATE TABLE, the machine values'
    // from the INSERT's column list, the trials' from Eiger's schema.
    assert_eq!(
        t.table.rows,
        vec![
            vec![1.0, 100.0, 2.5, 0.5],
            vec![2.0, -2500.0, 2.5, 1.5],
            vec![2.0, -2500.0, 2.5, 0.25]
        ]
    );
    let line = line_of(SMALL, "INSERT INTO `executions`");
    assert_eq!(t.table.lines, [line, line, line]);
    assert_eq!(t.default_target(), Some("time"));
    assert_eq!(
        t.metric_types[0],
        ("n".to_owned(), MetricType::Deterministic)
    );
    assert_eq!(t.table.to_csv().lines().nth(1), Some("1,100.0,2.5,0.5"));
}

#[test]
fn lexer_reads_mysql_quoting() {
    let st = statements(
        "INSERT INTO `a``b` VALUES ('x\\'y''z\\\\\\n', \"q\", -1.5e-3, NULL, 7);",
        "q.sql",
    )
    .unwrap();
    let toks: Vec<Tok> = st[0].tokens.iter().map(|t| t.tok.clone()).collect();
    assert_eq!(toks[2], Tok::Name("a`b".into()));
    assert_eq!(toks[5], Tok::Str("x'y'z\\\n".into()));
    assert_eq!(toks[7], Tok::Str("q".into()));
    assert_eq!(toks[9], Tok::Punct('-'));
    assert_eq!(toks[10], Tok::Num("1.5e-3".into()));
    // Comments and the statements they end are skipped; ';' inside a
    // string does not end a statement.
    let st = statements(
        "/*!40101 SET x=1 */;\n-- a; comment\nA 'b;c';\n#x;\nB;",
        "q.sql",
    )
    .unwrap();
    assert_eq!(st.len(), 2);
    assert_eq!((st[0].line, st[1].line), (3, 5));
}

#[test]
fn truncated_text_is_an_error_at_its_start() {
    let e = statements("A;\nINSERT INTO `t` VALUES\n(1,2", "t.sql").unwrap_err();
    assert_eq!((e.line, e.source.as_str()), (Some(2), "t.sql"));
    assert!(e.message.contains("truncated"), "{e}");
    let e = statements("A;\n\nINSERT INTO t VALUES ('abc", "t.sql").unwrap_err();
    assert_eq!(e.line, Some(3));
    assert!(e.message.contains("string not closed"), "{e}");
    let e = statements("A;\n/* x", "t.sql").unwrap_err();
    assert_eq!(e.line, Some(2));
    assert!(e.message.contains("comment not closed"), "{e}");
    let e = statements("INSERT INTO `t", "t.sql").unwrap_err();
    assert!(e.message.contains("name not closed"), "{e}");
}

#[test]
fn malformed_statements_name_the_line() {
    let cases = [
        (
            "INSERT INTO `metrics` VALUES (1,'result','x','d'\n(2);",
            2,
            "expected ','",
        ),
        (
            "INSERT INTO `metrics` VALUES (1,'result','x');",
            1,
            "3 values",
        ),
        (
            "INSERT INTO `metrics` VALUES (1,'result',x,'d');",
            1,
            "expected a value",
        ),
        ("INSERT INTO `metrics` SET ID=1;", 1, "expected VALUES"),
        (
            "INSERT INTO `metrics` VALUES (1,'result','x','d') 7;",
            1,
            "after a row",
        ),
        ("CREATE TABLE `metrics` (`ID` int;", 1, "closing ')'"),
    ];
    for (text, line, words) in cases {
        fails_at(text, line, words);
    }
}

#[test]
fn inconsistent_data_is_refused() {
    // The statements the errors name.
    let (nondet, det) = ("`nondeterministic_metrics`", "`deterministic_metrics`");
    let (executions, trials) = ("`executions` VALUES", "INSERT INTO `trials`");
    let metrics = "INSERT INTO `metrics`";
    // Each case: `SMALL` with its first text replaced by its second.
    let cases = [
        ("(4,3,0.5)", "(9,3,0.5)", nondet, "names execution 9"),
        ("(4,3,0.5)", "(4,8,0.5)", nondet, "metric 8"),
        ("(1,4,1)", "(7,4,1)", executions, "names trial 7"),
        (
            "(3,3,1.5)",
            "(3,3,1.5),(3,3,1.75)",
            nondet,
            "two values for metric \"time\"",
        ),
        (
            "'machine','ghz'",
            "'mach','ghz'",
            metrics,
            "unknown type \"mach\"",
        ),
        (
            "(1,4,1)",
            "(1,5,1)",
            executions,
            "execution id 5 appears twice",
        ),
        ("(20,1,-2.5e3)", "(20,1,'x')", det, "not a finite number"),
        ("(2,1,1,1,20,0)", "(2,1,1,1,20)", trials, "5 values"),
    ];
    for (from, to, statement, words) in cases {
        let text = SMALL.replace(from, to);
        fails_at(&text, line_of(&text, statement), words);
    }
}

/// Asserts that reading `text` fails at line `line` with a message saying
/// `words`.
fn fails_at(text: &str, line: usize, words: &str) {
    let e = parse_dump(text, "m.sql").unwrap_err();
    assert_eq!(e.line, Some(line), "{text}: {e}");
    assert!(e.message.contains(words), "{text}: {e}");
}

#[test]
fn missing_values_name_the_trial() {
    // NULL is no value; trial 2's executions then lack "n".
    let text = SMALL.replace("(20,1,-2.5e3)", "(20,1,NULL)");
    let e = parse_dump(&text, "m.sql").unwrap_err();
    assert_eq!(e.line, Some(line_of(SMALL, "INSERT INTO `trials`")));
    assert_eq!(e.column.as_deref(), Some("n"));
    assert!(
        e.message.contains("trial 2 (execution 3) has no value"),
        "{e}"
    );
    // A metric without any value is no column.
    let text = SMALL.replace(
        "(2,'machine','ghz',NULL)",
        "(2,'machine','ghz',NULL),(4,'other','unused','')",
    );
    let t = parse_dump(&text, "m.sql").unwrap();
    assert_eq!(t.columns, ["trial_id", "n", "ghz", "time"]);
}

#[test]
fn dumps_without_create_table_use_eiger_columns() {
    let text = "INSERT INTO `test`.`metrics` VALUES (1,'result','t','');\n\
        INSERT INTO trials VALUES (1,0,NULL,0,NULL,0);\n\
        INSERT INTO executions VALUES (1,NULL,1);\n\
        INSERT INTO `nondeterministic_metrics` VALUES (1,1,3);\n\
        INSERT INTO `other_table` VALUES (1,2,3,4);\n";
    let t = parse_dump(text, "m.sql").unwrap();
    assert_eq!(t.columns, ["trial_id", "t"]);
    assert_eq!(t.rows, vec![vec![1.0, 3.0]]);
    // An empty database is an empty table.
    let t = parse_dump("-- nothing\n", "m.sql").unwrap();
    assert_eq!((t.columns.len(), t.rows.len()), (1, 0));
}
