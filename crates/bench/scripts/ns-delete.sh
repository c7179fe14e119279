#!/usr/bin/env bash
# Namespace deletion speed, and what it costs another tenant (issue 11 item 6: "a namespace
# of N objects emptied at >= 2,000 objects/s, another tenant's GET p99 under 3x idle").
#
# Starts a fresh release `kplane serve`, fills namespace `big` of logical cluster
# root:nsdel with N ConfigMaps of SIZE bytes (kplane-bench create --keep --count N), lets
# the server settle, then in logical cluster root:other measures GET latency idle
# (kplane-bench get, GET_SECS, GET_CONC clients), deletes the namespace and measures the
# same GETs while it empties, polling until the namespace is gone. Prints one JSON line:
# objects, seconds to empty, objects/s, GET p50/p99 idle and during, the load average.
#
#   crates/bench/scripts/ns-delete.sh [N] [ROUNDS]      (default: 30000 1)
#
# Environment: KPLANE, KPLANE_BENCH (binaries; default target/release), SIZE (1024),
# GET_SECS (5s), GET_CONC (2), SETTLE (seconds to wait after filling: 5).
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
N="${1:-30000}"
ROUNDS="${2:-1}"
SIZE="${SIZE:-1024}"
GET_SECS="${GET_SECS:-5s}"
GET_CONC="${GET_CONC:-2}"
SETTLE="${SETTLE:-5}"

bench_init ns-delete

p_ms() { # p_ms FILE PCT: a latency percentile (ms) from a kplane-bench JSON report
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))[0]; print(r["latency_ms"][sys.argv[2]])' "$1" "$2"
}

data="$work/data"
start_server "$data"
kc_a="$work/a.kubeconfig"
kc_b="$work/b.kubeconfig"
cluster_kubeconfig "$data" root:nsdel "$kc_a"
cluster_kubeconfig "$data" root:other "$kc_b"
bench=("$KPLANE_BENCH" --no-progress --json --size "$SIZE" --setup-timeout 10m)

for round in $(seq 1 "$ROUNDS"); do
    echo "== round $round" >&2
    fill_namespace "$kc_a" "$N"
    sleep "$SETTLE"
    "${bench[@]}" --kubeconfig "$kc_b" --scenario get --namespace other --pool 100 --keep \
        --concurrency "$GET_CONC" --duration "$GET_SECS" >"$work/idle.json"
    start=$(date +%s.%N)
    KUBECONFIG="$kc_a" kubectl delete namespace big --wait=false >/dev/null
    "${bench[@]}" --kubeconfig "$kc_b" --scenario get --namespace other --pool 100 --keep \
        --concurrency "$GET_CONC" --duration "$GET_SECS" >"$work/busy.json" &
    getpid=$!
    while KUBECONFIG="$kc_a" kubectl get namespace big >/dev/null 2>&1; do
        sleep 0.2
    done
    end=$(date +%s.%N)
    wait "$getpid"
    secs=$(python3 -c "print(round($end - $start, 2))")
    rate=$(python3 -c "print(round($N / ($end - $start)))")
    echo "{\"round\": $round, \"objects\": $N, \"seconds\": $secs, \"objects_per_s\": $rate," \
        "\"get_p50_ms_idle\": $(p_ms "$work/idle.json" p50), \"get_p99_ms_idle\": $(p_ms "$work/idle.json" p99)," \
        "\"get_p50_ms_during\": $(p_ms "$work/busy.json" p50), \"get_p99_ms_during\": $(p_ms "$work/busy.json" p99)," \
        "\"loadavg\": \"$(cut -d' ' -f1-3 /proc/loadavg)\", \"data_dir_mib\": $(du -sm "$data" | cut -f1)}"
done
