//! Where the settings of `run` come from, for job scripts and modules:
//! a command-line flag, else the environment variable `CHIMBUKO_<FLAG>`
//! (upper case, `-` as `_`), else the `--config` TOML file (key = flag
//! name, `-` or `_`), else the flag's default.
//!
//! Environment and file values are turned into flags appended to the
//! command line before clap parses it, so every flag works in all three
//! places without being listed anywhere else, and clap validates all of
//! them the same way. Repeatable flags take comma-separated lists in the
//! environment and arrays in the file; switches take
//! `1/0/true/false/yes/no/on/off`.

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsString;
use std::path::Path;

use anyhow::{bail, Context};
use clap::{ArgAction, Args, Command};

use chimbuko_mpi::run::options::{Setting, Source};

use super::run::RunArgs;

/// `CHIMBUKO_*` variables that are not `run` settings: read by the
/// repository's scripts and tests (the demo's output directory, the
/// binary and mpirun flags the tests use, the scripts' Python venv).
const OTHER_VARIABLES: [&str; 5] = [
    "CHIMBUKO_BIN",
    "CHIMBUKO_DEMO_OUT",
    "CHIMBUKO_MPIRUN_FLAGS",
    "CHIMBUKO_MPI_BIN",
    "CHIMBUKO_VENV",
];

/// The `CHIMBUKO_*` variables among `names` that set nothing: a misspelt
/// setting (`CHIMBUKO_SIGM=3`) would otherwise be ignored silently.
pub fn unknown_variables<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let known: HashSet<String> = run_command()
        .get_arguments()
        .filter_map(|a| a.get_long())
        .map(env_name)
        .chain(OTHER_VARIABLES.iter().map(|s| s.to_string()))
        .collect();
    let mut out: Vec<String> = names
        .filter(|n| n.starts_with("CHIMBUKO_") && !known.contains(*n))
        .map(str::to_owned)
        .collect();
    out.sort();
    out
}

/// Where the value of flag `long` came from, in words, when it was not
/// typed on the command line: `environment variable CHIMBUKO_SIGMA` or
/// `config file key sigma` (for error messages about a bad value).
pub fn origin(long: &str, sources: &BTreeMap<String, Source>) -> Option<String> {
    match sources.get(long)? {
        Source::Env => Some(format!("environment variable {}", env_name(long))),
        Source::File => Some(format!("config file key {long}")),
        _ => None,
    }
}

/// Environment variable of a flag: `--flush-steps` → `CHIMBUKO_FLUSH_STEPS`.
pub fn env_name(long: &str) -> String {
    format!("CHIMBUKO_{}", long.to_uppercase().replace('-', "_"))
}

fn run_command() -> Command {
    RunArgs::augment_args(Command::new("run"))
}

/// Long flags given on the command line (`--name` and `--name=value`).
fn flags_given(args: &[OsString]) -> HashSet<String> {
    args.iter()
        .filter_map(|a| a.to_str())
        .take_while(|a| *a != "--")
        .filter_map(|a| a.strip_prefix("--"))
        .map(|a| a.split('=').next().unwrap_or(a).to_owned())
        .collect()
}

fn parse_switch(v: &str, what: &str) -> anyhow::Result<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" | "" => Ok(false),
        _ => bail!("{what}: expected a switch value (true/false, 1/0, yes/no), got {v:?}"),
    }
}

/// A TOML value as the strings a flag takes.
fn toml_values(v: &toml::Value, what: &str) -> anyhow::Result<Vec<String>> {
    Ok(match v {
        toml::Value::String(s) => vec![s.clone()],
        toml::Value::Integer(i) => vec![i.to_string()],
        toml::Value::Float(f) => vec![f.to_string()],
        toml::Value::Boolean(b) => vec![b.to_string()],
        toml::Value::Array(a) => {
            let mut out = Vec::new();
            for x in a {
                out.extend(toml_values(x, what)?);
            }
            out
        }
        other => bail!("{what}: unsupported value {other}"),
    })
}

/// The config file's settings, keys normalised to flag names.
fn read_config(path: &Path) -> anyhow::Result<BTreeMap<String, toml::Value>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading config file {}", path.display()))?;
    let table: toml::Table =
        toml::from_str(&text).with_context(|| format!("parsing config file {}", path.display()))?;
    Ok(table
        .into_iter()
        .map(|(k, v)| (k.replace('_', "-"), v))
        .collect())
}

/// `args` (the words after `run`) completed with the settings from the
/// environment and the config file, and where each setting came from.
pub fn complete_args(
    args: &[OsString],
    env: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<(Vec<OsString>, BTreeMap<String, Source>)> {
    let given = flags_given(args);
    let config_path = args
        .iter()
        .position(|a| a == "--config")
        .and_then(|i| args.get(i + 1))
        .map(|p| p.to_string_lossy().into_owned())
        .or_else(|| {
            args.iter()
                .filter_map(|a| a.to_str()?.strip_prefix("--config=").map(str::to_owned))
                .next()
        })
        .or_else(|| env(&env_name("config")));
    let mut file = match &config_path {
        Some(p) => read_config(Path::new(p))?,
        None => BTreeMap::new(),
    };
    let mut out: Vec<OsString> = args.to_vec();
    let mut sources = BTreeMap::new();
    let cmd = run_command();
    for arg in cmd.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if long == "config" || arg.is_positional() {
            continue;
        }
        let from_file = file.remove(long);
        if given.contains(long) {
            sources.insert(long.to_owned(), Source::Flag);
            continue;
        }
        let (values, source) = if let Some(v) = env(&env_name(long)) {
            let what = env_name(long);
            let values = match arg.get_action() {
                ArgAction::Append => v.split(',').map(|x| x.trim().to_owned()).collect(),
                ArgAction::SetTrue | ArgAction::SetFalse => {
                    vec![parse_switch(&v, &what)?.to_string()]
                }
                _ => vec![v],
            };
            (values, Source::Env)
        } else if let Some(v) = from_file {
            let what = format!("config key {long}");
            (toml_values(&v, &what)?, Source::File)
        } else {
            continue;
        };
        match arg.get_action() {
            ArgAction::SetTrue | ArgAction::SetFalse => {
                let on = values
                    .first()
                    .map(|v| parse_switch(v, long))
                    .transpose()?
                    .unwrap_or(false);
                if on {
                    out.push(format!("--{long}").into());
                }
            }
            _ => {
                for v in values {
                    out.push(format!("--{long}").into());
                    out.push(v.into());
                }
            }
        }
        sources.insert(long.to_owned(), source);
    }
    if let Some(unknown) = file.keys().next() {
        bail!(
            "config file {}: unknown setting {unknown:?} (keys are the flag names of `run --help`)",
            config_path.unwrap_or_default()
        );
    }
    Ok((out, sources))
}

/// Every setting with its final value and source (after clap parsed the
/// completed arguments).
pub fn effective(args: &[OsString], sources: &BTreeMap<String, Source>) -> Vec<Setting> {
    let mut full = vec![OsString::from("run")];
    full.extend_from_slice(args);
    let Ok(m) = run_command().try_get_matches_from(full) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for arg in run_command().get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        let id = arg.get_id().as_str();
        let value = match arg.get_action() {
            ArgAction::SetTrue | ArgAction::SetFalse => m
                .get_one::<bool>(id)
                .map(|b| b.to_string())
                .unwrap_or_default(),
            _ => m
                .get_raw(id)
                .map(|vals| {
                    vals.map(|v| v.to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default(),
        };
        let source = sources.get(long).copied().unwrap_or(Source::Default);
        if value.is_empty() && source == Source::Default {
            continue;
        }
        out.push(Setting {
            name: long.to_owned(),
            value,
            source,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::FromArgMatches;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn misspelt_variables_are_found_and_known_ones_are_not() {
        let names = [
            "CHIMBUKO_SIGM",
            "CHIMBUKO_SIGMA",
            "CHIMBUKO_CONFIG",
            "CHIMBUKO_MPI_BIN",
            "PATH",
            "CHIMBUKO_ALGORYTHM",
        ];
        assert_eq!(
            unknown_variables(names.into_iter()),
            vec!["CHIMBUKO_ALGORYTHM", "CHIMBUKO_SIGM"]
        );
    }

    #[test]
    fn env_names() {
        assert_eq!(env_name("flush-steps"), "CHIMBUKO_FLUSH_STEPS");
    }

    #[test]
    fn flag_beats_env_beats_file_beats_default() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("ad.toml");
        std::fs::write(
            &cfg,
            "sigma = 9.0\nwindow = 7\nflush_steps = 3\ninput = ['a-{rank}.bp', 'b-{rank}.bp']\nquiet = true\n",
        )
        .unwrap();
        let env = |k: &str| match k {
            "CHIMBUKO_SIGMA" => Some("8".to_owned()),
            "CHIMBUKO_WINDOW" => Some("6".to_owned()),
            _ => None,
        };
        let args = os(&["--sigma", "7", "--config", cfg.to_str().unwrap()]);
        let (full, src) = complete_args(&args, &env).unwrap();
        let parsed = RunArgs::from_arg_matches(
            &run_command()
                .try_get_matches_from(std::iter::once(OsString::from("run")).chain(full.clone()))
                .unwrap(),
        )
        .unwrap();
        assert_eq!(parsed.sigma, 7.0); // flag
        assert_eq!(parsed.window, 6); // env over file
        assert_eq!(parsed.flush_steps, 3); // file
        assert_eq!(parsed.inputs, vec!["a-{rank}.bp", "b-{rank}.bp"]);
        assert!(parsed.quiet);
        assert_eq!(parsed.min_count, 2); // default
        assert_eq!(src["sigma"], Source::Flag);
        assert_eq!(src["window"], Source::Env);
        assert_eq!(src["flush-steps"], Source::File);
        let eff = effective(&full, &src);
        let get = |n: &str| eff.iter().find(|s| s.name == n).cloned().unwrap();
        assert_eq!(get("window").value, "6");
        assert_eq!(get("min-count").source, Source::Default);
        assert_eq!(get("input").value, "a-{rank}.bp,b-{rank}.bp");
    }

    #[test]
    fn bad_settings_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("ad.toml");
        std::fs::write(&cfg, "sigmaa = 3\n").unwrap();
        let args = os(&["--config", cfg.to_str().unwrap()]);
        let err = complete_args(&args, &|_| None).unwrap_err().to_string();
        assert!(err.contains("sigmaa"), "{err}");
        let env = |k: &str| (k == "CHIMBUKO_QUIET").then(|| "maybe".to_owned());
        let err = complete_args(&[], &env).unwrap_err().to_string();
        assert!(err.contains("CHIMBUKO_QUIET"), "{err}");
    }

    #[test]
    fn env_lists_and_switches() {
        let env = |k: &str| match k {
            "CHIMBUKO_INPUT" => Some("x-{rank}.bp, y-{rank}.bp".to_owned()),
            "CHIMBUKO_QUIET" => Some("yes".to_owned()),
            "CHIMBUKO_OVERWRITE" => Some("0".to_owned()),
            _ => None,
        };
        let (full, _) = complete_args(&[], &env).unwrap();
        let m = run_command()
            .try_get_matches_from(std::iter::once(OsString::from("run")).chain(full))
            .unwrap();
        let a = RunArgs::from_arg_matches(&m).unwrap();
        assert_eq!(a.inputs, vec!["x-{rank}.bp", "y-{rank}.bp"]);
        assert!(a.quiet && !a.overwrite);
    }
}
