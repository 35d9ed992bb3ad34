#!/usr/bin/env bash
# ClickHouse from Debian's clickhouse-server package (18.16 on bookworm), with its own data
# directory and config, run as a plain process (no systemd). CLICKHOUSE_INSTANCE=2
# (infra/local/clickhouse2.sh) is the second server: its own ports and data directory. Both
# are the shards of the test cluster $CLICKHOUSE_CLUSTER (remote_servers, one replica each, named NAME,
# ZooKeeper from infra/local/zookeeper.sh), written to NAME-config.d/cluster.xml: a file of
# its own, so a start by an older copy of this script keeps it.
# usage: infra/local/clickhouse.sh install|start|stop|kill|status
. "$(dirname "$0")/lib.sh"
SHARD1_PORT=$CLICKHOUSE_PORT
if [ "${CLICKHOUSE_INSTANCE:-1}" = 2 ]; then
  NAME=clickhouse2 SHARD=02 CLICKHOUSE_PORT=$CLICKHOUSE2_PORT CLICKHOUSE_HTTP_PORT=$CLICKHOUSE2_HTTP_PORT
  CLICKHOUSE_INTERSERVER_PORT=$CLICKHOUSE2_INTERSERVER_PORT
else
  NAME=clickhouse SHARD=01
fi
SERVICE=$NAME
DATA="$TRENDING_RUN/$NAME-data"

install() {
  command -v clickhouse-server >/dev/null || apt_install clickhouse-server
  command -v clickhouse-server >/dev/null || die "clickhouse-server is not on PATH after install"
}

healthy() {
  curl -fsS "http://127.0.0.1:$CLICKHOUSE_HTTP_PORT/ping" | grep -q Ok
}

# cluster_ready: the server knows the test cluster and reaches ZooKeeper.
cluster_ready() {
  curl -fsS "http://127.0.0.1:$CLICKHOUSE_HTTP_PORT/" --data-binary \
    "SELECT count() FROM system.clusters WHERE cluster = '$CLICKHOUSE_CLUSTER'" 2>/dev/null | grep -qv '^0$' &&
    curl -fsS "http://127.0.0.1:$CLICKHOUSE_HTTP_PORT/" --data-binary \
      "SELECT count() FROM system.zookeeper WHERE path = '/'" >/dev/null 2>&1
}

start() {
  install
  command -v curl >/dev/null || apt_install curl
  if pid_alive $NAME; then
    say "already running on 127.0.0.1:$CLICKHOUSE_PORT"; wait_healthy $NAME 60 healthy
    if cluster_ready; then return 0; fi
    # Started by an older copy of this script: without ZooKeeper (read at start only).
    say "restarting to load the cluster configuration ($CLICKHOUSE_CLUSTER, ZooKeeper on $ZOOKEEPER_PORT)"
    stop_pid $NAME
  fi
  mkdir -p "$DATA/tmp" "$DATA/user_files" "$DATA/format_schemas" "$TRENDING_RUN/$NAME-config.d"
  local cfg="$TRENDING_RUN/$NAME-config.xml" users="$TRENDING_RUN/$NAME-users.xml"
  # ClickHouse merges NAME-config.d/*.xml into NAME-config.xml. The cluster, the macros
  # ReplicatedMergeTree paths use ({shard}, {replica}) and ZooKeeper (read at start only).
  cat >"$TRENDING_RUN/$NAME-config.d/cluster.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <interserver_http_port>$CLICKHOUSE_INTERSERVER_PORT</interserver_http_port>
  <zookeeper>
    <node><host>127.0.0.1</host><port>$ZOOKEEPER_PORT</port></node>
  </zookeeper>
  <distributed_ddl>
    <path>/clickhouse/task_queue/ddl</path>
  </distributed_ddl>
  <macros>
    <shard>$SHARD</shard>
    <replica>$NAME</replica>
  </macros>
  <remote_servers>
    <$CLICKHOUSE_CLUSTER>
      <shard><internal_replication>true</internal_replication><replica><host>127.0.0.1</host><port>$SHARD1_PORT</port></replica></shard>
      <shard><internal_replication>true</internal_replication><replica><host>127.0.0.1</host><port>$CLICKHOUSE2_PORT</port></replica></shard>
    </$CLICKHOUSE_CLUSTER>
  </remote_servers>
</yandex>
XML
  cat >"$cfg" <<XML
<?xml version="1.0"?>
<yandex>
  <logger>
    <level>information</level>
    <console>1</console>
  </logger>
  <listen_host>127.0.0.1</listen_host>
  <tcp_port>$CLICKHOUSE_PORT</tcp_port>
  <http_port>$CLICKHOUSE_HTTP_PORT</http_port>
  <path>$DATA/</path>
  <tmp_path>$DATA/tmp/</tmp_path>
  <user_files_path>$DATA/user_files/</user_files_path>
  <format_schema_path>$DATA/format_schemas/</format_schema_path>
  <users_config>$users</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mark_cache_size>268435456</mark_cache_size>
  <uncompressed_cache_size>268435456</uncompressed_cache_size>
  <max_concurrent_queries>100</max_concurrent_queries>
  <mlock_executable>false</mlock_executable>
</yandex>
XML
  cat >"$users" <<'XML'
<?xml version="1.0"?>
<yandex>
  <profiles>
    <default>
      <max_memory_usage>4000000000</max_memory_usage>
      <load_balancing>random</load_balancing>
    </default>
  </profiles>
  <users>
    <default>
      <password></password>
      <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </default>
  </users>
  <quotas>
    <default>
      <interval><duration>3600</duration><queries>0</queries><errors>0</errors>
        <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval>
    </default>
  </quotas>
</yandex>
XML
  say "starting ClickHouse ($(dpkg-query -W -f='${Version}' clickhouse-server 2>/dev/null)) on 127.0.0.1:$CLICKHOUSE_PORT (http $CLICKHOUSE_HTTP_PORT)"
  nohup clickhouse-server --config-file="$cfg" >"$TRENDING_RUN/$NAME.log" 2>&1 &
  echo $! >"$TRENDING_RUN/$NAME.pid"
  wait_healthy $NAME 60 healthy
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop_pid $NAME ;;
  kill) kill_pid $NAME ;;
  status) pid_alive $NAME && say "running on 127.0.0.1:$CLICKHOUSE_PORT" || { say "stopped"; exit 1; } ;;
  *) echo "usage: $0 install|start|stop|kill|status" >&2; exit 2 ;;
esac
