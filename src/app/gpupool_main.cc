// The `gpupool` binary: the CLI (cli/app.h) with `gpupool serve` (app/serve_command.h).
#include "app/serve_command.h"
#include "cli/app.h"

int main(int argc, char** argv) {
  return gpupool::cli::RunCli(argc, argv, gpupool::app::AddServeSubcommand);
}
