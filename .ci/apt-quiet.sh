#!/usr/bin/env bash
# Install Debian packages without starting any system service: a policy-rc.d that denies service
# starts is put in place for the install if none is there, and removed after. Shared by the
# setup scripts (lab, sshd, sweep). Usage: bash .ci/apt-quiet.sh TAG PACKAGE...
# (TAG names the caller in the policy-rc.d comment). Root required; the callers check it.
set -euo pipefail
tag=$1; shift
export DEBIAN_FRONTEND=noninteractive
guard=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\n# stacklens %s: no service starts during this install\nexit 101\n' "$tag" \
    > /usr/sbin/policy-rc.d
  chmod +x /usr/sbin/policy-rc.d
  guard=1
fi
cleanup() { if [ -n "$guard" ]; then rm -f /usr/sbin/policy-rc.d; fi; }
trap cleanup EXIT
apt-get update -qq
apt-get install -y -qq --no-install-recommends "$@" >/dev/null
