#include <iostream>

#include "cli/app.h"

int main(int argc, char** argv) { return cpplan::cli::run(argc, argv, std::cout, std::cerr); }
