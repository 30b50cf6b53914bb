#!/usr/bin/env bash
# Install what `stacklens sweep` and tests/test_sweep*.py need, idempotently (a second run does
# nothing and says so): Debian's fio, iperf3, iproute2 (ip netns, tc), iputils-ping, postgresql
# and postgresql-contrib (postgres, initdb, pgbench; Debian's default cluster is not started:
# the tests make their own throw-away servers). Nothing is
# started system-wide (iperf3's package ships no enabled service; a policy-rc.d denies starts
# during the install if none is there). Without root it says so and the sweep tests skip.
set -euo pipefail
step() { echo "sweep-setup: $*" >&2; }

need=()
command -v fio >/dev/null || need+=(fio)
command -v iperf3 >/dev/null || need+=(iperf3)
command -v ip >/dev/null && command -v tc >/dev/null || need+=(iproute2)
command -v ping >/dev/null || need+=(iputils-ping)
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 && command -v pgbench >/dev/null \
  || need+=(postgresql postgresql-contrib)
if [ "${#need[@]}" -eq 0 ]; then
  step "fio, iperf3, iproute2, ping and postgresql already installed"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  step "not root: cannot apt-get install ${need[*]}; the sweep tests will skip"
  exit 0
fi
step "installing ${need[*]}"
bash "$(dirname "$0")/apt-quiet.sh" sweep-setup "${need[@]}"
step "installed: $(fio --version) $(iperf3 --version | head -n1)"
