#!/usr/bin/env bash
# CLUSTERS logical clusters with the same CRDS CRDs each (issue 4: identical CRDs share
# their compiled schemas and catalogs, so a cluster costs a map entry; catalogs load lazily
# after a restart). One fresh release `kplane serve` (new data directory):
#
#   1. crd_clusters.py create: the Workspaces t0 .. t<CLUSTERS-1> under root, waited until
#      Ready, then the CRDS generated CRDs (about 6.5 KB each) POSTed into every cluster by
#      CONC HTTPS clients (default 16);
#   2. the server's RSS after creating;
#   3. the server is stopped and started again on the same data directory: seconds from the
#      start to the first 200 of /readyz, and the RSS then;
#   4. crd_clusters.py touch, twice: one request to every cluster (a list of a CRD's
#      objects, which loads the cluster's catalog); seconds of each pass, RSS after each.
#
# Prints one JSON line with the figures and the load average.
#
#   crates/bench/scripts/crd-clusters.sh CLUSTERS [CRDS]
#
# Needs the release build (CARGO_TARGET_DIR=... cargo build --release -p kplane; KPLANE
# overrides the binary), curl and python3. Environment: CONC (16).
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 CLUSTERS [CRDS]" >&2
    exit 2
fi
CLUSTERS="$1"
CRDS="${2:-20}"
CONC="${CONC:-16}"
py="$(dirname "$0")/crd_clusters.py"

bench_init crd-clusters
data="$work/data"
kc="$data/admin.kubeconfig"
rss_mib() { awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$pid/status"; }

start_server "$data"
created=$(python3 "$py" create "$kc" --clusters "$CLUSTERS" --crds "$CRDS" --concurrency "$CONC")
echo "== created: $created" >&2
rss_created=$(rss_mib)
stop_server

# Restart: start_server's port is only known once the server is ready (it writes the
# kubeconfig then), so the restart binds a port picked here and /readyz is polled on it.
token=$(awk '$1 == "token:" {print $2}' "$kc")
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
t0=$(date +%s.%N)
"$KPLANE" serve --data-dir "$data" --bind "127.0.0.1:$port" >"$work/server.log" 2>&1 &
pid=$!
restart_s=""
for _ in $(seq 1 6000); do
    if [ "$(curl -sk -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" \
        "https://127.0.0.1:$port/readyz")" = 200 ]; then
        restart_s=$(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 3))" "$t0" "$(date +%s.%N)")
        break
    fi
    kill -0 "$pid" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
    sleep 0.01
done
[ -n "$restart_s" ] || { echo "not ready after the restart" >&2; exit 1; }
for _ in $(seq 1 300); do
    grep -q "127.0.0.1:$port" "$kc" 2>/dev/null && break
    sleep 0.1
done
rss_restarted=$(rss_mib)
first=$(python3 "$py" touch "$kc" --clusters "$CLUSTERS" --concurrency "$CONC")
rss_first=$(rss_mib)
second=$(python3 "$py" touch "$kc" --clusters "$CLUSTERS" --concurrency "$CONC")
rss_second=$(rss_mib)
stop_server

field() { python3 -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
echo "{\"clusters\": $CLUSTERS, \"crds\": $CRDS, \"concurrency\": $CONC," \
    "\"crd_bytes\": $(field "$created" crd_bytes)," \
    "\"workspaces_ready_s\": $(field "$created" workspaces_ready_s)," \
    "\"crds_created_s\": $(field "$created" crds_created_s)," \
    "\"crds_per_s\": $(field "$created" crds_per_s)," \
    "\"rss_mib_created\": $rss_created, \"restart_ready_s\": $restart_s," \
    "\"rss_mib_restarted\": $rss_restarted," \
    "\"first_pass_s\": $(field "$first" seconds), \"rss_mib_first_pass\": $rss_first," \
    "\"second_pass_s\": $(field "$second" seconds), \"rss_mib_second_pass\": $rss_second," \
    "\"data_dir_mib\": $(du -sm "$data" | cut -f1)," \
    "\"loadavg\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
