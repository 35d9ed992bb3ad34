#!/usr/bin/env bash
# The second ClickHouse server: shard 2 of the test cluster (infra/local/clickhouse.sh).
# usage: infra/local/clickhouse2.sh install|start|stop|kill|status
CLICKHOUSE_INSTANCE=2 exec "$(dirname "$0")/clickhouse.sh" "$@"
