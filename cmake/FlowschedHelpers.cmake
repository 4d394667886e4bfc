# flowsched_cc_library(NAME <name> SRCS ... DEPS ...) builds flowsched_<name>
# with the alias flowsched::<name> and our warning set.
# flowsched_cc_test(NAME <name> SRCS ... DEPS ... [LABEL l] [TIMEOUT s]) builds a gtest
# binary and registers each test case with ctest.

set(FLOWSCHED_WARNINGS
    -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Woverloaded-virtual
    -Wold-style-cast -Wimplicit-fallthrough
    # Designated initializers leave defaulted members out on purpose.
    -Wno-missing-field-initializers)

function(flowsched_target_options target)
  target_compile_options(${target} PRIVATE ${FLOWSCHED_WARNINGS})
  if(FLOWSCHED_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}
                                              ${PROJECT_BINARY_DIR}/proto)
endfunction()

function(flowsched_cc_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  add_library(flowsched_${ARG_NAME} STATIC ${ARG_SRCS})
  add_library(flowsched::${ARG_NAME} ALIAS flowsched_${ARG_NAME})
  flowsched_target_options(flowsched_${ARG_NAME})
  flowsched_clang_tidy(flowsched_${ARG_NAME})
  target_link_libraries(flowsched_${ARG_NAME} PUBLIC ${ARG_DEPS})
endfunction()

# With FLOWSCHED_CLANG_TIDY, clang-tidy checks the target's sources as they
# compile (a unity batch at a time), its findings errors (.clang-tidy).
function(flowsched_clang_tidy target)
  if(FLOWSCHED_CLANG_TIDY)
    set_target_properties(${target} PROPERTIES CXX_CLANG_TIDY
                          "${FLOWSCHED_CLANG_TIDY_EXE}")
  endif()
endfunction()

function(flowsched_cc_test)
  cmake_parse_arguments(ARG "" "NAME;TIMEOUT;LABEL" "SRCS;DEPS;LABELS" ${ARGN})
  if(NOT FLOWSCHED_BUILD_TESTS)
    return()
  endif()
  add_executable(${ARG_NAME} ${ARG_SRCS})
  flowsched_target_options(${ARG_NAME})
  flowsched_clang_tidy(${ARG_NAME})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main)
  # A test's own sources at -O1 in Release: the code under test is the
  # libraries', built at -O3; optimising gtest's expansions further costs
  # a quarter more compile time and buys the suite nothing.
  target_compile_options(${ARG_NAME} PRIVATE $<$<CONFIG:Release>:-O1>)
  if(NOT ARG_LABEL AND ARG_LABELS)
    list(JOIN ARG_LABELS "-" ARG_LABEL)  # LABELS a b -> label "a-b"
  endif()
  if(NOT ARG_LABEL)
    set(ARG_LABEL unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  # One label per test binary: gtest_discover_tests cannot pass a list.
  # ctest -L takes a regular expression, so "integration-kafka09" is
  # selected by both -L integration and -L kafka09.
  gtest_discover_tests(${ARG_NAME} DISCOVERY_TIMEOUT 60 TEST_PREFIX "${ARG_NAME}."
                       PROPERTIES LABELS "${ARG_LABEL}" TIMEOUT ${ARG_TIMEOUT})
endfunction()
