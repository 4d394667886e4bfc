#!/usr/bin/env bash
# Creates flowsched's topics on a real Kafka cluster with the partition
# counts the services expect (services/bus/topics.cc) and the retention the
# rebuild from the topics needs (services/bus/README.md, "Topic settings"):
# events, ledger and placements keep every record forever, uncompacted.
# Topics that exist already are left alone, but their partition counts are
# checked (exit 1 if one differs). Runs Kafka's own kafka-topics.sh.
#
#   create-topics.sh --bootstrap-server kafka-0:9092 [--replication-factor 3]
#   create-topics.sh --zookeeper zk-0:2181        (Kafka before 2.2)
#
# Options, or the environment variables in brackets:
#   --bootstrap-server HOST:PORT  [KAFKA_BOOTSTRAP_SERVER]
#   --zookeeper HOST:PORT         [KAFKA_ZOOKEEPER]  one of the two is needed
#   --command-config FILE         [KAFKA_COMMAND_CONFIG] client properties
#                                 (TLS, SASL); with --bootstrap-server only
#   --prefix PREFIX               [FLOWSCHED_TOPIC_PREFIX] default flowsched.
#   --replication-factor N        [REPLICATION_FACTOR] default 3
#   --min-insync-replicas N       [MIN_INSYNC_REPLICAS] default 2 (1 when the
#                                 replication factor is below 3)
#   --dry-run                     [DRY_RUN=1] print the commands only
#   [KAFKA_TOPICS]                the kafka-topics.sh to run (default: the
#                                 one on PATH)
#   [ROUNDS_RETENTION_MS]         default 86400000: a solver worker that
#                                 missed rounds asks for a snapshot
#   [DEAD_LETTERS_RETENTION_MS]   default -1 (forever)
set -euo pipefail

bootstrap=${KAFKA_BOOTSTRAP_SERVER:-}
zookeeper=${KAFKA_ZOOKEEPER:-}
command_config=${KAFKA_COMMAND_CONFIG:-}
prefix=${FLOWSCHED_TOPIC_PREFIX:-flowsched.}
replication=${REPLICATION_FACTOR:-3}
min_insync=${MIN_INSYNC_REPLICAS:-}
dry_run=${DRY_RUN:-0}
kafka_topics=${KAFKA_TOPICS:-kafka-topics.sh}
rounds_retention_ms=${ROUNDS_RETENTION_MS:-86400000}
dead_letters_retention_ms=${DEAD_LETTERS_RETENTION_MS:--1}

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --bootstrap-server) bootstrap=${2:?}; shift 2 ;;
    --zookeeper) zookeeper=${2:?}; shift 2 ;;
    --command-config) command_config=${2:?}; shift 2 ;;
    --prefix) prefix=${2?}; shift 2 ;;
    --replication-factor) replication=${2:?}; shift 2 ;;
    --min-insync-replicas) min_insync=${2:?}; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -h|--help) usage ;;
    *) echo "create-topics: unknown option $1" >&2; usage ;;
  esac
done

if [ -n "$bootstrap" ]; then
  connect=(--bootstrap-server "$bootstrap")
  if [ -n "$command_config" ]; then connect+=(--command-config "$command_config"); fi
elif [ -n "$zookeeper" ]; then
  connect=(--zookeeper "$zookeeper")
else
  echo "create-topics: give --bootstrap-server or --zookeeper (or KAFKA_BOOTSTRAP_SERVER, KAFKA_ZOOKEEPER)" >&2
  exit 2
fi
case "$replication" in ''|*[!0-9]*|0)
  echo "create-topics: the replication factor must be a positive integer, got '$replication'" >&2; exit 2 ;;
esac
if [ -z "$min_insync" ]; then
  if [ "$replication" -ge 3 ]; then min_insync=2; else min_insync=1; fi
fi

keep_forever="retention.ms=-1 retention.bytes=-1 cleanup.policy=delete"
# name partitions settings; the names and counts of services/bus/topics.cc.
topics=(
  "events 4 $keep_forever"
  "rounds 1 retention.ms=$rounds_retention_ms retention.bytes=-1 cleanup.policy=delete"
  "placements 4 $keep_forever"
  "dead-letters 1 retention.ms=$dead_letters_retention_ms retention.bytes=-1 cleanup.policy=delete"
  "ledger 1 $keep_forever"
  "leader 1 cleanup.policy=delete"
)

# The partition count of an existing topic, or nothing. (--describe, not
# --if-not-exists: Kafka 0.9's kafka-topics.sh has no --if-not-exists.)
partitions_of() {
  "$kafka_topics" "${connect[@]}" --describe --topic "$1" 2>/dev/null |
    sed -n 's/.*PartitionCount: *\([0-9][0-9]*\).*/\1/p' | head -n 1 || true
}

failed=0
for spec in "${topics[@]}"; do
  read -r name partitions settings <<<"$spec"
  topic="$prefix$name"
  args=(--create --topic "$topic" --partitions "$partitions"
        --replication-factor "$replication" --config "min.insync.replicas=$min_insync")
  for setting in $settings; do args+=(--config "$setting"); done
  if [ "$dry_run" = 1 ]; then
    printf '%q ' "$kafka_topics" "${connect[@]}" "${args[@]}"; echo
    continue
  fi
  existing=$(partitions_of "$topic")
  if [ -z "$existing" ]; then
    "$kafka_topics" "${connect[@]}" "${args[@]}" >/dev/null
    existing=$(partitions_of "$topic")
    verb=created
  else
    verb=exists
  fi
  # An existing topic is not changed: a different partition count would
  # send keys to other partitions than the services expect.
  if [ "$existing" != "$partitions" ]; then
    echo "create-topics: $topic has ${existing:-no} partitions; flowsched needs $partitions" >&2
    failed=1
  else
    echo "create-topics: $topic $verb ($partitions partitions, $settings)"
  fi
done
exit $failed
