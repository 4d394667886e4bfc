#include "tools/flowsched/stop_signal.h"

#include <signal.h>

namespace flowsched::tools {
namespace {

// A signal handler can only reach static storage; this is the one global.
std::atomic<bool> stop_requested{false};

void OnStopSignal(int /*signal*/) { stop_requested.store(true); }

}  // namespace

const std::atomic<bool>& InstallStopHandlers() {
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGINT, &action, nullptr);
  return stop_requested;
}

}  // namespace flowsched::tools
