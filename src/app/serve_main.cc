// gpupool-serve: the server alone (`gpupool serve` without the rest of the CLI), used by the
// server's process-level tests and benchmarks.
#include <CLI/CLI.hpp>

#include "app/serve_command.h"

int main(int argc, char** argv) {
  CLI::App app{"gpupool-serve: the gpupool HTTP API server", "gpupool-serve"};
  app.require_subcommand(1);
  int exit_code = -1;
  gpupool::app::AddServeSubcommand(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return exit_code < 0 ? 2 : exit_code;
}
