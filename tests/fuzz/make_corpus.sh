#!/usr/bin/env bash
# Writes the seed corpus: single events and one sequence, encoded from
# protobuf text format with protoc.
set -euo pipefail
cd "$(dirname "$0")"
proto_dir=../../proto
enc() { protoc --proto_path="$proto_dir" --encode=flowsched.v1.ClusterEvent \
          flowsched/v1/events.proto; }
mkdir -p corpus
echo 'event_id: "m1" machine_added { machine_id: 1 rack: "r1" task_slots: 2 capacity { cpu_millis: 4000 memory_bytes: 8000000000 } labels { key: "zone" value: "a" } }' | enc > corpus/machine_added
echo 'event_id: "j1" job_submitted { job_id: 7 name: "etl" task_count: 3 tasks { task_id: 71 request { cpu_millis: 500 } } tasks { task_id: 72 } tasks { task_id: 73 input { machine_id: 1 bytes: 1000 } input { rack: "r1" bytes: 5 } } }' | enc > corpus/job_submitted
echo 'task_finished { job_id: 7 task_id: 71 }' | enc > corpus/task_finished
echo 'task_failed { job_id: 7 task_id: 72 reason: "oom" }' | enc > corpus/task_failed
echo 'machine_failed { machine_id: 1 }' | enc > corpus/machine_failed
echo 'task_submitted { job_id: 7 task { task_id: 74 } }' | enc > corpus/task_submitted
{ cat corpus/machine_added; printf '\xff\x00'; cat corpus/job_submitted; printf '\xff\x00';
  cat corpus/task_finished; printf '\xff\x00'; cat corpus/task_submitted; printf '\xff\x00';
  cat corpus/machine_failed; } > corpus/sequence
