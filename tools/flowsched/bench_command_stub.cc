// `flowsched bench` when tools/bench is not built: the solver benchmark
// links LEMON, which is only found with FLOWSCHED_BUILD_TESTS=ON. `bench e2e`
// needs no LEMON and is the real command here too.

#include <iostream>

#include "tools/flowsched/commands.h"

namespace flowsched::tools {

CommandMain AddBenchCommand(CLI::App& app, CommonFlags& flags) {
  auto* bench = app.add_subcommand("bench", "Benchmarks (solver: not built)");
  BenchSubcommand e2e = AddBenchE2eCommand(*bench, flags, app);
  // Accept the real command's shape, `bench solver [flags]`, so the user
  // gets the explanation below rather than a parse error.
  auto* solver =
      bench->add_subcommand("solver", "Solver benchmark (not built)");
  solver->fallthrough(false);  // keep unknown flags here, as extras
  solver->allow_extras();
  solver->prefix_command();
  return [e2e]() {
    if (e2e.app->parsed()) return e2e.main();
    std::cerr << "flowsched bench solver: not built; configure with "
                 "-DFLOWSCHED_BUILD_TESTS=ON (needs LEMON)\n";
    return 2;
  };
}

}  // namespace flowsched::tools
