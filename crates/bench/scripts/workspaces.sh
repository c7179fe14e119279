#!/usr/bin/env bash
# Workspaces at scale (issue 13, "Scale"): creation to Ready, memory per Workspace, and
# deletion while another tenant is served. One fresh release `kplane serve` (new data
# directory) per round; prints one JSON line per round with the figures and the load average.
#
#   crates/bench/scripts/workspaces.sh create N [ROUNDS]   kplane-bench --scenario workspaces
#   crates/bench/scripts/workspaces.sh delete N [ROUNDS]   kplane-bench --scenario workspace-delete
#   crates/bench/scripts/workspaces.sh wildcard N [ROUNDS] kplane-bench --scenario wildcard-watch
#
# create: N Workspaces with CONC clients (default 32), kept (--keep) so that the server's
#   resident memory is read with all N Ready (`server_rss_bytes_per_workspace`); then the
#   server is stopped and restarted on the same data and the time from start to the first
#   200 of /readyz is measured (`restart_ready_s`, RSS after it).
# delete: N Workspaces with OBJECTS ConfigMaps each (default 10), deleted with CONC clients
#   while one client GETs another tenant's ConfigMap (idle for GET_SECS first).
# wildcard: N Workspaces (CONC clients), then one watch on /clusters/* and one on the subtree
#   /clusters/root:* while CONC clients make WRITES ConfigMaps spread over the N clusters;
#   every write must arrive once per watch, in resourceVersion order, with its cluster
#   annotation. Kept (--keep): the data directory is removed with the round instead.
#
# Environment: KPLANE, KPLANE_BENCH (binaries; default target/release), CONC (32),
# OBJECTS (10), GET_SECS (5s), WRITES (20000), SERVER_ARGS (more `kplane serve` flags, e.g.
# "--storage-cache-mb 128"; split at spaces).
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
MODE="${1:?create or delete}"
N="${2:-10000}"
ROUNDS="${3:-1}"
CONC="${CONC:-32}"
OBJECTS="${OBJECTS:-10}"
GET_SECS="${GET_SECS:-5s}"
WRITES="${WRITES:-20000}"
read -r -a server_args <<<"${SERVER_ARGS:-}"

bench_init workspaces

field() { # field FILE EXPR: a value from the first report of a kplane-bench JSON array
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))[0]; print(json.dumps(eval(sys.argv[2], {"r": r})))' "$1" "$2"
}

ready_after_start() { # starts the server on DATA; sets $restart: seconds to the first 200 of /readyz
    local data="$1" t0
    t0=$(date +%s.%N)
    start_server "$data" ${server_args[@]+"${server_args[@]}"}
    local kc="$data/admin.kubeconfig"
    for _ in $(seq 1 6000); do
        if kubectl --kubeconfig "$kc" get --raw /readyz >/dev/null 2>&1; then
            restart=$(python3 -c "print(round($(date +%s.%N) - $t0, 3))")
            return 0
        fi
        sleep 0.02
    done
    echo "not ready" >&2
    return 1
}

for round in $(seq 1 "$ROUNDS"); do
    data="$work/data-$round"
    start_server "$data" ${server_args[@]+"${server_args[@]}"}
    kc="$data/admin.kubeconfig"
    common=("$KPLANE_BENCH" --kubeconfig "$kc" --server-pid "$pid" --no-progress --json
        --concurrency "$CONC" --workspaces "$N" --setup-timeout 30m)
    case "$MODE" in
    create)
        "${common[@]}" --scenario workspaces --duration 30m --keep >"$work/out.json"
        stop_server
        ready_after_start "$data"
        rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
        stop_server
        echo "{\"round\": $round, \"workspaces\": $N, \"concurrency\": $CONC," \
            "\"creations_to_ready_per_s\": $(field "$work/out.json" 'r["creations_to_ready_per_second"]')," \
            "\"latency_ms\": $(field "$work/out.json" 'r["latency_ms"]')," \
            "\"rss_mib\": $(field "$work/out.json" 'r.get("server_rss_mib")')," \
            "\"rss_bytes_per_workspace\": $(field "$work/out.json" 'r.get("server_rss_bytes_per_workspace")')," \
            "\"errors\": $(field "$work/out.json" 'r["errors"]')," \
            "\"restart_ready_s\": $restart, \"rss_kib_after_restart\": $rss," \
            "\"data_dir_mib\": $(du -sm "$data" | cut -f1)," \
            "\"loadavg\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
        ;;
    delete)
        "${common[@]}" --scenario workspace-delete --objects-per-cluster "$OBJECTS" \
            --duration "$GET_SECS" >"$work/out.json"
        stop_server
        echo "{\"round\": $round, \"workspaces\": $N, \"objects_each\": $OBJECTS," \
            "\"seconds_until_all_gone\": $(field "$work/out.json" 'r["seconds"]')," \
            "\"per_workspace_ms\": $(field "$work/out.json" 'r["latency_ms"]')," \
            "\"tenant_get_idle_ms\": $(field "$work/out.json" 'r.get("tenant_get_idle_latency_ms")')," \
            "\"tenant_get_during_ms\": $(field "$work/out.json" 'r.get("tenant_get_during_latency_ms")')," \
            "\"tenant_p99_ratio\": $(field "$work/out.json" 'r.get("tenant_p99_ratio")')," \
            "\"delete_requests_s\": $(field "$work/out.json" 'r.get("delete_requests_s")')," \
            "\"tenant_get_p99_ms_during_requests\": $(field "$work/out.json" 'r.get("tenant_get_during_requests_latency_ms", {}).get("p99")')," \
            "\"tenant_get_p99_ms_background\": $(field "$work/out.json" 'r.get("tenant_get_during_background_latency_ms", {}).get("p99")')," \
            "\"setup_s\": $(field "$work/out.json" 'r.get("setup_s")')," \
            "\"reported_ready_after_delete\": $(field "$work/out.json" 'r.get("deleted_workspaces_reported_ready")')," \
            "\"clusters_not_empty\": $(field "$work/out.json" 'r.get("clusters_not_empty")')," \
            "\"errors\": $(field "$work/out.json" 'r["errors"]')," \
            "\"loadavg\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
        ;;
    wildcard)
        "${common[@]}" --scenario wildcard-watch --count "$WRITES" --duration 30m \
            --keep >"$work/out.json"
        stop_server
        echo "{\"round\": $round, \"workspaces\": $N, \"writes\": $(field "$work/out.json" 'r.get("writes")'),"
        python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))[0]
keys=["workspaces_created","setup_s","setup_creations_per_second","seconds","throughput","clusters_written"]
for w in ["all","subtree"]:
    keys+=[w+"_"+k for k in ["deliveries","duplicates","missed","out_of_order","wrong_rv","wrong_cluster","events","resumed","delivery_latency_ms"]]
print(json.dumps({k: r.get(k) for k in keys})[1:-1] + ",")' "$work/out.json"
        echo "\"errors\": $(field "$work/out.json" 'r["errors"]')," \
            "\"loadavg\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
        ;;
    *)
        echo "unknown mode $MODE (create, delete or wildcard)" >&2
        exit 2
        ;;
    esac
    rm -rf "$data"
done
