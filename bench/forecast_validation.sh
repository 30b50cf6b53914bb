#!/usr/bin/env bash
# Issue 9's validation on the lab: ROUNDS rounds of (one calibration run at K computes and
# concurrency C, one validation run at 2K and 2C), interleaved so that both sizes see the same
# machine, each on a fresh lab; then `forecast calibrate` on the calibration runs and
# `forecast validate --seeds 40` (SEEDS) on the validation runs (predicted vs measured median).
#
#   eval "$(bash .ci/lab-setup.sh)"
#   bash bench/forecast_validation.sh /tmp/val            # 5 rounds, K=4 C=20 -> K=8 C=40
#   ROUNDS="1 2" K=2 C=10 bash bench/forecast_validation.sh /tmp/val-small
#   K=2 C=10 bash ... /tmp/val; K=4 C=20 bash ... /tmp/val   # K2->K4, then K4->K8 re-using the
#                                                             # K4 runs (session 25)
#
# About 8-10 minutes per round on 2 cores. Run folders DIR/k<K>-r<N> are kept; a round whose
# run folder is traced already is skipped, so an interrupted campaign resumes. The lab uses
# ports PORT_BASE (25000) + 6..96, below the kernel's ephemeral range, and its own folder
# DIR/lab (STACKLENS_LAB_DIR), stopped and purged after every run. Prints the validation table.
set -u
DIR=${1:?usage: forecast_validation.sh DIR}
K=${K:-4}; C=${C:-20}; PER=${PER:-10}; PORT_BASE=${PORT_BASE:-25000}
SL=${STACKLENS:-stacklens}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
export STACKLENS_LAB_DIR=$DIR/lab

scenario() {  # computes concurrency -> DIR/scn-k<computes>.yaml
  cat > "$DIR/scn-k$1.yaml" <<EOF
name: storm-k$1-c$2
cloud: stacklens-lab
workload:
  boot_servers:
    per_compute: $PER
    computes: $1
    flavor: lab.tiny
    image: stacklens-lab-image
    network: none
    mode: parallel
    concurrency: $2
    ramp: {shape: burst}
    repetitions: 1
    phases:
      active: {timeout_s: 900}
      ping: {enabled: false}
      ssh: {enabled: false}
      delete: {enabled: true, when: each, timeout_s: 600}
client: {poll_interval_s: 2, request_timeout_s: 300, max_connections: 100, microversion: "2.37"}
cleanup: delete
sla: {success_rate: 0.95, p95_s: 900}
logs: []
EOF
}
scenario "$K" "$C"
scenario $((2 * K)) $((2 * C))

for round in ${ROUNDS:-1 2 3 4 5}; do
  for k in "$K" $((2 * K)); do
    out=$DIR/k$k-r$round
    [ -f "$out/tables/traces.parquet" ] && continue
    rm -rf "$DIR/lab" "$out"
    echo "$(date -u +%T) round $round k$k: lab up" >&2
    if ! timeout 600 "$SL" lab up --computes "$k" --port-base "$PORT_BASE" --workers 2 \
        2>> "$DIR/campaign.err"; then
      echo "round $round k$k: lab up failed (see $DIR/campaign.err)" >&2
      "$SL" lab down >/dev/null 2>&1
      continue
    fi
    export OS_CLIENT_CONFIG_FILE=$DIR/lab/clouds.yaml
    uptime >> "$DIR/load.txt"
    timeout 1500 "$SL" run "$DIR/scn-k$k.yaml" --out "$out" > "$out.report.txt" 2>> "$DIR/campaign.err"
    echo "$(date -u +%T) round $round k$k: run exit $?" >&2
    uptime >> "$DIR/load.txt"
    timeout 300 "$SL" lab down --purge 2>> "$DIR/campaign.err"
  done
done

cal=(); val=()
for r in "$DIR"/k"$K"-r*; do [ -f "$r/tables/traces.parquet" ] && cal+=("$r"); done
for r in "$DIR"/k$((2 * K))-r*; do [ -f "$r/tables/traces.parquet" ] && val+=("$r"); done
[ ${#cal[@]} -gt 0 ] && [ ${#val[@]} -gt 0 ] || { echo "no traced runs to validate" >&2; exit 1; }
"$SL" forecast calibrate "${cal[@]}" -o "$DIR/model.json" --provenance "lab=stacklens lab" \
  --provenance "runs=${#cal[@]} at K=$K C=$C, $(date -u +%F)" ${CORES:+--cores "$CORES"} || exit 1
"$SL" forecast validate "$DIR/model.json" "${val[@]}" --seeds "${SEEDS:-40}"
