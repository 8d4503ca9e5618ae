#pragma once
// Loads and validates the model and hardware profiles (TOML, schema in docs/profiles.md).
// Every error names the file, the field, its value and the rule.

#include <array>
#include <optional>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "core/class_spec.h"
#include "core/framework.h"
#include "core/hardware.h"
#include "core/model.h"
#include "core/fit.h"
#include "core/lazy_profile.h"
#include "core/result.h"
#include "core/runtime.h"
#include "core/topology.h"

namespace cpplan {

// Parses one file. `path` is used for reading and in messages; the profile's `name` must equal
// the file's stem so that names and files cannot disagree.
Result<ModelProfile> load_model_profile(const std::string& path);
Result<HardwareProfile> load_hardware_profile(const std::string& path);
// The same on a file's text already read; `path` names it in messages and gives the stem.
Result<ModelProfile> parse_model_profile(std::string_view text, const std::string& path);
Result<HardwareProfile> parse_hardware_profile(std::string_view text, const std::string& path);
// The profile as a models/*.toml file that load_model_profile reads back to the same profile
// (core/model_toml.cpp).
std::string model_profile_toml(const ModelProfile& m);
Result<RuntimeProfile> load_runtime_profile(const std::string& path);
Result<RuntimeProfile> parse_runtime_profile(std::string_view text, const std::string& path);

// All profiles of a search path. Each directory holds models/*.toml, hardware/*.toml,
// topologies/*.toml, runtimes/*.toml and fits/*.toml; a later directory's profile replaces an
// earlier one of the same name. Every fit is applied, in load order, to the runtimes and hardware
// profiles it names (unless `apply_fits` is off: the priors, as a fit starts from them).
//
// load() lists the files and reads the fits; every other file is parsed when its profile is first
// asked for (find_*, model(), ...; a listing such as models() parses its whole kind), so that a
// query parses the few profiles it uses. A broken file's error comes back where its profile is
// asked for by name (model(), hardware(), ..., frameworks_for_query); find_* give null for it and
// the listings leave it out; validate() parses every file and returns the first error, as
// load() with `validate_all` does. Lookups are thread-safe on a const catalog.
struct CatalogOptions {
  bool apply_fits = true;
  bool validate_all = false;  // parse and check every file in load() (cpplan list, validation)
};

class ProfileCatalog {
 public:
  using LoadOptions = CatalogOptions;
  static Result<ProfileCatalog> load(const std::vector<std::string>& directories) {
    return load(directories, CatalogOptions{});
  }
  static Result<ProfileCatalog> load(const std::vector<std::string>& directories, const CatalogOptions& options);
  // Parses every profile file not parsed yet and checks it; the first error in load order
  // (models, hardware, topologies, runtimes, frameworks; each in file order).
  Result<bool> validate() const;

  const ModelProfile* find_model(std::string_view name) const;
  const HardwareProfile* find_hardware(std::string_view name) const;
  // As find_*, but an unknown name is an error that lists the closest names, and a broken file
  // is its parse error.
  Result<const ModelProfile*> model(std::string_view name) const;
  Result<const HardwareProfile*> hardware(std::string_view name) const;
  const Topology* find_topology(std::string_view name) const;
  Result<const Topology*> topology(std::string_view name) const;  // "--topology = x: unknown profile; ..."
  // A user's topology file (--topology-file), validated like the built-ins: its hardware must
  // name a profile of this catalog.
  Result<Topology> load_topology_file(const std::string& path) const;

  ProfileList<ModelProfile> models() const;
  // Adds `m`, replacing a profile of the same name (a derived profile, e.g. --model-config's);
  // pointers to the other profiles stay valid.
  void add_model(ModelProfile m);
  ProfileList<HardwareProfile> hardware_profiles() const;
  // The names of every file of a kind (parsed or not), in catalog order.
  std::vector<std::string> model_names() const;
  std::vector<std::string> hardware_names() const;
  ProfileList<Topology> topologies() const;
  std::vector<std::string> topology_names() const;
  const RuntimeProfile* find_runtime(std::string_view name) const;
  Result<const RuntimeProfile*> runtime(std::string_view name) const;  // "--runtime = x: unknown profile; ..."
  ProfileList<RuntimeProfile> runtimes() const;
  std::vector<std::string> runtime_names() const;
  const std::deque<RuntimeFit>& fits() const { return fits_; }
  // kernels.toml: where each attention kernel runs and how it uses a GPU's resources, the fused
  // elementwise kinds; every hardware profile of this catalog carries it.
  const KernelTable& kernels() const { return kernels_; }
  // frameworks/*.toml: what each framework runs; a framework's default file is named after it
  // ("diffusers", "xdit", "cache-dit"), older layouts after their version ("xdit-2025").
  const FrameworkProfile* find_framework(std::string_view name) const;
  Result<const FrameworkProfile*> framework_profile(std::string_view name) const;
  ProfileList<FrameworkProfile> frameworks() const;
  std::vector<std::string> framework_names() const;
  // Each framework's file: its default (named after it), or for a framework that `versions` names
  // a file of (e.g. "xdit-2025"), that one; an error names an unknown file, or one of no framework,
  // or a default file that does not parse.
  Result<std::array<const FrameworkProfile*, kFrameworkCount>> frameworks_for_query(
      const std::vector<std::string>& versions = {}) const;
  // classes/<ClassName>.toml of the search path (the last directory that has it), read when asked:
  // a query that reads no diffusers config parses none of them. An unknown class lists the known.
  Result<ClassSpec> class_spec(std::string_view class_name) const;
  std::vector<std::string> class_names() const;  // every class file's class, sorted

  // The profile whose every `match` substring is in `gpu_name` (as nvidia-smi prints it); among
  // several, the one whose capacity is closest to `memory_mib` (an RTX 4090 with 24 or 48 GB).
  const HardwareProfile* match_gpu(std::string_view gpu_name, double memory_mib) const;

 private:
  // Each parse_* reads one file of its kind: the profile with the fits applied (hardware,
  // runtimes) or checked against the catalog's names (topologies, frameworks).
  Result<ModelProfile> parse_model(const std::string& path) const;
  Result<HardwareProfile> parse_hardware(const std::string& path) const;
  Result<Topology> parse_topology(const std::string& path) const;
  Result<RuntimeProfile> parse_runtime(const std::string& path) const;
  Result<FrameworkProfile> parse_framework(const std::string& path) const;
  Result<bool> check_hardware(const Topology& t) const;
  Result<bool> check_fit(const RuntimeFit& f) const;

  std::deque<LazyProfile<ModelProfile>> models_;  // deque: pointers handed out stay valid
  std::deque<LazyProfile<HardwareProfile>> hardware_;
  std::deque<LazyProfile<Topology>> topologies_;
  std::deque<LazyProfile<RuntimeProfile>> runtimes_;
  std::deque<RuntimeFit> fits_;  // read by load(): every hardware and runtime profile needs them
  KernelTable kernels_;
  std::deque<LazyProfile<FrameworkProfile>> frameworks_;
  std::optional<RuntimeFit> merged_fit_;  // the fits, merged, when load() applies them
  std::vector<std::string> directories_;  // the search path, for class files
};

// The search path, lowest precedence first: the built-in profiles (share/cpplan/profiles beside
// the installed `executable`, else the source tree's), then CPPLAN_PROFILE_PATH (':'-separated),
// then `explicit_dirs` (--profiles). Later directories replace profiles of the same name.
std::vector<std::string> profile_search_path(const std::vector<std::string>& explicit_dirs,
                                             const std::string& executable);

}  // namespace cpplan
