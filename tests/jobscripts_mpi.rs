//! The job scripts of `jobscripts/`, run as users run them: the plain
//! mpirun ones under mpirun (with `synth --mpi` standing in for the
//! TAU-instrumented application), and all of them from other directories,
//! as a batch system runs them (a copy of the script in a spool directory),
//! with stand-in launchers.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// The repository's `jobscripts/`.
fn jobscripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("jobscripts")
}

/// The launch recipes (every script but `chimbuko-env.sh`).
fn recipes() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(jobscripts())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sh") && n != "chimbuko-env.sh")
        .collect();
    names.sort();
    assert!(names.len() >= 7, "{names:?}");
    names
}

/// Writes an executable shell script.
fn write_exe(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Copies the recipe `name` into `dir`, alone, as Slurm, LSF and PBS copy a
/// batch script into a spool directory before running it.
fn spooled(name: &str, dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let copy = dir.join(name);
    std::fs::copy(jobscripts().join(name), &copy).unwrap();
    copy
}

/// Runs `script` with the demo's settings from `dir`; `setup` adjusts the
/// command (environment) before it runs. Returns the run summary.
fn run_script(script: &Path, dir: &Path, setup: impl FnOnce(&mut Command)) -> serde_json::Value {
    let trace = dir.join("trace");
    let summary = dir.join("summary.json");
    let mut flags = String::from("--oversubscribe");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        flags.push_str(" --allow-run-as-root");
    }
    let app = format!(
        "{} synth --mpi --engine SST --out {} --steps 4 --events-per-step 1500 --pace-ms 30",
        exe(),
        trace.display()
    );
    let mut cmd = Command::new("bash");
    cmd.arg(script)
        .current_dir(dir)
        .env_remove("CHIMBUKO_JOBSCRIPTS")
        .env("APP_NAME", "demo")
        .env("APP_RANKS", "4")
        .env("AD_RANKS", "2")
        .env("TRACE_DIR", &trace)
        .env("CHIMBUKO_BIN", exe())
        .env("APP_CMD", app)
        .env("MPIRUN_FLAGS", flags)
        .env("CHIMBUKO_QUIET", "true")
        .env("CHIMBUKO_TRUTH", trace.join("truth-demo.csv"))
        .env("CHIMBUKO_SUMMARY_OUT", &summary);
    setup(&mut cmd);
    let out = run_ok(&mut cmd);
    assert!(out.contains("provenance: "), "{out}");
    assert!(
        dir.join("chimbuko-demo.h5").exists(),
        "default provenance path"
    );
    serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap()
}

/// What both mpirun job scripts must produce: 2 AD ranks on the demo's 4
/// streams, all 4 steps, and the injected anomalies found.
fn assert_in_situ_summary(s: &serde_json::Value) {
    assert_eq!(
        (s["ad_ranks"].as_u64(), s["streams"].as_u64()),
        (Some(2), Some(4))
    );
    assert_eq!(s["steps"], 4);
    assert!(
        s["truth"]["recall"].as_f64().unwrap() > 0.9,
        "{}",
        s["truth"]
    );
}

#[test]
fn mpmd_job_script_runs_the_in_situ_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let s = run_script(&jobscripts().join("mpirun-mpmd.sh"), dir.path(), |_| {});
    assert_in_situ_summary(&s);
}

#[test]
fn two_launch_job_script_runs_the_in_situ_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let s = run_script(
        &jobscripts().join("mpirun-two-launches.sh"),
        dir.path(),
        |_| {},
    );
    assert_in_situ_summary(&s);
}

/// A copy of the MPMD recipe alone in a directory of its own, run from a
/// third directory with no setting of where things are: it finds
/// `chimbuko-env.sh` in the install layout of the `chimbuko-mpi` on PATH
/// (`PREFIX/bin/chimbuko-mpi`, `PREFIX/share/chimbuko-mpi/jobscripts/`), and
/// `chimbuko-env.sh` finds the binary on PATH.
#[test]
fn spooled_mpmd_job_script_finds_the_install_layout_from_path() {
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("prefix");
    let share = prefix.join("share/chimbuko-mpi/jobscripts");
    std::fs::create_dir_all(&share).unwrap();
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    std::fs::copy(
        jobscripts().join("chimbuko-env.sh"),
        share.join("chimbuko-env.sh"),
    )
    .unwrap();
    std::os::unix::fs::symlink(exe(), prefix.join("bin/chimbuko-mpi")).unwrap();
    let script = spooled("mpirun-mpmd.sh", &tmp.path().join("spool"));
    let run = tmp.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    let path = format!(
        "{}:{}",
        prefix.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let s = run_script(&script, &run, |c| {
        c.env_remove("CHIMBUKO_BIN").env("PATH", path);
    });
    assert_in_situ_summary(&s);
}

/// Every recipe starts with the same lines that find `chimbuko-env.sh`
/// (one lookup, copied, since a script cannot source anything before it
/// has found it).
#[test]
fn job_scripts_share_one_lookup_of_chimbuko_env() {
    let block = |name: &str| {
        let text = std::fs::read_to_string(jobscripts().join(name)).unwrap();
        let start = text
            .find("# >>> find chimbuko-env.sh")
            .unwrap_or_else(|| panic!("{name}: no lookup block"));
        let end = text[start..]
            .find("# <<< find chimbuko-env.sh")
            .unwrap_or_else(|| panic!("{name}: lookup block not closed"));
        text[start..start + end].to_owned()
    };
    let names = recipes();
    let first = block(&names[0]);
    assert!(first.contains("CHIMBUKO_JOBSCRIPTS"), "{first}");
    for name in &names[1..] {
        assert_eq!(block(name), first, "{name} differs from {}", names[0]);
    }
}

/// Every recipe, started from a directory that is neither the repository
/// nor the scripts' directory, finds `chimbuko-env.sh` through each way it
/// has — `CHIMBUKO_JOBSCRIPTS`, its own directory, the install layout of
/// the `chimbuko-mpi` on PATH, the submission directory's `jobscripts/` —
/// and fails naming what it tried when there is none. The launchers
/// (`mpirun`, `srun`, `jsrun`, `mpiexec`) are stand-ins that print their
/// command line and the files it names.
#[test]
fn job_scripts_find_chimbuko_env_from_any_directory() {
    let tmp = tempfile::tempdir().unwrap();
    // The scripts name directories by their physical paths.
    let t = &std::fs::canonicalize(tmp.path()).unwrap();
    let fake = t.join("launchers");
    for launcher in ["mpirun", "srun", "jsrun", "mpiexec"] {
        write_exe(
            &fake.join(launcher),
            &format!(
                "#!/bin/sh\necho \"LAUNCH {launcher} $*\"\n\
                 for a; do if [ -f \"$a\" ]; then cat \"$a\"; fi; done\n"
            ),
        );
    }
    // An install: PREFIX/bin/chimbuko-mpi (a stand-in) and the scripts'
    // settings in PREFIX/share/chimbuko-mpi/jobscripts.
    let prefix = t.join("prefix");
    write_exe(&prefix.join("bin/chimbuko-mpi"), "#!/bin/sh\nexit 0\n");
    let share = prefix.join("share/chimbuko-mpi/jobscripts");
    std::fs::create_dir_all(&share).unwrap();
    std::fs::copy(
        jobscripts().join("chimbuko-env.sh"),
        share.join("chimbuko-env.sh"),
    )
    .unwrap();
    // A submission directory with the repository's jobscripts/ in it.
    let submit = t.join("submit");
    std::fs::create_dir_all(submit.join("jobscripts")).unwrap();
    std::fs::copy(
        jobscripts().join("chimbuko-env.sh"),
        submit.join("jobscripts/chimbuko-env.sh"),
    )
    .unwrap();
    let elsewhere = t.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let path = std::env::var("PATH").unwrap_or_default();

    let run = |script: &Path, cwd: &Path, setup: &dyn Fn(&mut Command)| {
        let mut c = Command::new("bash");
        c.arg(script)
            .arg("./my_app")
            .current_dir(cwd)
            .env("PATH", format!("{}:{path}", fake.display()))
            .env("APP_NAME", "my_app")
            .env("APP_RANKS", "4")
            .env("AD_RANKS", "1")
            .env("TRACE_DIR", t.join("trace"))
            .env("SLURM_JOB_NUM_NODES", "3")
            .env("CHIMBUKO_BIN", exe());
        for v in [
            "CHIMBUKO_JOBSCRIPTS",
            "SLURM_SUBMIT_DIR",
            "LS_SUBCWD",
            "PBS_O_WORKDIR",
        ] {
            c.env_remove(v);
        }
        setup(&mut c);
        let out = c.output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let ok = |what: &str, name: &str, r: (bool, String, String), bin: &str| {
        let (success, out, err) = r;
        assert!(success, "{name} ({what}) failed:\n{out}\n{err}");
        assert!(out.contains("LAUNCH "), "{name} ({what}):\n{out}");
        assert!(
            out.contains(&format!("{bin} run")),
            "{name} ({what}) does not start {bin} run:\n{out}\n{err}"
        );
    };

    for name in recipes() {
        let spool = t.join("spool").join(name.trim_end_matches(".sh"));
        let copy = spooled(&name, &spool);
        // The submission directory's variable for this recipe's launcher.
        let submit_var = if name.starts_with("slurm") {
            Some("SLURM_SUBMIT_DIR")
        } else if name.starts_with("lsf") {
            Some("LS_SUBCWD")
        } else if name.starts_with("pbs") {
            Some("PBS_O_WORKDIR")
        } else {
            None // plain mpirun: the current directory
        };

        let explicit = run(&copy, &elsewhere, &|c| {
            c.env("CHIMBUKO_JOBSCRIPTS", jobscripts());
        });
        ok("CHIMBUKO_JOBSCRIPTS", &name, explicit, exe());

        let own_dir = run(&jobscripts().join(&name), &elsewhere, &|_| {});
        ok("its own directory", &name, own_dir, exe());

        let installed_bin = prefix.join("bin/chimbuko-mpi");
        let installed = run(&copy, &elsewhere, &|c| {
            c.env_remove("CHIMBUKO_BIN").env(
                "PATH",
                format!("{}:{}:{path}", prefix.join("bin").display(), fake.display()),
            );
        });
        ok(
            "install layout",
            &name,
            installed,
            &installed_bin.display().to_string(),
        );

        let cwd = if submit_var.is_some() {
            &elsewhere
        } else {
            &submit
        };
        let submitted = run(&copy, cwd, &|c| {
            if let Some(v) = submit_var {
                c.env(v, &submit);
            }
        });
        ok("submission directory", &name, submitted, exe());

        let (success, out, err) = run(&copy, &elsewhere, &|_| {});
        assert!(
            !success,
            "{name} ran without chimbuko-env.sh:\n{out}\n{err}"
        );
        assert!(!out.contains("LAUNCH "), "{name}:\n{out}");
        for tried in [spool, elsewhere.join("jobscripts")] {
            assert!(
                err.contains(&format!("no chimbuko-env.sh in {}", tried.display())),
                "{name}: {} not named:\n{err}",
                tried.display()
            );
        }
        assert!(err.contains("CHIMBUKO_JOBSCRIPTS"), "{name}:\n{err}");
    }
}
