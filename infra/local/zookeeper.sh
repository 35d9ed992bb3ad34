#!/usr/bin/env bash
# Apache ZooKeeper, one standalone server from Maven Central jars, run with java: the
# coordination the two-shard ClickHouse cluster of the tests needs (ReplicatedMergeTree tables
# and ON CLUSTER DDL, `trending migrate --cluster`).
# usage: infra/local/zookeeper.sh install|start|stop|kill|status
SERVICE=zookeeper
. "$(dirname "$0")/lib.sh"
HERE="$(cd "$(dirname "$0")" && pwd)"
ZK_VERSION=$(sed -n 's:.*<zookeeper.version>\(.*\)</zookeeper.version>.*:\1:p' "$HERE/zookeeper/pom.xml")
LIBS="$TRENDING_CACHE/zookeeper-$ZK_VERSION/libs"
DATA="$TRENDING_RUN/zookeeper-data"

install() {
  command -v java >/dev/null || apt_install openjdk-17-jre-headless
  if [ -f "$LIBS/.complete" ]; then return 0; fi
  command -v mvn >/dev/null || apt_install maven
  say "fetching ZooKeeper $ZK_VERSION jars from Maven Central into $LIBS (once)"
  mkdir -p "$LIBS"
  mvn -q -B -f "$HERE/zookeeper/pom.xml" dependency:copy-dependencies \
      -DoutputDirectory="$LIBS" -DincludeScope=runtime >"$TRENDING_RUN/zookeeper-mvn.log" 2>&1 ||
    { tail -n 40 "$TRENDING_RUN/zookeeper-mvn.log" >&2; die "maven could not fetch the ZooKeeper jars (log above)"; }
  touch "$LIBS/.complete"
}

healthy() {
  # "srvr" names the mode only once the server serves requests ("ruok" answers before).
  exec 3<>"/dev/tcp/127.0.0.1/$ZOOKEEPER_PORT" && printf srvr >&3 && grep -q "^Mode: " <&3
}

start() {
  install
  if pid_alive zookeeper; then say "already running on 127.0.0.1:$ZOOKEEPER_PORT"; wait_healthy zookeeper 60 healthy; return 0; fi
  mkdir -p "$DATA"
  local cfg="$TRENDING_RUN/zookeeper.cfg"
  cat >"$cfg" <<CFG
dataDir=$DATA
clientPort=$ZOOKEEPER_PORT
clientPortAddress=127.0.0.1
tickTime=2000
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat
CFG
  say "starting ZooKeeper $ZK_VERSION on 127.0.0.1:$ZOOKEEPER_PORT"
  nohup java -Xmx256m -cp "$LIBS/*" org.apache.zookeeper.server.ZooKeeperServerMain "$cfg" >"$TRENDING_RUN/zookeeper.log" 2>&1 &
  echo $! >"$TRENDING_RUN/zookeeper.pid"
  wait_healthy zookeeper 60 healthy
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop_pid zookeeper ;;
  kill) kill_pid zookeeper ;;
  status) pid_alive zookeeper && say "running on 127.0.0.1:$ZOOKEEPER_PORT" || { say "stopped"; exit 1; } ;;
  *) echo "usage: $0 install|start|stop|kill|status" >&2; exit 2 ;;
esac
