#!/usr/bin/env bash
# Prepare what `stacklens lab up --neutron` needs beyond .ci/lab-setup.sh, idempotently (a
# second run does nothing and says so): a venv of its own (the "neutron python") with neutron
# 26.x (OpenStack 2025.1, the lab's release) from requirements/lab-neutron.txt, constrained by
# requirements/lab-constraints.txt. It is a separate venv so that the lab python, possibly in
# use by a running lab, is never modified; nothing is shared with it (no --system-site-packages).
# Env: STACKLENS_LAB_NEUTRON_VENV (default: labvenv-neutron beside this clone), PYTHON
# (default: python3, 3.11). Prints the time of each step and, last, the line to export
# STACKLENS_LAB_NEUTRON_PYTHON.
# Measured on the 2-core lab machine: pip 42 s from an empty venv (wheels cached), 1 s when
# already installed.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
VENV=${STACKLENS_LAB_NEUTRON_VENV:-$(cd "$REPO/.." && pwd)/labvenv-neutron}
PY=${PYTHON:-python3}
T0=$(date +%s)
step() { echo "lab-neutron-setup: $*" >&2; }
took() { echo "lab-neutron-setup: $1 took $(( $(date +%s) - $2 )) s" >&2; }

t=$(date +%s)
want=$(sed -n 's/^neutron==//p' requirements/lab-neutron.txt)
have=""
if [ -x "$VENV/bin/python" ]; then
  have=$("$VENV/bin/python" - <<'PY' 2>/dev/null || true
import importlib.util as u
from importlib.metadata import version
if all(u.find_spec(m) for m in ("neutron", "neutron_lib", "pymysql", "psutil",
                                 "oslo_messaging")):
    print(version("neutron"))
PY
)
fi
if [ -n "$have" ] && [ "$have" = "$want" ]; then
  step "neutron venv $VENV already has neutron $have and the other packages"
else
  pyver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  if [ "$pyver" != "3.11" ]; then
    step "warning: $PY is Python $pyver; requirements/lab-constraints.txt was made on 3.11"
  fi
  step "creating $VENV and installing neutron $want into it"
  [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check \
    -r requirements/lab-neutron.txt -c requirements/lab-constraints.txt
fi
took "neutron venv" "$t"

"$VENV/bin/python" -c 'from importlib.metadata import version as v; print("lab-neutron-setup: neutron", v("neutron"), "neutron-lib", v("neutron-lib"), "oslo.messaging", v("oslo.messaging"))' >&2
took "lab neutron setup" "$T0"
echo "export STACKLENS_LAB_NEUTRON_PYTHON=$VENV/bin/python"
