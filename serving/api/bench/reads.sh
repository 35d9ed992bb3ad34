#!/usr/bin/env bash
# Reads under load while the pipeline runs (issue 33): `trending serve` alone on core
# SERVER_CPU (0) answers GET /v1/trending?window=hour&limit=100 at a constant rate from an
# open-loop client (serving/api/bench/reads: latency from each request's due time, so queueing
# counts), while `trending up` (embedded broker and S3, its load generator at RATE views/s)
# counts on core CLIENT_CPU (1) and writes the lists serve reads. The client shares core 1 with
# the pipeline.
#
#   serving/api/bench/reads.sh                       # make bench-reads, from the repository root
#   CONNS="64 256 1024" TARGET=20000 DURATION=15s serving/api/bench/reads.sh
#   STEPS="25000 30000 35000" ...                    # the step up at the largest CONNS
#
# The two processes share the serving store, so it is ClickHouse's (a bolt file is locked by
# its one writer): a database of its own, bench_reads_PID, on CH (default the local server of
# `make services-up`, 127.0.0.1:39100, HTTP CH_HTTP 127.0.0.1:39123), created with `trending
# migrate` and dropped at the end. With SPLIT=0, or when ClickHouse does not answer, `trending
# up` serves the API itself, pinned to both cores (GOMAXPROCS 2), and the client runs on core 1:
# the server then shares its cores with the pipeline.
#
# Every process runs in a session of its own (setsid), as separate services would: with the
# kernel's autogroup scheduling (kernel.sched_autogroup_enabled=1) a session shares one CPU
# weight, so a client started in the pipeline's session would get half of what the pipeline
# leaves it on the shared core.
#
# Each (connections, mix) is measured on two servers pinned to the same core, one after the
# other: `trending serve` (the fast path, fastpath.go) and `trending serve --fast-path=false`
# (net/http for every request), the baseline in the same run; the step up runs on the first.
#
# Each row: connections, target and achieved rate, p50/p99/p99.9/max latency, errors (and
# statuses), the server's and the client's CPU per request (user + system from /proc/PID/stat),
# the time each waited runnable for a CPU per second (schedstat: whose delay it was), the
# pipeline's events counted per second, the load average before and after.
#
# With ISOLATE=1 (the default) serve and the client run under the real-time policy SCHED_FIFO
# (chrt -f 10): each takes its core whenever it is runnable, before any ordinary process (the
# pipeline, ClickHouse, MinIO, builds), as a server on a core of its own would, and the client's
# own waits for a CPU (which an open-loop client records as the server's latency) are gone. The
# pipeline stays an ordinary process on the client's core. ISOLATE=0 measures both as ordinary
# processes sharing their cores; without the right to use chrt (root or CAP_SYS_NICE) the script
# says so and does that.
# Goal: p99 < 50 ms at 20,000 requests/s and 1,024 connections.
set -euo pipefail

DURATION=${DURATION:-15s}
WARMUP=${WARMUP:-2s}
CONNS=${CONNS:-64 256 1024}
TARGET=${TARGET:-20000}
STEPS=${STEPS-25000 30000 35000 40000}
MIXES=${MIXES:-plain=1 plain=5,gzip=3,inm=2}
RATE=${RATE:-5000}          # views/s of `up`'s load generator
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
SPLIT=${SPLIT:-1}
CH=${CH:-127.0.0.1:39100}
CH_HTTP=${CH_HTTP:-127.0.0.1:39123}
SERVE_ENV=${SERVE_ENV:-}    # extra environment for serve, such as GOGC=400
ISOLATE=${ISOLATE:-1}
PATH_Q='/v1/trending?window=hour&limit=100'

for tool in go curl taskset; do
  command -v "$tool" >/dev/null || { echo "reads.sh: $tool not found" >&2; exit 1; }
done
ROOT=$(git rev-parse --show-toplevel 2>/dev/null || pwd)
cd "$ROOT"
. serving/api/bench/lib.sh # free_port
PRIO=()
if [ "$ISOLATE" = 1 ]; then
  if command -v chrt >/dev/null && chrt -f 10 true 2>/dev/null; then
    PRIO=(chrt -f 10)
  else
    echo "reads.sh: chrt -f is not allowed here (root or CAP_SYS_NICE): ISOLATE=0, serve and the client share their cores" >&2
    ISOLATE=0
  fi
fi
UP_PORT=$(free_port)
API_PORT=$(free_port)
WORK=$(mktemp -d /tmp/trending-reads.XXXXXX)
DB=bench_reads_$$
PIDS=()
DROP_DB=0
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$DROP_DB" = 1 ]; then curl -fsS "http://$CH_HTTP/" --data-binary "DROP DATABASE IF EXISTS $DB" >/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "building trending and the client..." >&2
go build -o "$WORK/trending" ./cmd/trending
go build -o "$WORK/reads" ./serving/api/bench/reads

if [ "$SPLIT" = 1 ] && ! curl -fsS -m 2 "http://$CH_HTTP/ping" >/dev/null 2>&1; then
  echo "reads.sh: ClickHouse does not answer on $CH_HTTP: SPLIT=0 (up serves the API itself)" >&2
  SPLIT=0
fi
wait_ok() { # URL PID LOG
  for _ in $(seq 600); do
    curl -fsS "$1" >/dev/null 2>&1 && return 0
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  echo "reads.sh: $1 does not answer:" >&2; tail -30 "$3" >&2; exit 1
}

UP_ARGS=(up --data "$WORK/data" --rate "$RATE" --backfill 0 --log-level warn)
if [ "$SPLIT" = 1 ]; then
  STORE="clickhouse://$CH/$DB"
  DROP_DB=1
  "$WORK/trending" migrate --clickhouse "$STORE" >&2
  setsid taskset -c "$CLIENT_CPU" "$WORK/trending" "${UP_ARGS[@]}" --store "$STORE" --listen "127.0.0.1:$UP_PORT" >"$WORK/up.log" 2>&1 &
  UP_PID=$!; PIDS+=("$UP_PID")
  wait_ok "http://127.0.0.1:$UP_PORT/healthz" "$UP_PID" "$WORK/up.log"
  env $SERVE_ENV setsid "${PRIO[@]}" taskset -c "$SERVER_CPU" "$WORK/trending" serve --store "$STORE" --listen "127.0.0.1:$API_PORT" --log-level warn >"$WORK/serve.log" 2>&1 &
  API_PID=$!; PIDS+=("$API_PID")
  # The baseline in the same run: a second serve on the same core without the fast path
  # (net/http serves every request), idle while the other is measured.
  NET_PORT=$(free_port)
  env $SERVE_ENV setsid "${PRIO[@]}" taskset -c "$SERVER_CPU" "$WORK/trending" serve --fast-path=false --store "$STORE" --listen "127.0.0.1:$NET_PORT" --log-level warn >"$WORK/serve-nethttp.log" 2>&1 &
  NET_PID=$!; PIDS+=("$NET_PID")
  SETUP="trending serve on core $SERVER_CPU (GOMAXPROCS 1; with the fast path, and a second one with --fast-path=false, idle while the other is measured), trending up --rate $RATE on core $CLIENT_CPU with the client; serving store ClickHouse $CH/$DB"
else
  env $SERVE_ENV setsid taskset -c "$SERVER_CPU,$CLIENT_CPU" "$WORK/trending" "${UP_ARGS[@]}" --listen "127.0.0.1:$API_PORT" >"$WORK/up.log" 2>&1 &
  API_PID=$!; PIDS+=("$API_PID"); UP_PID=$API_PID
  SETUP="trending up --rate $RATE serving the API itself on cores $SERVER_CPU,$CLIENT_CPU, the client on core $CLIENT_CPU"
fi
# Serve must answer with the live hour list the pipeline writes.
for _ in $(seq 600); do
  curl -fsS "http://127.0.0.1:$API_PORT$PATH_Q" 2>/dev/null | grep -q '"item_id"' && break
  kill -0 "$API_PID" 2>/dev/null || { tail -30 "$WORK"/*.log >&2; exit 1; }
  sleep 0.2
done
curl -fsS "http://127.0.0.1:$API_PORT$PATH_Q" | grep -q '"item_id"' || { echo "reads.sh: no hour list after 2 minutes" >&2; tail -30 "$WORK"/*.log >&2; exit 1; }
SERVERS=("fast path:$API_PORT:$API_PID")
if [ -n "${NET_PID:-}" ]; then
  wait_ok "http://127.0.0.1:$NET_PORT$PATH_Q" "$NET_PID" "$WORK/serve-nethttp.log"
  SERVERS+=("net/http:$NET_PORT:$NET_PID")
fi
body=$(curl -fsS "http://127.0.0.1:$API_PORT$PATH_Q" | wc -c)
gz=$(curl -fsS -H 'Accept-Encoding: gzip' "http://127.0.0.1:$API_PORT$PATH_Q" | wc -c)

# counted: the pipeline's events counted so far (from up's metrics), to show the speed layer works.
counted() { curl -fsS "http://127.0.0.1:$UP_PORT/metrics" 2>/dev/null | awk '/^trending_speed_events_total[ {]/ { s += $NF } END { printf "%.0f", s }'; }
[ "$SPLIT" = 1 ] || UP_PORT=$API_PORT

if [ "$ISOLATE" = 1 ]; then
  SETUP="$SETUP; serve and the client SCHED_FIFO (chrt -f 10: each takes its core before any ordinary process), the pipeline and every other process ordinary"
else
  SETUP="$SETUP; every process ordinary (ISOLATE=0): the cores are shared by weight"
fi
printf '\nGET %s (%s bytes, %s gzipped), %s cores; %s\n' "$PATH_Q" "$body" "$gz" "$(nproc)" "$SETUP"
printf 'open-loop client serving/api/bench/reads, %s per row after %s of warm-up; mix: plain = no gzip, gzip = Accept-Encoding: gzip, inm = gzip + If-None-Match (the last ETag seen on the connection)\n\n' "$DURATION" "$WARMUP"
printf '| server | connections | mix | target/s | achieved/s | p50 ms | p99 ms | p99.9 ms | max ms | errors | statuses | server CPU us/req | client CPU us/req | server waited for CPU ms/s | client waited ms/s | events counted/s | load before | load after |\n'
printf '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n'
row() { # SERVER CONNS RATE MIX; prints the row, returns 1 when p99 >= 50 ms or under 98% of the rate answered
  local before after out e0 e1 t0 t1 name port pid
  IFS=: read -r name port pid <<<"$1"; shift
  before=$(cut -d' ' -f1 /proc/loadavg)
  e0=$(counted); t0=$(date +%s.%N)
  out=$(setsid -w "${PRIO[@]}" taskset -c "$CLIENT_CPU" "$WORK/reads" -addr "127.0.0.1:$port" -path "$PATH_Q" -conns "$1" -rate "$2" \
    -duration "$DURATION" -warmup "$WARMUP" -mix "$3" -pid "$pid")
  e1=$(counted); t1=$(date +%s.%N)
  after=$(cut -d' ' -f1 /proc/loadavg)
  echo "$out" >>"$WORK/raw.txt"
  awk -v server="$name" -v mix="$3" -v before="$before" -v after="$after" -v ev="$(awk -v a="$e0" -v b="$e1" -v t0="$t0" -v t1="$t1" 'BEGIN { if (a == "" || b == "") print "-"; else printf "%.0f", (b - a) / (t1 - t0) }')" '{
    for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", server, f["conns"], mix, f["target"], f["achieved"],
      f["p50"], f["p99"], f["p99.9"], f["max"], f["errors"] + f["unanswered"], f["statuses"], f["cpu_us_per_req"], f["client_cpu_us_per_req"], f["server_wait_ms_per_s"], f["client_wait_ms_per_s"], ev, before, after
    exit !(f["p99"] + 0 < 50 && f["achieved"] >= 0.98 * f["target"])
  }' <<<"$out"
}
for mix in $MIXES; do
  for c in $CONNS; do
    for srv in "${SERVERS[@]}"; do row "$srv" "$c" "$TARGET" "$mix" || true; done
  done
done
# The step up: the largest rate at the largest connection count that still meets the goal.
last=${CONNS##* }
for r in $STEPS; do row "${SERVERS[0]}" "$last" "$r" "${MIXES%% *}" || break; done
grep -i -E 'error|panic' "$WORK"/*.log | head -5 >&2 || true
for p in "$API_PID" ${NET_PID:-}; do kill -0 "$p" 2>/dev/null || { echo "reads.sh: a server died" >&2; exit 1; }; done
