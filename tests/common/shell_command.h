#pragma once

// Tests that run the built CLI: a shell command's exit code and its
// combined stdout and stderr.

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace flowsched::testing {

struct ShellOutput {
  int exit_code = -1;  // -1: did not start or did not exit normally
  std::string text;    // stdout and stderr
};

inline ShellOutput RunShell(const std::string& command) {
  ShellOutput output;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return output;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
    output.text.append(buffer, n);
  }
  const int status = ::pclose(pipe);
  output.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return output;
}

}  // namespace flowsched::testing
