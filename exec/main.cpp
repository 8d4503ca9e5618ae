#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>

#include "exec/commands.h"

// cpplan-exec: `cpplan run|probe|bench|report` start this binary with their own command line.
int main(int argc, char** argv) {
  // LibTorch's CPU tensors come straight from malloc. glibc serves blocks above its mmap
  // threshold (at most 32 MiB) with fresh pages every time: a 32 MiB activation or collective
  // buffer then costs its page faults on every step. Keep large blocks in the heap for reuse.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // `cpplan bench` times LibTorch CPU kernels in this very process: OpenMP must not spin-wait
  // (see launch/launcher.cpp), and libgomp reads its policy once, at load. Start again with it.
  if (argc > 1 && std::strcmp(argv[1], "bench") == 0 && !std::getenv("OMP_WAIT_POLICY")) {
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    execv("/proc/self/exe", argv);  // on failure, measure as we are
  }
  return cpplan::cli::run(argc, argv, std::cout, std::cerr, &cpplan::exec::commands());
}
