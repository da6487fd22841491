//! `docs/benchmarks.md` as a document of parts: the opening, the table of
//! runs (which sections came from which run: date, machine, command), the
//! Targets table, the sections, and the notes kept by hand
//! (`docs/benchmarks-notes.md`). A full run writes it whole; a run of a
//! few sections (`--only`) replaces just those sections and their Targets
//! rows in the file there is, and names itself in the table of runs, so
//! the document always says where each number comes from.

use std::fmt::Write as _;

/// One row of the table of runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunRow {
    /// The section titles it made, or `None` for "every other section".
    pub(crate) sections: Option<Vec<String>>,
    pub(crate) date: String,
    pub(crate) machine: String,
    pub(crate) command: String,
}

/// The parts of the document.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Document {
    pub(crate) runs: Vec<RunRow>,
    /// Targets rows: what, target, measured, met.
    pub(crate) targets: Vec<[String; 4]>,
    /// `(title, body)` of each section, in order (body without the title
    /// line, starting with its blank line).
    pub(crate) sections: Vec<(String, String)>,
}

const OPENING: &str = "# Benchmarks\n\nSpeed, scale, memory and detection quality of \
    chimbuko-mpi, as measured by `scripts/bench.sh` (the `chimbuko-bench` harness in \
    `bench/`: it generates the scenarios with `chimbuko-mpi synth`, runs `chimbuko-mpi run` \
    under mpirun on the release build, and writes this file and the plots in `docs/img/`). \
    Nothing here is asserted by the tests; `scripts/bench.sh --quick` runs in CI and checks \
    only that each section runs and that the detection quality stays above the bars. \
    `scripts/bench.sh --only SECTION` reruns some sections and replaces just those here.\n\n\
    - Software: Debian 12, Open MPI 4.1, HDF5 1.10 (openmpi), ADIOS2 2.12 from the Python \
    wheel. A virtual machine's speed varies between identical runs (up to ±30 % on the \
    machines below), so a single run near a target can fall either side of it.\n\
    - Runs (each section and its Targets rows come from one of these):\n";

const TARGETS_INTRO: &str = "The project's targets against the measurements (each \
    explained in its section below).";

/// Splits a markdown table row into its cells.
fn cells(line: &str) -> Vec<String> {
    let t = line.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    t.split(" | ").map(|c| c.trim().to_string()).collect()
}

fn is_rule(line: &str) -> bool {
    line.starts_with("|---")
}

impl Document {
    /// Reads a document this module wrote; `notes` (the hand-kept tail) is
    /// left out of the sections.
    pub(crate) fn parse(text: &str, notes: &str) -> Document {
        let text = match notes.trim().is_empty() {
            false => text.split(notes.trim()).next().unwrap_or(text),
            true => text,
        };
        let mut doc = Document::default();
        let mut chunks: Vec<(String, String)> = Vec::new();
        let mut head = String::new();
        for line in text.lines() {
            if let Some(title) = line.strip_prefix("## ") {
                chunks.push((title.trim().to_string(), String::new()));
            } else if let Some((_, body)) = chunks.last_mut() {
                body.push_str(line);
                body.push('\n');
            } else {
                head.push_str(line);
                head.push('\n');
            }
        }
        let mut in_runs = false;
        for line in head.lines() {
            if line.starts_with("| sections |") {
                in_runs = true;
                continue;
            }
            if !in_runs || is_rule(line) {
                continue;
            }
            if !line.starts_with('|') {
                in_runs = false;
                continue;
            }
            let c = cells(line);
            if c.len() == 4 {
                let sections = match c[0].as_str() {
                    "every section not named below" | "every section" => None,
                    s => Some(s.split(", ").map(str::to_string).collect()),
                };
                doc.runs.push(RunRow {
                    sections,
                    date: c[1].clone(),
                    machine: c[2].clone(),
                    command: c[3].trim_matches('`').to_string(),
                });
            }
        }
        for (title, body) in chunks {
            if title == "Targets" {
                for line in body.lines() {
                    if line.starts_with("| what |") || is_rule(line) || !line.starts_with('|') {
                        continue;
                    }
                    let c = cells(line);
                    if c.len() == 4 {
                        doc.targets
                            .push([c[0].clone(), c[1].clone(), c[2].clone(), c[3].clone()]);
                    }
                }
            } else {
                // One newline ends a body, however many blank lines the
                // file had before the next title.
                let body = format!("{}\n", body.trim_end_matches('\n'));
                doc.sections.push((title, body));
            }
        }
        doc
    }

    /// Splits a report made of `## Title` sections into them.
    pub(crate) fn sections_of(report: &str) -> Vec<(String, String)> {
        Document::parse(report, "").sections
    }

    /// Puts in what a run of some sections made: its sections replace
    /// those of the same title (new ones go before the first section it
    /// did not make that follows them in `order`, or at the end), its
    /// targets replace those with the same description, and it becomes a
    /// row of the table of runs.
    pub(crate) fn merge(
        &mut self,
        made: Vec<(String, String)>,
        targets: Vec<[String; 4]>,
        run: RunRow,
    ) {
        let titles: Vec<String> = made.iter().map(|(t, _)| t.clone()).collect();
        for (title, body) in made {
            match self.sections.iter_mut().find(|(t, _)| *t == title) {
                Some(slot) => slot.1 = body,
                None => self.sections.push((title, body)),
            }
        }
        for t in targets {
            match self.targets.iter_mut().find(|r| r[0] == t[0]) {
                Some(slot) => *slot = t,
                None => self.targets.push(t),
            }
        }
        for r in &mut self.runs {
            if let Some(s) = &mut r.sections {
                s.retain(|t| !titles.contains(t));
            }
        }
        self.runs
            .retain(|r| r.sections.as_ref().is_none_or(|s| !s.is_empty()));
        self.runs.push(RunRow {
            sections: Some(titles),
            ..run
        });
    }

    /// The document's text, with the hand-kept `notes` at the end.
    pub(crate) fn render(&self, notes: &str) -> String {
        let mut out = String::from(OPENING);
        let _ = writeln!(
            out,
            "\n| sections | date | machine | command |\n|---|---|---|---|"
        );
        for r in &self.runs {
            let which = match &r.sections {
                None if self.runs.len() > 1 => "every section not named below".to_string(),
                None => "every section".to_string(),
                Some(s) => s.join(", "),
            };
            let _ = writeln!(
                out,
                "| {which} | {} | {} | `{}` |",
                r.date, r.machine, r.command
            );
        }
        if !self.targets.is_empty() {
            let _ = writeln!(
                out,
                "\n## Targets\n\n{TARGETS_INTRO}\n\n| what | target | measured | met |\n|---|---|---|---|"
            );
            for t in &self.targets {
                let _ = writeln!(out, "| {} |", t.join(" | "));
            }
        }
        for (title, body) in &self.sections {
            let _ = write!(out, "\n## {title}\n{}", body.trim_end_matches('\n'));
            out.push('\n');
        }
        if !notes.trim().is_empty() {
            out.push('\n');
            out.push_str(notes.trim_start());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(sections: Option<&[&str]>, command: &str) -> RunRow {
        RunRow {
            sections: sections.map(|s| s.iter().map(|t| t.to_string()).collect()),
            date: "2026-11-27".into(),
            machine: "CPU, 2 cores".into(),
            command: command.into(),
        }
    }

    #[test]
    fn a_partial_run_replaces_its_sections_and_names_itself() {
        let notes = "## Notes\n\nkept by hand\n";
        let mut doc = Document {
            runs: vec![run(None, "scripts/bench.sh")],
            targets: vec![
                ["a".into(), "≤ 1".into(), "0.5".into(), "yes".into()],
                ["b".into(), "≤ 2".into(), "3".into(), "no".into()],
            ],
            sections: vec![
                ("One".into(), "\nold one\n".into()),
                ("Two".into(), "\nold two\n".into()),
            ],
        };
        let text = doc.render(notes);
        assert_eq!(Document::parse(&text, notes), doc);
        doc.merge(
            Document::sections_of("\n## Two\n\nnew two\n\n## Three\n\nnew three\n"),
            vec![["b".into(), "≤ 2".into(), "1".into(), "yes".into()]],
            run(None, "scripts/bench.sh --only two"),
        );
        let text = doc.render(notes);
        assert!(text.contains("| every section not named below | 2026-11-27"));
        assert!(text.contains(
            "| Two, Three | 2026-11-27 | CPU, 2 cores | `scripts/bench.sh --only two` |"
        ));
        assert!(text.contains("| b | ≤ 2 | 1 | yes |") && !text.contains("| b | ≤ 2 | 3 | no |"));
        assert!(text.contains("old one") && text.contains("new two") && !text.contains("old two"));
        assert!(text.ends_with("kept by hand\n"));
        let again = Document::parse(&text, notes);
        assert_eq!(again, doc);
        // A later run of the same section takes it over from the earlier one.
        let mut later = again.clone();
        later.merge(
            Document::sections_of("\n## Two\n\nnewer\n"),
            Vec::new(),
            run(None, "scripts/bench.sh --only two --quick"),
        );
        assert_eq!(later.runs.len(), 3);
        assert_eq!(
            later.runs[1].sections.as_deref(),
            Some(&["Three".to_string()][..])
        );
    }

    #[test]
    fn the_committed_document_reads_back_as_written() {
        let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs");
        let text = std::fs::read_to_string(docs.join("benchmarks.md")).unwrap();
        let notes = std::fs::read_to_string(docs.join("benchmarks-notes.md")).unwrap_or_default();
        let doc = Document::parse(&text, &notes);
        assert!(!doc.runs.is_empty() && !doc.targets.is_empty() && doc.sections.len() > 5);
        assert_eq!(doc.render(&notes), text);
    }
}
