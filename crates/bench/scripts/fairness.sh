#!/usr/bin/env bash
# Fair queuing between tenants (docs/security.md, "Fair queuing"), on one fresh server per
# round, as an ordinary user (a --token-auth-file user bound to cluster-admin in root; it
# creates the tenants' Workspaces and so administers them): kplane-bench's noisy-neighbor
# (a quiet tenant's GETs alone, then while a noisy tenant's clients create and LIST flat
# out) and tenant-share (one client per tenant, Jain's fairness index).
#
#   crates/bench/scripts/fairness.sh [ROUNDS] [-- SERVE_FLAGS...]   (release build; KPLANE, KPLANE_BENCH)
#
# Environment: DURATION (10s), NOISY (64 noisy clients), QUIET (4 quiet clients),
# LIST_SIZE (1000 ConfigMaps the noisy tenant lists), TENANTS (1000), SCENARIOS
# (noisy-neighbor,tenant-share).
set -euo pipefail
cd "$(dirname "$0")/../../.."
. crates/bench/scripts/lib.sh
rounds="${1:-1}"
shift || true
[ "${1:-}" = "--" ] && shift
DURATION="${DURATION:-10s}"
NOISY="${NOISY:-64}"
QUIET="${QUIET:-4}"
LIST_SIZE="${LIST_SIZE:-1000}"
TENANTS="${TENANTS:-1000}"
SCENARIOS="${SCENARIOS:-noisy-neighbor,tenant-share}"
bench_init fairness
echo "bench-token,bench,bench-uid" >"$work/tokens.csv"
for r in $(seq 1 "$rounds"); do
    data="$work/data-$r"
    start_server "$data" --token-auth-file "$work/tokens.csv" "$@"
    admin="$data/admin.kubeconfig"
    KUBECONFIG="$admin" kubectl create clusterrolebinding bench --clusterrole=cluster-admin --user=bench >/dev/null
    # The user's kubeconfig: the admin's without its client certificate and token.
    grep -v -e 'client-certificate' -e 'client-key' -e 'token:' "$admin" >"$work/user.kubeconfig"
    sed -i 's#^\(  user:\)$#\1\n    token: bench-token#' "$work/user.kubeconfig"
    for s in ${SCENARIOS//,/ }; do
        case "$s" in
        noisy-neighbor) extra=(--concurrency "$NOISY" --quiet-concurrency "$QUIET" --list-size "$LIST_SIZE") ;;
        tenant-share) extra=(--concurrency 64 --workspaces "$TENANTS") ;;
        *) extra=() ;;
        esac
        "$KPLANE_BENCH" --kubeconfig "$work/user.kubeconfig" --server-pid "$pid" --no-progress --json \
            --size 1024 --setup-timeout 10m --scenario "$s" --duration "$DURATION" "${extra[@]}" >"$work/$s-$r.json"
        python3 - "$work/$s-$r.json" "$s" "$r" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r = [x for x in (r if isinstance(r, list) else [r]) if x.get("scenario") == sys.argv[2]][0]
keys = ["quiet_p99_ratio", "quiet_throughput_ratio", "noisy_creates", "noisy_lists", "noisy_refused",
        "jain_index", "per_tenant_ops_per_s", "tenants", "throughput"]
rows = {k: (round(r[k]["throughput"]), r[k]["latency_ms"].get("p50"), r[k]["latency_ms"].get("p99"))
        for k in ["quiet_idle", "quiet_noisy", "noisy"] if k in r}
print(sys.argv[2], "round", sys.argv[3], {k: r[k] for k in keys if k in r},
      "(ops/s, p50 ms, p99 ms):", rows, "errors:", r.get("errors"))
PY
    done
    stop_server
done
cp "$work"/*.json "${OUT:-/tmp}/" 2>/dev/null || true
