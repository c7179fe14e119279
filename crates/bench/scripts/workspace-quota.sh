#!/usr/bin/env bash
# What a logical cluster's write-time quota (Workspace spec.quota, issue 31) costs its
# writes: creates and updates per second in a Workspace's cluster (counted by the quota
# decorator, whose update and delete first read the stored object's size) against the same
# in `root` (which no quota counts), ROUNDS alternating rounds on one server; prints each
# run, the medians and their ratios.
#
#   crates/bench/scripts/workspace-quota.sh [ROUNDS] [CONCURRENCY] [DURATION]
#
# Needs the release build (make build-release, or CARGO_TARGET_DIR=... cargo build
# --release -p kplane -p kplane-bench), kubectl and jq.
set -euo pipefail
cd "$(dirname "$0")/../../.."
. crates/bench/scripts/lib.sh

rounds="${1:-3}"
concurrency="${2:-32}"
duration="${3:-10s}"

bench_init workspace-quota
start_server "$work/data"
export KUBECONFIG="$work/data/admin.kubeconfig"
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: tenancy.kplane.io/v1alpha1
kind: Workspace
metadata:
  name: wq
YAML
kubectl wait --for=jsonpath='{.status.phase}'=Ready workspace/wq --timeout=60s >/dev/null
cluster_kubeconfig "$work/data" root:wq "$work/wq.kubeconfig"

declare -A runs
for r in $(seq 1 "$rounds"); do
    for where in root wq; do
        kc="$KUBECONFIG"
        [ "$where" = wq ] && kc="$work/wq.kubeconfig"
        out="$("$KPLANE_BENCH" --no-progress --json --kubeconfig "$kc" --scenario create,update \
            --concurrency "$concurrency" --duration "$duration")"
        for s in create update; do
            t="$(echo "$out" | jq -r --arg s "$s" '[.[] | select(.scenario == $s)][0].throughput')"
            echo "round $r $where $s: $t/s"
            runs[$where-$s]+="$t "
        done
    done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
for s in create update; do
    a="$(echo "${runs[root-$s]}" | median)"
    b="$(echo "${runs[wq-$s]}" | median)"
    echo "median $s/s: root (no quota) $a, workspace (quota) $b, ratio $(awk -v a="$b" -v b="$a" 'BEGIN {printf "%.2f", a/b}')"
done
