#!/usr/bin/env bash
# Disk usage and write throughput under churn (issue 11 item 6).
#
# Starts a fresh release `kplane serve` with a history window of WINDOW seconds, runs
# `kplane-bench --scenario churn` for DURATION (a live set of LIVE ConfigMaps rewritten
# continuously, LEASES Leases renewed, Events created and deleted beyond EVENTS), sampling the
# write rate and the data directory's size every SAMPLE, then prints the bench's JSON report
# followed by one line with the data directory's size after the cleanup and the load average.
# With ROUNDS > 1 the churn run is repeated on the same server (the store ages); CONCS
# ("16 4": one per round) gives each round its own concurrency, e.g. to see the data
# directory after the write rate drops.
#
#   crates/bench/scripts/churn.sh
#
# Environment: KPLANE, KPLANE_BENCH (binaries; default target/release), WINDOW (60),
# DURATION (4m), LIVE (1000), LEASES (100), EVENTS (1000), SIZE (1024), CONC (16),
# SAMPLE (10s), ROUNDS (1), CONCS (CONC for every round), COMPRESS (true: the server's
# --storage-compress-history).
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
WINDOW="${WINDOW:-60}"
DURATION="${DURATION:-4m}"
LIVE="${LIVE:-1000}"
LEASES="${LEASES:-100}"
EVENTS="${EVENTS:-1000}"
SIZE="${SIZE:-1024}"
CONC="${CONC:-16}"
SAMPLE="${SAMPLE:-10s}"
ROUNDS="${ROUNDS:-1}"
CONCS="${CONCS:-}"
COMPRESS="${COMPRESS:-true}"

bench_init churn

data="$work/data"
start_server "$data" --event-window-seconds "$WINDOW" --storage-compress-history="$COMPRESS"
for round in $(seq 1 "$ROUNDS"); do
    conc=$(echo "$CONCS" | cut -s -d' ' -f"$round")
    conc="${conc:-${CONCS:-$CONC}}"
    echo "== round $round: churn for $DURATION, window ${WINDOW}s, $conc clients (server pid $pid)" >&2
    "$KPLANE_BENCH" --kubeconfig "$data/admin.kubeconfig" --server-pid "$pid" --no-progress \
        --json --scenario churn --duration "$DURATION" --concurrency "$conc" --size "$SIZE" \
        --live-set "$LIVE" --leases "$LEASES" --events-kept "$EVENTS" --sample-every "$SAMPLE"
    echo "{\"round\": $round, \"data_dir_mib_after_cleanup\": $(du -sm "$data" | cut -f1), \"loadavg\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
done
