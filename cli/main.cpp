#include <iostream>

#include "cli/app.h"

// cpplan: plans without LibTorch or Qt; run, probe, bench and report start cpplan-exec.
int main(int argc, char** argv) { return cpplan::cli::run(argc, argv, std::cout, std::cerr); }
