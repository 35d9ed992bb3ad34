#!/usr/bin/env bash
# Installs (cached) and starts, or stops, every real server the integration tests use, and
# prints the environment the tests read. For fault tests (internal/itest.Stop, Kill, Start):
# `stop NAME` stops one server (kafka, minio, zookeeper, clickhouse or clickhouse2) with SIGTERM, `kill NAME` with
# SIGKILL (a crash), and `start NAME` restarts it on the same ports and data directory,
# returning only once it is healthy again.
# usage: infra/local/services.sh up|down|status|env|clean|stop NAME|kill NAME|start NAME
SERVICE=services
. "$(dirname "$0")/lib.sh"
HERE="$(cd "$(dirname "$0")" && pwd)"
# ZooKeeper before the two ClickHouse servers of the test cluster, which read it at start.
ALL=(kafka minio zookeeper clickhouse clickhouse2)

env_lines() {
  cat <<ENV
export TRENDING_IT_KAFKA=127.0.0.1:$KAFKA_PORT
export TRENDING_IT_S3=http://127.0.0.1:$MINIO_PORT
export TRENDING_IT_S3_ACCESS_KEY=${MINIO_ROOT_USER:-trending}
export TRENDING_IT_S3_SECRET_KEY=${MINIO_ROOT_PASSWORD:-trending-secret}
export TRENDING_IT_CLICKHOUSE=127.0.0.1:$CLICKHOUSE_PORT
export TRENDING_IT_CLICKHOUSE_CLUSTER=$CLICKHOUSE_CLUSTER
ENV
}

case "${1:-}" in
  up)
    # Install first (the slow, cached part), then start; a failure stops the ones started.
    for s in "${ALL[@]}"; do "$HERE/$s.sh" install; done
    reserve_ports
    for s in "${ALL[@]}"; do
      "$HERE/$s.sh" start || { "$0" down; exit 1; }
    done
    env_lines >"$TRENDING_RUN/env.sh"
    say "all up; environment in $TRENDING_RUN/env.sh" ;;
  down) for s in "${ALL[@]}"; do "$HERE/$s.sh" stop || true; done ;;
  status) rc=0; for s in "${ALL[@]}"; do "$HERE/$s.sh" status || rc=1; done; exit $rc ;;
  env) env_lines ;;
  stop|kill|start)
    name="${2:-}"
    case " ${ALL[*]} " in *" $name "*) ;; *) echo "usage: $0 $1 kafka|minio|zookeeper|clickhouse|clickhouse2" >&2; exit 2 ;; esac
    # One stop or start of a server at a time, across processes (tests of several packages).
    if command -v flock >/dev/null; then exec 9>"$TRENDING_RUN/$name.lock"; flock 9; fi
    # The lock is this shell's: a server started here must not inherit it (a JVM keeps the
    # descriptor open, which held every later stop or start of Kafka forever).
    "$HERE/$name.sh" "$1" 9>&- ;;
  clean) "$0" down; rm -rf "$TRENDING_RUN"; say "removed $TRENDING_RUN" ;;
  *) echo "usage: $0 up|down|status|env|clean|stop NAME|kill NAME|start NAME" >&2; exit 2 ;;
esac
