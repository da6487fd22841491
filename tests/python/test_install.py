"""scripts/install.sh: the installed tree is complete, and runs on its own
after being moved elsewhere, without the build tree, the venv or their
environment (docs/install.md)."""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import adios2
import pytest

from conftest import ROOT, mpirun

NAME = "chimbuko-mpi"


def cargo_version():
    """The package version in Cargo.toml (the first `version = ` line)."""
    text = (ROOT / "Cargo.toml").read_text()
    return re.search(r'^version = "([^"]+)"', text, re.M).group(1)


def build_dirs():
    """Where the installed tree must load nothing from: the checkout, this
    Python's venv and the adios2 wheel."""
    dirs = [ROOT.resolve(), pathlib.Path(adios2.__file__).resolve().parents[1]]
    if sys.prefix != sys.base_prefix:
        dirs.append(pathlib.Path(sys.prefix).resolve())
    return dirs


def under(path, dirs):
    path = pathlib.Path(path).resolve()
    return any(path == d or d in path.parents for d in dirs)


def install(binary, prefix):
    done = subprocess.run(["bash", str(ROOT / "scripts" / "install.sh"), str(prefix),
                           "--binary", str(binary)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def tree(binary, tmp_path_factory):
    """The install, done twice into the same prefix (it is idempotent), then
    moved: the prefix it was installed into no longer exists."""
    if shutil.which("patchelf") is None:
        pytest.fail("patchelf missing: scripts/setup.sh installs it")
    d = tmp_path_factory.mktemp("install")
    prefix = d / "prefix"
    out = install(binary, prefix)
    assert "installed into" in out
    manifest = prefix / "share" / NAME / "install-manifest.txt"
    first = manifest.read_text()
    install(binary, prefix)
    assert manifest.read_text() == first
    moved = d / "moved"
    shutil.copytree(prefix, moved, symlinks=True)
    shutil.rmtree(prefix)
    return moved


def clean_env(home):
    """An environment with nothing from the build: no LD_LIBRARY_PATH, no
    venv, a PATH of the system directories (and mpirun's)."""
    mpirun_dir = os.path.dirname(shutil.which("mpirun") or "/usr/bin/mpirun")
    assert not under(mpirun_dir, build_dirs())
    return {"PATH": f"{mpirun_dir}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}


def ldd(path):
    """`ldd path` as {name: resolved path or 'not found'}."""
    out = subprocess.run(["ldd", str(path)], env={"PATH": "/usr/bin:/bin"},
                         check=True, capture_output=True, text=True).stdout
    libs = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "=>":
            libs[parts[0]] = " ".join(parts[2:4]) if parts[2] == "not" else parts[2]
    return libs


def test_the_binary_finds_its_libraries_next_to_itself(tree, binary):
    exe = tree / "bin" / NAME
    dynamic = subprocess.run(["readelf", "-d", str(exe)], check=True, capture_output=True,
                             text=True).stdout
    runpath = re.search(r"\(RUNPATH\)\s+Library runpath: \[([^\]]*)\]", dynamic)
    assert runpath, dynamic
    entries = runpath.group(1).split(":")
    assert entries[0] == "$ORIGIN/../lib"
    # Entries after the first are site library directories (ADIOS2_DIR builds).
    assert not [e for e in entries[1:] if under(e, build_dirs())]
    assert "RPATH" not in dynamic.replace("RUNPATH", "")
    for f in [exe] + [p for p in (tree / "lib").iterdir() if not p.is_symlink()]:
        libs = ldd(f)
        assert "not found" not in libs.values(), (f, libs)
        from_build = {n: p for n, p in libs.items() if under(p, build_dirs())}
        assert not from_build, (f, from_build)
    # What the build loaded from the wheel, the installed binary loads from lib/.
    bundled = {n for n, p in ldd(binary).items() if under(p, build_dirs())}
    installed = ldd(exe)
    assert {n: installed[n] for n in bundled} == {n: f"{tree}/bin/../lib/{n}" for n in bundled}


def test_the_moved_tree_runs_synth_and_an_mpi_analysis(tree, tmp_path):
    exe = str(tree / "bin" / NAME)
    env = clean_env(tmp_path)
    version = subprocess.run([exe, "--version"], env=env, check=True, capture_output=True,
                             text=True).stdout
    assert version.strip() == f"{NAME} {cargo_version()}"
    subprocess.run([exe, "synth", "--out", "data", "--ranks", "2", "--steps", "3",
                    "--events-per-step", "500"], cwd=tmp_path, env=env, check=True,
                   capture_output=True)
    run = subprocess.run(mpirun(1) + [exe, "run", "--quiet", "--input",
                                      "data/tau-metrics-demo-{rank}.bp", "--out", "prov.h5"],
                         cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (tmp_path / "prov.h5").stat().st_size > 0


def test_man_pages_for_the_command_and_every_subcommand(tree):
    man1 = tree / "share" / "man" / "man1"
    pages = {p.name for p in man1.iterdir()}
    for sub in ["", "-run", "-inspect", "-export", "-synth", "-synth-ross", "-ross", "-dump",
                "-model", "-model-train", "-model-scaling"]:
        assert f"{NAME}{sub}.1" in pages
    assert not [p for p in pages if "generate" in p or p.endswith("-help.1")]
    man = shutil.which("man")
    if man:
        text = subprocess.run([man, "-l", str(man1 / f"{NAME}-run.1")], check=True,
                              capture_output=True, text=True, env={"PATH": "/usr/bin:/bin",
                                                                   "MANWIDTH": "80"}).stdout
        assert "--algorithm" in text and cargo_version() in text


def test_shell_completions_parse(tree):
    share = tree / "share"
    bash = share / "bash-completion" / "completions" / NAME
    zsh = share / "zsh" / "site-functions" / f"_{NAME}"
    fish = share / "fish" / "vendor_completions.d" / f"{NAME}.fish"
    for f in (bash, zsh, fish):
        assert "inspect" in f.read_text(), f
    subprocess.run(["bash", "-n", str(bash)], check=True)
    # Sourced, it completes the subcommands.
    function = re.search(r"complete -F (\S+)", bash.read_text()).group(1)
    words = subprocess.run(
        ["bash", "-c", f'source "{bash}"; COMP_WORDS=({NAME} ins); COMP_CWORD=1; '
                       f'{function} {NAME} ins {NAME}; echo "${{COMPREPLY[@]}}"'],
        check=True, capture_output=True, text=True).stdout
    assert "inspect" in words.split()
    for shell, f in (("zsh", zsh), ("fish", fish)):
        if shutil.which(shell):
            subprocess.run([shell, "-n", str(f)], check=True)


def test_module_file_points_into_the_tree_wherever_it_is(tree, tmp_path):
    module = tree / "share" / "modulefiles" / NAME / f"{cargo_version()}.lua"
    text = module.read_text()
    for needed in ('prepend_path("PATH"', 'prepend_path("MANPATH"', 'setenv("CHIMBUKO_MPI_ROOT"',
                   "help([[", f'whatis("Version: {cargo_version()}")'):
        assert needed in text
    lua = shutil.which("lua") or shutil.which("lua5.4") or shutil.which("lua5.3")
    if lua:
        # Lmod's functions, stubbed: print what the module would set.
        stub = tmp_path / "stub.lua"
        stub.write_text(
            "function myFileName() return arg[1] end\n"
            "function pathJoin(...) return table.concat({...}, '/') end\n"
            "function help(s) end\nfunction whatis(s) end\n"
            "function prepend_path(k, v) print(k .. '=' .. v) end\n"
            "function setenv(k, v) print(k .. '=' .. v) end\n"
            "dofile(arg[1])\n")
        out = subprocess.run([lua, str(stub), str(module)], check=True, capture_output=True,
                             text=True).stdout.split()
        assert out == [f"PATH={tree}/bin", f"MANPATH={tree}/share/man",
                       f"CHIMBUKO_MPI_ROOT={tree}"]


def test_job_scripts_and_docs_are_installed(tree):
    jobscripts = tree / "share" / NAME / "jobscripts"
    assert {p.name for p in jobscripts.iterdir()} >= {p.name for p in (ROOT / "jobscripts").iterdir()
                                                      if p.is_file()}
    assert os.access(jobscripts / "mpirun-mpmd.sh", os.X_OK) == \
        os.access(ROOT / "jobscripts" / "mpirun-mpmd.sh", os.X_OK)
    doc = tree / "share" / "doc" / NAME
    for name in ("README.md", "install.md", "provenance-schema.md"):
        assert (doc / name).is_file(), name
