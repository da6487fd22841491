"""The Spack recipe (spack/packages/chimbuko-mpi/package.py), loaded with a
stand-in for `spack.package` (Spack itself is not needed): its
dependencies, the environment it builds in, and the commands its install
runs."""
import importlib.util
import os
import py_compile
import re
import sys
import types

import pytest

from conftest import ROOT

RECIPE = ROOT / "spack" / "packages" / "chimbuko-mpi" / "package.py"


class Prefix(str):
    """Spack's install prefix: a path whose attributes are sub-directories."""

    def __getattr__(self, name):
        return Prefix(os.path.join(self, name))


class Recorder:
    """Records the calls Spack directives and executables receive."""

    def __init__(self):
        self.calls = []

    def directive(self, kind):
        return lambda *args, **kwargs: self.calls.append((kind, args, kwargs))


@pytest.fixture()
def recipe(monkeypatch):
    """The recipe module, imported against a stub `spack.package`."""
    rec = Recorder()
    stub = types.ModuleType("spack.package")

    class Package:
        pass

    stub.Package = Package
    stub.version = rec.directive("version")
    stub.depends_on = rec.directive("depends_on")
    stub.join_path = os.path.join

    stub.which = lambda name, required=False: rec.directive(os.path.basename(name))
    spack = types.ModuleType("spack")
    spack.package = stub
    monkeypatch.setitem(sys.modules, "spack", spack)
    monkeypatch.setitem(sys.modules, "spack.package", stub)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # no __pycache__ in spack/
    spec = importlib.util.spec_from_file_location("chimbuko_recipe", RECIPE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, rec


def test_the_recipe_compiles(tmp_path):
    py_compile.compile(str(RECIPE), doraise=True, cfile=str(tmp_path / "package.pyc"))


def test_repo_yaml_names_a_namespace():
    text = (ROOT / "spack" / "repo.yaml").read_text()
    assert re.search(r"^repo:\n\s+namespace:\s*\w+", text, re.M), text


def test_dependencies(recipe):
    module, rec = recipe
    deps = {args[0]: kwargs.get("type") for kind, args, kwargs in rec.calls if kind == "depends_on"}
    names = {re.split(r"[@+~ ]", d)[0]: (d, t) for d, t in deps.items()}
    for build_only in ("rust", "llvm", "pkgconfig", "patchelf", "c"):
        assert names[build_only][1] == "build", build_only
    for linked in ("mpi", "hdf5", "adios2", "lapack"):
        assert names[linked][1] is None, linked
    assert "+mpi" in names["hdf5"][0]
    rust_version = re.search(r'^rust-version = "([^"]+)"', (ROOT / "Cargo.toml").read_text(), re.M)
    assert names["rust"][0] == f"rust@{rust_version.group(1)}:"
    assert issubclass(module.ChimbukoMpi, sys.modules["spack.package"].Package)


def test_it_builds_this_checkout(recipe):
    module, rec = recipe
    assert module.ChimbukoMpi.git == f"file://{ROOT}"
    versions = [(args, kwargs) for kind, args, kwargs in rec.calls if kind == "version"]
    assert versions == [(("main",), {"branch": "main"})]


def test_build_environment_points_at_the_dependencies(recipe):
    module, _ = recipe
    pkg = module.ChimbukoMpi()
    deps = {n: types.SimpleNamespace(prefix=Prefix(f"/opt/{n}"), mpicc=f"/opt/{n}/bin/mpicc")
            for n in ("adios2", "hdf5", "llvm", "mpi")}
    # Spack's LibraryList of the lapack provider (OpenBLAS here).
    deps["lapack"] = types.SimpleNamespace(
        libs=types.SimpleNamespace(names=["openblas"], directories=["/opt/openblas/lib"]))
    pkg.spec = deps
    pkg.stage = types.SimpleNamespace(path="/stage")
    env = {}
    pkg.setup_build_environment(types.SimpleNamespace(set=env.__setitem__))
    assert env == {"ADIOS2_DIR": "/opt/adios2", "HDF5_DIR": "/opt/hdf5",
                   "LIBCLANG_PATH": "/opt/llvm/lib", "MPICC": "/opt/mpi/bin/mpicc",
                   "CARGO_HOME": "/stage/cargo-home",
                   "CHIMBUKO_LAPACK_LIBS": "openblas", "CHIMBUKO_LAPACK_DIR": "/opt/openblas/lib"}
    pkg.prefix = Prefix("/opt/chimbuko-mpi")
    run = {}
    pkg.setup_run_environment(types.SimpleNamespace(set=run.__setitem__))
    assert run == {"CHIMBUKO_MPI_ROOT": "/opt/chimbuko-mpi"}


def test_install_builds_with_cargo_and_runs_the_install_script(recipe):
    module, rec = recipe
    pkg = module.ChimbukoMpi()
    pkg.install(None, "/opt/chimbuko-mpi")
    commands = [(kind, args) for kind, args, _ in rec.calls if kind in ("cargo", "bash")]
    assert commands == [
        ("cargo", ("build", "--release", "--locked", "--bin", "chimbuko-mpi")),
        ("bash", ("scripts/install.sh", "/opt/chimbuko-mpi", "--binary",
                  os.path.join("target", "release", "chimbuko-mpi"))),
    ]
    assert (ROOT / "scripts" / "install.sh").is_file()
    assert "--binary" in (ROOT / "scripts" / "install.sh").read_text()
