//! The shape of the code, as `docs/architecture.md` describes it: which
//! room may import which, where MPI, HDF5, ADIOS2, clap and `unsafe` may
//! appear, how long a file or a function may be, that no file imports
//! (through others) a file that imports it, and which test files belong to
//! the mpirun tier (their names end in `_mpi`). Unit-test modules
//! (everything from a file's first `#[cfg(test)]` line on) are exempt from
//! the import rules.

mod common;
#[path = "architecture/shape.rs"]
mod shape;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    common::files_in(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect()
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The room of a file: its top-level folder or file under `src/`.
fn room_of(path: &Path) -> String {
    let rel = path.strip_prefix(src()).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_owned()
}

/// A file's text without its unit-test module, and without comments.
fn code_of(text: &str) -> String {
    let end = text
        .lines()
        .position(|l| l.trim() == "#[cfg(test)]")
        .unwrap_or(usize::MAX);
    text.lines()
        .take(end)
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The crate rooms a file's code imports (`crate::ROOM`).
fn imported_rooms(code: &str) -> Vec<String> {
    let mut out: Vec<String> = code
        .match_indices("crate::")
        .map(|(i, _)| {
            code[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|r| !r.is_empty())
        .collect();
    out.sort();
    out.dedup();
    out
}

#[test]
fn rooms_import_only_what_the_architecture_allows() {
    let all = [
        "util",
        "sys",
        "trace",
        "events",
        "detect",
        "collectives",
        "output",
        "provenance",
        "inspect",
        "run",
        "synth",
        "dump",
        "fuzzing",
        "ross",
        "model",
        "report",
        "incidents",
        "commands",
    ];
    let allowed: BTreeMap<&str, Vec<&str>> = BTreeMap::from([
        ("util", vec![]),
        ("sys", vec![]),
        ("trace", vec!["sys", "util"]),
        ("events", vec!["model", "trace", "sys", "util"]),
        ("incidents", vec!["events", "util"]),
        ("detect", vec!["model", "util"]),
        ("collectives", vec!["detect", "events", "util"]),
        (
            "provenance",
            vec![
                "collectives",
                "detect",
                "events",
                "incidents",
                "model",
                "util",
            ],
        ),
        (
            "output",
            vec![
                "collectives",
                "detect",
                "events",
                "incidents",
                "provenance",
                "trace",
                "sys",
                "util",
            ],
        ),
        ("inspect", vec!["incidents", "provenance", "trace"]),
        (
            "run",
            vec![
                "collectives",
                "detect",
                "events",
                "incidents",
                "model",
                "output",
                "provenance",
                "report",
                "sys",
                "trace",
                "util",
            ],
        ),
        ("synth", vec!["collectives", "trace", "util"]),
        ("dump", vec!["trace"]),
        ("fuzzing", vec!["events", "trace"]),
        (
            "ross",
            vec![
                "collectives",
                "detect",
                "incidents",
                "provenance",
                "sys",
                "trace",
                "util",
            ],
        ),
        ("model", vec!["sys", "util"]),
        (
            "report",
            vec![
                "incidents",
                "inspect",
                "model",
                "provenance",
                "trace",
                "util",
            ],
        ),
        ("commands", vec!["model", "provenance"]),
        ("lib", vec![]),
        ("main", vec![]),
        ("cli", vec![]),
    ]);
    let mut wrong = Vec::new();
    for f in rust_files(&src()) {
        let room = room_of(&f);
        let Some(ok) = allowed.get(room.as_str()) else {
            wrong.push(format!(
                "{}: room {room:?} is not in the architecture",
                f.display()
            ));
            continue;
        };
        let code = code_of(&std::fs::read_to_string(&f).unwrap());
        for r in imported_rooms(&code) {
            if r != room && all.contains(&r.as_str()) && !ok.contains(&r.as_str()) {
                wrong.push(format!("{}: {room} imports crate::{r}", f.display()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against docs/architecture.md:\n{}",
        wrong.join("\n")
    );
}

/// Whether `line` has `needle` as a word of its own (not the end of a
/// longer name: `chimbuko_mpi::` does not use `mpi::`).
fn has_word(line: &str, needle: &str) -> bool {
    line.match_indices(needle).any(|(i, _)| {
        !line[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// Files of `src/` whose code (tests included) mentions `needle`.
fn files_using(needle: &str) -> Vec<String> {
    rust_files(&src())
        .into_iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            text.lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .any(|l| has_word(l, needle))
        })
        .map(|f| f.strip_prefix(src()).unwrap().display().to_string())
        .collect()
}

#[test]
fn exclusive_rooms_are_exclusive() {
    let within = |needle: &str, places: &[&str]| {
        let outside: Vec<String> = files_using(needle)
            .into_iter()
            .filter(|f| !places.iter().any(|p| f.starts_with(p)))
            .collect();
        assert!(
            outside.is_empty(),
            "{needle:?} outside {places:?}: {outside:?}"
        );
    };
    within("mpi::", &["collectives/"]);
    within("hdf5::", &["provenance/"]);
    within("adios2_sys", &["trace/adios.rs"]);
    within(
        "unsafe",
        &[
            "sys/",
            "trace/adios.rs",
            "collectives/",
            "provenance/hdf5file.rs",
        ],
    );
    within("hdf5_sys", &["provenance/hdf5file.rs"]);
    within("clap", &["cli/"]);
    within("libc::", &["sys/"]);
}

/// The integration tests' folder.
fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

#[test]
fn long_files_say_why() {
    let mut unexplained = Vec::new();
    let mut files = rust_files(&src());
    files.extend(rust_files(&tests_dir()));
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let lines = text.lines().count();
        let top: String = text
            .lines()
            .take_while(|l| l.starts_with("//!") || l.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        if lines > 600 && !top.contains("is long because") {
            unexplained.push(format!("{} ({lines} lines)", f.display()));
        }
    }
    assert!(
        unexplained.is_empty(),
        "files over 600 lines without `is long because` at the top:\n{}",
        unexplained.join("\n")
    );
}

/// `scripts/test-fast.sh` runs every integration test file whose name does
/// not end in `_mpi`; this keeps the name honest both ways, so a new test
/// file lands in the right tier without editing a list.
#[test]
fn test_files_that_launch_mpirun_and_only_those_end_in_mpi() {
    let mut wrong = Vec::new();
    for entry in std::fs::read_dir(tests_dir()).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let name = p.file_stem().unwrap().to_string_lossy().to_string();
        if name == "architecture" {
            continue; // this file names mpirun only to look for it
        }
        // `common::mpirun(n)`, or a job script run through `mpirun-*.sh`.
        let text = std::fs::read_to_string(&p).unwrap();
        let launches = text.contains("mpirun(") || text.contains("\"mpirun");
        match (name.ends_with("_mpi"), launches) {
            (false, true) => {
                wrong.push(format!("{name}.rs launches mpirun: name it {name}_mpi.rs"))
            }
            (true, false) => wrong.push(format!("{name}.rs launches no mpirun: drop `_mpi`")),
            _ => {}
        }
    }
    wrong.sort();
    assert!(wrong.is_empty(), "test tiers:\n{}", wrong.join("\n"));
}

/// A function a newcomer can read in one sitting: none in `src/` is longer
/// than 100 lines (from its `fn` line to its closing brace).
#[test]
fn no_function_is_over_100_lines() {
    let mut long = Vec::new();
    for f in rust_files(&src()) {
        let text = std::fs::read_to_string(&f).unwrap();
        for (name, line, len) in shape::function_lengths(&text) {
            if len > 100 {
                let rel = f.strip_prefix(src()).unwrap().display().to_string();
                long.push(format!("{rel}:{line} {name} ({len} lines)"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over 100 lines:\n{}",
        long.join("\n")
    );
}

/// A file's code without its unit-test module (from a `#[cfg(test)]` line
/// that opens a `mod`) and without comments.
fn code_without_test_module(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let end = (0..lines.len())
        .find(|&i| {
            lines[i].trim() == "#[cfg(test)]"
                && lines
                    .get(i + 1)
                    .is_some_and(|l| l.trim_start().starts_with("mod "))
        })
        .unwrap_or(lines.len());
    lines[..end]
        .iter()
        .filter(|l| !l.trim_start().starts_with("//"))
        .copied()
        .collect::<Vec<_>>()
        .join("\n")
}

/// No import circles: no file of `src/` imports, directly or through
/// others, a file that imports it (paths through `crate::`, `super::` and
/// `self::`; a folder's `mod.rs` declaring its files is not an import).
#[test]
fn no_file_imports_a_file_that_imports_it() {
    let files = rust_files(&src());
    let graph = shape::import_graph(&src(), &files, code_without_test_module);
    let circles: Vec<String> = shape::circles(&graph)
        .into_iter()
        .map(|c| {
            c.iter()
                .map(|f| f.strip_prefix(src()).unwrap().display().to_string())
                .collect::<Vec<_>>()
                .join(" <-> ")
        })
        .collect();
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}
