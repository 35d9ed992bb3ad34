#!/usr/bin/env bash
# Serving benchmark: GET /v1/trending?window=hour&limit=100 from `trending serve` against nginx
# serving the same response bytes as a static file, with the same wrk settings in the same run.
#
#   serving/api/bench/run.sh            # from the repository root
#   DURATION=30s CONNS=64 THREADS=2 ROUNDS=3 serving/api/bench/run.sh
#
# Needs go, nginx and wrk (Debian: apt-get install -y nginx wrk) and curl. Prints a table with
# requests/s, p50 and p99 latency, and trending's requests/s as a ratio of nginx's.
# Goal (issue): ratio >= 0.7 and p99 <= 5 ms at 64 connections.
set -euo pipefail

DURATION=${DURATION:-10s}
CONNS=${CONNS:-64}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-1}
PATH_Q='/v1/trending?window=hour&limit=100'

for tool in go nginx wrk curl; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool not found (apt-get install -y nginx wrk curl)" >&2; exit 1; }
done
ROOT=$(git rev-parse --show-toplevel 2>/dev/null || pwd)
cd "$ROOT"

# free_port prints a loopback port nothing listens on (another process on a fixed port would be
# measured instead of ours).
free_port() {
  local p
  for p in $(shuf -i 20000-40000 -n 200); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  echo "run.sh: no free port" >&2; exit 1
}
API_PORT=${API_PORT:-$(free_port)}
NGINX_PORT=${NGINX_PORT:-$(free_port)}

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
go run ./serving/api/bench/seed -db "$WORK/serving.db"

"$WORK/trending" serve --store "bolt:$WORK/serving.db" --listen "127.0.0.1:$API_PORT" --log-level warn \
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
worker_processes auto;
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
nginx -p "$WORK/nginx" -c "$WORK/nginx.conf" -g 'daemon off;' &
NGINX_PID=$!
PIDS+=("$NGINX_PID")
for _ in $(seq 50); do
  curl -fsS "http://127.0.0.1:$NGINX_PORT$PATH_Q" -o "$WORK/nginx.json" 2>/dev/null && break
  sleep 0.1
done
kill -0 "$NGINX_PID" 2>/dev/null || { echo "run.sh: nginx did not start:" >&2; cat "$WORK/nginx/error.log" >&2; exit 1; }
api_bytes=$(curl -fsS "http://127.0.0.1:$API_PORT$PATH_Q" | wc -c)
nginx_bytes=$(wc -c <"$WORK/nginx.json")
echo "response body: trending $api_bytes bytes, nginx $nginx_bytes bytes" >&2

# run_wrk NAME PORT: prints "req/s p50 p99" (latencies in ms).
run_wrk() {
  local out
  out=$(wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency "http://127.0.0.1:$2$PATH_Q")
  echo "$out" >"$WORK/wrk-$1.txt"
  if grep -q 'Non-2xx' <<<"$out"; then echo "run.sh: $1 answered non-2xx:" >&2; echo "$out" >&2; exit 1; fi
  awk '
    function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
    /Requests\/sec/ { rps = $2 }
    $1 == "50%" { p50 = ms($2) }
    $1 == "99%" { p99 = ms($2) }
    END { printf "%.0f %.3f %.3f\n", rps, p50, p99 }' <<<"$out"
}

printf '\nload average before: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'GET %s, wrk -t%s -c%s -d%s --latency, %s core(s), %s\n\n' "$PATH_Q" "$THREADS" "$CONNS" "$DURATION" "$(nproc)" "$(nginx -v 2>&1 | sed 's/.*: //')"
printf '%-6s %-10s %12s %10s %10s %14s\n' round server 'requests/s' 'p50 ms' 'p99 ms' 'vs nginx'
for r in $(seq "$ROUNDS"); do
  read -r n_rps n_p50 n_p99 < <(run_wrk nginx "$NGINX_PORT")
  read -r t_rps t_p50 t_p99 < <(run_wrk trending "$API_PORT")
  ratio=$(awk -v a="$t_rps" -v b="$n_rps" 'BEGIN { printf "%.2fx", a / b }')
  printf '%-6s %-10s %12s %10s %10s %14s\n' "$r" nginx "$n_rps" "$n_p50" "$n_p99" "1.00x"
  printf '%-6s %-10s %12s %10s %10s %14s\n' "$r" trending "$t_rps" "$t_p50" "$t_p99" "$ratio"
done
printf '\nload average after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'goal: trending >= 0.70x nginx requests/s and p99 <= 5 ms\n'
