#!/usr/bin/env bash
# Prepare what `stacklens lab up` needs, idempotently (a second run does nothing and says so):
#   1. Debian's mariadb-server and rabbitmq-server, installed WITHOUT starting the system
#      services (a policy-rc.d that denies starts is put in place for the install if none is);
#      the lab runs its own mariadbd / rabbitmq under its lab folder.
#   2. A separate venv (the "lab python") with OpenStack 2025.1 from requirements/lab.txt and
#      requirements/lab-constraints.txt. stacklens's own venv stays light.
# Env: STACKLENS_LAB_VENV (default: labvenv beside this clone), PYTHON (default: python3, 3.11).
# Prints the time of each step and, last, the line to export STACKLENS_LAB_PYTHON.
# Measured on a fresh 2-core machine: apt ~20 s, pip ~70 s.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
VENV=${STACKLENS_LAB_VENV:-$(cd "$REPO/.." && pwd)/labvenv}
PY=${PYTHON:-python3}
T0=$(date +%s)
step() { echo "lab-setup: $*" >&2; }
took() { echo "lab-setup: $1 took $(( $(date +%s) - $2 )) s" >&2; }

# 1. Debian packages ---------------------------------------------------------------------------
t=$(date +%s)
if [ -x /usr/sbin/mariadbd ] && [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] \
   && command -v epmd >/dev/null && command -v mariadb >/dev/null; then
  step "mariadb-server and rabbitmq-server already installed"
else
  step "installing mariadb-server rabbitmq-server (system services are not started)"
  bash .ci/apt-quiet.sh lab-setup mariadb-server mariadb-client rabbitmq-server
fi
took "Debian packages" "$t"

# 2. the lab venv ------------------------------------------------------------------------------
t=$(date +%s)
want_nova=$(sed -n 's/^nova==//p' requirements/lab.txt)
have_nova=""
if [ -x "$VENV/bin/python" ]; then
  have_nova=$("$VENV/bin/python" - <<'EOF' 2>/dev/null || true
import importlib.util as u
from importlib.metadata import version
mods = ("nova", "placement", "glance", "pymysql", "gunicorn", "openstack", "psutil")
if all(u.find_spec(m) for m in mods):
    print(version("nova"))
EOF
)
fi
if [ -n "$have_nova" ] && [ "$have_nova" = "$want_nova" ]; then
  step "lab venv $VENV already has nova $have_nova and the other packages"
else
  pyver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  if [ "$pyver" != "3.11" ]; then
    step "warning: $PY is Python $pyver; requirements/lab-constraints.txt was made on 3.11"
  fi
  step "creating $VENV and installing OpenStack 2025.1 (nova $want_nova) into it"
  [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check \
    -r requirements/lab.txt -c requirements/lab-constraints.txt
fi
took "lab venv" "$t"

"$VENV/bin/python" -c 'from importlib.metadata import version as v; print("lab-setup: nova", v("nova"), "placement", v("openstack-placement"), "glance", v("glance"), "oslo.messaging", v("oslo.messaging"))' >&2
took "lab setup" "$T0"
echo "export STACKLENS_LAB_PYTHON=$VENV/bin/python"
