//! Embeds an rpath to the ADIOS2 library directory found by `adios2-sys`, so
//! `chimbuko-mpi` (and the test binaries) run without `LD_LIBRARY_PATH`.
//! Cargo does not pass a dependency's link arguments on to our binaries, so
//! `adios2-sys` exports its library directory as build metadata
//! (`DEP_ADIOS2_C_LIBDIR`) and we add the rpath here.
//!
//! Also links LAPACK, whose `dgesdd` the model trainer's rotation needs
//! (`src/model/pca.rs`): the system's `liblapack` by default (Debian's
//! `liblapack-dev`); `CHIMBUKO_LAPACK_LIBS` (comma-separated library
//! names, e.g. `openblas`) and `CHIMBUKO_LAPACK_DIR` (their directory,
//! also embedded as an rpath) name another provider.
fn main() {
    println!("cargo:rerun-if-env-changed=CHIMBUKO_LAPACK_LIBS");
    println!("cargo:rerun-if-env-changed=CHIMBUKO_LAPACK_DIR");
    if let Ok(dir) = std::env::var("CHIMBUKO_LAPACK_DIR") {
        println!("cargo:rustc-link-search=native={dir}");
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
    let libs = std::env::var("CHIMBUKO_LAPACK_LIBS").unwrap_or_else(|_| "lapack".into());
    for lib in libs.split(',').map(str::trim).filter(|l| !l.is_empty()) {
        println!("cargo:rustc-link-lib={lib}");
    }
    println!("cargo:rerun-if-env-changed=DEP_ADIOS2_C_LIBDIR");
    if let Ok(libdir) = std::env::var("DEP_ADIOS2_C_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{libdir}");
    }
    // Whether the ADIOS2 C API has the two-call string attribute reader.
    println!("cargo::rustc-check-cfg=cfg(adios2_has_string_data)");
    if std::env::var("DEP_ADIOS2_C_HAS_STRING_DATA").as_deref() == Ok("1") {
        println!("cargo:rustc-cfg=adios2_has_string_data");
    }
}
