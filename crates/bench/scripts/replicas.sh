#!/usr/bin/env bash
# kplane replicas on one PostgreSQL (issue 17): creates/s, GET/s and watch delivery latency
# with 1, 2 and 3 replicas on one throwaway PostgreSQL on this machine, and the same on sled
# (one process); and LIST of 10,000 ConfigMaps before and after 1,000,000 updates of history.
#
#   crates/bench/scripts/replicas.sh [replicas]   the replica table (default)
#   crates/bench/scripts/replicas.sh list         LIST after UPDATES updates vs fresh
#
# PostgreSQL: `initdb` into a temporary directory (as the `postgres` user when run as root:
# initdb refuses root), `postgres` on a free port of 127.0.0.1 with PostgreSQL's default
# durability (fsync, synchronous_commit and full_page_writes on: every acknowledged write is
# on disk), max_connections raised for the replicas' pools; a new database per row.
# Replicas: `kplane serve --storage postgres://...` on free ports, each with its own data
# directory (its own certificates and admin token, so each has its own admin.kubeconfig;
# kplane-bench takes the first as --kubeconfig and the others as --replica-kubeconfig),
# started one after another, each waited for until /readyz answers.
#
# replicas: per store and replica count, ROUNDS runs of
#   create  64 clients (CONC), 1 KiB, for DURATION, spread round-robin over the replicas;
#   get     GET_CONC clients over a pool of POOL ConfigMaps, spread over the replicas;
#   watch   WATCHERS watches on the replicas but the first (all on the only server with one
#           replica) while 4 clients write RATE ConfigMaps/s through the first: the latency
#           from a write's acknowledgement to its receipt by every watcher.
# One JSON line per run, then a table of the medians. Beside the figures: the creates' mean
# commit group (writes per group, and the storage's time per group from kplane's
# kplane_storage_commit_* counters, summed over the replicas), the time of one 8 KiB write +
# fdatasync in the scratch directory just before (what each WAL flush waits for on this
# disk), the CPU seconds kplane and PostgreSQL used during the row, and the load average.
#
# list: one server per store (STORES_LIST) with a history window of a day (nothing is
# compacted during the run), kplane-bench --scenario list --list-size LIST_SIZE
# --list-history UPDATES: full and paged (500) LISTs of the namespace, then UPDATES updates
# spread evenly over its ConfigMaps (random 1 KiB values; HISTORY_CLIENTS clients), then the
# same LISTs again. On PostgreSQL the history is counted afterwards (rows of kplane_log).
#
# Environment: KPLANE, KPLANE_BENCH (binaries; default $CARGO_TARGET_DIR or target, release),
# REPLICAS ("1 2 3"), STORES ("postgres sled"), ROUNDS (1), DURATION (10s), CONC (64),
# GET_CONC (32), POOL (1000), WATCHERS (100), RATE (200), SIZE (1024), LIST_SIZE (10000),
# UPDATES (1000000), HISTORY_CLIENTS (64), LIST_DURATION (8s), STORES_LIST ("postgres"),
# SERVER_ARGS (more `kplane serve` flags for every server; split at spaces).
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
MODE="${1:-replicas}"
REPLICAS="${REPLICAS:-1 2 3}"
STORES="${STORES:-postgres sled}"
ROUNDS="${ROUNDS:-1}"
DURATION="${DURATION:-10s}"
CONC="${CONC:-64}"
GET_CONC="${GET_CONC:-32}"
POOL="${POOL:-1000}"
WATCHERS="${WATCHERS:-100}"
RATE="${RATE:-200}"
SIZE="${SIZE:-1024}"
LIST_SIZE="${LIST_SIZE:-10000}"
UPDATES="${UPDATES:-1000000}"
HISTORY_CLIENTS="${HISTORY_CLIENTS:-64}"
LIST_DURATION="${LIST_DURATION:-8s}"
STORES_LIST="${STORES_LIST:-postgres}"
read -r -a server_args <<<"${SERVER_ARGS:-}"

bench_init replicas
pg_dir=""
pg_pid=""
pg_port=""
replica_pids=()
replica_kcs=()

stop_replicas() {
    local p
    for p in ${replica_pids[@]+"${replica_pids[@]}"}; do
        kill -TERM "$p" 2>/dev/null || true
    done
    for p in ${replica_pids[@]+"${replica_pids[@]}"}; do
        wait "$p" 2>/dev/null || true
    done
    replica_pids=()
    replica_kcs=()
}

stop_pg() {
    if [ -n "$pg_pid" ]; then
        # $pg_pid may be runuser: signal the postmaster itself (SIGINT: fast shutdown).
        local pm
        pm="$(head -n 1 "$pg_dir/data/postmaster.pid" 2>/dev/null || true)"
        kill -INT "${pm:-$pg_pid}" 2>/dev/null || true
        wait "$pg_pid" 2>/dev/null || true
        pg_pid=""
    fi
    if [ -n "$pg_dir" ]; then
        rm -rf "$pg_dir"
        pg_dir=""
    fi
}

trap 'stop_replicas; stop_server; stop_pg; rm -rf "$work"' EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

as_pg() { # runs a PostgreSQL binary, as the postgres user when we are root
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

pg_bin() { # the directory of initdb/postgres
    if command -v pg_config >/dev/null && [ -x "$(pg_config --bindir)/postgres" ]; then
        pg_config --bindir
    else
        dirname "$(readlink -f "$(command -v initdb)")"
    fi
}

start_pg() {
    local bin
    bin="$(pg_bin)"
    pg_dir="$(mktemp -d -t kplane-pg.XXXXXX)"
    if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$pg_dir"; fi
    as_pg "$bin/initdb" -D "$pg_dir/data" -U postgres --auth=trust -E UTF8 --locale=C \
        >"$work/initdb.log" 2>&1 || {
        cat "$work/initdb.log" >&2
        return 1
    }
    pg_port="$(free_port)"
    as_pg "$bin/postgres" -D "$pg_dir/data" -p "$pg_port" -h 127.0.0.1 -k "$pg_dir" \
        -c max_connections=300 >"$work/postgres.log" 2>&1 &
    pg_pid=$!
    for _ in $(seq 1 300); do
        if as_pg "$bin/pg_isready" -h 127.0.0.1 -p "$pg_port" -q; then
            echo "== PostgreSQL $(as_pg "$bin/postgres" --version | awk '{print $3}') on port $pg_port" >&2
            return 0
        fi
        sleep 0.1
    done
    cat "$work/postgres.log" >&2
    return 1
}

psql_q() { # psql_q DB SQL: one value
    as_pg "$(pg_bin)/psql" -h 127.0.0.1 -p "$pg_port" -U postgres -d "$1" -Atc "$2"
}

new_db() { # new_db NAME: creates database NAME, prints its URL
    psql_q postgres "CREATE DATABASE $1" >/dev/null
    echo "postgres://postgres@127.0.0.1:$pg_port/$1"
}

wait_ready() { # wait_ready KUBECONFIG LOG
    for _ in $(seq 1 600); do
        if kubectl --kubeconfig "$1" get --raw /readyz >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.1
    done
    echo "server not ready; log:" >&2
    cat "$2" >&2
    return 1
}

start_replica() { # start_replica DATA LOG [kplane serve args]: appends to replica_pids/kcs
    local data="$1" log="$2"
    shift 2
    "$KPLANE" serve --data-dir "$data" --bind 127.0.0.1:0 "$@" >"$log" 2>&1 &
    replica_pids+=($!)
    for _ in $(seq 1 300); do
        [ -f "$data/admin.kubeconfig" ] && break
        sleep 0.1
    done
    wait_ready "$data/admin.kubeconfig" "$log"
    replica_kcs+=("$data/admin.kubeconfig")
}

cpu_seconds() { # CPU seconds (user + system) of the given processes and their descendants
    python3 - "$@" <<'EOF'
import os, sys
tick = os.sysconf("SC_CLK_TCK")
pids = set(sys.argv[1:])
parent = {}
for d in os.listdir("/proc"):
    if d.isdigit():
        try:
            st = open(f"/proc/{d}/stat").read()
        except OSError:
            continue
        parent[d] = st[st.rindex(")") + 2:].split()[1]
# descendants (PostgreSQL's backends are children of the postmaster, itself maybe of runuser)
grew = True
while grew:
    grew = False
    for child, par in parent.items():
        if par in pids and child not in pids:
            pids.add(child)
            grew = True
total = 0
for p in pids:
    try:
        f = open(f"/proc/{p}/stat").read()
    except OSError:
        continue
    fields = f[f.rindex(")") + 2:].split()
    total += int(fields[11]) + int(fields[12])
print(round(total / tick, 2))
EOF
}

fsync_ms() { # milliseconds per 8 KiB write + fdatasync in DIR (what a WAL flush waits for)
    python3 - "$1" <<'EOF'
import os, sys, time
path = os.path.join(sys.argv[1], "fsync-probe")
fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
buf = b"\0" * 8192
n, t0 = 0, time.monotonic()
while n < 200 and time.monotonic() - t0 < 2:
    os.pwrite(fd, buf, 0)
    os.fdatasync(fd)
    n += 1
os.close(fd)
os.unlink(path)
print(round((time.monotonic() - t0) / n * 1000, 2))
EOF
}

group_commit() { # "groups writes seconds": the storage's group-commit counters, summed
    local kc
    for kc in "$@"; do
        kubectl --kubeconfig "$kc" get --raw /metrics 2>/dev/null |
            grep -E '^kplane_storage_(commit_groups_total|committed_writes_total|commit_seconds_total) ' || true
    done | awk '{s[$1] += $2} END {printf "%d %d %.3f\n", s["kplane_storage_commit_groups_total"], s["kplane_storage_committed_writes_total"], s["kplane_storage_commit_seconds_total"]}'
}

field() { # field FILE SCENARIO EXPR: a value of one scenario's report
    python3 -c 'import json,sys
rs=json.load(open(sys.argv[1])); r=[x for x in rs if x["scenario"]==sys.argv[2]][0]
print(json.dumps(eval(sys.argv[3], {"r": r})))' "$1" "$2" "$3"
}

results="$work/results.jsonl"
: >"$results"

run_replica_row() { # run_replica_row STORE N ROUND: bench against the running servers
    local store="$1" n="$2" round="$3" out="$work/out.json" extra=() k cpu_k0 cpu_p0
    for k in "${replica_kcs[@]:1}"; do extra+=(--replica-kubeconfig "$k"); done
    cpu_k0=$(cpu_seconds "${replica_pids[@]}")
    cpu_p0=$( [ -n "$pg_pid" ] && [ "$store" = postgres ] && cpu_seconds "$pg_pid" || echo 0)
    local t0=$SECONDS g0 g1 fs
    fs=$(fsync_ms "$work")
    g0=$(group_commit "${replica_kcs[@]}")
    # One invocation per scenario: each gets fresh connections. The creates are kept until
    # the group-commit counters are read (so those cover the creates only), then deleted
    # with their namespace.
    "$KPLANE_BENCH" --kubeconfig "${replica_kcs[0]}" ${extra[@]+"${extra[@]}"} --no-progress \
        --json --size "$SIZE" --scenario create --concurrency "$CONC" --duration "$DURATION" \
        --keep >"$work/create.json" || true
    g1=$(group_commit "${replica_kcs[@]}")
    kubectl --kubeconfig "${replica_kcs[0]}" delete namespace kplane-bench --wait=true \
        --timeout=10m >/dev/null 2>&1 || true
    "$KPLANE_BENCH" --kubeconfig "${replica_kcs[0]}" ${extra[@]+"${extra[@]}"} --no-progress \
        --json --size "$SIZE" --scenario get --concurrency "$GET_CONC" --pool "$POOL" \
        --duration "$DURATION" >"$work/get.json" || true
    "$KPLANE_BENCH" --kubeconfig "${replica_kcs[0]}" ${extra[@]+"${extra[@]}"} --no-progress \
        --json --size "$SIZE" --scenario watch --watchers "$WATCHERS" --watch-rate "$RATE" \
        --concurrency 4 --duration "$DURATION" >"$work/watch.json" || true
    local cpu_k cpu_p
    cpu_k=$(python3 -c "print(round($(cpu_seconds "${replica_pids[@]}") - $cpu_k0, 1))")
    cpu_p=$( [ -n "$pg_pid" ] && [ "$store" = postgres ] &&
        python3 -c "print(round($(cpu_seconds "$pg_pid") - $cpu_p0, 1))" || echo null)
    python3 - "$work" "$store" "$n" "$round" "$cpu_k" "$cpu_p" "$((SECONDS - t0))" \
        "$(cut -d' ' -f1-3 /proc/loadavg)" "$g0" "$g1" "$fs" >>"$results" <<'EOF'
import json, sys
work, store, n, rnd, cpu_k, cpu_p, secs, load, g0, g1, fs = sys.argv[1:]
(groups0, writes0, commit0), (groups1, writes1, commit1) = [
    [float(x) for x in g.split()] for g in (g0, g1)]
groups, writes = groups1 - groups0, writes1 - writes0
def rep(name):
    try:
        return json.load(open(f"{work}/{name}.json"))[0]
    except Exception as e:
        return {"errors": {"no report": str(e)}}
c, g, w = rep("create"), rep("get"), rep("watch")
lat = lambda r, p: (r.get("latency_ms") or {}).get(p)
print(json.dumps({
    "store": store, "replicas": int(n), "round": int(rnd),
    "creates_per_s": c.get("throughput"), "create_p50_ms": lat(c, "p50"), "create_p99_ms": lat(c, "p99"),
    "gets_per_s": g.get("throughput"), "get_p50_ms": lat(g, "p50"), "get_p99_ms": lat(g, "p99"),
    "watch_writes": w.get("ops"), "deliveries": w.get("deliveries"),
    "expected_deliveries": w.get("expected_deliveries"),
    "delivery_p50_ms": lat(w, "p50"), "delivery_p99_ms": lat(w, "p99"),
    "delivery_by_server": w.get("delivery_by_server"),
    "errors": {k: v for k, v in (("create", c.get("errors")), ("get", g.get("errors")), ("watch", w.get("errors"))) if v},
    "create_groups": int(groups),
    "create_writes_per_group": round(writes / groups, 1) if groups else None,
    "create_commit_ms_per_group": round((commit1 - commit0) / groups * 1000, 2) if groups else None,
    "fdatasync_ms": float(fs),
    "cpu_s_kplane": float(cpu_k), "cpu_s_postgres": None if cpu_p == "null" else float(cpu_p),
    "wall_s": int(secs), "loadavg": load,
}))
EOF
    tail -n 1 "$results"
}

replicas_mode() {
    local store n round data
    for store in $STORES; do
        case "$store" in
        postgres)
            [ -n "$pg_pid" ] || start_pg
            for n in $REPLICAS; do
                for round in $(seq 1 "$ROUNDS"); do
                    local url
                    url="$(new_db "kplane_r${n}_${round}")"
                    for i in $(seq 1 "$n"); do
                        data="$work/pg-r$n-$round-$i"
                        start_replica "$data" "$work/replica-$i.log" --storage "$url" \
                            ${server_args[@]+"${server_args[@]}"}
                    done
                    echo "== postgres: $n replicas (pids ${replica_pids[*]}), round $round" >&2
                    run_replica_row postgres "$n" "$round"
                    stop_replicas
                    psql_q postgres "DROP DATABASE kplane_r${n}_${round}" >/dev/null
                    rm -rf "$work"/pg-r"$n"-"$round"-*
                done
            done
            ;;
        sled)
            for round in $(seq 1 "$ROUNDS"); do
                data="$work/sled-$round"
                start_replica "$data" "$work/replica-1.log" ${server_args[@]+"${server_args[@]}"}
                echo "== sled: 1 process (pid ${replica_pids[*]}), round $round" >&2
                run_replica_row sled 1 "$round"
                stop_replicas
                rm -rf "$data"
            done
            ;;
        *)
            echo "unknown store $store (postgres or sled)" >&2
            exit 2
            ;;
        esac
    done
    python3 - "$results" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
groups = {}
for r in rows:
    groups.setdefault((r["store"], r["replicas"]), []).append(r)
def med(rs, k):
    v = [r[k] for r in rs if r.get(k) is not None]
    return statistics.median(v) if v else None
def f(x, d=0):
    return "-" if x is None else f"{x:,.{d}f}"
print(f"{'store':<9} {'replicas':>8} {'runs':>4} {'creates/s':>10} {'create p99':>10} {'group':>6} "
      f"{'ms/group':>8} {'fdatasync':>9} {'GET/s':>9} {'GET p99':>8} {'watch p50':>9} {'watch p99':>9} "
      f"{'delivered':>17} {'cpu kplane':>10} {'cpu pg':>7}  load")
for (store, n), rs in groups.items():
    deliv = f"{sum(r['deliveries'] or 0 for r in rs)}/{sum(r['expected_deliveries'] or 0 for r in rs)}"
    print(f"{store:<9} {n:>8} {len(rs):>4} {f(med(rs,'creates_per_s')):>10} {f(med(rs,'create_p99_ms'),1):>10} "
          f"{f(med(rs,'create_writes_per_group'),1):>6} {f(med(rs,'create_commit_ms_per_group'),2):>8} "
          f"{f(med(rs,'fdatasync_ms'),2):>9} "
          f"{f(med(rs,'gets_per_s')):>9} {f(med(rs,'get_p99_ms'),2):>8} {f(med(rs,'delivery_p50_ms'),1):>9} "
          f"{f(med(rs,'delivery_p99_ms'),1):>9} {deliv:>17} {f(med(rs,'cpu_s_kplane'),1):>10} "
          f"{f(med(rs,'cpu_s_postgres'),1):>7}  {rs[-1]['loadavg']}")
    for r in rs:
        if r["errors"]:
            print(f"  errors ({store}, {n} replicas, round {r['round']}): {json.dumps(r['errors'])[:400]}")
EOF
}

list_mode() {
    local store url args out="$work/list.json"
    for store in $STORES_LIST; do
        args=(--event-window-seconds 86400)
        case "$store" in
        postgres)
            [ -n "$pg_pid" ] || start_pg
            url="$(new_db kplane_list)"
            args+=(--storage "$url")
            ;;
        sled) ;;
        *)
            echo "unknown store $store (postgres or sled)" >&2
            exit 2
            ;;
        esac
        start_replica "$work/list-$store" "$work/list-$store.log" "${args[@]}" \
            ${server_args[@]+"${server_args[@]}"}
        echo "== $store: LIST of $LIST_SIZE ConfigMaps before and after $UPDATES updates" >&2
        local t0=$SECONDS
        "$KPLANE_BENCH" --kubeconfig "${replica_kcs[0]}" --no-progress --json --size "$SIZE" \
            --scenario list --list-size "$LIST_SIZE" --page-size 500 --concurrency 1 \
            --duration "$LIST_DURATION" --list-history "$UPDATES" \
            --history-clients "$HISTORY_CLIENTS" --setup-timeout 3h >"$out" || true
        local history="null" db_mib="null" objects="null"
        if [ "$store" = postgres ]; then
            history=$(psql_q kplane_list "SELECT count(*) FROM kplane_log")
            db_mib=$(psql_q kplane_list "SELECT pg_database_size('kplane_list') / 1048576")
            # The latest-values table after the updates: its size, dead row versions and
            # autovacuum runs (bloat there, not history, would slow the LIST).
            objects=$(psql_q kplane_list "SELECT json_build_object('mib', \
                pg_total_relation_size('kplane_objects') / 1048576, 'live', n_live_tup, \
                'dead', n_dead_tup, 'autovacuums', autovacuum_count, \
                'autoanalyzes', autoanalyze_count) FROM pg_stat_user_tables \
                WHERE relname = 'kplane_objects'")
        else
            db_mib=$(du -sm "$work/list-$store/db" | cut -f1)
        fi
        python3 - "$out" "$store" "$history" "$db_mib" "$((SECONDS - t0))" \
            "$(cut -d' ' -f1-3 /proc/loadavg)" "$objects" <<'EOF'
import json, sys
out, store, history, db_mib, secs, load, objects = sys.argv[1:]
try:
    r = json.load(open(out))[0]
except Exception as e:
    print(json.dumps({"store": store, "error": f"no report: {e}"}))
    sys.exit(0)
a = r.get("after_history") or {}
page = lambda p: ((p or {}).get("page_latency_ms") or {})
print(json.dumps({
    "store": store, "list_size": r.get("list_size"),
    "updates": (r.get("history_updates") or {}).get("ops"),
    "updates_per_s": (r.get("history_updates") or {}).get("throughput"),
    "history_rows_after": None if history == "null" else int(history),
    "store_mib_after": None if db_mib == "null" else int(db_mib),
    "objects_table_after": json.loads(objects),
    "fresh_full_ms": r.get("latency_ms"), "after_full_ms": (a.get("full") or {}).get("latency_ms"),
    "fresh_page_ms": page(r.get("paged")), "after_page_ms": page(a.get("paged")),
    "full_p50_ratio": r.get("full_p50_ratio_after_history"),
    "page_p50_ratio": r.get("page_p50_ratio_after_history"),
    "items_per_list": [r.get("items_per_list"), a.get("items_per_list")],
    "errors": r.get("errors"), "wall_s": int(secs), "loadavg": load,
}))
EOF
        stop_replicas
        rm -rf "$work/list-$store"
    done
}

case "$MODE" in
replicas) replicas_mode ;;
list) list_mode ;;
*)
    echo "unknown mode $MODE (replicas or list)" >&2
    exit 2
    ;;
esac
