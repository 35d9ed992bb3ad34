#!/usr/bin/env bash
# The Flink side of `make bench-peers`: fetches Apache Flink (flink/pom.xml: the Table API,
# planner, Kafka connector and JSON format) from Maven Central once into ~/.cache/trending,
# builds the job offline, and runs it in local execution (one JVM, a MiniCluster).
# usage: infra/bench/peers/flink.sh install|build|run BOOTSTRAP TOPIC GROUP PARALLELISM K LATENESS_S OUT.csv
# FLINK_JAVA_OPTS adds JVM options (default none: the JVM's default heap, a quarter of RAM).
SERVICE=flink-peer
. "$(dirname "$0")/../../local/lib.sh"
HERE="$(cd "$(dirname "$0")" && pwd)"
POM="$HERE/flink/pom.xml"
FLINK_VERSION=$(sed -n 's:.*<flink.version>\(.*\)</flink.version>.*:\1:p' "$POM")
LIBS="$TRENDING_CACHE/flink-$FLINK_VERSION/libs"
BUILD="$TRENDING_CACHE/flink-$FLINK_VERSION/job"

install() {
  command -v javac >/dev/null || apt_install openjdk-17-jdk-headless
  command -v mvn >/dev/null || apt_install maven
  if [ -f "$LIBS/.complete" ]; then return 0; fi
  say "fetching Flink $FLINK_VERSION jars from Maven Central into $LIBS (once, about a minute)"
  mkdir -p "$LIBS"
  mvn -q -B -f "$POM" dependency:copy-dependencies -DoutputDirectory="$LIBS" -DincludeScope=runtime \
      >"$TRENDING_RUN/flink-mvn.log" 2>&1 ||
    { tail -n 40 "$TRENDING_RUN/flink-mvn.log" >&2; die "maven could not fetch the Flink jars (log above)"; }
  # The plugins package needs, fetched once too, so build can run offline.
  mvn -q -B -f "$POM" -Dpeers.build="$BUILD" package >>"$TRENDING_RUN/flink-mvn.log" 2>&1 ||
    { tail -n 40 "$TRENDING_RUN/flink-mvn.log" >&2; die "maven could not build the Flink job (log above)"; }
  touch "$LIBS/.complete"
}

build() {
  install
  mvn -q -o -B -f "$POM" -Dpeers.build="$BUILD" package >"$TRENDING_RUN/flink-build.log" 2>&1 ||
    { tail -n 40 "$TRENDING_RUN/flink-build.log" >&2; die "the Flink job did not build (log above)"; }
}

run() {
  [ $# -eq 7 ] || die "usage: $0 run BOOTSTRAP TOPIC GROUP PARALLELISM K LATENESS_S OUT.csv"
  # Built by `build` beforehand, so a measured run is the JVM alone.
  [ -f "$BUILD/flink-peer-1.jar" ] || die "the job is not built: $0 build"
  cat >"$TRENDING_RUN/flink-log4j2.properties" <<'LOG'
rootLogger.level = WARN
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d %p %c{1} %m%n
LOG
  # The module openings Flink's own config.yaml passes on Java 17 (env.java.opts.all).
  local opens=()
  for m in java.lang java.net java.io java.nio sun.nio.ch java.lang.reflect java.text java.time \
      java.util java.util.concurrent java.util.concurrent.atomic java.util.concurrent.locks; do
    opens+=("--add-opens=java.base/$m=ALL-UNNAMED")
  done
  # exec: the measuring parent's child is the JVM itself.
  # shellcheck disable=SC2086
  exec java ${FLINK_JAVA_OPTS:-} "${opens[@]}" --add-exports=java.base/sun.net.util=ALL-UNNAMED \
    "-Dlog4j2.configurationFile=$TRENDING_RUN/flink-log4j2.properties" \
    -cp "$BUILD/flink-peer-1.jar:$LIBS/*" trending.peers.WindowTopN "$@"
}

case "${1:-}" in
  install) install ;;
  build) build ;;
  run) shift; run "$@" ;;
  *) echo "usage: $0 install|build|run BOOTSTRAP TOPIC GROUP PARALLELISM K LATENESS_S OUT.csv" >&2; exit 2 ;;
esac
