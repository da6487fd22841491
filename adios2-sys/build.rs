//! Finds an ADIOS2 installation and generates bindings to its C API.
//!
//! Search order (the first that has `adios2_c.h` and `libadios2_c` wins):
//! 1. `ADIOS2_DIR`: an install prefix with `include/` and `lib/` (or `lib64/`).
//! 2. `adios2-config` on `PATH` (spack or module installs on HPC systems).
//! 3. The Python `adios2` wheel of the project's Python (`$PYTHON`, else the
//!    workspace's `.venv/bin/python`, else `python3`): its package directory
//!    holds `include/` and `libadios2_c.so`.
//!
//! The library directory is exported as `DEP_ADIOS2_C_LIBDIR` so that the
//! main crate can embed an rpath.
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Found {
    include: PathBuf,
    libdir: PathBuf,
    how: String,
}

fn has_header(include: &Path) -> bool {
    include.join("adios2_c.h").is_file()
}

fn has_lib(libdir: &Path) -> bool {
    libdir.join("libadios2_c.so").exists() || libdir.join("libadios2_c.dylib").exists()
}

fn from_adios2_dir(tried: &mut Vec<String>) -> Option<Found> {
    let dir = match env::var("ADIOS2_DIR") {
        Ok(d) if !d.is_empty() => PathBuf::from(d),
        _ => {
            tried.push("ADIOS2_DIR: not set".into());
            return None;
        }
    };
    let include = dir.join("include");
    for lib in ["lib", "lib64"] {
        let libdir = dir.join(lib);
        if has_header(&include) && has_lib(&libdir) {
            return Some(Found {
                include,
                libdir,
                how: format!("ADIOS2_DIR={}", dir.display()),
            });
        }
    }
    tried.push(format!(
        "ADIOS2_DIR={}: no include/adios2_c.h with lib/ or lib64/libadios2_c.so",
        dir.display()
    ));
    None
}

fn from_adios2_config(tried: &mut Vec<String>) -> Option<Found> {
    let run = |arg: &str| -> Option<String> {
        let out = Command::new("adios2-config").arg(arg).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (Some(cflags), Some(libs)) = (run("--c-flags"), run("--c-libs")) else {
        tried.push("adios2-config: not on PATH (or it failed)".into());
        return None;
    };
    let include = cflags
        .split_whitespace()
        .filter_map(|f| f.strip_prefix("-I"))
        .map(PathBuf::from)
        .find(|p| has_header(p));
    let libdir = libs
        .split_whitespace()
        .filter_map(|f| f.strip_prefix("-L"))
        .map(PathBuf::from)
        .find(|p| has_lib(p))
        .or_else(|| {
            // Some installs print the library as a full path instead of -L/-l.
            libs.split_whitespace()
                .map(PathBuf::from)
                .find(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("libadios2_c"))
                })
                .and_then(|p| p.parent().map(Path::to_path_buf))
        });
    match (include, libdir) {
        (Some(include), Some(libdir)) => Some(Found {
            include,
            libdir,
            how: "adios2-config".into(),
        }),
        _ => {
            tried.push(format!(
                "adios2-config: found, but its flags name no adios2_c.h / libadios2_c ({} | {})",
                cflags.trim(),
                libs.trim()
            ));
            None
        }
    }
}

fn project_python() -> String {
    if let Ok(p) = env::var("PYTHON") {
        if !p.is_empty() {
            return p;
        }
    }
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    for root in [manifest.join(".."), manifest.clone()] {
        let venv = root.join(".venv/bin/python");
        if venv.exists() {
            return venv.to_string_lossy().into_owned();
        }
    }
    "python3".into()
}

fn from_python_wheel(tried: &mut Vec<String>) -> Option<Found> {
    let python = project_python();
    let out = Command::new(&python)
        .args([
            "-c",
            "import adios2, os; print(os.path.dirname(os.path.abspath(adios2.__file__)))",
        ])
        .output();
    let dir = match out {
        Ok(o) if o.status.success() => PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()),
        Ok(o) => {
            tried.push(format!(
                "Python wheel: `{python} -c 'import adios2'` failed: {}",
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            ));
            return None;
        }
        Err(e) => {
            tried.push(format!("Python wheel: cannot run `{python}`: {e}"));
            return None;
        }
    };
    let include = dir.join("include");
    if has_header(&include) && has_lib(&dir) {
        return Some(Found {
            include,
            libdir: dir,
            how: format!("Python adios2 wheel of {python}"),
        });
    }
    tried.push(format!(
        "Python wheel at {}: no include/adios2_c.h or libadios2_c.so",
        dir.display()
    ));
    None
}

fn header_version(include: &Path) -> String {
    let config = include.join("adios2/common/ADIOSConfig.h");
    std::fs::read_to_string(config)
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.contains("ADIOS2_VERSION_STR"))
                .and_then(|l| l.split('"').nth(1).map(str::to_owned))
        })
        .unwrap_or_else(|| "unknown".into())
}

fn main() {
    for var in ["ADIOS2_DIR", "PYTHON", "PATH"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=wrapper.h");

    let mut tried = Vec::new();
    let found = from_adios2_dir(&mut tried)
        .or_else(|| from_adios2_config(&mut tried))
        .or_else(|| from_python_wheel(&mut tried));
    let Some(found) = found else {
        eprintln!("error: could not find ADIOS2 (adios2_c.h and libadios2_c). Tried, in order:");
        for t in &tried {
            eprintln!("  - {t}");
        }
        eprintln!(
            "Fix: run scripts/setup.sh (installs the `adios2` wheel into .venv), \
             or set ADIOS2_DIR to an ADIOS2 install prefix, or put adios2-config on PATH."
        );
        panic!("ADIOS2 not found; see the list above");
    };

    println!(
        "cargo:warning=adios2-sys: using ADIOS2 {} from {}",
        header_version(&found.include),
        found.how
    );
    println!("cargo:rustc-link-search=native={}", found.libdir.display());
    println!("cargo:rustc-link-lib=dylib=adios2_c");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", found.libdir.display());
    println!("cargo:libdir={}", found.libdir.display());
    println!("cargo:include={}", found.include.display());
    println!(
        "cargo:rustc-env=ADIOS2_SYS_VERSION={}",
        header_version(&found.include)
    );
    println!(
        "cargo:rerun-if-changed={}",
        found.include.join("adios2_c.h").display()
    );

    // `adios2_attribute_string_data` (safe two-call string read) exists since
    // ADIOS2 2.12; older installs only have `adios2_attribute_data`.
    let attr_header = found.include.join("adios2/c/adios2_c_attribute.h");
    let has_string_data = std::fs::read_to_string(attr_header)
        .map(|t| t.contains("adios2_attribute_string_data"))
        .unwrap_or(false);
    println!(
        "cargo:has_string_data={}",
        if has_string_data { 1 } else { 0 }
    );

    let bindings = bindgen::Builder::default()
        .header("wrapper.h")
        .clang_arg(format!("-I{}", found.include.display()))
        .allowlist_function("adios2_.*")
        .allowlist_type("adios2_.*")
        .allowlist_var("adios2_.*")
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        .layout_tests(false)
        .generate()
        .expect("bindgen could not parse adios2_c.h");
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    bindings
        .write_to_file(out.join("bindings.rs"))
        .expect("could not write bindings.rs");
}
