# Every dependency is a Debian 12 package installed by deploy/install-deps.sh.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(Protobuf REQUIRED)
find_package(absl REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(RocksDB CONFIG REQUIRED)
# prometheus-cpp-dev: core metrics; its config also finds civetweb, the
# HTTP server of services/metrics.
find_package(prometheus-cpp CONFIG REQUIRED)
pkg_check_modules(RDKAFKA REQUIRED IMPORTED_TARGET rdkafka)
pkg_check_modules(RDKAFKAXX REQUIRED IMPORTED_TARGET rdkafka++)
# The configuration file of tools/flowsched/config (libyaml-cpp-dev 0.7).
find_package(yaml-cpp REQUIRED)
find_package(CLI11 CONFIG QUIET)
if(NOT CLI11_FOUND)
  # Debian's libcli11-dev ships the header only; it has no CMake package.
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
endif()
if(FLOWSCHED_BUILD_TESTS)
  find_package(GTest REQUIRED)
  # LEMON is the correctness oracle in tests and the speed peer in benchmarks,
  # never a production dependency.
  find_package(lemon CONFIG REQUIRED)
  add_library(flowsched_lemon INTERFACE)
  target_include_directories(flowsched_lemon SYSTEM INTERFACE ${LEMON_INCLUDE_DIRS})
  target_link_libraries(flowsched_lemon INTERFACE ${LEMON_LIBRARIES})
  add_library(flowsched::lemon ALIAS flowsched_lemon)
endif()
