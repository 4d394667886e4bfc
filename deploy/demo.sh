#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the
# main job on the embedded default (embedded broker, local RocksDB, a sample
# workload) with a readable summary at the end. Extra arguments go to
# `flowsched demo` (see `build/tools/flowsched/flowsched demo --help`).
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLOWSCHED_BUILD_TESTS=OFF >/dev/null
cmake --build build --target flowsched
exec ./build/tools/flowsched/flowsched demo --data-dir "${FLOWSCHED_DATA_DIR:-flowsched-data}" "$@"
