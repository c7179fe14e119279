#!/usr/bin/env bash
# Jobs through the syncer (issue 15, "Tests and benchmark"): JOBS Jobs spread over WS
# Workspaces of a data-plane kplane, launched by `kplane syncer` on a second kplane standing
# in for the host, completed there by kplane-bench (playing the host's job controller), and
# seen Complete in their tenants. Fresh release servers and syncer per round; prints one JSON
# line per round: time until all are Complete, per-Job round-trip percentiles, the syncer's
# resident memory with all JOBS synced (they are kept until the round ends), load average.
#
#   crates/bench/scripts/sync.sh [JOBS] [WS] [ROUNDS]     defaults 1000 100 1
#
# The SyncTarget `bench` in root has includeDescendants: true; the syncer runs with the
# admin kubeconfig of root (the superuser may use every sync endpoint).
# Environment: KPLANE, KPLANE_BENCH (binaries; default target/release), CONC (32),
# WAIT (how long to wait for all round trips, default 120s).
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
JOBS="${1:-1000}"
WS="${2:-100}"
ROUNDS="${3:-1}"
CONC="${CONC:-32}"
WAIT="${WAIT:-120s}"

bench_init sync
host_pid=""
syncer_pid=""
stop_all() {
    [ -n "$syncer_pid" ] && { kill -TERM "$syncer_pid" 2>/dev/null || true; wait "$syncer_pid" 2>/dev/null || true; }
    syncer_pid=""
    stop_server
    if [ -n "$host_pid" ]; then
        kill -TERM "$host_pid" 2>/dev/null || true
        wait "$host_pid" 2>/dev/null || true
        host_pid=""
    fi
}
trap 'stop_all; rm -rf "$work"' EXIT

rss_mib() { awk '/^VmRSS:/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }

for round in $(seq 1 "$ROUNDS"); do
    start_server "$work/host-$round"
    host_pid=$pid
    pid=""
    start_server "$work/data-$round"
    kc="$work/data-$round/admin.kubeconfig"
    hostkc="$work/host-$round/admin.kubeconfig"
    kubectl --kubeconfig "$kc" apply -f - >/dev/null <<'YAML'
apiVersion: sync.kplane.io/v1alpha1
kind: SyncTarget
metadata:
  name: bench
spec:
  includeDescendants: true
YAML
    "$KPLANE" syncer --kubeconfig "$kc" --target bench --host-kubeconfig "$hostkc" \
        --metrics-bind 127.0.0.1:0 >"$work/syncer-$round.log" 2>&1 &
    syncer_pid=$!
    "$KPLANE_BENCH" --no-progress --json --kubeconfig "$kc" --scenario sync-jobs \
        --host-kubeconfig "$hostkc" --jobs "$JOBS" --workspaces "$WS" \
        --concurrency "$CONC" --duration "$WAIT" --keep >"$work/round.json"
    syncer_rss=$(rss_mib "$syncer_pid")
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    python3 - "$work/round.json" "$syncer_rss" "$load" "$round" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))[0]
print(json.dumps({
    "round": int(sys.argv[4]),
    "jobs": r.get("jobs_requested"), "workspaces": r.get("workspaces"),
    "complete": r.get("complete"), "round_trips": r["ops"],
    "all_complete_s": r["seconds"], "create_s": r.get("create_seconds"),
    "round_trip_ms": r["latency_ms"], "errors": r.get("errors"),
    "syncer_rss_mib": float(sys.argv[2]), "load": sys.argv[3],
}))
PY
    stop_all
    rm -rf "$work/host-$round" "$work/data-$round"
done
