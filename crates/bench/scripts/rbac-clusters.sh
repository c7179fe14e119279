#!/usr/bin/env bash
# Memory of N logical clusters with default RBAC exercised in every one (issue 14: "10,000
# logical clusters with default RBAC stay within the memory figure of the logical-cluster
# benchmark plus 10%"). Per round, two fresh release servers (new data directory each),
# alternating which goes first:
#
#   plain: kplane-bench --scenario clusters (issue 3's logical-cluster benchmark: N clusters,
#          OBJECTS ConfigMaps each, as the admin);
#   rbac:  the same with --rbac-token: each cluster also gets a RoleBinding of the static
#          token user `kb-reader` (--token-auth-file) to `view`, and that user lists the
#          cluster's ConfigMaps once populated and again in the list phase, so every
#          cluster's RBAC policy is compiled and cached by the server.
#
# Prints one JSON line per server with the RSS after populating (kplane-bench's figure),
# the RSS after the list phase (VmRSS), how many clusters' RBAC policies the server holds
# (`kplane_rbac_cached_*` of /metrics), the load average; then the medians and the ratio.
#
#   crates/bench/scripts/rbac-clusters.sh [N] [ROUNDS]     (release build; KPLANE, KPLANE_BENCH)
#
# Environment: CONC (32), OBJECTS (10).
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
N="${1:-10000}"
ROUNDS="${2:-1}"
CONC="${CONC:-32}"
OBJECTS="${OBJECTS:-10}"

bench_init rbac-clusters
token="kb-reader-$RANDOM$RANDOM"
echo "$token,kb-reader,kb-reader-uid" >"$work/tokens.csv"

field() { # field FILE EXPR: a value from the first report of a kplane-bench JSON array
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))[0]; print(json.dumps(eval(sys.argv[2], {"r": r})))' "$1" "$2"
}

one() { # one MODE ROUND: a fresh server, the clusters scenario, one JSON line
    local mode="$1" round="$2" data="$work/data-$1-$2" extra=()
    [ "$mode" = rbac ] && extra=(--rbac-token "$token" --rbac-user kb-reader)
    start_server "$data" --token-auth-file "$work/tokens.csv"
    "$KPLANE_BENCH" --kubeconfig "$data/admin.kubeconfig" --server-pid "$pid" --no-progress \
        --json --size 1024 --scenario clusters --clusters "$N" --objects-per-cluster "$OBJECTS" \
        --concurrency "$CONC" --duration 900s --setup-timeout 30m --keep "${extra[@]}" \
        >"$work/$mode-$round.json"
    local rss metrics
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
    metrics=$(kubectl --kubeconfig "$data/admin.kubeconfig" get --raw /metrics)
    stop_server
    echo "{\"mode\": \"$mode\", \"round\": $round, \"clusters\": $N," \
        "\"created\": $(field "$work/$mode-$round.json" 'r.get("clusters_created")')," \
        "\"rss_mib_populated\": $(field "$work/$mode-$round.json" 'r.get("server_rss_mib", {}).get("populated")')," \
        "\"rss_mib_after_lists\": $(python3 -c "print(round($rss / 1024, 1))")," \
        "\"rbac_cached_clusters\": $(echo "$metrics" | awk '$1 == "kplane_rbac_cached_clusters" {print $2}')," \
        "\"rbac_cached_policies\": $(echo "$metrics" | awk '$1 == "kplane_rbac_cached_policies" {print $2}')," \
        "\"per_cluster_ms\": $(field "$work/$mode-$round.json" 'r.get("latency_ms")')," \
        "\"errors\": $(field "$work/$mode-$round.json" 'r["errors"]')," \
        "\"loadavg\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}" | tee -a "$work/lines.jsonl"
    rm -rf "$data"
}

for round in $(seq 1 "$ROUNDS"); do
    if [ $((round % 2)) -eq 1 ]; then
        one plain "$round"
        one rbac "$round"
    else
        one rbac "$round"
        one plain "$round"
    fi
done
python3 - "$work/lines.jsonl" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
out = {}
for key in ["rss_mib_populated", "rss_mib_after_lists"]:
    med = {m: statistics.median(r[key] for r in rows if r["mode"] == m and r[key] is not None)
           for m in ["plain", "rbac"]}
    out[key] = {**med, "ratio": round(med["rbac"] / med["plain"], 3)}
print(json.dumps({"medians": out}))
EOF
