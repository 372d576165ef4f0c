#pragma once
// Runs a shell command for end-to-end tests of the real binaries: exit code and output (stdout
// and whatever the command redirects into it).

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace gpupool::testing {

struct Outcome {
  int code = -1;  // exit code; -1 when the command could not run or was killed
  std::string out;
};

inline Outcome RunCommand(const std::string& command) {
  Outcome outcome;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return outcome;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) outcome.out.append(buffer, n);
  const int status = pclose(pipe);
  outcome.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

}  // namespace gpupool::testing
