#!/usr/bin/env bash
# kplane beside kube-apiserver + etcd on this machine: the same kplane-bench commands against
# each, a fresh server (and, for kube-apiserver, a fresh etcd) per command, the two
# alternated round by round; then the memory and disk of 100,000 ConfigMaps in each.
#
#   KUBE_APISERVER=/path/kube-apiserver ETCD=/path/etcd crates/bench/scripts/vs-kube-apiserver.sh [ROUNDS]
#
# kplane and kplane-bench are release builds (KPLANE, KPLANE_BENCH, as lib.sh); kube-apiserver
# and etcd are binaries you provide (a Kubernetes server release's kube-apiserver and an etcd
# release of the version it supports; nothing here builds them). etcd runs with its defaults
# (fsync on every commit, as kplane's durable writes). Both servers are used as the admin:
# kplane's admin kubeconfig, kube-apiserver with a token in `system:masters`, so neither
# queues the load (APF and kplane's fair queuing exempt that group).
#
# Environment: ROUNDS (first argument, 3), OBJECTS (100000 for the memory/disk step; 0 skips it),
# COMMANDS (the kplane-bench arguments to compare, one command per line; default below).
set -euo pipefail
cd "$(dirname "$0")/../../.."
. crates/bench/scripts/lib.sh
rounds="${1:-3}"
OBJECTS="${OBJECTS:-100000}"
: "${KUBE_APISERVER:?set KUBE_APISERVER to a kube-apiserver binary}"
: "${ETCD:?set ETCD to an etcd binary}"
COMMANDS="${COMMANDS:-"--scenario create --concurrency 64 --duration 10s
--scenario get --concurrency 32 --duration 10s
--scenario update --concurrency 64 --duration 10s
--scenario list --list-size 10000 --page-size 500 --concurrency 1 --duration 8s"}"
bench_init vs-kas

kas_pids=()
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# kube-apiserver + etcd with data in $1; writes $1/admin.kubeconfig; sets kas_pids and pid
# (kube-apiserver's).
start_kas() {
    local d="$1" ec ep ap token
    mkdir -p "$d/etcd"
    ec=$(free_port)
    ep=$(free_port)
    ap=$(free_port)
    # A CA and a serving certificate it signs (rustls refuses a self-signed CA certificate
    # as the server's own).
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=bench-ca" \
        -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
    openssl req -new -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
        -keyout "$d/serving.key" -out "$d/serving.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$d/serving.ext"
    openssl x509 -req -in "$d/serving.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
        -days 2 -extfile "$d/serving.ext" -out "$d/serving.crt" 2>/dev/null
    openssl genrsa -out "$d/sa.key" 2048 2>/dev/null
    token=$(openssl rand -hex 16)
    echo "$token,bench-admin,bench-admin,system:masters" >"$d/tokens.csv"
    local advertise=() help
    help=$("$ETCD" --help 2>&1 || true)
    if grep -q -- '-advertise-client-urls' <<<"$help"; then
        advertise=(--advertise-client-urls "http://127.0.0.1:$ec" --initial-advertise-peer-urls "http://127.0.0.1:$ep"
            --initial-cluster "default=http://127.0.0.1:$ep")
    fi
    "$ETCD" --name default --data-dir "$d/etcd" --listen-client-urls "http://127.0.0.1:$ec" \
        --listen-peer-urls "http://127.0.0.1:$ep" "${advertise[@]}" >"$d/etcd.log" 2>&1 &
    kas_pids=($!)
    for _ in $(seq 1 100); do
        curl -sf "http://127.0.0.1:$ec/health" 2>/dev/null | grep -q '"health":"true"' && break
        sleep 0.2
    done
    # 192.0.2.1 (TEST-NET-1, never contacted): the `kubernetes` Endpoints refuse a loopback
    # advertise address; the server listens on 127.0.0.1 only.
    "$KUBE_APISERVER" --bind-address=127.0.0.1 --advertise-address=192.0.2.1 --secure-port="$ap" \
        --tls-cert-file="$d/serving.crt" --tls-private-key-file="$d/serving.key" \
        --etcd-servers="http://127.0.0.1:$ec" --token-auth-file="$d/tokens.csv" \
        --authorization-mode=RBAC --service-account-issuer=https://kubernetes.default.svc \
        --service-account-key-file="$d/sa.key" --service-account-signing-key-file="$d/sa.key" \
        --service-cluster-ip-range=10.0.0.0/24 --cert-dir="$d/certs" >"$d/kube-apiserver.log" 2>&1 &
    pid=$!
    kas_pids+=("$pid")
    cat >"$d/admin.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kas
  cluster:
    server: https://127.0.0.1:$ap
    certificate-authority: $d/ca.crt
users:
- name: admin
  user:
    token: $token
contexts:
- name: kas
  context: {cluster: kas, user: admin}
current-context: kas
EOF
    for _ in $(seq 1 600); do
        if [ "$(curl -s --cacert "$d/ca.crt" -H "Authorization: Bearer $token" "https://127.0.0.1:$ap/readyz")" = ok ]; then
            return 0
        fi
        sleep 0.2
    done
    tail -20 "$d/kube-apiserver.log"
    return 1
}

stop_kas() {
    local p
    for p in $(printf '%s\n' "${kas_pids[@]}" | tac); do
        kill -TERM "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    kas_pids=()
}
# Whatever runs when the script ends (an error, Ctrl-C): kplane, then kube-apiserver and
# etcd, then the scratch directory.
trap 'stop_server; stop_kas; rm -rf "$work"' EXIT

rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

# Runs one kplane-bench command ($2...) against a fresh server of kind $1; prints the report's
# first line of figures.
run_one() {
    local kind="$1" data="$work/data-$kind"
    shift
    rm -rf "$data"
    if [ "$kind" = kplane ]; then start_server "$data"; else start_kas "$data"; fi
    # --keep: the server is thrown away after the command (kube-apiserver alone, without
    # kube-controller-manager, never finishes deleting a namespace).
    "$KPLANE_BENCH" --kubeconfig "$data/admin.kubeconfig" --no-progress --json --size 1024 \
        --keep --setup-timeout 10m "$@" >"$work/out.json" || true
    python3 - "$work/out.json" "$kind" "$*" <<'PY' || echo "$kind $*: no report"
import json, sys
r = json.load(open(sys.argv[1]))
r = r if isinstance(r, list) else [r]
for x in r:
    lat = x.get("latency_ms", {})
    parts = {k: (v.get("throughput"), v["latency_ms"].get("p50"), v["latency_ms"].get("p99"))
             for k, v in x.items() if isinstance(v, dict) and "latency_ms" in v}
    print(f"{sys.argv[2]:6} {sys.argv[3]}: {x.get('throughput', 0):.0f}/s p50 {lat.get('p50')} ms p99 {lat.get('p99')} ms",
          parts if parts else "", "errors:", x.get("errors") or {})
PY
    if [ "$kind" = kplane ]; then stop_server; else stop_kas; fi
    pid=""
    rm -rf "$data"
}

"$KUBE_APISERVER" --version
for r in $(seq 1 "$rounds"); do
    echo "== round $r"
    while IFS= read -r cmd; do
        [ -n "$cmd" ] || continue
        # shellcheck disable=SC2086
        for kind in kplane kas; do run_one "$kind" $cmd; done
    done <<<"$COMMANDS"
done

if [ "$OBJECTS" -gt 0 ]; then
    echo "== memory and disk: $OBJECTS ConfigMaps of 1 KiB, 64 clients"
    for kind in kplane kas; do
        data="$work/data-$kind"
        rm -rf "$data"
        if [ "$kind" = kplane ]; then start_server "$data"; else start_kas "$data"; fi
        before=$(for p in ${kas_pids[@]:-$pid}; do rss_kib "$p"; done | paste -sd+ | bc)
        start=$(date +%s.%N)
        "$KPLANE_BENCH" --kubeconfig "$data/admin.kubeconfig" --no-progress --json --size 1024 \
            --scenario create --keep --namespace big --count "$OBJECTS" --duration 30m \
            --concurrency 64 >"$work/fill.json"
        took=$(echo "$(date +%s.%N) - $start" | bc)
        sleep 10
        after=$(for p in ${kas_pids[@]:-$pid}; do rss_kib "$p"; done | paste -sd+ | bc)
        sync
        disk=$(du -sk "$data" | cut -f1)
        echo "$kind: created in ${took}s; RSS $((before / 1024)) MiB idle -> $((after / 1024)) MiB with the objects (every process of the server); data directory $((disk / 1024)) MiB"
        if [ "$kind" = kplane ]; then stop_server; else stop_kas; fi
        pid=""
        rm -rf "$data"
    done
fi
