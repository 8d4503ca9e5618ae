// Fits of the runtime and hardware defaults (core/fit.h, profiles/fits/*.toml): the file read and
// written back, its errors, how a fit changes a runtime or a hardware profile, and the catalog
// applying (or, for the priors, not applying) the fits of its directories.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/fit.h"
#include "core/profiles.h"
#include "tests/support/fixtures.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;
using cpplan::ArchitectureFitValues;
using cpplan::HardwareProfile;
using cpplan::LinkKind;
using cpplan::RuntimeFit;
using cpplan::RuntimeProfile;
using cpplan::test::TempDir;

namespace {

const char* const kFit = R"(# a hand-written fit
name = "mine"
description = "a hand-written fit"

[provenance]
source = "timings/mine.json"
rows = 12
fitted_at = "2026-01-02T03:04:05Z"
cpplan_version = "0.1.0"
mape = 0.025
cv_mape = 0.0625
folds = 4
repeats = 3
shrinkage = 0.003
held_out = { "hardware=l20" = 0.125, "source=lab" = 0.5 }

[runtimes.diffusers]
us_per_op = 12.5
ulysses = 0.75
sync_us = 10
image_ms = 55

[runtimes.compiled]
eager_us_per_op = 12.5

[architectures.ada]
gemm = 1.25
attention = 1.5
memory = 3
conv = 2

[links]
pcie = 1.5
nvswitch = 0.875
)";

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// The error of a fit text that must not parse, as if read from <dir>/<stem>.toml.
std::string fit_error(const std::string& text, const std::string& path) {
  auto f = cpplan::parse_runtime_fit(text, path);
  REQUIRE_FALSE(f.ok());
  return f.error().message;
}

// `kFit` with `from` replaced by `to` (the first occurrence).
std::string fit_with(const std::string& from, const std::string& to) {
  std::string s = kFit;
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

// An Ada GPU on PCIe with every efficiency set by hand.
HardwareProfile ada_on_pcie() {
  HardwareProfile h;
  h.name = "test-ada";
  h.architecture = "ada";
  h.link_kind = LinkKind::kPcie;
  h.gemm_efficiency = 0.6;
  h.attention_efficiency[0] = 0.5;   // flash
  h.attention_efficiency[1] = 0.4;   // cudnn
  h.attention_efficiency[2] = 0.8;   // sage
  h.attention_efficiency[3] = 0.3;   // native
  h.conv_efficiency = 0.4;
  h.memory_efficiency = 0.8;
  h.intra_node.efficiency = 0.75;
  h.network.efficiency = 0.7;
  return h;
}

RuntimeProfile a_runtime(const std::string& name) {
  RuntimeProfile rt;
  rt.name = name;
  rt.dispatch = "python";
  rt.us_per_op = 8;
  rt.eager_us_per_op = 9;
  rt.collective_us = 50;
  rt.sync_us = 20;
  rt.image_ms = 60;
  rt.ops.double_block = 143;
  rt.ops.ulysses = 40;
  rt.ops.ring = 7;
  rt.ops.ring_iteration = 20;
  rt.ops.step = 100;
  return rt;
}

}  // namespace

TEST_CASE("a fit file gives its runtimes, architectures, links and provenance", "[core][fits]") {
  TempDir dir("cpplan-fits-");
  write(dir.path() / "mine.toml", kFit);
  auto loaded = cpplan::load_runtime_fit(dir.file("mine.toml"));
  INFO((loaded ? std::string() : loaded.error().message));
  REQUIRE(loaded.ok());
  const RuntimeFit& f = *loaded;
  CHECK(f.name == "mine");
  CHECK(f.description == "a hand-written fit");
  CHECK(f.source_file == dir.file("mine.toml"));

  CHECK(f.provenance.source == "timings/mine.json");
  CHECK(f.provenance.rows == 12);
  CHECK(f.provenance.fitted_at == "2026-01-02T03:04:05Z");
  CHECK(f.provenance.cpplan_version == "0.1.0");
  CHECK(f.provenance.mape == 0.025);
  CHECK(f.provenance.cv_mape == 0.0625);
  CHECK(f.provenance.folds == 4);
  CHECK(f.provenance.repeats == 3);
  CHECK(f.provenance.shrinkage == 0.003);
  CHECK_FALSE(f.provenance.shrinkage_by_groups);  // absent: chosen by k-fold over the rows
  REQUIRE(f.provenance.held_out.size() == 2);
  CHECK(f.provenance.held_out.at("hardware=l20") == 0.125);
  CHECK(f.provenance.held_out.at("source=lab") == 0.5);

  REQUIRE(f.runtimes.size() == 2);
  const auto& d = f.runtimes.at("diffusers");
  CHECK(d.us_per_op == 12.5);
  CHECK(d.ulysses == 0.75);
  CHECK(d.sync_us == 10.0);
  CHECK(d.image_ms == 55.0);
  CHECK_FALSE(d.eager_us_per_op.has_value());  // unset: the runtime keeps its own
  CHECK_FALSE(d.ring.has_value());
  CHECK_FALSE(d.step.has_value());
  const auto& c = f.runtimes.at("compiled");
  CHECK(c.eager_us_per_op == 12.5);
  CHECK_FALSE(c.us_per_op.has_value());

  REQUIRE(f.architectures.size() == 1);
  const ArchitectureFitValues& ada = f.architectures.at("ada");
  CHECK(ada.gemm == 1.25);
  CHECK(ada.attention == 1.5);
  CHECK(ada.memory == 3);
  CHECK(ada.conv == 2);

  REQUIRE(f.links.size() == 2);
  CHECK(f.links.at("pcie") == 1.5);
  CHECK(f.links.at("nvswitch") == 0.875);
}

TEST_CASE("a fit's architecture without every kind keeps 1 for the others", "[core][fits]") {
  auto f = cpplan::parse_runtime_fit("name = \"part\"\n[provenance]\nsource = \"x\"\nrows = 2\n"
                                     "[architectures.hopper]\ngemm = 0.8\n",
                                     "/somewhere/part.toml");
  INFO((f ? std::string() : f.error().message));
  REQUIRE(f.ok());
  const ArchitectureFitValues& h = f->architectures.at("hopper");
  CHECK(h.gemm == 0.8);
  CHECK(h.attention == 1);
  CHECK(h.memory == 1);
  CHECK(h.conv == 1);
  CHECK(f->runtimes.empty());
  CHECK(f->links.empty());
}

TEST_CASE("an unknown key in a fit is an error naming the file and the dotted field", "[core][fits][errors]") {
  const std::string path = "/fits/mine.toml";
  CHECK(fit_error(fit_with("gemm = 1.25", "gem = 1.25"), path) ==
        path + ": architectures.ada.gem = ...: unknown field (did you mean gemm?)");
  CHECK(fit_error(fit_with("sync_us = 10", "synch_us = 10"), path) ==
        path + ": runtimes.diffusers.synch_us = ...: unknown field (did you mean sync_us?)");
  CHECK(fit_error(fit_with("pcie = 1.5", "pcei = 1.5"), path) ==
        path + ": links.pcei = ...: unknown field (did you mean pcie?)");
  CHECK(fit_error(fit_with("rows = 12", "row = 12"), path) ==
        path + ": provenance.row = ...: unknown field (did you mean rows?)");
  CHECK(fit_error(fit_with("shrinkage = 0.003", "shrinkage = 0.003\nshrinkage_by = \"columns\""), path) ==
        path + ": provenance.shrinkage_by = \"columns\": must be one of rows or groups");
  CHECK_THAT(fit_error(std::string(kFit) + "\n[architecture.ada]\ngemm = 1\n", path),
             Catch::StartsWith(path + ": architecture = ...: unknown field (did you mean architectures?)"));
}

TEST_CASE("a fit's name must equal its file's stem", "[core][fits][errors]") {
  CHECK(fit_error(kFit, "/fits/yours.toml") ==
        "/fits/yours.toml: name = \"mine\": must equal the file name \"yours\"");
  TempDir dir("cpplan-fits-");
  write(dir.path() / "other.toml", kFit);
  auto loaded = cpplan::load_runtime_fit(dir.file("other.toml"));
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.error().message == dir.file("other.toml") + ": name = \"mine\": must equal the file name \"other\"");
}

TEST_CASE("a fit's multiplier must be above 0", "[core][fits][errors]") {
  const std::string path = "/fits/mine.toml";
  CHECK(fit_error(fit_with("gemm = 1.25", "gemm = 0"), path) ==
        path + ": architectures.ada.gemm = 0: must be above 0 and at most 100");
  CHECK(fit_error(fit_with("memory = 3", "memory = -3"), path) ==
        path + ": architectures.ada.memory = -3: must be above 0 and at most 100");
  CHECK(fit_error(fit_with("pcie = 1.5", "pcie = 0"), path) == path + ": links.pcie = 0: must be above 0 and at most 100");
  CHECK(fit_error(fit_with("conv = 2", "conv = \"2\""), path) ==
        path + ": architectures.ada.conv = \"2\": must be a number");
  // A runtime's value is a time or a count, not a multiplier: negative is refused.
  CHECK(fit_error(fit_with("us_per_op = 12.5", "us_per_op = -1"), path) ==
        path + ": runtimes.diffusers.us_per_op = -1: must be at least 0 and at most 1000000000");
}

TEST_CASE("to_toml writes what parse_runtime_fit reads back", "[core][fits]") {
  auto original = cpplan::parse_runtime_fit(kFit, "/fits/mine.toml");
  REQUIRE(original.ok());
  RuntimeFit f = *original;
  // Every runtime value set once, to check that each is written.
  auto& d = f.runtimes["diffusers"];
  d.eager_us_per_op = 9.5;
  d.ring = 3.25;
  d.ring_iteration = 21.5;
  d.collective_us = 36.25;
  d.step = 40;
  f.provenance.shrinkage_by_groups = true;
  const std::string text = cpplan::to_toml(f);
  auto back = cpplan::parse_runtime_fit(text, "/elsewhere/mine.toml");
  INFO(text);
  INFO((back ? std::string() : back.error().message));
  REQUIRE(back.ok());
  const RuntimeFit& b = *back;
  CHECK(b.name == "mine");
  CHECK(b.description == "a hand-written fit");
  CHECK(b.provenance.source == "timings/mine.json");
  CHECK(b.provenance.rows == 12);
  CHECK(b.provenance.fitted_at == "2026-01-02T03:04:05Z");
  CHECK(b.provenance.cpplan_version == "0.1.0");
  CHECK(b.provenance.mape == 0.025);
  CHECK(b.provenance.cv_mape == 0.0625);
  CHECK(b.provenance.folds == 4);
  CHECK(b.provenance.repeats == 3);
  CHECK(b.provenance.shrinkage == 0.003);
  CHECK(b.provenance.shrinkage_by_groups);
  CHECK(b.provenance.held_out == f.provenance.held_out);
  REQUIRE(b.runtimes.size() == 2);
  const auto& bd = b.runtimes.at("diffusers");
  CHECK(bd.us_per_op == 12.5);
  CHECK(bd.eager_us_per_op == 9.5);
  CHECK(bd.ulysses == 0.75);
  CHECK(bd.ring == 3.25);
  CHECK(bd.ring_iteration == 21.5);
  CHECK(bd.collective_us == 36.25);
  CHECK(bd.sync_us == 10.0);
  CHECK(bd.step == 40.0);
  CHECK(bd.image_ms == 55.0);
  CHECK(b.runtimes.at("compiled").eager_us_per_op == 12.5);
  CHECK_FALSE(b.runtimes.at("compiled").us_per_op.has_value());
  const ArchitectureFitValues& ada = b.architectures.at("ada");
  CHECK(ada.gemm == 1.25);
  CHECK(ada.attention == 1.5);
  CHECK(ada.memory == 3);
  CHECK(ada.conv == 2);
  CHECK(b.links == f.links);
}

// The description and the provenance's source come from the user (the --import path, a file
// name): a quote or a backslash in them must not break the file the fit is written to.
TEST_CASE("to_toml escapes quotes and backslashes in its strings", "[core][fits]") {
  RuntimeFit f;
  f.name = "quoted";
  f.description = "fitted to \"lab\" timings";
  f.provenance.source = "C:\\timings\\lab.json";
  f.provenance.rows = 2;
  f.provenance.held_out["source=the \"lab\""] = 0.25;
  const std::string text = cpplan::to_toml(f);
  auto back = cpplan::parse_runtime_fit(text, "/fits/quoted.toml");
  INFO(text);
  INFO((back ? std::string() : back.error().message));
  REQUIRE(back.ok());
  CHECK(back->description == f.description);
  CHECK(back->provenance.source == f.provenance.source);
  CHECK(back->provenance.held_out == f.provenance.held_out);
}

TEST_CASE("a fit multiplies its architecture's efficiencies, capped at 0.95 of the peak but memory uncapped",
          "[core][fits]") {
  auto parsed = cpplan::parse_runtime_fit(kFit, "/fits/mine.toml");
  REQUIRE(parsed.ok());
  HardwareProfile h = ada_on_pcie();
  cpplan::apply_fit(*parsed, h);
  CHECK(h.gemm_efficiency == Approx(0.75));             // 0.6 x 1.25
  CHECK(h.attention_efficiency[0] == Approx(0.75));     // 0.5 x 1.5
  CHECK(h.attention_efficiency[1] == Approx(0.6));      // 0.4 x 1.5
  CHECK(h.attention_efficiency[2] == Approx(0.95));     // 0.8 x 1.5 = 1.2, capped
  CHECK(h.attention_efficiency[3] == Approx(0.45));     // 0.3 x 1.5
  CHECK(h.conv_efficiency == Approx(0.8));              // 0.4 x 2
  CHECK(h.memory_efficiency == Approx(2.4));            // 0.8 x 3, not capped
  CHECK(h.intra_node.efficiency == Approx(1.0));        // PCIe: 0.75 x 1.5 = 1.125, capped at 1
  CHECK(h.network.efficiency == Approx(0.7));           // not a link kind of the fit
  CHECK(h.fitted_by == "mine");

  // conv 0.6 x 2 = 1.2 and GEMM 0.8 x 1.25 = 1.0: both capped at 0.95.
  HardwareProfile fast = ada_on_pcie();
  fast.conv_efficiency = 0.6;
  fast.gemm_efficiency = 0.8;
  cpplan::apply_fit(*parsed, fast);
  CHECK(fast.conv_efficiency == Approx(0.95));
  CHECK(fast.gemm_efficiency == Approx(0.95));
}

TEST_CASE("a fit leaves other architectures' efficiencies alone but scales their link kind", "[core][fits]") {
  auto parsed = cpplan::parse_runtime_fit(kFit, "/fits/mine.toml");
  REQUIRE(parsed.ok());
  // A Hopper GPU on NVSwitch: no [architectures.hopper]; links.nvswitch = 0.875.
  HardwareProfile h = ada_on_pcie();
  h.architecture = "hopper";
  h.link_kind = LinkKind::kNvSwitch;
  h.intra_node.efficiency = 0.8;
  cpplan::apply_fit(*parsed, h);
  CHECK(h.gemm_efficiency == 0.6);
  CHECK(h.attention_efficiency[0] == 0.5);
  CHECK(h.conv_efficiency == 0.4);
  CHECK(h.memory_efficiency == 0.8);
  CHECK(h.intra_node.efficiency == Approx(0.7));  // 0.8 x 0.875
  CHECK(h.fitted_by == "mine");

  // A TPU on ICI: nothing of it in the fit, nothing changes, not marked as fitted.
  HardwareProfile tpu = ada_on_pcie();
  tpu.architecture = "tpu";
  tpu.link_kind = LinkKind::kIci;
  cpplan::apply_fit(*parsed, tpu);
  CHECK(tpu.gemm_efficiency == 0.6);
  CHECK(tpu.memory_efficiency == 0.8);
  CHECK(tpu.intra_node.efficiency == 0.75);
  CHECK(tpu.fitted_by.empty());

  // A profile without an architecture is not matched by an empty one.
  RuntimeFit blank = *parsed;
  blank.architectures[""] = ArchitectureFitValues{2, 2, 2, 2};
  blank.links.clear();
  HardwareProfile none = ada_on_pcie();
  none.architecture.clear();
  cpplan::apply_fit(blank, none);
  CHECK(none.gemm_efficiency == 0.6);
  CHECK(none.fitted_by.empty());
}

TEST_CASE("a fit replaces exactly the values it sets of the runtime it names", "[core][fits]") {
  RuntimeFit f;
  f.name = "mine";
  f.runtimes["diffusers"].us_per_op = 12;
  f.runtimes["diffusers"].ring = 3;
  f.runtimes["diffusers"].step = 40;
  f.runtimes["diffusers"].image_ms = 0;  // set to 0 is set
  RuntimeProfile rt = a_runtime("diffusers");
  cpplan::apply_fit(f, rt);
  CHECK(rt.us_per_op == 12);
  CHECK(rt.ops.ring == 3);
  CHECK(rt.ops.step == 40);
  CHECK(rt.image_ms == 0);
  CHECK(rt.fitted_by == "mine");
  // Untouched: every value the fit does not set.
  CHECK(rt.eager_us_per_op == 9);
  CHECK(rt.collective_us == 50);
  CHECK(rt.sync_us == 20);
  CHECK(rt.ops.ulysses == 40);
  CHECK(rt.ops.ring_iteration == 20);
  CHECK(rt.ops.double_block == 143);
  CHECK(rt.dispatch == "python");

  RuntimeProfile other = a_runtime("xdit");
  cpplan::apply_fit(f, other);
  CHECK(other.us_per_op == 8);
  CHECK(other.ops.ring == 7);
  CHECK(other.fitted_by.empty());
}

TEST_CASE("a catalog whose fit names an unknown runtime fails to load, naming the file", "[core][fits][errors]") {
  TempDir dir("cpplan-fits-");
  const fs::path file = dir.path() / "fits" / "bad.toml";
  write(file, "name = \"bad\"\n[provenance]\nsource = \"x.json\"\nrows = 3\n[runtimes.nope]\nus_per_op = 3\n");
  auto c = cpplan::ProfileCatalog::load({cpplan::test::profiles_dir(), dir.path().string()});
  REQUIRE_FALSE(c.ok());
  CHECK_THAT(c.error().message, Catch::StartsWith(file.string() + ": runtimes.nope: unknown runtime profile; known: "));
  CHECK_THAT(c.error().message, Catch::Contains("diffusers"));
  // The same with the fits off: a broken fit is refused all the same.
  auto priors = cpplan::ProfileCatalog::load({cpplan::test::profiles_dir(), dir.path().string()},
                                             cpplan::CatalogOptions{.apply_fits = false});
  REQUIRE_FALSE(priors.ok());
  CHECK_THAT(priors.error().message, Catch::StartsWith(file.string() + ": "));
}

TEST_CASE("a catalog applies its fits unless told to keep the priors", "[core][fits]") {
  // A catalog of its own: FLUX.1-dev, the H100 SXM and the L20, diffusers, and one fit.
  TempDir dir("cpplan-fits-");
  const fs::path profiles = cpplan::test::profiles_dir();
  for (const char* f : {"models/flux.1-dev.toml", "hardware/h100-sxm.toml", "hardware/l20.toml", "runtimes/diffusers.toml"}) {
    fs::create_directories((dir.path() / f).parent_path());
    fs::copy_file(profiles / f, dir.path() / f);
  }
  write(dir.path() / "fits" / "mine.toml",
        "name = \"mine\"\n[provenance]\nsource = \"x.json\"\nrows = 3\n"
        "[runtimes.diffusers]\nus_per_op = 12\n"
        "[architectures.hopper]\ngemm = 1.25\nmemory = 2\n"
        "[links]\nnvswitch = 1.1\n");

  auto fitted = cpplan::ProfileCatalog::load({dir.path().string()});
  auto priors = cpplan::ProfileCatalog::load({dir.path().string()}, cpplan::CatalogOptions{.apply_fits = false});
  INFO((fitted ? std::string() : fitted.error().message));
  REQUIRE(fitted.ok());
  REQUIRE(priors.ok());
  REQUIRE(fitted->fits().size() == 1);
  REQUIRE(priors->fits().size() == 1);  // loaded (and checked) either way

  // profiles/hardware/h100-sxm.toml: gemm 0.72, memory 0.85, interconnect 0.85.
  const HardwareProfile* h = priors->find_hardware("h100-sxm");
  REQUIRE(h);
  CHECK(h->gemm_efficiency == 0.72);
  CHECK(h->memory_efficiency == 0.85);
  CHECK(h->intra_node.efficiency == 0.85);
  CHECK(h->fitted_by.empty());
  const HardwareProfile* fh = fitted->find_hardware("h100-sxm");
  REQUIRE(fh);
  CHECK(fh->gemm_efficiency == Approx(0.9));          // 0.72 x 1.25
  CHECK(fh->memory_efficiency == Approx(1.7));        // 0.85 x 2
  CHECK(fh->intra_node.efficiency == Approx(0.935));  // 0.85 x 1.1
  CHECK(fh->attention_efficiency[0] == h->attention_efficiency[0]);  // attention not in the fit
  CHECK(fh->fitted_by == "mine");

  // The L20 (Ada, PCIe) is named by nothing in the fit: gemm 0.65 with or without.
  CHECK(priors->find_hardware("l20")->gemm_efficiency == 0.65);
  CHECK(fitted->find_hardware("l20")->gemm_efficiency == 0.65);
  CHECK(fitted->find_hardware("l20")->fitted_by.empty());

  // profiles/runtimes/diffusers.toml: us_per_op 8, sync_us 20.
  CHECK(priors->find_runtime("diffusers")->us_per_op == 8);
  CHECK(fitted->find_runtime("diffusers")->us_per_op == 12);
  CHECK(fitted->find_runtime("diffusers")->sync_us == 20);
  CHECK(fitted->find_runtime("diffusers")->fitted_by == "mine");
}

TEST_CASE("the built-in catalog's priors are the profile files' values and the fitted one differs", "[core][fits]") {
  // profiles/hardware/l20.toml: gemm 0.65; the shipped fit (profiles/fits/) scales Ada.
  const HardwareProfile* prior = cpplan::test::catalog().find_hardware("l20");
  const HardwareProfile* fitted = cpplan::test::fitted_catalog().find_hardware("l20");
  REQUIRE(prior);
  REQUIRE(fitted);
  CHECK(prior->gemm_efficiency == 0.65);
  CHECK(prior->fitted_by.empty());
  CHECK_FALSE(fitted->fitted_by.empty());
  CHECK(fitted->gemm_efficiency != prior->gemm_efficiency);
  CHECK(fitted->gemm_efficiency <= 0.95);
}

// docs/profiles.md (Fit): "every fit loaded is applied in load order, later values winning". A
// fit's multipliers are relative to the priors (calibrate --import starts from the catalog
// without fits), so a later fit of an architecture replaces an earlier one's multipliers, as a
// later runtime value replaces an earlier one; it does not multiply on top of them.
TEST_CASE("a later fit's multipliers replace an earlier fit's, later values winning", "[core][fits]") {
  TempDir dir("cpplan-fits-");
  const fs::path profiles = cpplan::test::profiles_dir();
  for (const char* f : {"models/flux.1-dev.toml", "hardware/h100-sxm.toml", "runtimes/diffusers.toml"}) {
    fs::create_directories((dir.path() / f).parent_path());
    fs::copy_file(profiles / f, dir.path() / f);
  }
  // Loaded in file-name order: a-first.toml, then b-second.toml.
  write(dir.path() / "fits" / "a-first.toml",
        "name = \"a-first\"\n[provenance]\nsource = \"x.json\"\nrows = 3\n"
        "[runtimes.diffusers]\nus_per_op = 12\n[architectures.hopper]\nmemory = 2\n[links]\nnvswitch = 0.5\n");
  write(dir.path() / "fits" / "b-second.toml",
        "name = \"b-second\"\n[provenance]\nsource = \"y.json\"\nrows = 3\n"
        "[runtimes.diffusers]\nus_per_op = 10\n[architectures.hopper]\nmemory = 1.5\n[links]\nnvswitch = 1.1\n");
  auto c = cpplan::ProfileCatalog::load({dir.path().string()});
  INFO((c ? std::string() : c.error().message));
  REQUIRE(c.ok());
  REQUIRE(c->fits().size() == 2);
  CHECK(c->find_runtime("diffusers")->us_per_op == 10);  // b-second's value
  const HardwareProfile* h = c->find_hardware("h100-sxm");
  REQUIRE(h);
  CHECK(h->fitted_by == "b-second");
  // profiles/hardware/h100-sxm.toml: memory 0.85, interconnect 0.85; b-second's multipliers only.
  CHECK(h->memory_efficiency == Approx(1.275));       // 0.85 x 1.5, not 0.85 x 2 x 1.5 = 2.55
  CHECK(h->intra_node.efficiency == Approx(0.935));   // 0.85 x 1.1, not 0.85 x 0.5 x 1.1 = 0.4675
}

// A framework profile's `runtime` (the runtime its plans run under without --runtime) must name a
// runtime profile: the catalog refuses it in one line naming the file.
TEST_CASE("a framework that names an unknown runtime is refused where it is used, naming the file", "[core][frameworks][errors]") {
  TempDir dir("cpplan-frameworks-");
  std::ifstream in(fs::path(cpplan::test::profiles_dir()) / "frameworks" / "xdit.toml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string line = "runtime = \"xdit\"";
  REQUIRE(text.find(line) != std::string::npos);
  text.replace(text.find(line), line.size(), "runtime = \"xdti\"");
  const fs::path file = dir.path() / "frameworks" / "xdit.toml";
  write(file, text);
  auto c = cpplan::ProfileCatalog::load({cpplan::test::profiles_dir(), dir.path().string()});
  REQUIRE(c.ok());  // the framework files are read when a query asks for them
  for (const cpplan::Error& e : {c->frameworks_for_query().error(), c->validate().error()}) {
    CHECK_THAT(e.message, Catch::StartsWith(file.string() + ": runtime = xdti: must name a runtime profile ("));
    CHECK_THAT(e.message, Catch::Contains("xdit"));
    CHECK(e.message.find('\n') == std::string::npos);
  }
  auto validated = cpplan::ProfileCatalog::load({cpplan::test::profiles_dir(), dir.path().string()},
                                                cpplan::CatalogOptions{.validate_all = true});
  REQUIRE_FALSE(validated.ok());
  CHECK_THAT(validated.error().message, Catch::StartsWith(file.string() + ": runtime = xdti: "));
}
