#!/usr/bin/env bash
# Build the native tokenizer (native/: Rust + pyo3, abi3 wheel for CPython >= 3.11) with maturin
# and install it into the active Python environment, where stacklens picks it up
# (`import stacklens_native`; STACKLENS_NATIVE=0 switches it off). Idempotent: a second run
# rebuilds incrementally (cargo keeps native/target) and reinstalls the wheel.
#
# Needs cargo (Rust >= 1.85) and the crates.io registry; PYTHON overrides the interpreter.
# Without cargo it fails, unless STACKLENS_NATIVE_OPTIONAL=1 (then stacklens runs on its
# pure-Polars tokenizer, which gives the same tables, slower).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
t0=$(date +%s)

if ! command -v cargo >/dev/null 2>&1; then
  echo "native-build: cargo not found (install Rust: https://rustup.rs)" >&2
  if [ "${STACKLENS_NATIVE_OPTIONAL:-0}" = "1" ]; then
    echo "native-build: skipped; stacklens will use its Polars tokenizer" >&2
    exit 0
  fi
  exit 1
fi
echo "native-build: $(cargo --version), $("$PY" --version)" >&2

"$PY" -m pip install -q 'maturin>=1.7,<2'
t1=$(date +%s)

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# --locked: the versions in native/Cargo.lock, nothing newer
"$PY" -m maturin build --release --locked --manifest-path native/Cargo.toml \
  --interpreter "$PY" --out "$out" >&2
t2=$(date +%s)

"$PY" -m pip install -q --force-reinstall --no-deps "$out"/stacklens_native-*.whl
"$PY" -c 'import stacklens_native as n; print(f"native-build: stacklens_native {n.__version__} from {n.__file__}")' >&2
t3=$(date +%s)
echo "native-build: maturin $((t1 - t0)) s, cargo build $((t2 - t1)) s, install $((t3 - t2)) s, total $((t3 - t0)) s" >&2
