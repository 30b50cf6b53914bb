#!/usr/bin/env bash
# Build Jaeger v2 (the all-in-one `jaeger` binary: OTLP receiver on :4318, query API on :16686)
# from its Go module, for tests/test_export_otlp.py. Idempotent: when the binary is already at
# $JAEGER_BIN (default ~/go/bin/jaeger) and answers `version`, nothing is rebuilt.
#
# Jaeger v2 ships under the module path github.com/jaegertracing/jaeger (no /v2 suffix): each v2.N
# release is tagged v1.(N+63) for the Go module proxy too; cmd/jaeger is the v2 binary.
# The build is CPU-heavy: it runs at nice 19 with GOMAXPROCS=1 and one package at a time (a
# 2-core machine is shared; JAEGER_BUILD_PROCS=2 where it is not) and took 1227 s (20 min) here
# on a cold build cache; the binary (~120 MB) is kept, so later runs return at once. Prints `export STACKLENS_JAEGER=<path>` on stdout
# (for `eval`); progress goes to stderr. Without `go` it fails with one line.
set -euo pipefail
JAEGER_VERSION=${JAEGER_VERSION:-v1.76.0}
GOBIN_DIR=$(go env GOPATH 2>/dev/null)/bin
JAEGER_BIN=${JAEGER_BIN:-$GOBIN_DIR/jaeger}

if ! command -v go >/dev/null 2>&1; then
  echo "jaeger-setup: go not found; the OTLP export test will skip" >&2
  exit 1
fi
if [ -x "$JAEGER_BIN" ] && "$JAEGER_BIN" version >/dev/null 2>&1; then
  echo "jaeger-setup: $JAEGER_BIN already built" >&2
else
  echo "jaeger-setup: building github.com/jaegertracing/jaeger/cmd/jaeger@$JAEGER_VERSION" \
       "($(go version))" >&2
  t0=$(date +%s)
  # `go install module@version` refuses modules whose go.mod has replace directives (jaeger's
  # has one), so: fetch the module source through the proxy, copy it out of the read-only
  # module cache, and build cmd/jaeger inside it as the main module.
  src_dir=${XDG_CACHE_HOME:-$HOME/.cache}/stacklens-jaeger/jaeger-$JAEGER_VERSION
  if [ ! -f "$src_dir/go.mod" ]; then
    mod_dir=$(go mod download -json "github.com/jaegertracing/jaeger@$JAEGER_VERSION" \
              | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
    mkdir -p "$(dirname "$src_dir")"
    rm -rf "$src_dir.tmp" && cp -r "$mod_dir" "$src_dir.tmp" && chmod -R u+w "$src_dir.tmp"
    mv "$src_dir.tmp" "$src_dir"
  fi
  mkdir -p "$(dirname "$JAEGER_BIN")"
  procs=${JAEGER_BUILD_PROCS:-1}
  (cd "$src_dir" && GOMAXPROCS=$procs nice -n 19 \
     go build -p "$procs" -trimpath -o "$JAEGER_BIN" ./cmd/jaeger >&2)
  echo "jaeger-setup: built in $(( $(date +%s) - t0 )) s" >&2
fi
echo "export STACKLENS_JAEGER=$JAEGER_BIN"
