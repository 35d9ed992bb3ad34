#!/usr/bin/env bash
# Shared helpers for the local service scripts. Sourced, never run.
#
# Two directories:
#   TRENDING_CACHE  installs (jars, binaries): kept across runs, so a second `make test` is warm.
#   TRENDING_RUN    data, logs and pid files of the running servers.
set -euo pipefail

TRENDING_CACHE="${TRENDING_CACHE:-$HOME/.cache/trending}"
TRENDING_RUN="${TRENDING_RUN:-${TMPDIR:-/tmp}/trending-services}"
mkdir -p "$TRENDING_CACHE" "$TRENDING_RUN"

# Fixed loopback ports (documented in README.md "Ports").
KAFKA_PORT="${KAFKA_PORT:-39092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-39093}"
MINIO_PORT="${MINIO_PORT:-39000}"
MINIO_CONSOLE_PORT="${MINIO_CONSOLE_PORT:-39001}"
CLICKHOUSE_PORT="${CLICKHOUSE_PORT:-39100}"
CLICKHOUSE_HTTP_PORT="${CLICKHOUSE_HTTP_PORT:-39123}"
# The second ClickHouse server (shard 2 of the test cluster) and the ZooKeeper both use.
CLICKHOUSE2_PORT="${CLICKHOUSE2_PORT:-39101}"
CLICKHOUSE2_HTTP_PORT="${CLICKHOUSE2_HTTP_PORT:-39124}"
ZOOKEEPER_PORT="${ZOOKEEPER_PORT:-39181}"
# Where each ClickHouse server serves its parts to the other replicas of a table.
CLICKHOUSE_INTERSERVER_PORT="${CLICKHOUSE_INTERSERVER_PORT:-39109}"
CLICKHOUSE2_INTERSERVER_PORT="${CLICKHOUSE2_INTERSERVER_PORT:-39110}"
# The two-shard cluster over both ClickHouse servers (remote_servers), for `migrate --cluster`.
CLICKHOUSE_CLUSTER="${CLICKHOUSE_CLUSTER:-trending_2shards}"

# reserve_ports: the fixed ports above lie in Linux's ephemeral range (32768-60999), so an
# outgoing connection of another process can take one of them as its local port just before
# its server starts ("Address already in use: 127.0.0.1:39100", seen once at a first start).
# Reserving them keeps the kernel from handing them out; it needs root, and without it the
# servers start as before.
reserve_ports() {
  local f=/proc/sys/net/ipv4/ip_local_reserved_ports cur want p
  [ -w "$f" ] || return 0
  cur=$(cat "$f")
  want=$cur
  for p in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT" "$MINIO_PORT" "$MINIO_CONSOLE_PORT" "$CLICKHOUSE_PORT" \
    "$CLICKHOUSE_HTTP_PORT" "$CLICKHOUSE2_PORT" "$CLICKHOUSE2_HTTP_PORT" "$ZOOKEEPER_PORT" \
    "$CLICKHOUSE_INTERSERVER_PORT" "$CLICKHOUSE2_INTERSERVER_PORT"; do
    case ",$cur," in *",$p,"*) ;; *) want="${want:+$want,}$p" ;; esac
  done
  [ "$want" = "$cur" ] || echo "$want" >"$f" 2>/dev/null || true
}

say() { printf '[%s] %s\n' "${SERVICE:-services}" "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

# need_root_apt PKG...: installs Debian packages when missing, or explains what to install.
apt_install() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    die "missing Debian packages: ${missing[*]}; install them (apt-get install ${missing[*]}) and retry"
  fi
  say "installing ${missing[*]} with apt-get (once)"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >"$TRENDING_RUN/apt.log" 2>&1; then
    apt-get update -q >>"$TRENDING_RUN/apt.log" 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >>"$TRENDING_RUN/apt.log" 2>&1 ||
      { tail -n 30 "$TRENDING_RUN/apt.log" >&2; die "apt-get install ${missing[*]} failed (log above)"; }
  fi
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# pid_alive NAME: true when the pid file exists and its process runs.
pid_alive() {
  local f="$TRENDING_RUN/$1.pid"
  [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null
}

# wait_healthy NAME SECONDS CHECK...: polls CHECK until it succeeds; on timeout or when the
# process died, prints the tail of its log and fails.
wait_healthy() {
  local name=$1 secs=$2; shift 2
  local deadline=$((SECONDS + secs))
  while [ $SECONDS -lt $deadline ]; do
    if "$@" >/dev/null 2>&1; then say "healthy"; return 0; fi
    if ! pid_alive "$name"; then
      say "process exited during start; last lines of $TRENDING_RUN/$name.log:"
      tail -n 60 "$TRENDING_RUN/$name.log" >&2 || true
      die "$name failed to start"
    fi
    sleep 0.5
  done
  say "not healthy after ${secs}s; last lines of $TRENDING_RUN/$name.log:"
  tail -n 60 "$TRENDING_RUN/$name.log" >&2 || true
  die "$name did not become healthy"
}

# stop_pid NAME: SIGTERM, wait up to 20 s, then SIGKILL.
stop_pid() {
  local name=$1 f="$TRENDING_RUN/$1.pid"
  if ! pid_alive "$name"; then rm -f "$f"; say "not running"; return 0; fi
  local pid; pid=$(cat "$f")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$f"
  say "stopped"
}

# kill_pid NAME: SIGKILL (a crash: no shutdown, nothing flushed) and wait until it is gone.
kill_pid() {
  local name=$1 f="$TRENDING_RUN/$1.pid"
  if ! pid_alive "$name"; then rm -f "$f"; say "not running"; return 0; fi
  local pid; pid=$(cat "$f")
  kill -9 "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  rm -f "$f"
  say "killed"
}
