#!/usr/bin/env bash
# Fail unless the plain install gave stacklens its native tokenizer. `pip install .` and
# `pip install -e .` build native/ (Rust + pyo3, abi3) with maturin, the project's build backend
# (pyproject.toml [tool.maturin]), into the module `stacklens_native` beside `stacklens`; nothing
# else builds or installs it. Prints where the module came from and whether ingest will use it.
#
# PYTHON overrides the interpreter. STACKLENS_NATIVE=0 (Polars path forced) fails this check.
set -euo pipefail
PY=${PYTHON:-python}
"$PY" - <<'PYEOF'
import sys

try:
    import stacklens_native
except ImportError as e:
    sys.exit(f"native-check: stacklens_native is not installed ({e}); pip install . builds it "
             "(needs cargo, Rust >= 1.85)")
from stacklens.ingest.tokenize import native_wanted, native_available

print(f"native-check: stacklens_native {stacklens_native.__version__} from "
      f"{stacklens_native.__file__}", file=sys.stderr)
if not (native_available() and native_wanted()):
    sys.exit("native-check: stacklens does not use the native tokenizer (STACKLENS_NATIVE=0?)")
print("native-check: native: true", file=sys.stderr)
PYEOF
