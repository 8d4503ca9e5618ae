#pragma once
// The query flags, declared once for both fronts: `cpplan` (cli/args.cpp) and `cpplan-gui`
// (gui/args.cpp) add them to their CLI11 apps with the same names, defaults and help, into a
// session::Options that resolve_query / planner_options / framework_choice (session/query/query.h) parse,
// so a bad value is the same one line "flag = value: rule" from either front.
//
// One default differs by front, and the help says so: cpplan-gui does not ask nvidia-smi. Without
// --topology, cpplan plans for the GPUs nvidia-smi lists (--gpus) and their hardware profile
// (--hardware, else h100-sxm); cpplan-gui starts its query panel at kGuiGpus GPUs of kGuiHardware
// (apply_gui_defaults). With --topology both take the topology's GPUs and hardware.

#include <string>
#include <string_view>

#include "session/query/query.h"
#include "session/query/query_fields.h"

namespace CLI {
class App;
class Option;
}

namespace cpplan::session {

// cpplan-gui's query panel without --gpus / --hardware (and without a topology).
inline constexpr int kGuiGpus = 4;
inline constexpr const char* kGuiHardware = kFallbackHardware;

// --gpus --res --frames --model --model-config --hardware --steps --attention-backend --batch
// --text-tokens --runtime --text-encoder --vae --offload-text-encoders --profiles --framework
// --framework-version --topology --topology-file --nodes --num-pipeline-patch
// --pipefusion-warmup-steps --all, into `o` (as text; empty: left out).
void add_query_flags(CLI::App& app, Options& o);
// The fields of `group` (session/query/query_fields.h) on `app`, into `o`.
void add_field_flags(CLI::App& app, Options& o, FieldGroup group);
// The shared field `key`'s flag on `app`, into `target` (a command's own struct), with the table's
// help or `help`.
CLI::Option* add_field_option(CLI::App& app, std::string_view key, std::string& target, const std::string& help = "");

// The names add_query_flags declares, in its order (for tests and docs).
const std::vector<std::string>& query_flag_names();

// cpplan-gui's one front-specific rule: --gpus and --hardware left out, without --topology or
// --topology-file, are kGuiGpus and kGuiHardware (cpplan asks nvidia-smi instead).
void apply_gui_defaults(Options& o);

}  // namespace cpplan::session
