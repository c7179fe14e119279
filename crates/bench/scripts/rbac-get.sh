#!/usr/bin/env bash
# GET throughput as the admin (system:masters) and as a ServiceAccount that RBAC allows
# through 1 of 1,000 RoleBindings in its namespace, on one fresh server, in alternating
# rounds (issue 14's target: the ServiceAccount within 10% of the admin).
#
#   crates/bench/scripts/rbac-get.sh [ROUNDS]      (release build; KPLANE, KPLANE_BENCH)
#
# Environment: DURATION (10s), CONCURRENCY (32), BINDINGS (1000).
set -euo pipefail
cd "$(dirname "$0")/../../.."
. crates/bench/scripts/lib.sh
rounds="${1:-3}"
DURATION="${DURATION:-10s}"
CONCURRENCY="${CONCURRENCY:-32}"
BINDINGS="${BINDINGS:-1000}"
bench_init rbac-get
data="$work/data"
start_server "$data"
admin="$data/admin.kubeconfig"
export KUBECONFIG="$admin"
kubectl create namespace kb >/dev/null
kubectl -n kb create serviceaccount bench >/dev/null
# BINDINGS-1 bindings of other users, and one of the ServiceAccount, in the middle.
{
    for i in $(seq 1 "$BINDINGS"); do
        if [ "$i" -eq $((BINDINGS / 2)) ]; then
            subject='{"kind":"ServiceAccount","name":"bench","namespace":"kb"}'
        else
            subject="{\"kind\":\"User\",\"name\":\"user-$i\",\"apiGroup\":\"rbac.authorization.k8s.io\"}"
        fi
        echo "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"RoleBinding\",\"metadata\":{\"name\":\"rb-$i\",\"namespace\":\"kb\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":\"edit\"},\"subjects\":[$subject]}"
    done
} >"$work/bindings.json"
kubectl create -f "$work/bindings.json" >/dev/null
echo "== $(kubectl -n kb get rolebindings --no-headers | wc -l) RoleBindings in kb" >&2
token="$(kubectl -n kb create token bench --duration 2h)"
# The ServiceAccount's kubeconfig: the admin's without its client certificate and token.
grep -v -e 'client-certificate' -e 'client-key' -e 'token:' "$admin" >"$work/sa.kubeconfig"
sed -i "s#^\\(  user:\\)\$#\\1\\n    token: $token#" "$work/sa.kubeconfig"
KUBECONFIG="$work/sa.kubeconfig" kubectl auth whoami >&2
run() {
    "$KPLANE_BENCH" --kubeconfig "$1" --server-pid "$pid" --no-progress --json --size 1024 \
        --scenario get --namespace kb --concurrency "$CONCURRENCY" --duration "$DURATION" \
        >"$work/$2.json"
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r=[x for x in (r if isinstance(r, list) else [r]) if x.get("scenario")=="get"][0]; print(sys.argv[2], r["throughput"], "ops/s p99", r["latency_ms"]["p99"], "ms errors", r["errors"])' "$work/$2.json" "$2"
}
for r in $(seq 1 "$rounds"); do
    run "$admin" "admin-$r"
    run "$work/sa.kubeconfig" "sa-$r"
    run "$work/sa.kubeconfig" "sa-$r-b"
    run "$admin" "admin-$r-b"
done
cp "$work"/*.json "${OUT:-/tmp}/" 2>/dev/null || true
