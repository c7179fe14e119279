#!/usr/bin/env bash
# Export and import of one logical cluster holding N 1 KiB ConfigMaps (issue 16), through
# the client commands `kplane export` and `kplane import`.
#
# A fresh release server gets the Workspace `big`; kplane-bench creates N ConfigMaps of
# $SIZE bytes (default 1024) in namespace `big` of `root:big` and keeps them. Then, per
# round:
#   export: the source server is restarted (so that its peak RSS, VmHWM, is the one of the
#           export) and `kplane export root:big -o FILE` (zstd) is timed; archive size;
#   import: a server on a new, empty data directory; `kplane import FILE` is timed and the
#           imported ConfigMaps are counted (the run fails unless there are N).
# Prints one JSON line per round (seconds, objects/s counting every object of the archive,
# archive bytes, RSS before and peak in KiB, load average) and the medians.
#
#   crates/bench/scripts/export-import.sh N [ROUNDS]
#
# Needs the release build (CARGO_TARGET_DIR=... cargo build --release -p kplane -p
# kplane-bench; KPLANE, KPLANE_BENCH override the binaries), kubectl and python3.
# Environment: SETTLE (seconds between a server's start and the timed command; 5).
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 N [ROUNDS]" >&2
    exit 2
fi
N="$1"
ROUNDS="${2:-3}"
SETTLE="${SETTLE:-5}"

bench_init export-import
now() { date +%s.%N; }
secs() { python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 3))" "$1" "$2"; }
kib() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status"; }
count() { # count KUBECONFIG: the benchmark's ConfigMaps in namespace big
    kubectl --kubeconfig "$1" get configmaps -n big -l kplane-bench/run -o name \
        --chunk-size 10000 | wc -l
}

src="$work/src"
start_server "$src"
kubectl --kubeconfig "$src/admin.kubeconfig" apply -f - >/dev/null <<'YAML'
apiVersion: tenancy.kplane.io/v1alpha1
kind: Workspace
metadata:
  name: big
YAML
kubectl --kubeconfig "$src/admin.kubeconfig" wait --for=jsonpath='{.status.phase}'=Ready \
    workspace/big --timeout=120s >/dev/null
cluster_kubeconfig "$src" root:big "$work/big.kubeconfig"
t0=$(now)
fill_namespace "$work/big.kubeconfig" "$N"
echo "== filled in $(secs "$t0" "$(now)") s" >&2
have=$(count "$work/big.kubeconfig")
[ "$have" -eq "$N" ] || { echo "root:big holds $have ConfigMaps, not $N" >&2; exit 1; }
stop_server

for round in $(seq 1 "$ROUNDS"); do
    archive="$work/big-$round.kpa"
    start_server "$src"
    sleep "$SETTLE" # start-up work (informers, controllers) out of the measurement
    rss_before=$(kib "$pid" VmRSS)
    t0=$(now)
    said=$(KUBECONFIG="$src/admin.kubeconfig" "$KPLANE" export root:big -o "$archive")
    export_s=$(secs "$t0" "$(now)")
    echo "$said" >&2
    # "exported root:big (N objects, ...": the ConfigMaps and the cluster's other objects
    objects=$(echo "$said" | sed -n 's/^exported [^ ]* (\([0-9]*\) objects.*/\1/p')
    export_peak=$(kib "$pid" VmHWM)
    stop_server

    dst="$work/dst-$round"
    start_server "$dst"
    sleep "$SETTLE"
    import_rss_before=$(kib "$pid" VmRSS)
    t0=$(now)
    KUBECONFIG="$dst/admin.kubeconfig" "$KPLANE" import "$archive" >&2
    import_s=$(secs "$t0" "$(now)")
    import_peak=$(kib "$pid" VmHWM)
    cluster_kubeconfig "$dst" root:big "$work/dst.kubeconfig"
    imported=$(count "$work/dst.kubeconfig")
    stop_server
    rm -rf "$dst"
    if [ "$imported" -ne "$N" ]; then
        echo "round $round: imported $imported ConfigMaps, not $N" >&2
        exit 1
    fi
    echo "{\"round\": $round, \"objects\": $N, \"export_s\": $export_s," \
        "\"archive_objects\": $objects," \
        "\"export_objects_per_s\": $(python3 -c "print(round($objects / $export_s))")," \
        "\"archive_bytes\": $(stat -c %s "$archive")," \
        "\"export_rss_kib\": $rss_before, \"export_peak_kib\": $export_peak," \
        "\"import_s\": $import_s, \"import_objects_per_s\": $(python3 -c "print(round($objects / $import_s))")," \
        "\"import_rss_kib\": $import_rss_before, \"import_peak_kib\": $import_peak," \
        "\"imported\": $imported, \"loadavg\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}" |
        tee -a "$work/rounds.jsonl"
    rm -f "$archive"
done

python3 - "$work/rounds.jsonl" <<'EOF'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
keys = ["export_s", "archive_bytes", "export_peak_kib", "import_s", "import_peak_kib"]
print(json.dumps({"medians": {k: statistics.median(r[k] for r in rows) for k in keys},
                  "rounds": len(rows)}))
EOF
