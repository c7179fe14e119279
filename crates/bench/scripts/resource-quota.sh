#!/usr/bin/env bash
# Creates per second in a namespace holding a ResourceQuota that counts ConfigMaps (its
# limit never reached) against a namespace without one, on one server, ROUNDS rounds of
# both (alternating, so that drift on a shared machine hits both alike); prints each
# run and the medians, and the ratio of the medians.
#
#   crates/bench/scripts/resource-quota.sh [ROUNDS] [CONCURRENCY] [DURATION]
#
# Needs the release build (make build-release, or CARGO_TARGET_DIR=... cargo build
# --release -p kplane -p kplane-bench), kubectl and jq.
set -euo pipefail
cd "$(dirname "$0")/../../.."
. crates/bench/scripts/lib.sh

rounds="${1:-3}"
concurrency="${2:-32}"
duration="${3:-10s}"

bench_init resource-quota
start_server "$work/data"
export KUBECONFIG="$work/data/admin.kubeconfig"
kubectl create namespace plain >/dev/null
kubectl create namespace quota >/dev/null
kubectl create quota q -n quota --hard=count/configmaps=100000000,configmaps=100000000 >/dev/null
for _ in $(seq 1 300); do
    used="$(kubectl get quota q -n quota -o jsonpath='{.status.used.configmaps}')"
    [ -n "$used" ] && break
    sleep 0.1
done
[ -n "$used" ] || { echo "the quota's status was never written" >&2; exit 1; }

declare -A runs=([plain]="" [quota]="")
for r in $(seq 1 "$rounds"); do
    for ns in plain quota; do
        t="$("$KPLANE_BENCH" --no-progress --json --kubeconfig "$KUBECONFIG" --scenario create \
            --namespace "$ns" --concurrency "$concurrency" --duration "$duration" |
            jq -r '.[0].throughput')"
        echo "round $r $ns: $t creates/s"
        runs[$ns]+="$t "
    done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
p="$(echo "${runs[plain]}" | median)"
q="$(echo "${runs[quota]}" | median)"
echo "median creates/s: without a quota $p, with a quota $q, ratio $(awk -v a="$q" -v b="$p" 'BEGIN {printf "%.2f", a/b}')"
kubectl get quota q -n quota
