#!/usr/bin/env bash
# MinIO, built once with `go install` at a pinned version (about 5 minutes on two cores) and
# cached in $TRENDING_CACHE/bin.
# usage: infra/local/minio.sh install|start|stop|kill|status
SERVICE=minio
. "$(dirname "$0")/lib.sh"
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
BIN="$TRENDING_CACHE/bin/minio-$MINIO_VERSION"
DATA="$TRENDING_RUN/minio-data"
export MINIO_ROOT_USER="${MINIO_ROOT_USER:-trending}"
export MINIO_ROOT_PASSWORD="${MINIO_ROOT_PASSWORD:-trending-secret}"

install() {
  [ -x "$BIN" ] && return 0
  command -v go >/dev/null || die "go is not on PATH: install Go 1.26 (https://go.dev/dl) to build MinIO"
  say "building MinIO $MINIO_VERSION with go install (once, about 5 minutes on two cores)"
  local tmp; tmp=$(mktemp -d)
  if ! GOBIN="$tmp" GOFLAGS=-mod=mod go install "github.com/minio/minio@$MINIO_VERSION" >"$TRENDING_RUN/minio-build.log" 2>&1; then
    tail -n 40 "$TRENDING_RUN/minio-build.log" >&2; rm -rf "$tmp"; die "go install minio failed (log above)"
  fi
  mkdir -p "$(dirname "$BIN")"
  mv "$tmp/minio" "$BIN"; rm -rf "$tmp"
}

healthy() { curl -fsS "http://127.0.0.1:$MINIO_PORT/minio/health/live"; }

start() {
  install
  command -v curl >/dev/null || apt_install curl
  if pid_alive minio; then say "already running on 127.0.0.1:$MINIO_PORT"; wait_healthy minio 60 healthy; return 0; fi
  mkdir -p "$DATA"
  say "starting MinIO on 127.0.0.1:$MINIO_PORT (console $MINIO_CONSOLE_PORT, user $MINIO_ROOT_USER)"
  MINIO_BROWSER=off nohup "$BIN" server "$DATA" --quiet \
    --address "127.0.0.1:$MINIO_PORT" --console-address "127.0.0.1:$MINIO_CONSOLE_PORT" \
    >"$TRENDING_RUN/minio.log" 2>&1 &
  echo $! >"$TRENDING_RUN/minio.pid"
  wait_healthy minio 60 healthy
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop_pid minio ;;
  kill) kill_pid minio ;;
  status) pid_alive minio && say "running on 127.0.0.1:$MINIO_PORT" || { say "stopped"; exit 1; } ;;
  *) echo "usage: $0 install|start|stop|kill|status" >&2; exit 2 ;;
esac
