//! `chimbuko-mpi generate`: man pages and shell completion scripts, made
//! from the clap definition of the command line itself, so they cannot
//! fall behind it. The command serves `scripts/install.sh` and packagers,
//! not users at a terminal: it has its own parser, outside the `Cli` of
//! `cli/mod.rs`, so `--help`, the man pages and the completion scripts do
//! not list it.
//!
//! - `generate man DIR` writes `chimbuko-mpi.1` and one page per
//!   subcommand (`chimbuko-mpi-run.1`, `chimbuko-mpi-model-train.1`, ...)
//!   into DIR, and prints the path of every page it wrote.
//! - `generate completions SHELL` prints the completion script for bash,
//!   zsh, fish, elvish or PowerShell on stdout.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Parser, Subcommand};
use clap_complete::Shell;

/// The command line of `chimbuko-mpi generate`.
#[derive(Parser)]
#[command(
    name = "generate",
    bin_name = "chimbuko-mpi generate",
    about = "Write the man pages or print a shell completion script of chimbuko-mpi"
)]
struct GenerateCli {
    #[command(subcommand)]
    what: What,
}

/// What `generate` makes.
#[derive(Subcommand)]
enum What {
    /// Write the man pages (section 1) into DIR, created if missing.
    Man {
        /// Directory for the pages (e.g. PREFIX/share/man/man1).
        dir: PathBuf,
    },
    /// Print the completion script for SHELL on stdout.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: Shell,
    },
}

/// Runs `generate`: `args` are its own (from `generate` on), `cli` is
/// the definition of the whole command line. A bad command line is
/// reported by clap, which exits.
pub fn run_generate(
    args: impl IntoIterator<Item = OsString>,
    cli: clap::Command,
) -> anyhow::Result<()> {
    let args = GenerateCli::try_parse_from(args).unwrap_or_else(|e| e.exit());
    let mut stdout = std::io::stdout().lock();
    match args.what {
        What::Man { dir } => {
            for page in write_man_pages(cli, &dir)? {
                writeln!(stdout, "{}", page.display()).context("writing to stdout")?;
            }
        }
        What::Completions { shell } => {
            let script = completion_script(cli, shell);
            stdout
                .write_all(&script)
                .and_then(|()| stdout.flush())
                .with_context(|| format!("writing the {shell} completion script"))?;
        }
    }
    Ok(())
}

/// Writes one man page for `cli` and one for each of its visible
/// subcommands, at any depth, into `dir`; returns the paths written.
fn write_man_pages(cli: clap::Command, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating the man page directory {}", dir.display()))?;
    // `help` is not a command of its own in a man page; building the
    // command gives every subcommand its full name (`chimbuko-mpi-run`).
    let mut cli = cli.disable_help_subcommand(true);
    cli.build();
    // Every page's footer names the program and its version (clap would
    // name the subcommand alone, without a version).
    let source = format!(
        "{} {}",
        cli.get_name(),
        cli.get_version().unwrap_or_default()
    );
    let mut written = Vec::new();
    write_pages(&cli, &source, dir, &mut written)?;
    Ok(written)
}

/// Writes the page of `cmd` and, first, those of its visible subcommands.
fn write_pages(
    cmd: &clap::Command,
    source: &str,
    dir: &Path,
    written: &mut Vec<PathBuf>,
) -> anyhow::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, source, dir, written)?;
    }
    let page = clap_mangen::Man::new(cmd.clone()).source(source);
    let path = dir.join(page.get_filename());
    let mut text = Vec::new();
    page.render(&mut text)
        .with_context(|| format!("rendering the man page {}", page.get_filename()))?;
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    written.push(path);
    Ok(())
}

/// The completion script of `cli` for `shell`.
fn completion_script(mut cli: clap::Command, shell: Shell) -> Vec<u8> {
    let name = cli.get_name().to_owned();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cli, name, &mut script);
    script
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn man_pages_cover_every_subcommand_and_name_the_program_version() {
        let dir = tempfile::tempdir().unwrap();
        let written = write_man_pages(crate::cli::Cli::command(), dir.path()).unwrap();
        let names: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        for expected in [
            "chimbuko-mpi.1",
            "chimbuko-mpi-run.1",
            "chimbuko-mpi-synth-ross.1",
            "chimbuko-mpi-model-train.1",
        ] {
            assert!(
                names.iter().any(|n| n == expected),
                "{expected} in {names:?}"
            );
        }
        assert!(!names
            .iter()
            .any(|n| n.contains("generate") || n.contains("help")));
        let run = std::fs::read_to_string(dir.path().join("chimbuko-mpi-run.1")).unwrap();
        let footer = format!("chimbuko-mpi {}", env!("CARGO_PKG_VERSION"));
        assert!(run.contains(&footer), "the footer names {footer}");
        assert!(run.contains("algorithm"), "options are documented");
    }

    #[test]
    fn completions_know_the_subcommands_but_not_generate() {
        // `generate` is not part of `Cli`: nothing made from it lists it.
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let script =
                String::from_utf8(completion_script(crate::cli::Cli::command(), shell)).unwrap();
            assert!(script.contains("inspect"), "{shell}");
            // fish spells the flag `-l algorithm`.
            assert!(script.contains("algorithm"), "{shell}");
            assert!(!script.contains("generate"), "{shell}");
        }
    }

    #[test]
    fn an_unwritable_directory_is_an_error_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("not-a-dir");
        std::fs::write(&file, "").unwrap();
        let err = write_man_pages(crate::cli::Cli::command(), &file.join("man1")).unwrap_err();
        assert!(format!("{err:#}").contains("not-a-dir"), "{err:#}");
    }
}
