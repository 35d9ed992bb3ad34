#!/usr/bin/env bash
# ClickHouse from Debian's clickhouse-server package (18.16 on bookworm), with its own data
# directory and config, run as a plain process (no systemd).
# usage: infra/local/clickhouse.sh install|start|stop|kill|status
SERVICE=clickhouse
. "$(dirname "$0")/lib.sh"
DATA="$TRENDING_RUN/clickhouse-data"

install() {
  command -v clickhouse-server >/dev/null || apt_install clickhouse-server
  command -v clickhouse-server >/dev/null || die "clickhouse-server is not on PATH after install"
}

healthy() {
  curl -fsS "http://127.0.0.1:$CLICKHOUSE_HTTP_PORT/ping" | grep -q Ok
}

start() {
  install
  command -v curl >/dev/null || apt_install curl
  if pid_alive clickhouse; then say "already running on 127.0.0.1:$CLICKHOUSE_PORT"; wait_healthy clickhouse 60 healthy; return 0; fi
  mkdir -p "$DATA/tmp" "$DATA/user_files" "$DATA/format_schemas"
  local cfg="$TRENDING_RUN/clickhouse-config.xml" users="$TRENDING_RUN/clickhouse-users.xml"
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
  nohup clickhouse-server --config-file="$cfg" >"$TRENDING_RUN/clickhouse.log" 2>&1 &
  echo $! >"$TRENDING_RUN/clickhouse.pid"
  wait_healthy clickhouse 60 healthy
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop_pid clickhouse ;;
  kill) kill_pid clickhouse ;;
  status) pid_alive clickhouse && say "running on 127.0.0.1:$CLICKHOUSE_PORT" || { say "stopped"; exit 1; } ;;
  *) echo "usage: $0 install|start|stop|kill|status" >&2; exit 2 ;;
esac
