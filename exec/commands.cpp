#include "exec/commands.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <ostream>

#include "exec/machine.h"
#include "session/query/query.h"

namespace cpplan::exec {

int fingerprint_command(const std::string& device, std::ostream& out) {
  if (!device.empty() && device != "cpu" && device != "cuda")
    throw session::InvalidInput{fmt::format("--device = {}: must be cpu or cuda", device)};
  const bool cuda = device.empty() ? local_is_cuda() : device == "cuda";
  out << session::machine_json(machine(cuda)) << '\n';
  return cli::kExitOk;
}

const cli::Commands& commands() {
  static const cli::Commands handlers{
      .run = run_command,
      .probe = probe_command,
      .bench = bench_command,
#ifdef CPPLAN_HAVE_REPORT
      .report = report_command,
#else
      .report = nullptr,
#endif
      .fingerprint = fingerprint_command,
  };
  return handlers;
}

}  // namespace cpplan::exec
