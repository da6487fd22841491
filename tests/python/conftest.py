"""Shared fixtures: the chimbuko-mpi binary and the real TAU trace."""
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def mpirun(n):
    """`mpirun -np n` with the flags this machine needs (`--allow-run-as-root` only as root)."""
    cmd = ["mpirun", "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd + ["-np", str(n)]


@pytest.fixture(scope="session")
def binary():
    """Path of the chimbuko-mpi binary (CHIMBUKO_MPI_BIN, else target/debug)."""
    path = pathlib.Path(os.environ.get("CHIMBUKO_MPI_BIN", ROOT / "target" / "debug" / "chimbuko-mpi"))
    if not path.exists():
        subprocess.run(["cargo", "build", "--quiet"], cwd=ROOT, check=True)
    assert path.exists(), f"{path} not built"
    return path


@pytest.fixture(scope="session")
def fixture_dir():
    return ROOT / "tests" / "fixtures" / "tau" / "simple_workflow"
