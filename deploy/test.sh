#!/usr/bin/env bash
# The README's second command: install what is missing, check that every C++
# file is clang-formatted (check-format.sh), build, and run the whole test
# suite twice: a GCC Release build, then a clang build under AddressSanitizer
# and UndefinedBehaviorSanitizer whose sources also pass clang-tidy
# (.clang-tidy). Both compilers treat warnings as errors. Unit tests and the
# integration tests (real processes on 127.0.0.1) both run (the sanitizer
# pass draws a quarter of the random cases of the property tests,
# tests/common/sanitizer_scale.h, and skips the Kafka 0.9 ones); finally the
# libFuzzer target of the clang tree, over event decoding and applying, runs
# for 60 s. `ctest -L unit` or `-L integration` inside a build directory runs
# one kind.
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/install-deps.sh
jobs=$(nproc)

echo "== Style: clang-format"
./deploy/check-format.sh
# CI builds each tree once from scratch, so it compiles each target's sources
# in unity batches (about half the compile CPU). Developers' default builds
# stay one translation unit per file, which keeps incremental rebuilds fast.
unity=(-DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8)

echo "== Release build and tests"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLOWSCHED_BUILD_TESTS=ON \
  "${unity[@]}" >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build -j "$jobs" --output-on-failure -LE long-crash

echo "== clang build with address,undefined sanitizers and clang-tidy, tests"
# -O1, as the sanitizers' documentation advises: the suite takes well under
# half its -O0 time (docs/2026-11-27-ci-clang-tree.md), and assert() stays on.
cmake -S . -B build-clang -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
  -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-g -O1" \
  -DFLOWSCHED_SANITIZE=address,undefined -DFLOWSCHED_CLANG_TIDY=ON -DFLOWSCHED_FUZZ=ON \
  -DFLOWSCHED_BUILD_TESTS=ON "${unity[@]}" >/dev/null
cmake --build build-clang -j "$jobs"
# The Kafka 0.9 compatibility tests (a JVM broker; one is a shell script)
# ran in the Release pass; here they would add minutes of waiting and no
# code the embedded-broker tests do not run under the sanitizers.
ctest --test-dir build-clang -j "$jobs" --output-on-failure -LE 'long-crash|kafka09'

echo "== libFuzzer target (clang tree), run for a bounded time"
corpus=$(mktemp -d)
cp tests/fuzz/corpus/* "$corpus/"
build-clang/tests/fuzz/event_fuzzer -max_total_time="${FLOWSCHED_FUZZ_SECONDS:-60}" \
  -print_final_stats=1 "$corpus" 2>&1 | tail -n 6
rm -rf "$corpus"
