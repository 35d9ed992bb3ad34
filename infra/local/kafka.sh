#!/usr/bin/env bash
# Apache Kafka, KRaft single node (broker + controller), from Maven Central jars, run with java.
# usage: infra/local/kafka.sh install|start|stop|kill|status
SERVICE=kafka
. "$(dirname "$0")/lib.sh"
HERE="$(cd "$(dirname "$0")" && pwd)"
KAFKA_VERSION=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$HERE/kafka/pom.xml")
LIBS="$TRENDING_CACHE/kafka-$KAFKA_VERSION/libs"
DATA="$TRENDING_RUN/kafka-data"

install() {
  command -v java >/dev/null || apt_install openjdk-17-jre-headless
  if [ -f "$LIBS/.complete" ]; then return 0; fi
  command -v mvn >/dev/null || apt_install maven
  say "fetching Kafka $KAFKA_VERSION jars from Maven Central into $LIBS (once, about a minute)"
  mkdir -p "$LIBS"
  mvn -q -B -f "$HERE/kafka/pom.xml" dependency:copy-dependencies \
      -DoutputDirectory="$LIBS" -DincludeScope=runtime >"$TRENDING_RUN/kafka-mvn.log" 2>&1 ||
    { tail -n 40 "$TRENDING_RUN/kafka-mvn.log" >&2; die "maven could not fetch the Kafka jars (log above)"; }
  touch "$LIBS/.complete"
}

start() {
  install
  # Every start, not only services.sh up's: a client redialing a stopped broker on loopback
  # for minutes picks the broker's own port as its source port sooner or later (a TCP
  # self-connect: a 10-minute outage test left 127.0.0.1:49092 -> 127.0.0.1:49092 holding
  # the port, and the broker could not start again). Reserved ports are never picked.
  reserve_ports
  if pid_alive kafka; then say "already running on 127.0.0.1:$KAFKA_PORT"; wait_healthy kafka 90 grep -q "Kafka Server started" "$TRENDING_RUN/kafka.log"; return 0; fi
  mkdir -p "$DATA"
  local props="$TRENDING_RUN/kafka.properties"
  cat >"$props" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$DATA
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
log.retention.hours=168
PROPS
  cat >"$TRENDING_RUN/kafka-log4j2.yaml" <<'LOG'
Configuration:
  Appenders:
    Console:
      name: STDOUT
      PatternLayout:
        Pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: INFO
      AppenderRef:
        - ref: STDOUT
    Logger:
      - name: kafka.request.logger
        level: WARN
      - name: org.apache.kafka.controller
        level: WARN
LOG
  local java_opts=(-Xms256m -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true
    "-Dlog4j2.configurationFile=$TRENDING_RUN/kafka-log4j2.yaml")
  if [ ! -f "$DATA/meta.properties" ]; then
    say "formatting KRaft storage in $DATA (first start)"
    java "${java_opts[@]}" -cp "$LIBS/*" kafka.tools.StorageTool format \
      -t "$(java -cp "$LIBS/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1)" \
      -c "$props" >"$TRENDING_RUN/kafka-format.log" 2>&1 ||
      { tail -n 20 "$TRENDING_RUN/kafka-format.log" >&2; die "kafka storage format failed"; }
  fi
  say "starting Kafka $KAFKA_VERSION on 127.0.0.1:$KAFKA_PORT"
  # Empty the log first: the redirect below truncates it in the background child, and a
  # health check that ran before that read the previous run's "Kafka Server started" (a
  # restart reported healthy in 49 ms while the port still refused connections).
  : >"$TRENDING_RUN/kafka.log"
  nohup java "${java_opts[@]}" -cp "$LIBS/*" kafka.Kafka "$props" >"$TRENDING_RUN/kafka.log" 2>&1 &
  echo $! >"$TRENDING_RUN/kafka.pid"
  wait_healthy kafka 90 grep -q "Kafka Server started" "$TRENDING_RUN/kafka.log"
  wait_healthy kafka 30 port_open "$KAFKA_PORT"
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop_pid kafka ;;
  kill) kill_pid kafka ;;
  status) pid_alive kafka && say "running on 127.0.0.1:$KAFKA_PORT" || { say "stopped"; exit 1; } ;;
  *) echo "usage: $0 install|start|stop|kill|status" >&2; exit 2 ;;
esac
