#!/usr/bin/env bash
# Installs chimbuko-mpi into PREFIX as a relocatable tree (docs/install.md):
#   bin/chimbuko-mpi                        RUNPATH $ORIGIN/../lib
#   lib/                                    the ADIOS2 libraries, when they come
#                                           from the Python wheel (.venv)
#   share/man/man1/chimbuko-mpi*.1          one page per (sub)command
#   share/bash-completion/completions/chimbuko-mpi
#   share/zsh/site-functions/_chimbuko-mpi
#   share/fish/vendor_completions.d/chimbuko-mpi.fish
#   share/chimbuko-mpi/jobscripts/          the job scripts
#   share/doc/chimbuko-mpi/                 README.md and docs/
#   share/modulefiles/chimbuko-mpi/VERSION.lua   Lmod module file
#
# Usage: scripts/install.sh PREFIX [--debug] [--binary PATH]
#   (default)      cargo build --release, install target/release/chimbuko-mpi
#   --debug        cargo build (dev profile), install target/debug/chimbuko-mpi
#   --binary PATH  install PATH, already built (no cargo)
#
# Libraries the binary resolves from site installs (ADIOS2_DIR, spack,
# modules) stay where they are: their directories are kept in the RUNPATH
# after $ORIGIN/../lib. Needs patchelf (scripts/setup.sh installs it).
# Safe to run again: files of an earlier install into PREFIX (listed in
# share/chimbuko-mpi/install-manifest.txt) are replaced.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
VENV="${CHIMBUKO_VENV:-$ROOT/.venv}"
NAME=chimbuko-mpi

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
}

die() {
  echo "[install] error: $*" >&2
  exit 1
}

PREFIX=""
PROFILE=release
BINARY=""
BUILT="$PROFILE build"
while [ $# -gt 0 ]; do
  case "$1" in
    --debug)
      PROFILE=debug
      BUILT="debug build"
      ;;
    --binary)
      [ $# -ge 2 ] || die "--binary needs a path"
      BINARY="$2"
      shift
      ;;
    --binary=*) BINARY="${1#--binary=}" ;;
    -h | --help)
      usage
      exit 0
      ;;
    -*) die "unknown option $1 (see --help)" ;;
    *)
      [ -z "$PREFIX" ] || die "one PREFIX only (got $PREFIX and $1)"
      PREFIX="$1"
      ;;
  esac
  shift
done
[ -n "$PREFIX" ] || {
  usage >&2
  exit 2
}

for tool in patchelf ldd; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool not found (bash scripts/setup.sh installs it)"
done

VERSION="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -n 1)"
[ -n "$VERSION" ] || die "no version in $ROOT/Cargo.toml"

# --- the binary ---------------------------------------------------------------
GIVEN="$BINARY"
if [ -z "$BINARY" ]; then
  # shellcheck disable=SC1091
  . "$ROOT/scripts/env.sh"
  if [ "$PROFILE" = release ]; then
    echo "[install] cargo build --release"
    (cd "$ROOT" && cargo build --release --quiet --bin "$NAME")
  else
    echo "[install] cargo build (dev profile)"
    (cd "$ROOT" && cargo build --quiet --bin "$NAME")
  fi
  BINARY="${CARGO_TARGET_DIR:-$ROOT/target}/$PROFILE/$NAME"
  GIVEN=""
fi
[ -x "$BINARY" ] || die "no executable at $BINARY"
[ -z "$GIVEN" ] || BUILT="given binary"
BINARY="$(readlink -f "$BINARY")"

mkdir -p "$PREFIX"
PREFIX="$(cd "$PREFIX" && pwd)"
[ "$BINARY" != "$PREFIX/bin/$NAME" ] || die "--binary is the file this install replaces; give the build's binary"
BUILT_AS="$("$BINARY" --version)" || die "$BINARY does not run"
[ "$BUILT_AS" = "$NAME $VERSION" ] ||
  die "$BINARY says it is '$BUILT_AS', but Cargo.toml says $VERSION: rebuild it"
MANIFEST_REL="share/$NAME/install-manifest.txt"
MANIFEST="$PREFIX/$MANIFEST_REL"
INSTALLED=()

# Directories whose libraries are copied into PREFIX/lib: the checkout, the
# project venv, and the site-packages of the Python whose adios2 wheel
# adios2-sys links against ($PYTHON, else the venv's, else python3): the
# ADIOS2 libraries and the ones auditwheel bundled with them.
BUNDLE_ROOTS=("$(readlink -f "$ROOT")")
[ -d "$VENV" ] && BUNDLE_ROOTS+=("$(readlink -f "$VENV")")
PY="${PYTHON:-$VENV/bin/python}"
[ -x "$PY" ] || PY="$(command -v python3 || true)"
if [ -n "$PY" ] && WHEEL="$("$PY" -c 'import adios2, os; print(os.path.dirname(os.path.dirname(os.path.abspath(adios2.__file__))))' 2>/dev/null)"; then
  BUNDLE_ROOTS+=("$(readlink -f "$WHEEL")")
fi

bundled_from() { # PATH: whether a library at PATH is to be copied
  local p r
  p="$(readlink -m "$1")"
  for r in "${BUNDLE_ROOTS[@]}"; do
    case "$p" in "$r"/*) return 0 ;; esac
  done
  return 1
}

kept_rpath() { # FILE: its RUNPATH entries that point outside the bundle roots
  local entry kept=()
  local IFS=:
  for entry in $(patchelf --print-rpath "$1"); do
    [ -n "$entry" ] || continue
    # shellcheck disable=SC2016 # the loader's $ORIGIN, literally
    case "$entry" in '$ORIGIN'* | '${ORIGIN}'*) continue ;; esac
    bundled_from "$entry" && continue
    kept+=("$entry")
  done
  echo "${kept[*]}"
}

record() { # PATH under PREFIX: note it in the manifest
  INSTALLED+=("${1#"$PREFIX"/}")
}

# Copies SRC to DEST with RUNPATH set to RPATH; a new file replaces the old
# one in one rename, so a running copy of the old one is not disturbed.
install_patched() {
  local src="$1" dest="$2" rpath="$3" tmp
  tmp="$(dirname "$dest")/.$(basename "$dest").tmp.$$"
  cp -f "$src" "$tmp"
  chmod u+w "$tmp"
  patchelf --set-rpath "$rpath" "$tmp"
  mv -f "$tmp" "$dest"
  record "$dest"
}

# --- remove the files of an earlier install -----------------------------------
if [ -f "$MANIFEST" ]; then
  while IFS= read -r rel; do
    case "$rel" in "" | /* | *..*) continue ;; esac
    rm -f "${PREFIX:?}/$rel"
  done <"$MANIFEST"
fi

mkdir -p "$PREFIX/bin" "$PREFIX/lib" "$PREFIX/share/man/man1" \
  "$PREFIX/share/bash-completion/completions" "$PREFIX/share/zsh/site-functions" \
  "$PREFIX/share/fish/vendor_completions.d" "$PREFIX/share/$NAME/jobscripts" \
  "$PREFIX/share/doc/$NAME" "$PREFIX/share/modulefiles/$NAME"

# --- libraries from the wheel -------------------------------------------------
# `ldd` lists every library the binary loads, directly or not; those that
# live in the checkout, the venv or the wheel are copied, under their real
# name and the names the loader asks for, with RUNPATH $ORIGIN so that they
# find each other in PREFIX/lib.
LIBS=()
declare -A COPIED=() # every name a copied library has in PREFIX/lib
while read -r soname path; do
  bundled_from "$path" || continue
  real="$(readlink -f "$path")"
  base="$(basename "$real")"
  if [ -z "${COPIED[$base]:-}" ]; then
    # shellcheck disable=SC2016 # the loader's $ORIGIN, literally
    rpath='$ORIGIN'
    extra="$(kept_rpath "$real")"
    [ -z "$extra" ] || rpath="$rpath:$extra"
    install_patched "$real" "$PREFIX/lib/$base" "$rpath"
    LIBS+=("$base")
    COPIED[$base]=1
  fi
  for alias in "$soname" "$(patchelf --print-soname "$real" 2>/dev/null || true)"; do
    if [ -z "$alias" ] || [ "$alias" = "$base" ]; then continue; fi
    ln -sfn "$base" "$PREFIX/lib/$alias"
    record "$PREFIX/lib/$alias"
    COPIED[$alias]=1
  done
done < <(env -u LD_LIBRARY_PATH ldd "$BINARY" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }')

# --- the binary ---------------------------------------------------------------
# shellcheck disable=SC2016 # the loader's $ORIGIN, literally
RPATH='$ORIGIN/../lib'
extra="$(kept_rpath "$BINARY")"
[ -z "$extra" ] || RPATH="$RPATH:$extra"
EXE="$PREFIX/bin/$NAME"
install_patched "$BINARY" "$EXE" "$RPATH"

# The installed tree must find every library, and, without LD_LIBRARY_PATH,
# load nothing from the checkout or the venv and find the copied libraries
# in PREFIX/lib. Site libraries that only LD_LIBRARY_PATH finds (modules)
# are fine, but said.
declare -A NEEDS_LD_PATH=()
check_loads() { # FILE
  local out name path
  out="$(ldd "$1")" || die "ldd $1 failed"
  if grep -q "not found" <<<"$out"; then
    die "$1 does not find every library:"$'\n'"$(grep "not found" <<<"$out")"
  fi
  out="$(env -u LD_LIBRARY_PATH ldd "$1")" || die "ldd $1 failed"
  while read -r name path; do
    if [ "$path" = not ]; then
      [ -z "${COPIED[$name]:-}" ] || die "$1 does not find $name in $PREFIX/lib"
      NEEDS_LD_PATH[$name]=1
    elif bundled_from "$path"; then
      die "$1 still loads $path from the build tree"
    fi
  done < <(awk '$2 == "=>" { print $1, $3 }' <<<"$out")
}
check_loads "$EXE"
for lib in "${LIBS[@]:-}"; do
  [ -z "$lib" ] || check_loads "$PREFIX/lib/$lib"
done
"$EXE" --version >/dev/null || die "the installed $EXE does not run"
if [ ${#NEEDS_LD_PATH[@]} -gt 0 ]; then
  echo "[install] note: found only through LD_LIBRARY_PATH (load the same modules to run):" \
    "${!NEEDS_LD_PATH[@]}"
fi

# --- man pages and shell completions, from the command line definition -------
while read -r page; do
  record "$page"
done < <("$EXE" generate man "$PREFIX/share/man/man1")

complete_to() { # SHELL FILE
  "$EXE" generate completions "$1" >"$2.tmp.$$"
  mv -f "$2.tmp.$$" "$2"
  record "$2"
}
complete_to bash "$PREFIX/share/bash-completion/completions/$NAME"
complete_to zsh "$PREFIX/share/zsh/site-functions/_$NAME"
complete_to fish "$PREFIX/share/fish/vendor_completions.d/$NAME.fish"

# --- job scripts and docs -----------------------------------------------------
copy_tree() { # SRC_DIR DEST_DIR: every file, modes kept
  local rel
  while IFS= read -r -d '' rel; do
    rel="${rel#./}"
    mkdir -p "$2/$(dirname "$rel")"
    cp -f "$1/$rel" "$2/$rel"
    record "$2/$rel"
  done < <(cd "$1" && find . -type f ! -name '*.pyc' -print0 | sort -z)
}
copy_tree "$ROOT/jobscripts" "$PREFIX/share/$NAME/jobscripts"
copy_tree "$ROOT/docs" "$PREFIX/share/doc/$NAME"
cp -f "$ROOT/README.md" "$PREFIX/share/doc/$NAME/README.md"
record "$PREFIX/share/doc/$NAME/README.md"

# --- Lmod module file ---------------------------------------------------------
built_with() { # the MPI and HDF5 libraries the binary loads, for the help text
  ldd "$EXE" | awk '$1 ~ /^lib(mpi|hdf5)/ && $2 == "=>" { printf "  %s => %s\n", $1, $3 }'
}
MODULE="$PREFIX/share/modulefiles/$NAME/$VERSION.lua"
cat >"$MODULE.tmp.$$" <<EOF
-- $NAME $VERSION, written by scripts/install.sh.
-- The install tree is found from this file's own place,
-- PREFIX/share/modulefiles/$NAME/$VERSION.lua, so the tree can be moved as a
-- whole. If you copy this file elsewhere, set root to the install prefix.
local root = (myFileName():gsub("/share/modulefiles/[^/]+/[^/]+$", ""))

help([[
$NAME $VERSION: in situ performance anomaly detection for TAU traces
(and ROSS simulations), as an MPI program.

  mpirun -np N $NAME run --input 'DIR/tau-metrics-APP-{rank}.bp' ...
  man $NAME          (and man $NAME-run, $NAME-inspect, ...)

Job scripts:   \$CHIMBUKO_MPI_ROOT/share/$NAME/jobscripts
Documentation: \$CHIMBUKO_MPI_ROOT/share/doc/$NAME
Bash completion: source \$CHIMBUKO_MPI_ROOT/share/bash-completion/completions/$NAME

Built against these MPI and HDF5 libraries; load the modules that
provide them (or the same MPI) before running:
$(built_with)
]])

whatis("Name: $NAME")
whatis("Version: $VERSION")
whatis("Category: performance analysis, tools")
whatis("Description: in situ performance anomaly detection for TAU traces over MPI")

prepend_path("PATH", pathJoin(root, "bin"))
prepend_path("MANPATH", pathJoin(root, "share/man"))
setenv("CHIMBUKO_MPI_ROOT", root)
EOF
mv -f "$MODULE.tmp.$$" "$MODULE"
record "$MODULE"

# --- manifest and summary -----------------------------------------------------
record "$MANIFEST"
printf '%s\n' "${INSTALLED[@]}" | sort -u >"$MANIFEST.tmp.$$"
mv -f "$MANIFEST.tmp.$$" "$MANIFEST"

count() { grep -c "$1" "$MANIFEST" || true; }
echo "[install] $NAME $VERSION ($BUILT) installed into $PREFIX:"
echo "  bin/$NAME                 RUNPATH $(patchelf --print-rpath "$EXE")"
echo "  lib/                              $(count '^lib/') libraries and links copied from the wheel or venv"
echo "  share/man/man1/                   $(count '^share/man/man1/') man pages ($NAME.1, $NAME-run.1, ...)"
echo "  share/bash-completion, zsh, fish  shell completions"
echo "  share/$NAME/jobscripts/   $(count "^share/$NAME/jobscripts/") job scripts"
echo "  share/doc/$NAME/          $(count "^share/doc/$NAME/") documents"
echo "  share/modulefiles/$NAME/$VERSION.lua   (module use $PREFIX/share/modulefiles)"
echo "  $MANIFEST_REL (every file installed)"
