//! The README's command synopsis against the command line itself: every
//! long flag that `--help` lists for a (sub)command is in the synopsis
//! of that command, and the synopsis lists no flag the command does not
//! take — so the README cannot fall behind the code again.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// The long flags `chimbuko-mpi <words> --help` lists (`--help` and
/// `--version` aside).
fn help_flags(words: &[&str]) -> BTreeSet<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_chimbuko-mpi"))
        .args(words)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "{words:?} --help");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .map(str::trim_start)
        .filter_map(|l| {
            let l = l.strip_prefix("-").map_or(l, |_| l);
            let at = l.find("--")?;
            // Only option lines: the flag opens the line (after `-x, `).
            if at > 4 {
                return None;
            }
            let flag: String = l[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            Some(flag)
        })
        .filter(|f| f != "--help" && f != "--version" && f.len() > 2)
        .collect()
}

/// The README's synopsis block (the first fenced block under `## Commands`).
fn synopsis() -> String {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme.find("## Commands").expect("a Commands section");
    let rest = &readme[start..];
    let open = rest.find("```\n").unwrap() + 4;
    let close = rest[open..].find("```").unwrap();
    rest[open..open + close].to_owned()
}

/// The flags the synopsis gives the command `words` (its line starting
/// `chimbuko-mpi <words>`, and the indented lines after it).
fn synopsis_flags(block: &str, words: &[&str]) -> BTreeSet<String> {
    let head = format!("chimbuko-mpi {} ", words.join(" "));
    let mut flags = BTreeSet::new();
    let mut inside = false;
    for line in block.lines() {
        if line.starts_with(' ') {
            if !inside {
                continue;
            }
        } else {
            let after = line
                .split("chimbuko-mpi ")
                .nth(1)
                .map(|s| format!("chimbuko-mpi {s}"));
            inside = after.is_some_and(|a| {
                a.starts_with(&head)
                    // `synth` is not `synth ross`.
                    && !(words == ["synth"] && a.starts_with("chimbuko-mpi synth ross"))
            });
            if !inside {
                continue;
            }
        }
        let mut rest = line;
        while let Some(at) = rest.find("--") {
            let flag: String = rest[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            if flag.len() > 2 {
                flags.insert(flag.clone());
            }
            rest = &rest[at + flag.len().max(2)..];
        }
    }
    flags
}

#[test]
fn the_readme_synopsis_lists_every_flag_of_every_command() {
    let block = synopsis();
    let commands: [&[&str]; 13] = [
        &["run"],
        &["inspect"],
        &["export"],
        &["synth"],
        &["synth", "ross"],
        &["ross"],
        &["dump"],
        &["model", "train"],
        &["model", "test"],
        &["model", "show"],
        &["model", "convert"],
        &["model", "table"],
        &["model", "scaling"],
    ];
    let mut wrong = Vec::new();
    for words in commands {
        let code = help_flags(words);
        let readme = synopsis_flags(&block, words);
        let missing: Vec<&String> = code.difference(&readme).collect();
        let extra: Vec<&String> = readme.difference(&code).collect();
        if !missing.is_empty() || !extra.is_empty() {
            wrong.push(format!("{words:?}: missing from the README {missing:?}, not flags of the command {extra:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "README synopsis out of date:\n{}",
        wrong.join("\n")
    );
}
