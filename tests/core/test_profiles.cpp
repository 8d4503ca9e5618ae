// Profile loading: every built-in profile loads with the facts of shared/reference/*.md, and
// every error names the file, the field, its value and the rule (docs/profiles.md).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/profiles.h"
#include "core/text.h"
#include "tests/support/fixtures.h"

using cpplan::test::catalog;

namespace {
namespace fs = std::filesystem;

fs::path data_dir() { return fs::path(CPPLAN_TEST_PROFILES).parent_path() / "tests" / "data"; }
std::string broken_model(const std::string& stem) {
  return (data_dir() / "profiles-broken" / "models" / (stem + ".toml")).string();
}
std::string broken_hardware(const std::string& stem) {
  return (data_dir() / "profiles-broken" / "hardware" / (stem + ".toml")).string();
}

// The loader's error for a model file that must not load.
std::string model_error(const std::string& path) {
  auto m = cpplan::load_model_profile(path);
  INFO(path);
  REQUIRE_FALSE(m.ok());
  return m.error().message;
}
std::string hardware_error(const std::string& path) {
  auto h = cpplan::load_hardware_profile(path);
  INFO(path);
  REQUIRE_FALSE(h.ok());
  return h.error().message;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}
}  // namespace

TEST_CASE("All 27 built-in models and 26 hardware profiles load", "[core][profiles]") {
  const auto models = catalog().model_names();
  const auto hardware = catalog().hardware_names();
  CHECK(models.size() == 27);
  CHECK(hardware.size() == 26);  // with the TPU, Neuron and AMD profiles (planning only)
  for (const char* name : {"cogvideox-5b", "flux-tiny", "flux.1-dev", "flux.1-schnell", "flux.2-dev", "hunyuanvideo",
                           "ltx-video-2b", "pixart-alpha", "pixart-sigma", "qwen-image", "sd3.5-large", "sd3.5-medium", "wan-tiny",
                           "wan2.1-t2v-1.3b", "wan2.1-t2v-14b", "wan2.2-ti2v-5b", "flux2-tiny", "qwen-tiny",
                           "sd35-tiny", "hunyuan-tiny", "cogvideox-tiny", "latte-tiny", "hunyuandit-tiny", "hidream-tiny",
                           "wan22-tiny", "sana-tiny", "mochi-tiny"}) {
    INFO(name);
    CHECK(contains(models, name));
  }
  for (const char* name : {"a100-sxm-80g", "h100-sxm", "h200-sxm", "l20", "l40s", "rtx4090", "rtx4090-48g"}) {
    INFO(name);
    CHECK(contains(hardware, name));
  }
}

TEST_CASE("FLUX.1-dev's profile holds the reference architecture", "[core][profiles]") {
  const cpplan::ModelProfile* m = catalog().find_model("flux.1-dev");
  REQUIRE(m != nullptr);
  CHECK(m->heads == 24);
  CHECK(m->head_dim == 128);
  CHECK(m->hidden() == 3072);
  CHECK(m->ffn_hidden == 12288);
  CHECK(m->ffn_kind == cpplan::FfnKind::kGelu);
  CHECK(m->params == 11901408320.0);
  CHECK(m->bytes_per_param == 2);
  REQUIRE(m->blocks.size() == 2);
  CHECK(m->blocks[0].kind == cpplan::BlockKind::kDouble);
  CHECK(m->blocks[0].count == 19);
  CHECK(m->blocks[1].kind == cpplan::BlockKind::kSingle);
  CHECK(m->blocks[1].count == 38);
  CHECK(m->total_blocks() == 57);
  CHECK(m->text_handling == cpplan::TextHandling::kJoint);
  CHECK(m->text_tokens == 512);
  CHECK(m->max_text_tokens == 512);  // defaults to text.tokens
  REQUIRE(m->text_encoders.size() == 2);
  CHECK(m->text_encoders[0].params == 4762310656.0);
  CHECK(m->text_encoders[1].params == 123060480.0);
  CHECK(m->pixel_granularity() == 16);
  CHECK(m->cp_split == cpplan::CpSplit::kImageAndText);
  CHECK(m->guidance == cpplan::Guidance::kDistilled);
  CHECK(m->passes_per_step() == 1);
  CHECK(m->default_steps == 28);
  CHECK_FALSE(m->video);
  CHECK(m->hf_repo == "black-forest-labs/FLUX.1-dev");
  CHECK(m->pipeline_class == "FluxPipeline");
}

TEST_CASE("Other built-in models carry their distinguishing facts", "[core][profiles]") {
  const auto& c = catalog();
  const auto* wan = c.find_model("wan2.1-t2v-14b");
  REQUIRE(wan);
  CHECK(wan->hidden() == 40 * 128);
  CHECK(wan->text_handling == cpplan::TextHandling::kCross);
  CHECK(wan->cp_split == cpplan::CpSplit::kImageOnly);
  CHECK(wan->guidance == cpplan::Guidance::kTrueCfg);
  CHECK(wan->passes_per_step() == 2);
  CHECK(wan->video);
  CHECK(wan->vae.temporal == 4);
  CHECK(wan->default_frames == 81);

  const auto* qwen = c.find_model("qwen-image");
  REQUIRE(qwen);
  CHECK(qwen->attention_mask);
  CHECK(qwen->text_tokens == 512);
  CHECK(qwen->max_text_tokens == 1024);

  const auto* flux2 = c.find_model("flux.2-dev");
  REQUIRE(flux2);
  CHECK(flux2->ffn_kind == cpplan::FfnKind::kSwiGlu);
  CHECK(flux2->modulation == cpplan::Modulation::kShared);
  CHECK(flux2->hidden() == 6144);

  const auto* medium = c.find_model("sd3.5-medium");
  REQUIRE(medium);
  REQUIRE(medium->blocks.size() == 2);
  CHECK(medium->blocks[0].image_self_attention);
  CHECK(medium->blocks[0].count == 13);
  CHECK_FALSE(medium->blocks[1].image_self_attention);
  CHECK(medium->total_blocks() == 24);

  const auto* ltx = c.find_model("ltx-video-2b");
  REQUIRE(ltx);
  CHECK(ltx->pixel_granularity() == 32);  // VAE 32 x patch 1
  CHECK(ltx->vae.temporal == 8);

  const auto* cog = c.find_model("cogvideox-5b");
  REQUIRE(cog);
  CHECK(cog->modulation == cpplan::Modulation::kExpert);
  CHECK(cog->blocks[0].sequential);
  CHECK(cog->qk_norm);
  const auto* pixart = c.find_model("pixart-sigma");
  REQUIRE(pixart);
  CHECK_FALSE(pixart->qk_norm);
  CHECK(pixart->modulation == cpplan::Modulation::kTable);
  CHECK(c.find_model("flux.1-dev")->modulation == cpplan::Modulation::kBlock);

  const auto* schnell = c.find_model("flux.1-schnell");
  REQUIRE(schnell);
  CHECK(schnell->guidance == cpplan::Guidance::kNone);
  CHECK(schnell->text_tokens == 256);
}

TEST_CASE("Hardware profiles carry the datasheet figures", "[core][profiles]") {
  const auto* h100 = catalog().find_hardware("h100-sxm");
  REQUIRE(h100);
  CHECK(h100->bf16_tflops == 989);
  CHECK(h100->memory_mib == 81559);
  CHECK(h100->reserved_mib == 1536);
  CHECK(h100->memory_bytes() == 81559.0 * 1024 * 1024);
  CHECK(h100->usable_bytes() == (81559.0 - 1536) * 1024 * 1024);
  CHECK(h100->link_kind == cpplan::LinkKind::kNvSwitch);
  CHECK(h100->intra_node.bandwidth_gbps == 450);
  CHECK(h100->intra_node.efficiency == 0.85);
  CHECK(h100->gpus_per_node == 8);
  CHECK(h100->attention_efficiency[static_cast<int>(cpplan::AttentionBackend::kCudnn)] == 0.55);
  CHECK(contains(h100->match, "H100"));

  const auto* rtx = catalog().find_hardware("rtx4090");
  REQUIRE(rtx);
  CHECK(rtx->link_kind == cpplan::LinkKind::kPcieHost);
  CHECK(rtx->memory_mib == 24564);
  CHECK(cpplan::to_string(rtx->link_kind) == "pcie_host");
}

TEST_CASE("A profile's name must match its file", "[core][profiles]") {
  for (const auto& m : catalog().models()) {
    INFO(m.source);
    CHECK(std::filesystem::path(m.source).stem().string() == m.name);
  }
  const std::string path = broken_model("name-mismatch");
  CHECK(model_error(path) == path + ": name = \"flux-tiny\": must equal the file name \"name-mismatch\"");
}

TEST_CASE("The valid test profiles load, and the broken ones differ from them in one place", "[core][profiles]") {
  auto m = cpplan::load_model_profile((data_dir() / "profiles-valid" / "models" / "test-model.toml").string());
  INFO((m.ok() ? std::string() : m.error().message));
  REQUIRE(m.ok());
  CHECK(m->heads == 12);
  CHECK(m->hidden() == 192);
  auto h = cpplan::load_hardware_profile((data_dir() / "profiles-valid" / "hardware" / "test-gpu.toml").string());
  INFO((h.ok() ? std::string() : h.error().message));
  REQUIRE(h.ok());
  CHECK(h->intra_node.bandwidth_gbps == 100);
  CHECK(h->intra_node.latency_us == 10);
  CHECK(h->intra_node.efficiency == 1.0);
  CHECK(h->network.bandwidth_gbps == 10);
}

TEST_CASE("Model loader errors name the file, the field, the value and the rule", "[core][profiles][errors]") {
  // Each broken file and the error after its path.
  const struct {
    const char* what;
    const char* stem;
    const char* error;
  } cases[] = {
      {"a missing required field", "missing-heads",
       ": transformer.heads = (missing): is required"},
      {"a field of the wrong type", "wrong-type",
       ": transformer.heads = \"12\": must be an integer"},
      {"an out-of-range value", "out-of-range",
       ": transformer.heads = 0: must be between 1 and 4096"},
      {"an out-of-range count inside an array of tables names its index", "block-count",
       ": transformer.blocks[1].count = 0: must be between 1 and 10000"},
      {"an unknown key suggests the closest one", "unknown-key",
       ": transformer.hedas = ...: unknown field (did you mean heads?)"},
      {"an unknown table suggests the closest one", "unknown-table",
       ": pipline = ...: unknown field (did you mean pipeline?)"},
      {"a choice outside the allowed names lists them", "bad-choice",
       ": transformer.ffn = \"relu\": must be one of gelu, swiglu or conv_glu"},
      {"a modulation outside the allowed names lists them", "bad-modulation",
       ": transformer.modulation = \"per-token\": must be one of block, shared, expert or table"},
      {"only single-stream blocks run attention and FFN in sequence", "sequential-double",
       ": transformer.blocks[0].sequential = true: only single-stream blocks run attention and FFN in sequence"},
      {"only sequential single-stream blocks give the text keys and values alone", "text-kv-only-parallel",
       ": transformer.blocks[1].text_kv_only = true: only sequential single-stream blocks give the text "
       "keys and values alone"},
      {"a cross-attention to conditioning tokens needs their count and widths", "side-cross-incomplete",
       ": transformer.side_cross_every = 2: needs side_cross_tokens, side_cross_inner and side_cross_width "
       "of at least 1"},
      {"a temporal conv of more taps than the range", "temporal-taps-range",
       ": transformer.ffn_temporal_taps = 16: must be between 0 and 15"},
      {"rope is true or false", "rope-not-bool", ": transformer.rope = \"no\": must be true or false"},
      {"cross text handling needs cross blocks", "cross-joint",
       ": transformer.blocks = (kinds): text.handling = \"cross\" needs every block kind = \"cross\""},
      {"a cross block needs cross text handling", "joint-cross",
       ": transformer.blocks = (kinds): kind = \"cross\" needs text.handling = \"cross\""},
      {"the default size must be on the model's grid", "off-grid-default",
       ": pipeline.default_width = 1000x256: default size must be a multiple of vae.spatial x "
       "transformer.patch_spatial = 16"},
      {"an image model has one frame", "image-frames",
       ": pipeline.default_frames = 5: must be 1 for an image model"},
      {"max_tokens below tokens", "max-below-tokens",
       ": text.max_tokens = 8: must be at least text.tokens = 16"},
      {"a file that does not exist", "no-such-file",
       ": not a readable file"},
  };
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.what) {
      const auto path = broken_model(c.stem);
      CHECK(model_error(path) == path + c.error);
    }
  }
  SECTION("a non-positive parameter count") {
    const auto path = broken_model("negative-params");
    CHECK_THAT(model_error(path),
               Catch::StartsWith(path + ": transformer.params = -1: must be above 0 and at most"));
  }
  SECTION("invalid TOML syntax names the line") {
    const auto path = broken_model("bad-syntax");
    const std::string message = model_error(path);
    // the broken line is line 7 ("head_dim = = 16")
    CHECK_THAT(message, Catch::StartsWith(path + ":7:"));
    CHECK_THAT(message, Catch::Contains("invalid TOML"));
  }
}

TEST_CASE("Hardware loader errors name the file, the field, the value and the rule", "[core][profiles][errors]") {
  SECTION("a missing required field") {
    const auto path = broken_hardware("hw-missing-bandwidth");
    CHECK(hardware_error(path) == path + ": interconnect.bandwidth_gbps = (missing): is required");
  }
  SECTION("an out-of-range efficiency") {
    const auto path = broken_hardware("hw-efficiency-range");
    CHECK(hardware_error(path) == path + ": interconnect.efficiency = 1.5: must be above 0 and at most 1");
  }
  SECTION("an unknown key suggests the closest one") {
    const auto path = broken_hardware("hw-unknown-key");
    CHECK(hardware_error(path) == path + ": memory.capacity_mb = ...: unknown field (did you mean capacity_mib?)");
  }
  SECTION("reserved memory not below capacity") {
    const auto path = broken_hardware("hw-reserved");
    CHECK(hardware_error(path) == path + ": memory.reserved_mib = 16384: must be below capacity_mib");
  }
  SECTION("a link kind outside the allowed names") {
    const auto path = broken_hardware("hw-bad-kind");
    CHECK(hardware_error(path) ==
          path + ": interconnect.kind = \"nvlink\": must be one of nvswitch, pcie, pcie_host, ici, neuronlink or xgmi");
  }
  SECTION("a number given as a string") {
    const auto path = broken_hardware("hw-wrong-type");
    CHECK(hardware_error(path) == path + ": compute.bf16_tflops = \"100\": must be a number");
  }
  SECTION("match must be an array") {
    const auto path = broken_hardware("hw-match-type");
    CHECK(hardware_error(path) == path + ": match = ...: must be an array of strings");
  }
}

TEST_CASE("A catalog validated at load fails with its first broken file's error", "[core][profiles][errors]") {
  auto c = cpplan::ProfileCatalog::load({(data_dir() / "profiles-broken").string()},
                                        cpplan::CatalogOptions{.validate_all = true});
  REQUIRE_FALSE(c.ok());
  // models/ is read in sorted order: bad-choice.toml comes first
  CHECK(c.error().message == broken_model("bad-choice") + ": transformer.ffn = \"relu\": must be one of gelu, swiglu or conv_glu");
}

TEST_CASE("A catalog reports a broken file where its profile is asked for", "[core][profiles][errors]") {
  auto c = cpplan::ProfileCatalog::load({(data_dir() / "profiles-broken").string()});
  INFO((c.ok() ? std::string() : c.error().message));
  REQUIRE(c.ok());  // load() lists the files; it parses none of them
  const std::string ffn = broken_model("bad-choice") + ": transformer.ffn = \"relu\": must be one of gelu, swiglu or conv_glu";
  auto model = c->model("bad-choice");
  REQUIRE_FALSE(model.ok());
  CHECK(model.error().message == ffn);
  CHECK(c->find_model("bad-choice") == nullptr);
  auto hw = c->hardware("hw-reserved");
  REQUIRE_FALSE(hw.ok());
  CHECK(hw.error().message == broken_hardware("hw-reserved") + ": memory.reserved_mib = 16384: must be below capacity_mib");
  // validate() parses every file: the first error in file order, as load() with validate_all.
  auto all = c->validate();
  REQUIRE_FALSE(all.ok());
  CHECK(all.error().message == ffn);
  CHECK(c->models().empty());  // a listing leaves the broken files out
  CHECK(c->model_names().size() == 21);
  // A broken file the query does not use does not stop it.
  auto mixed = cpplan::ProfileCatalog::load({CPPLAN_TEST_PROFILES, (data_dir() / "profiles-broken").string()});
  REQUIRE(mixed.ok());
  CHECK(mixed->model("flux.1-dev").ok());
  CHECK_FALSE(mixed->validate().ok());
}

TEST_CASE("A catalog parses a profile once, whichever thread or copy asks first", "[core][profiles]") {
  auto c = cpplan::ProfileCatalog::load({CPPLAN_TEST_PROFILES});
  REQUIRE(c.ok());
  cpplan::ProfileCatalog copy = *c;  // before any profile is parsed
  std::vector<const cpplan::ModelProfile*> seen(8, nullptr);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < seen.size(); ++i)
    threads.emplace_back([&, i] {
      const cpplan::ProfileCatalog& asked = i % 4 < 2 ? *c : copy;
      seen[i] = asked.find_model(i % 2 ? "flux.1-dev" : "wan2.1-t2v-14b");
    });
  for (auto& t : threads) t.join();
  for (std::size_t i = 0; i < seen.size(); ++i) {
    REQUIRE(seen[i]);
    CHECK(seen[i] == seen[i % 2]);  // one parse, shared by the copies
  }
  CHECK(seen[1]->name == "flux.1-dev");
  CHECK(seen[0]->name == "wan2.1-t2v-14b");
  CHECK(copy.models().size() == 27);
  CHECK(c->find_model("pixart-alpha") == copy.find_model("pixart-alpha"));

  // A copy's own model replaces the profile in that copy only.
  cpplan::ModelProfile mine = *seen[1];
  mine.default_steps = 7;
  copy.add_model(mine);
  CHECK(copy.find_model("flux.1-dev")->default_steps == 7);
  CHECK(c->find_model("flux.1-dev") == seen[1]);
  CHECK(seen[1]->default_steps == 28);
  // Without a copy sharing it, the profile is replaced in place: pointers to it see the new one.
  mine.default_steps = 9;
  copy.add_model(mine);
  const cpplan::ModelProfile* in_copy = copy.find_model("flux.1-dev");
  mine.default_steps = 11;
  copy.add_model(mine);
  CHECK(in_copy->default_steps == 11);
}

TEST_CASE("A catalog without profiles is an error naming the directory", "[core][profiles][errors]") {
  const std::string missing = (data_dir() / "no-such-directory").string();
  auto c = cpplan::ProfileCatalog::load({missing});
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message == "profiles: no model or hardware profiles found in " + missing);
}

TEST_CASE("A later directory's profile replaces an earlier one of the same name", "[core][profiles]") {
  auto c = cpplan::ProfileCatalog::load({CPPLAN_TEST_PROFILES, (data_dir() / "profiles-override").string()});
  INFO((c.ok() ? std::string() : c.error().message));
  REQUIRE(c.ok());
  CHECK(c->models().size() == 27);  // replaced, not added
  CHECK(c->hardware_profiles().size() == 26);
  const auto* flux = c->find_model("flux.1-dev");
  REQUIRE(flux);
  CHECK(flux->default_steps == 50);  // the override's value; the built-in says 28
  CHECK_THAT(flux->source, Catch::Contains("profiles-override"));
  CHECK(catalog().find_model("flux.1-dev")->default_steps == 28);

  // In the other order the built-in wins.
  auto reversed = cpplan::ProfileCatalog::load({(data_dir() / "profiles-override").string(), CPPLAN_TEST_PROFILES});
  REQUIRE(reversed.ok());
  CHECK(reversed->find_model("flux.1-dev")->default_steps == 28);
}

TEST_CASE("find_* returns null and model()/hardware() suggest the closest names for an unknown name",
          "[core][profiles]") {
  CHECK(catalog().find_model("flux1-dev") == nullptr);
  CHECK(catalog().find_hardware("h100") == nullptr);

  auto ok = catalog().model("flux.1-dev");
  REQUIRE(ok.ok());
  CHECK((*ok)->name == "flux.1-dev");

  auto m = catalog().model("flux1-dev");
  REQUIRE_FALSE(m.ok());
  CHECK_THAT(m.error().message, Catch::StartsWith("--model = flux1-dev: unknown profile; did you mean flux.1-dev"));

  auto h = catalog().hardware("h100");
  REQUIRE_FALSE(h.ok());
  CHECK_THAT(h.error().message, Catch::StartsWith("--hardware = h100: unknown profile; did you mean h100-sxm"));

  // Nothing close: the message lists every known name.
  auto far = catalog().hardware("zzzzzzzzzzzz");
  REQUIRE_FALSE(far.ok());
  CHECK_THAT(far.error().message, Catch::StartsWith("--hardware = zzzzzzzzzzzz: unknown profile; known: "));
  CHECK_THAT(far.error().message, Catch::Contains("h100-sxm") && Catch::Contains("rtx4090-48g"));
}

TEST_CASE("edit_distance counts insertions, deletions and substitutions", "[core][text]") {
  CHECK(cpplan::edit_distance("", "") == 0);
  CHECK(cpplan::edit_distance("flux", "flux") == 0);
  CHECK(cpplan::edit_distance("", "abc") == 3);
  CHECK(cpplan::edit_distance("abc", "") == 3);
  CHECK(cpplan::edit_distance("kitten", "sitting") == 3);  // k->s, e->i, +g
  CHECK(cpplan::edit_distance("flux1-dev", "flux.1-dev") == 1);  // +.
  CHECK(cpplan::edit_distance("flux1-dev", "flux.2-dev") == 2);  // +., 1->2
  CHECK(cpplan::edit_distance("hedas", "heads") == 2);           // two substitutions
}

TEST_CASE("closest_names ranks by distance, accepts prefixes and drops far names", "[core][text]") {
  const std::vector<std::string> names = {"flux.2-dev", "flux.1-dev", "flux.1-schnell", "wan2.1-t2v-14b"};
  // threshold max(2, 9 / 3) = 3: flux.1-dev (1), flux.2-dev (2); schnell and wan are far
  CHECK(cpplan::closest_names("flux1-dev", names) == std::vector<std::string>{"flux.1-dev", "flux.2-dev"});
  CHECK(cpplan::closest_names("flux1-dev", names, 1) == std::vector<std::string>{"flux.1-dev"});
  // a prefix counts as distance 1
  CHECK(cpplan::closest_names("wan", names) == std::vector<std::string>{"wan2.1-t2v-14b"});
  CHECK(cpplan::closest_names("zzzzzz", names).empty());
  CHECK(cpplan::join_or({}) == "");
  CHECK(cpplan::join_or({"a"}) == "a");
  CHECK(cpplan::join_or({"a", "b"}) == "a or b");
  CHECK(cpplan::join_or({"a", "b", "c"}) == "a, b or c");
}

TEST_CASE("Explicit --profiles directories come last in the search path, so they win", "[core][profiles]") {
  const auto dirs = cpplan::profile_search_path({"/tmp/my-profiles"}, "");
  REQUIRE_FALSE(dirs.empty());
  CHECK(dirs.back() == "/tmp/my-profiles");
}

TEST_CASE("human_bytes writes binary units, whole numbers without decimals", "[core][text]") {
  CHECK(cpplan::human_bytes(8) == "8 B");
  CHECK(cpplan::human_bytes(1023) == "1023 B");
  CHECK(cpplan::human_bytes(1024) == "1 KiB");
  CHECK(cpplan::human_bytes(1536) == "1.5 KiB");
  CHECK(cpplan::human_bytes(128.0 * 1024 * 1024) == "128 MiB");
  CHECK(cpplan::human_bytes(1.5 * 1024 * 1024 * 1024) == "1.5 GiB");
}

TEST_CASE("A runtime's q/k-norm, RoPE and attention-module op counts are optional, non-negative numbers",
          "[core][profiles][errors]") {
  const std::string path = cpplan::test::profiles_dir() + "/runtimes/diffusers.toml";
  const auto shipped = cpplan::load_runtime_profile(path);
  REQUIRE(shipped.ok());
  CHECK(shipped->ops.qk_norm == 8);  // one RMSNorm of q or k
  CHECK(shipped->ops.rope == 15);    // one apply_rotary_emb
  std::ifstream in(path);
  std::stringstream read;
  read << in.rdbuf();
  const std::string text = read.str();
  // The shipped file with the line `key = ...` replaced by `replacement` ("": removed), parsed.
  const auto edited = [&](const char* key, const std::string& replacement) {
    std::string t = text;
    const std::size_t at = t.find(std::string("\n") + key + " = ") + 1;
    const std::size_t length = t.find('\n', at) - at;
    if (replacement.empty())
      t.erase(at, length + 1);
    else
      t.replace(at, length, replacement);
    return cpplan::parse_runtime_profile(t, path);
  };
  const auto bad = edited("qk_norm", "qk_norm = -1");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == path + ": ops.qk_norm = -1: must be at least 0 and at most 10000000");
  const auto absent = edited("rope", "");
  REQUIRE(absent.ok());
  CHECK(absent->ops.rope == 0);  // not counted apart: no block loses RoPE ops
  // The attention modules' ops are the block's: at most its count (143 for a double block).
  CHECK(shipped->ops.double_attention == 93);
  const auto too_many = edited("double_attention", "double_attention = 150");
  REQUIRE_FALSE(too_many.ok());
  CHECK(too_many.error().message == path + ": ops.double_attention = 150: of the block's 143 ops: at most that");
  const auto apart = edited("double_attention", "");
  REQUIRE(apart.ok());
  CHECK(apart->ops.double_attention == 0);  // not counted apart: the host keeps dispatching them
}
