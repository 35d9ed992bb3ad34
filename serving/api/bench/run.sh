#!/usr/bin/env bash
# Serving benchmark: GET /v1/trending?window=hour&limit=100 from `trending serve` against nginx
# serving the same response bytes as a static file, and against a bare net/http handler writing
# those bytes with the same headers (bench/bare: the floor of any server on net/http), with the
# same wrk settings in the same run, round by round.
#
#   serving/api/bench/run.sh            # from the repository root
#   DURATION=30s CONNS=64 ROUNDS=3 serving/api/bench/run.sh
#
# By default (PIN=1, on 2 or more cores) each server runs alone on core SERVER_CPU (0): nginx
# with one worker, trending and bare with GOMAXPROCS 1 (Go reads the affinity), and wrk runs on
# core CLIENT_CPU (1) with THREADS=1, so a server's rate is one core's and the client never
# competes with it. PIN=0 runs everything unpinned (nginx with a worker per core, THREADS=2).
#
# Needs go, nginx and wrk (Debian: apt-get install -y nginx wrk), curl and taskset. Prints a
# table with requests/s, p50 and p99 latency, the server's CPU time per request, each server's
# requests/s as a ratio of nginx's, trending's as a ratio of bare net/http's, and nginx's CPU
# per request over each server's (the ratio that holds when other work shares the cores).
# Goal (issue 21): trending >= 0.7x nginx and p99 <= 5 ms at 64 connections.
set -euo pipefail

DURATION=${DURATION:-10s}
CONNS=${CONNS:-64}
ROUNDS=${ROUNDS:-1}
PIN=${PIN:-$([ "$(nproc)" -ge 2 ] && echo 1 || echo 0)}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
if [ "$PIN" = 1 ]; then THREADS=${THREADS:-1}; else THREADS=${THREADS:-2}; fi
PATH_Q='/v1/trending?window=hour&limit=100'

for tool in go nginx wrk curl taskset; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool not found (apt-get install -y nginx wrk curl util-linux)" >&2; exit 1; }
done
# on_server / on_client run a command on the server's or the client's core when pinned. They
# exec, so `on_server cmd &` leaves $! the command's own pid (cleanup kills it, not a subshell).
on_server() { if [ "$PIN" = 1 ]; then exec taskset -c "$SERVER_CPU" "$@"; else exec "$@"; fi; }
on_client() { if [ "$PIN" = 1 ]; then exec taskset -c "$CLIENT_CPU" "$@"; else exec "$@"; fi; }
NGINX_WORKERS=$([ "$PIN" = 1 ] && echo 1 || echo auto)
ROOT=$(git rev-parse --show-toplevel 2>/dev/null || pwd)
cd "$ROOT"

. serving/api/bench/lib.sh # free_port
API_PORT=${API_PORT:-$(free_port)}
NGINX_PORT=${NGINX_PORT:-$(free_port)}
BARE_PORT=${BARE_PORT:-$(free_port)}

WORK=$(mktemp -d /tmp/trending-bench.XXXXXX)
chmod 755 "$WORK"   # nginx workers run as nobody
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "building trending and seeding a store..." >&2
go build -o "$WORK/trending" ./cmd/trending
go build -o "$WORK/bare" ./serving/api/bench/bare
go run ./serving/api/bench/seed -db "$WORK/serving.db"

on_server "$WORK/trending" serve --store "bolt:$WORK/serving.db" --listen "127.0.0.1:$API_PORT" --log-level warn \
  >"$WORK/trending.log" 2>&1 &
API_PID=$!
PIDS+=("$API_PID")
for _ in $(seq 100); do
  curl -fsS "http://127.0.0.1:$API_PORT/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
# Our server must be the one answering: alive, and serving the seeded demo list.
if ! kill -0 "$API_PID" 2>/dev/null || ! curl -fsS "http://127.0.0.1:$API_PORT$PATH_Q" | grep -q '"item_id":"vid-0000"'; then
  echo "run.sh: trending serve is not answering on 127.0.0.1:$API_PORT:" >&2; cat "$WORK/trending.log" >&2; exit 1
fi

# nginx serves the very bytes trending returns, with the same content type and cache header.
mkdir -p "$WORK/www" "$WORK/nginx"
curl -fsS "http://127.0.0.1:$API_PORT$PATH_Q" -o "$WORK/www/hour.json"
chmod -R a+rX "$WORK/www"
cat >"$WORK/nginx.conf" <<CONF
worker_processes $NGINX_WORKERS;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_requests 1000000;
  client_body_temp_path $WORK/nginx/body;
  proxy_temp_path $WORK/nginx/proxy;
  fastcgi_temp_path $WORK/nginx/fastcgi;
  uwsgi_temp_path $WORK/nginx/uwsgi;
  scgi_temp_path $WORK/nginx/scgi;
  server {
    listen 127.0.0.1:$NGINX_PORT;
    location = /v1/trending {
      default_type application/json;
      add_header Cache-Control "public, max-age=30";
      alias $WORK/www/hour.json;
    }
  }
}
CONF
on_server nginx -p "$WORK/nginx" -c "$WORK/nginx.conf" -g 'daemon off;' &
NGINX_PID=$!
PIDS+=("$NGINX_PID")
for _ in $(seq 50); do
  curl -fsS "http://127.0.0.1:$NGINX_PORT$PATH_Q" -o "$WORK/nginx.json" 2>/dev/null && break
  sleep 0.1
done
kill -0 "$NGINX_PID" 2>/dev/null || { echo "run.sh: nginx did not start:" >&2; cat "$WORK/nginx/error.log" >&2; exit 1; }
# bare net/http writes the same bytes with trending's headers (its ETag too).
etag=$(curl -fsS -D - -o /dev/null "http://127.0.0.1:$API_PORT$PATH_Q" | tr -d '\r' | awk -F': ' 'tolower($1) == "etag" { print $2 }')
on_server "$WORK/bare" -listen "127.0.0.1:$BARE_PORT" -body "$WORK/www/hour.json" -etag "$etag" 2>"$WORK/bare.log" &
BARE_PID=$!
PIDS+=("$BARE_PID")
for _ in $(seq 50); do
  curl -fsS "http://127.0.0.1:$BARE_PORT$PATH_Q" -o "$WORK/bare.json" 2>/dev/null && break
  sleep 0.1
done
kill -0 "$BARE_PID" 2>/dev/null || { echo "run.sh: bare did not start:" >&2; cat "$WORK/bare.log" >&2; exit 1; }
api_bytes=$(curl -fsS "http://127.0.0.1:$API_PORT$PATH_Q" | wc -c)
nginx_bytes=$(wc -c <"$WORK/nginx.json")
bare_bytes=$(wc -c <"$WORK/bare.json")
echo "response body: trending $api_bytes bytes, nginx $nginx_bytes bytes, bare $bare_bytes bytes" >&2

# cpu_ticks PID: the CPU time (user + system, in clock ticks) of PID and its children (the
# nginx master and its worker).
cpu_ticks() {
  local total=0 p
  for p in "$1" $(pgrep -P "$1" || true); do
    total=$((total + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
  done
  echo "$total"
}
TICK=$(getconf CLK_TCK)

# run_wrk NAME PORT PID: prints "req/s p50 p99 cpu" (latencies in ms; cpu: the server's CPU
# microseconds per request, which other work on the machine moves far less than req/s).
run_wrk() {
  local out c0 c1
  c0=$(cpu_ticks "$3")
  out=$(on_client wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency "http://127.0.0.1:$2$PATH_Q")
  c1=$(cpu_ticks "$3")
  echo "$out" >"$WORK/wrk-$1.txt"
  if grep -q 'Non-2xx' <<<"$out"; then echo "run.sh: $1 answered non-2xx:" >&2; echo "$out" >&2; exit 1; fi
  awk -v ticks=$((c1 - c0)) -v hz="$TICK" '
    function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
    /Requests\/sec/ { rps = $2 }
    / requests in / { n = $1 }
    $1 == "50%" { p50 = ms($2) }
    $1 == "99%" { p99 = ms($2) }
    END { printf "%.0f %.3f %.3f %.1f\n", rps, p50, p99, ticks / hz * 1e6 / n }' <<<"$out"
}

printf '\nload average before: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
pinning="unpinned"
[ "$PIN" = 1 ] && pinning="servers on core $SERVER_CPU (nginx 1 worker, Go GOMAXPROCS 1), wrk on core $CLIENT_CPU"
printf 'GET %s, wrk -t%s -c%s -d%s --latency, %s cores, %s; %s\n\n' "$PATH_Q" "$THREADS" "$CONNS" "$DURATION" "$(nproc)" "$pinning" "$(nginx -v 2>&1 | sed 's/.*: //')"
printf '%-6s %-10s %12s %10s %10s %12s %10s %10s %12s\n' round server 'requests/s' 'p50 ms' 'p99 ms' 'CPU us/req' 'vs nginx' 'vs bare' 'CPU vs nginx'
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
for r in $(seq "$ROUNDS"); do
  read -r n_rps n_p50 n_p99 n_cpu < <(run_wrk nginx "$NGINX_PORT" "$NGINX_PID")
  read -r b_rps b_p50 b_p99 b_cpu < <(run_wrk bare "$BARE_PORT" "$BARE_PID")
  read -r t_rps t_p50 t_p99 t_cpu < <(run_wrk trending "$API_PORT" "$API_PID")
  printf '%-6s %-10s %12s %10s %10s %12s %10s %10s %12s\n' "$r" nginx "$n_rps" "$n_p50" "$n_p99" "$n_cpu" "1.00x" "" "1.00x"
  printf '%-6s %-10s %12s %10s %10s %12s %10s %10s %12s\n' "$r" bare "$b_rps" "$b_p50" "$b_p99" "$b_cpu" "$(ratio "$b_rps" "$n_rps")" "1.00x" "$(ratio "$n_cpu" "$b_cpu")"
  printf '%-6s %-10s %12s %10s %10s %12s %10s %10s %12s\n' "$r" trending "$t_rps" "$t_p50" "$t_p99" "$t_cpu" "$(ratio "$t_rps" "$n_rps")" "$(ratio "$t_rps" "$b_rps")" "$(ratio "$n_cpu" "$t_cpu")"
done
printf '\nload average after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'goal: trending >= 0.70x nginx requests/s on a core of its own (the CPU vs nginx column; requests/s on a shared core move with other work) and p99 <= 5 ms\n'
