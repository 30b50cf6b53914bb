#!/usr/bin/env bash
# Install what tests/test_collect.py needs, idempotently (a second run does nothing and says so):
# Debian's openssh-server (for /usr/sbin/sshd) and openssh-client (ssh-keygen). Nothing is started
# system-wide: a policy-rc.d that denies service starts is put in place for the install if none is
# there, and the package's host keys are not used (each test makes its own sshd, host key,
# authorized_keys and config in its tmp folder, listening on 127.0.0.1 only).
# Measured on this 2-core Debian 12 machine: ~15 s with a fresh apt index, 0 s when installed.
set -euo pipefail
step() { echo "sshd-setup: $*" >&2; }

if [ -x /usr/sbin/sshd ] && command -v ssh-keygen >/dev/null; then
  step "openssh-server and openssh-client already installed"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  step "not root: cannot apt-get install openssh-server; the collect tests will skip"
  exit 0
fi
step "installing openssh-server openssh-client (the system sshd is not started)"
bash "$(dirname "$0")/apt-quiet.sh" sshd-setup openssh-server openssh-client
step "installed $(/usr/sbin/sshd -V 2>&1 | head -n1 || true)"
