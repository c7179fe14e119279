#!/usr/bin/env bash
# Server memory per idle watch (issue 3: "10,000 idle watchers cost under 200 MiB").
#
# For each watcher count and transport, starts a fresh release `kplane serve` on a loopback
# port, opens the watches with `kplane-bench --scenario watch --watch-rate 0` (HTTP/1.1: one
# TLS connection per watch, as kube-rs and the Python client do; HTTP/2: shared connections,
# as client-go does), holds them idle, prints the bench's JSON report (server VmRSS before,
# after establishing, after the idle hold, KiB per watch), then stops the server and removes
# its data directory.
#
#   crates/bench/scripts/watch-memory.sh [WATCHERS...]          (default: 1000 10000)
#
# Environment: KPLANE (server binary), KPLANE_BENCH (bench binary), default
# $CARGO_TARGET_DIR/release or target/release; MODES ("http1 http2"); HOLD (idle time, 10s).
# 10,000 HTTP/1.1 watches need about 10,100 open files in each process: both raise their soft
# limit to the hard limit, so the hard limit (`ulimit -Hn`) must be at least that.
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
MODES="${MODES:-http1 http2}"
HOLD="${HOLD:-10s}"
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1000 10000)

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
bench_init watch-memory

for n in "${counts[@]}"; do
    for mode in $MODES; do
        data="$work/data-$n-$mode"
        start_server "$data"
        extra=()
        [ "$mode" = http2 ] && extra=(--watch-http2)
        echo "== $n idle watches over $mode (server pid $pid, ulimit -n $(ulimit -n))" >&2
        "$KPLANE_BENCH" --kubeconfig "$data/admin.kubeconfig" --server-pid "$pid" \
            --no-progress --json --scenario watch --watchers "$n" --watch-rate 0 \
            --duration "$HOLD" --setup-timeout 5m "${extra[@]}"
        stop_server
        rm -rf "$data"
    done
done
