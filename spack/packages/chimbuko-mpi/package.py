# Spack recipe for chimbuko-mpi (docs/install.md).
#
# It builds the checkout this file lives in: `spack repo add spack` from the
# checkout, then `spack install chimbuko-mpi` builds the committed `main`
# branch (uncommitted work: `spack develop --path . chimbuko-mpi@main`).
# A site mirroring released tarballs adds `url` and `version(..., sha256=...)`.
#
# The build runs cargo, which downloads the crates of Cargo.lock (into the
# build stage); on machines without network, vendor them first
# (`cargo vendor`, docs/install.md). The install itself is
# scripts/install.sh, as for a build by hand: binary, man pages, shell
# completions, job scripts, docs and an Lmod module file.

import os

from spack.package import *

#: The checkout holding this recipe (spack/packages/chimbuko-mpi/package.py).
CHECKOUT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


class ChimbukoMpi(Package):
    """In situ performance anomaly detection for HPC applications traced with
    TAU, and for ROSS simulations: an MPI program that reads the
    application's ADIOS2 trace streams, labels every function execution as
    normal or anomalous, and writes the provenance to parallel HDF5."""

    git = "file://" + CHECKOUT

    version("main", branch="main")

    # Cargo.toml's rust-version.
    depends_on("rust@1.85:", type="build")
    # The C compiler links the binary and builds the MPI crate's C shim.
    depends_on("c", type="build")
    # bindgen (adios2-sys, mpi-sys) loads libclang.
    depends_on("llvm", type="build")
    depends_on("pkgconfig", type="build")
    # scripts/install.sh sets the binary's RUNPATH.
    depends_on("patchelf", type="build")

    depends_on("mpi")
    # Parallel HDF5 (MPI-IO) for the provenance file; hdf5-metno 0.10
    # knows HDF5 up to 1.14.
    depends_on("hdf5@1.10:1.14+mpi")
    # The C bindings (always built); BP5, one of --engine's choices, needs 2.8.
    depends_on("adios2@2.8:")
    # dgesdd for the model trainer's rotation (Eiger's SVD signs).
    depends_on("lapack")

    sanity_check_is_file = ["bin/chimbuko-mpi"]
    sanity_check_is_dir = ["share/man/man1", "share/chimbuko-mpi/jobscripts"]

    def setup_build_environment(self, env):
        # adios2-sys and hdf5-metno-sys find their libraries from these.
        env.set("ADIOS2_DIR", self.spec["adios2"].prefix)
        env.set("HDF5_DIR", self.spec["hdf5"].prefix)
        env.set("LIBCLANG_PATH", self.spec["llvm"].prefix.lib)
        # build.rs links these instead of the system's liblapack.
        lapack = self.spec["lapack"].libs
        env.set("CHIMBUKO_LAPACK_LIBS", ",".join(lapack.names))
        env.set("CHIMBUKO_LAPACK_DIR", lapack.directories[0])
        # The MPI crate asks this compiler wrapper how to link MPI.
        env.set("MPICC", self.spec["mpi"].mpicc)
        # Crates are downloaded into the stage, not the user's ~/.cargo.
        env.set("CARGO_HOME", join_path(self.stage.path, "cargo-home"))

    def setup_run_environment(self, env):
        env.set("CHIMBUKO_MPI_ROOT", self.prefix)

    def install(self, spec, prefix):
        cargo = which("cargo", required=True)
        cargo("build", "--release", "--locked", "--bin", "chimbuko-mpi")
        bash = which("bash", required=True)
        bash(
            "scripts/install.sh",
            prefix,
            "--binary",
            join_path("target", "release", "chimbuko-mpi"),
        )

    def test_version(self):
        """the installed binary runs and names itself"""
        exe = which(join_path(self.prefix.bin, "chimbuko-mpi"), required=True)
        out = exe("--version", output=str.split, error=str.split)
        assert "chimbuko-mpi" in out
