#!/usr/bin/env bash
# deletecollection speed (issue 11 item 6): how long one `DELETE .../configmaps` of a
# namespace holding N ConfigMaps takes.
#
# Starts a fresh release `kplane serve`, fills namespace `big` of logical cluster
# root:dc with N ConfigMaps of SIZE bytes (kplane-bench create --keep --count N), lets the
# server settle, then times `kubectl delete --raw` of the namespace's configmaps
# collection (one deletecollection request; its answer lists every deleted object) and
# checks that none is left. Prints one JSON line per round.
#
#   crates/bench/scripts/deletecollection.sh [N] [ROUNDS]      (default: 20000 1)
#
# Environment: KPLANE, KPLANE_BENCH (binaries; default target/release), SIZE (1024),
# SETTLE (seconds to wait after filling: 5).
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
N="${1:-20000}"
ROUNDS="${2:-1}"
SIZE="${SIZE:-1024}"
SETTLE="${SETTLE:-5}"

bench_init deletecollection

data="$work/data"
start_server "$data"
kc="$work/a.kubeconfig"
cluster_kubeconfig "$data" root:dc "$kc"

for round in $(seq 1 "$ROUNDS"); do
    echo "== round $round" >&2
    fill_namespace "$kc" "$N"
    sleep "$SETTLE"
    start=$(date +%s.%N)
    KUBECONFIG="$kc" kubectl delete --raw /clusters/root:dc/api/v1/namespaces/big/configmaps >"$work/answer.json"
    end=$(date +%s.%N)
    listed=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["items"]))' "$work/answer.json")
    left=$(KUBECONFIG="$kc" kubectl get configmaps -n big --no-headers 2>/dev/null | grep -vc '^kube-root-ca.crt ' || true)
    secs=$(python3 -c "print(round($end - $start, 2))")
    rate=$(python3 -c "print(round($listed / ($end - $start)))")
    echo "{\"round\": $round, \"objects\": $N, \"listed_in_answer\": $listed, \"left\": $left," \
        "\"seconds\": $secs, \"objects_per_s\": $rate," \
        "\"loadavg\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
done
