// Diffusers classes as data (core/class_spec.h, core/expression.h): the expression language a class
// file writes, the worked example of docs/profiles.md planned from its file alone, and the one-line
// errors of a bad config and of a bad class file.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/class_spec.h"
#include "core/diffusers_config.h"
#include "core/expression.h"
#include "core/profiles.h"
#include "tests/support/fixtures.h"

using cpplan::Expression;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

double eval(const std::string& text, std::map<std::string, double> names = {}) {
  auto e = Expression::parse(text);
  INFO(text << ": " << (e ? "" : e.error().message));
  REQUIRE(e.ok());
  auto v = e->evaluate([&](std::string_view n) -> std::optional<double> {
    const auto it = names.find(std::string(n));
    return it == names.end() ? std::nullopt : std::optional<double>(it->second);
  });
  INFO((v ? "" : v.error().message));
  REQUIRE(v.ok());
  return *v;
}

fs::path source_root() { return fs::path(CPPLAN_TEST_PROFILES).parent_path(); }

// The ```toml block under "### Worked example" of docs/profiles.md.
std::string worked_example() {
  std::ifstream in(source_root() / "docs" / "profiles.md");
  REQUIRE(in);
  std::stringstream all;
  all << in.rdbuf();
  const std::string doc = all.str();
  const size_t section = doc.find("### Worked example");
  REQUIRE(section != std::string::npos);
  const size_t open = doc.find("```toml\n", section);
  const size_t close = doc.find("```", open + 8);
  REQUIRE(open != std::string::npos);
  return doc.substr(open + 8, close - open - 8);
}

// A scratch profiles directory holding one class file; removed on destruction.
struct ClassDir {
  fs::path root = fs::temp_directory_path() / ("cpplan-class-" + std::to_string(::getpid()));
  explicit ClassDir(const std::string& name, const std::string& text) {
    fs::create_directories(root / "classes");
    std::ofstream(root / "classes" / (name + ".toml")) << text;
  }
  ~ClassDir() { fs::remove_all(root); }
  cpplan::ProfileCatalog catalog() const {
    auto c = cpplan::ProfileCatalog::load({CPPLAN_TEST_PROFILES, root.string()});
    REQUIRE(c.ok());
    return std::move(c).value();
  }
};

}  // namespace

TEST_CASE("class expressions: precedence, choices, functions, names", "[classes]") {
  CHECK(eval("2 + 3 * 4 ^ 2") == 50);
  CHECK(eval("2 ^ 3 ^ 2") == 512);  // right-associative
  CHECK(eval("-2 ^ 2") == -4);
  CHECK(eval("(1 < 2 && 3 > 4) ? 7 : 9") == 9);
  CHECK(eval("1 == 1 || 0 ? 5 : 6") == 5);
  CHECK(eval("10 - 4 - 3") == 3);
  CHECK(eval("12 / 3 / 2") == 2);
  CHECK(eval("1e-6 * 2e6") == Approx(2.0));
  // linear(3, 4) = 3 x 4 weights + 4 biases; gated_ffn(2, 3) = linear(2, 6) + linear(3, 2).
  CHECK(eval("linear(3, 4)") == 16);
  CHECK(eval("gated_ffn(2, 3)") == 18 + 8);
  CHECK(eval("timestep_embedding(256, 8)") == 256 * 8 + 8 + 8 * 8 + 8);
  CHECK(eval("floor(d / 3)", {{"d", 1152}}) == 384);
  CHECK(eval("has_x ? x : 4", {{"has_x", 0}, {"x", 0}}) == 4);
  auto e = Expression::parse("a * b + a");
  REQUIRE(e.ok());
  CHECK(e->names() == std::vector<std::string>{"a", "b"});
}

TEST_CASE("a malformed expression or an unknown name is one line", "[classes]") {
  auto bad = Expression::parse("2 * (3 + ");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "at column 10: expected a number, a name or '('");
  auto unknown_fn = Expression::parse("sqrtt(4)");
  REQUIRE_FALSE(unknown_fn.ok());
  CHECK(unknown_fn.error().message.find("a known function, not sqrtt") != std::string::npos);
  auto arity = Expression::parse("linear(4)");
  REQUIRE_FALSE(arity.ok());
  CHECK(arity.error().message.find("2 argument(s) for linear") != std::string::npos);
  auto e = Expression::parse("x + 1");
  REQUIRE(e.ok());
  auto v = e->evaluate([](std::string_view) { return std::nullopt; });
  REQUIRE_FALSE(v.ok());
  CHECK(v.error().message == "unknown name x");
}

TEST_CASE("the worked example of docs/profiles.md plans from its class file alone", "[classes]") {
  const ClassDir dir("MyDiTModel", worked_example());
  const cpplan::ProfileCatalog catalog = dir.catalog();
  const json config = {{"_class_name", "MyDiTModel"}, {"hidden_size", 1152}, {"depth", 28}, {"num_heads", 16}};
  auto m = cpplan::diffusers::profile_from_config_text(config.dump(), catalog, {"my-dit", "test config"});
  INFO((m ? "" : m.error().message));
  REQUIRE(m.ok());
  CHECK(m->heads == 16);
  CHECK(m->head_dim == 72);
  CHECK(m->total_blocks() == 28);
  CHECK(m->in_channels == 16);
  // By hand, D = 1152: a block is 8 linears D x D with biases, the FFN D -> 4D -> D, the 6 x D
  // table; the embedders a 2x2x4 patch conv, the timestep MLP 256 -> D -> D, adaLN-single D -> 6D,
  // the caption projection 4096 -> D -> D; the output the 2 x D table and D -> 2x2x4.
  const double d = 1152;
  const double block = 8 * (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d) + 6 * d;
  const double embedders = 16 * d + d + (256 * d + d + d * d + d) + (d * 6 * d + 6 * d) + (4096 * d + d) + (d * d + d);
  const double output = 2 * d + (d * 16 + 16);
  CHECK(m->params == 28 * block + embedders + output);
  // Its own rule: num_heads must divide hidden_size.
  json odd = config;
  odd["num_heads"] = 7;
  auto refused = cpplan::diffusers::profile_from_config_text(odd.dump(), catalog, {"my-dit", "test config"});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message == "test config: num_heads = 7: must divide hidden_size (MyDiTModel)");
}

TEST_CASE("a config breaking a class's types or choices is refused naming the field", "[classes]") {
  const auto& catalog = cpplan::test::catalog();
  auto import = [&](json config) {
    auto m = cpplan::diffusers::profile_from_config_text(config.dump(), catalog, {"x", "test config"});
    REQUIRE_FALSE(m.ok());
    CHECK(m.error().message.find('\n') == std::string::npos);
    return m.error().message;
  };
  const json wan = {{"_class_name", "WanTransformer3DModel"}, {"num_attention_heads", 12}, {"attention_head_dim", 128},
                    {"num_layers", 30}};
  json norm = wan;
  norm["qk_norm"] = "group_norm";
  CHECK(import(norm) == "test config: qk_norm = \"group_norm\": must be one of \"layer_norm\", null, \"rms_norm\" or "
                        "\"rms_norm_across_heads\" (WanTransformer3DModel)");
  json flag = wan;
  flag["cross_attn_norm"] = "yes";
  CHECK(import(flag) == "test config: cross_attn_norm = \"yes\": must be true or false (WanTransformer3DModel)");
  json zero = wan;
  zero["ffn_dim"] = 0;
  CHECK(import(zero) == "test config: ffn_dim = 0: must be at least 1 for WanTransformer3DModel");
  // ConsisID's face cross-attention with no face tokens.
  const json faceless = {{"_class_name", "ConsisIDTransformer3DModel"}, {"is_train_face", true}, {"LFE_num_querie", 0}};
  CHECK(import(faceless) == "test config: side_cross_every = 2: needs side_cross_tokens, side_cross_inner and "
                            "side_cross_width of at least 1 (ConsisIDTransformer3DModel)");
  json nameless = wan;
  nameless.erase("_class_name");
  CHECK(import(nameless).find("_class_name = (missing): not a diffusers transformer class cpplan knows; ") !=
        std::string::npos);
}

TEST_CASE("a class file's own error names the file and the field", "[classes]") {
  const std::string base = "class = \"BadModel\"\n[defaults]\nn = 2\n";
  const std::string transformer =
      "[transformer]\npipeline = \"flux.1-dev\"\nblocks = [ { kind = \"double\", count = \"n\" } ]\n"
      "heads = \"n\"\nhead_dim = 64\nffn = \"gelu\"\nffn_hidden = 512\nqk_norm = true\nmodulation = \"block\"\n"
      "patch_spatial = 2\nin_channels = 64\nsummary = \"bad\"\n";
  SECTION("a syntax error") {
    auto s = cpplan::ClassSpec::parse(base + transformer + "[transformer.params]\nall = \"n * (3 +\"\n",
                                      "classes/BadModel.toml");
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message ==
          "classes/BadModel.toml: transformer.params.all = \"n * (3 +\": at column 9: expected a number, a name or '('");
  }
  SECTION("an unknown name, found when deriving") {
    auto s = cpplan::ClassSpec::parse(base + transformer + "[transformer.params]\nall = \"n * m\"\n",
                                      "classes/BadModel.toml");
    REQUIRE(s.ok());
    auto t = s->derive_defaults();
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().message == "classes/BadModel.toml: params.all = \"n * m\": unknown name m");
  }
  SECTION("a let value that depends on itself") {
    auto s = cpplan::ClassSpec::parse(base + "[let]\na = \"b + 1\"\nb = \"a * 2\"\n" + transformer +
                                          "[transformer.params]\nall = \"a\"\n",
                                      "classes/BadModel.toml");
    REQUIRE(s.ok());
    auto t = s->derive_defaults();
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().message.find("depends on itself") != std::string::npos);
  }
  SECTION("a file named for another class") {
    auto s = cpplan::ClassSpec::parse(base + transformer + "[transformer.params]\nall = 1\n", "classes/Other.toml");
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message == "classes/Other.toml: class = \"BadModel\": must equal the file name \"Other\"");
  }
  SECTION("a class cpplan has no structure for is refused with its line") {
    auto s = cpplan::ClassSpec::parse("class = \"BadModel\"\nmissing = \"an audio transformer, not a DiT\"\n[defaults]\n",
                                      "classes/BadModel.toml");
    REQUIRE(s.ok());
    auto t = s->derive(json::object());
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().message == "BadModel: an audio transformer, not a DiT");
  }
}
