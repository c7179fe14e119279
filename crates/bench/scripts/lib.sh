# Shared by the benchmark scripts in this folder (source it; it defines functions only):
# a scratch directory removed on exit, and a kplane server started in it and stopped with it.
#
#   bench_init NAME            scratch directory "$work" (kplane-NAME.XXXXXX), trap on EXIT
#   start_server DATA [ARGS]   kplane serve on a free port, data in DATA; waits for
#                              DATA/admin.kubeconfig, which the server writes once /readyz
#                              answers 200 (a restart's old one is removed first, so the wait
#                              is for the new server) (sets "$pid"; server log in $work/server.log)
#   stop_server                stops the server started last
#   cluster_kubeconfig DATA CLUSTER OUT
#                              writes a kubeconfig for logical cluster CLUSTER to OUT
#   fill_namespace KUBECONFIG N
#                              creates N ConfigMaps of $SIZE bytes in namespace `big` and keeps
#                              them (kplane-bench's JSON report in $work/fill.json)

dir="${CARGO_TARGET_DIR:-target}/release"
KPLANE="${KPLANE:-$dir/kplane}"
KPLANE_BENCH="${KPLANE_BENCH:-$dir/kplane-bench}"

pid=""

stop_server() {
    if [ -n "$pid" ]; then
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        pid=""
    fi
}

bench_init() {
    work="$(mktemp -d -t "kplane-$1.XXXXXX")"
    trap 'stop_server; rm -rf "$work"' EXIT
}

start_server() {
    local data="$1"
    shift
    rm -f "$data/admin.kubeconfig"
    "$KPLANE" serve --data-dir "$data" --bind 127.0.0.1:0 "$@" >"$work/server.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 300); do
        [ -f "$data/admin.kubeconfig" ] && return 0
        sleep 0.1
    done
    cat "$work/server.log"
    return 1
}

cluster_kubeconfig() {
    sed "s#/clusters/root\\b#/clusters/$2#" "$1/admin.kubeconfig" >"$3"
}

fill_namespace() {
    echo "== filling namespace big with $2 ConfigMaps" >&2
    "$KPLANE_BENCH" --no-progress --json --size "${SIZE:-1024}" --setup-timeout 10m \
        --kubeconfig "$1" --scenario create --keep --namespace big \
        --count "$2" --duration 30m --concurrency 32 >"$work/fill.json"
}
