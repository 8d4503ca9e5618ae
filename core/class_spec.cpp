#include "core/class_spec.h"

#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/expression.h"
#include "core/text.h"
#include "core/toml_reader.h"

namespace cpplan {

using nlohmann::json;
using detail::Reader;

namespace {

// A constructor default: its type says what a config's value must be.
struct FieldDefault {
  enum class Type { kInteger, kNumber, kBool, kString, kList, kNone } type = Type::kNone;
  json value;  // the default as JSON (null for kNone)
};

// A string output: the first alternative whose `when` holds (one without `when` always does).
struct Alternative {
  std::string value;
  std::optional<Expression> when;
};

struct Check {
  std::string field;  // the field the message names (empty: the class)
  Expression holds;
  std::string rule;
};

struct BlockSpec {
  BlockKind kind = BlockKind::kSingle;
  Expression count;
  std::optional<Expression> image_self_attention;
  bool sequential = false;
  bool temporal = false;
  bool skip = false;
  bool text_kv_only = false;
};

}  // namespace

struct ClassSpec::Data {
  std::string name, source, missing, summary;
  std::map<std::string, FieldDefault> defaults;
  std::vector<std::string> required, positive;
  std::map<std::string, std::map<std::string, double>> choices;  // string field -> value -> number
  std::map<std::string, Expression> let;
  std::vector<Check> checks;
  std::vector<Alternative> pipeline, ffn, modulation, guidance, text_handling, attention;
  std::optional<ModelProfile> pipeline_template;
  std::map<std::string, Expression> numbers;  // heads, head_dim, ffn_hidden, ...
  std::vector<BlockSpec> blocks;
  std::vector<std::pair<std::string, Expression>> params;
};

namespace {

constexpr double kMaxInteger = 1 << 30;

// ---- reading the file --------------------------------------------------------------------------

Result<Expression> expression_of(Reader& r, std::string_view key, const toml::node& n) {
  if (n.is_integer() || n.is_floating_point()) return Expression::parse(fmt::format("{}", n.value<double>().value()));
  if (n.is_boolean()) return Expression::parse(n.as_boolean()->get() ? "1" : "0");
  if (!n.is_string()) {
    r.fail(key, "...", "must be a number or an expression (a string)");
    return Error{""};
  }
  auto e = Expression::parse(n.as_string()->get());
  if (!e) r.fail(key, fmt::format("\"{}\"", n.as_string()->get()), e.error().message);
  return e;
}

std::optional<Expression> read_expression(Reader& r, const toml::table& t, std::string_view key, bool required) {
  const toml::node* n = t.get(key);
  if (!n) {
    if (required) r.fail(key, "(missing)", "is required");
    return std::nullopt;
  }
  auto e = expression_of(r, key, *n);
  return e ? std::optional<Expression>(std::move(e).value()) : std::nullopt;
}

// A string, or an array of { value, when } tables (the last may omit `when`).
std::vector<Alternative> read_alternatives(Reader& r, const toml::table& t, std::string_view key, bool required) {
  std::vector<Alternative> out;
  const toml::node* n = t.get(key);
  if (!n) {
    if (required) r.fail(key, "(missing)", "is required");
    return out;
  }
  if (n->is_string()) return {Alternative{n->as_string()->get(), std::nullopt}};
  r.tables(key, true, [&](Reader& a) {
    Alternative alt;
    a.only({"value", "when"});
    a.string("value", alt.value);
    std::string when;
    a.string("when", when, false);
    if (!when.empty()) {
      auto e = Expression::parse(when);
      if (!e) return a.fail("when", fmt::format("\"{}\"", when), e.error().message);
      alt.when = std::move(e).value();
    }
    out.push_back(std::move(alt));
  });
  return out;
}

void read_defaults(Reader& r, const toml::table& t, ClassSpec::Data& d) {
  using Type = FieldDefault::Type;
  for (const auto& [key, node] : t) {
    FieldDefault f;
    if (node.is_integer()) {
      f = {Type::kInteger, json(node.as_integer()->get())};
    } else if (node.is_floating_point()) {
      f = {Type::kNumber, json(node.as_floating_point()->get())};
    } else if (node.is_boolean()) {
      f = {Type::kBool, json(node.as_boolean()->get())};
    } else if (node.is_string()) {
      f = {Type::kString, json(node.as_string()->get())};
    } else if (node.is_array()) {
      json list = json::array();
      for (const auto& e : *node.as_array()) {
        if (!e.is_integer()) return r.fail(std::string(key.str()), "[...]", "a list default must hold integers");
        list.push_back(e.as_integer()->get());
      }
      f = {Type::kList, list};
    } else {
      return r.fail(std::string(key.str()), "{...}", "must be a number, boolean, string or integer list");
    }
    d.defaults[std::string(key.str())] = std::move(f);
  }
}

void read_choices(Reader& r, const toml::table& t, ClassSpec::Data& d) {
  for (const auto& [field, node] : t) {
    const std::string name(field.str());
    if (!node.is_table()) return r.fail(name, "...", "must be a table of value = number");
    for (const auto& [value, number] : *node.as_table()) {
      if (!number.is_number()) return r.fail(name + "." + std::string(value.str()), "...", "must be a number");
      d.choices[name][std::string(value.str())] = number.value<double>().value();
    }
  }
}

void read_transformer(Reader& r, const toml::table& t, ClassSpec::Data& d) {
  r.only({"pipeline", "heads", "head_dim", "ffn_hidden", "ffn", "qk_norm", "rope", "modulation", "patch_spatial",
          "patch_temporal", "in_channels", "guidance", "text_handling", "text_tokens", "blocks", "params",
          "summary", "attention", "experts", "active_experts", "shared_experts", "text_hidden", "text_ffn_hidden",
          "ffn_temporal_taps", "side_cross_every", "side_cross_tokens", "side_cross_inner", "side_cross_width"});
  d.pipeline = read_alternatives(r, t, "pipeline", !d.pipeline_template);
  d.attention = read_alternatives(r, t, "attention", false);
  d.ffn = read_alternatives(r, t, "ffn", true);
  d.modulation = read_alternatives(r, t, "modulation", true);
  d.guidance = read_alternatives(r, t, "guidance", false);
  d.text_handling = read_alternatives(r, t, "text_handling", false);
  for (const char* key : {"heads", "head_dim", "ffn_hidden", "qk_norm", "patch_spatial", "in_channels"})
    if (auto e = read_expression(r, t, key, true)) d.numbers.emplace(key, std::move(*e));
  for (const char* key : {"patch_temporal", "text_tokens", "experts", "active_experts", "shared_experts",
                          "text_hidden", "text_ffn_hidden", "ffn_temporal_taps", "side_cross_every", "side_cross_tokens",
                          "side_cross_inner", "side_cross_width", "rope"})  // optional
    if (auto e = read_expression(r, t, key, false)) d.numbers.emplace(key, std::move(*e));
  r.string("summary", d.summary);
  const toml::array* blocks = t["blocks"].as_array();
  if (!blocks) return r.fail("blocks", "...", "must be an array of tables");
  for (size_t i = 0; i < blocks->size() && r.ok(); ++i) {
    const toml::table* bt = blocks->get(i)->as_table();
    if (!bt) return r.fail(fmt::format("blocks[{}]", i), "...", "must be a table");
    Reader b = r.sub(*bt, fmt::format("blocks[{}]", i));
    b.only({"kind", "count", "image_self_attention", "sequential", "temporal", "skip", "text_kv_only"});
    BlockSpec s;
    b.choice("kind", s.kind, {"double", "single", "cross"});
    b.boolean("sequential", s.sequential);
    b.boolean("temporal", s.temporal);
    b.boolean("skip", s.skip);
    b.boolean("text_kv_only", s.text_kv_only);
    if (b.ok() && BlockGroup::misplaced_text_kv_only(s.kind, s.sequential, s.text_kv_only))
      return b.fail("text_kv_only", "true", BlockGroup::kTextKvOnlyRule);
    auto count = read_expression(b, *bt, "count", true);
    if (!count) return;
    s.count = std::move(*count);
    s.image_self_attention = read_expression(b, *bt, "image_self_attention", false);
    d.blocks.push_back(std::move(s));
  }
  if (!r.ok()) return;
  const toml::table* params = r.table("params");
  if (!params || !r.ok()) return;
  Reader p = r.sub(*params, "params");
  for (const auto& [key, node] : *params) {
    auto e = expression_of(p, std::string(key.str()), node);
    if (!e) return;
    d.params.emplace_back(std::string(key.str()), std::move(e).value());
  }
  if (d.params.empty()) r.fail("params", "{}", "needs at least one term");
}

void read_checks(Reader& r, ClassSpec::Data& d) {
  r.tables("checks", false, [&](Reader& c) {
    c.only({"field", "holds", "rule"});
    Check check{"", Expression(), ""};
    std::string holds;
    c.string("field", check.field, false);
    c.string("holds", holds);
    c.string("rule", check.rule);
    if (!c.ok()) return;
    auto e = Expression::parse(holds);
    if (!e) return c.fail("holds", fmt::format("\"{}\"", holds), e.error().message);
    check.holds = std::move(e).value();
    d.checks.push_back(std::move(check));
  });
}

Result<ClassSpec::Data> read_class(const toml::table& t, const std::string& path) {
  std::string error;
  Reader r(t, path, "", &error);
  ClassSpec::Data d;
  d.source = path;
  r.only({"class", "missing", "required", "positive", "none", "defaults", "choices", "let", "checks", "template",
          "transformer"});
  r.string("class", d.name);
  const std::string stem = std::filesystem::path(path).stem().string();
  if (r.ok() && d.name != stem)
    r.fail("class", fmt::format("\"{}\"", d.name), fmt::format("must equal the file name \"{}\"", stem));
  r.string("missing", d.missing, false);
  r.strings("required", d.required, false);
  r.strings("positive", d.positive, false);
  if (const toml::table* defaults = r.table("defaults"); defaults && r.ok()) {
    Reader sub = r.sub(*defaults, "defaults");
    read_defaults(sub, *defaults, d);
  }
  std::vector<std::string> none;
  r.strings("none", none, false);
  for (const auto& f : none) d.defaults[f] = FieldDefault{FieldDefault::Type::kNone, json()};
  if (const toml::table* choices = r.table("choices", false); choices && r.ok()) {
    Reader sub = r.sub(*choices, "choices");
    read_choices(sub, *choices, d);
  }
  if (const toml::table* let = r.table("let", false); let && r.ok()) {
    Reader sub = r.sub(*let, "let");
    for (const auto& [key, node] : *let) {
      auto e = expression_of(sub, std::string(key.str()), node);
      if (!e) break;
      d.let.emplace(std::string(key.str()), std::move(e).value());
    }
  }
  if (r.ok()) read_checks(r, d);
  if (const toml::table* tp = r.table("template", false); tp && r.ok()) {
    auto m = detail::read_pipeline_template(*tp, path, "template.");
    if (!m) return m.error();
    d.pipeline_template = std::move(m).value();
  }
  if (d.missing.empty() && r.ok()) {
    if (const toml::table* tr = r.table("transformer"); tr && r.ok()) {
      Reader sub = r.sub(*tr, "transformer");
      read_transformer(sub, *tr, d);
    }
  }
  for (const auto& list : {d.required, d.positive})
    for (const auto& f : list)
      if (r.ok() && !d.defaults.count(f)) r.fail("required", f, "names a field [defaults] does not list");
  if (!r.ok()) return Error{error};
  return d;
}

}  // namespace

namespace {
Result<ClassSpec> spec_from(const Result<toml::table>& t, const std::string& path) {
  if (!t) return t.error();
  auto d = read_class(*t, path);
  if (!d) return d.error();
  return ClassSpec(std::make_shared<const ClassSpec::Data>(std::move(d).value()));
}
}  // namespace

Result<ClassSpec> ClassSpec::parse(std::string_view text, const std::string& path) {
  return spec_from(detail::parse_toml_text(text, path), path);
}

Result<ClassSpec> ClassSpec::load(const std::string& path) { return spec_from(detail::parse_toml(path), path); }

const std::string& ClassSpec::name() const { return data_->name; }
const std::string& ClassSpec::source() const { return data_->source; }
const std::string& ClassSpec::missing() const { return data_->missing; }

const std::optional<ModelProfile>& ClassSpec::pipeline_template() const { return data_->pipeline_template; }

std::vector<std::string> ClassSpec::pipelines() const {
  std::vector<std::string> out;
  for (const auto& a : data_->pipeline) out.push_back(a.value);
  return out;
}

// ---- deriving a transformer from a config --------------------------------------------------------

namespace {

struct Failure {
  std::string message;
};

// The named numbers of one config: its fields (with the defaults), has_<field>, <list>_<i> and
// <list>_len, and the class's `let` values, evaluated on first use.
class Scope {
 public:
  Scope(const ClassSpec::Data& d, const json& config) : d_(d), config_(config) {
    for (const auto& [name, def] : d.defaults) bind(name, def);
  }

  double get(std::string_view name) {
    if (auto v = find(name)) return *v;
    throw Failure{fmt::format("{}: uses unknown name {} (the class file's error)", d_.source, name)};
  }

  double evaluate(const Expression& e, std::string_view what) {
    auto v = e.evaluate([this](std::string_view n) { return find(n); });
    if (!v) throw Failure{fmt::format("{}: {} = \"{}\": {}", d_.source, what, e.text(), v.error().message)};
    return *v;
  }

  // The field as the config wrote it (or its default), for messages: [1, 2, 4], "text", 3.
  std::string shown(const std::string& field) const {
    const auto it = config_.find(field);
    if (it != config_.end()) return text_of(*it);
    const auto def = d_.defaults.find(field);
    return def == d_.defaults.end() ? "null" : text_of(def->second.value);
  }
  static std::string text_of(const json& v) {
    if (!v.is_array()) return v.dump();
    std::string out;
    for (const json& e : v) out += (out.empty() ? "" : ", ") + text_of(e);
    return "[" + out + "]";
  }

 private:
  std::optional<double> find(std::string_view name) {
    if (auto it = values_.find(name); it != values_.end()) return it->second;
    const auto let = d_.let.find(std::string(name));
    if (let == d_.let.end()) return std::nullopt;
    const std::string key(name);
    if (!pending_.insert(key).second) throw Failure{fmt::format("{}: let.{} depends on itself", d_.source, key)};
    const double v = evaluate(let->second, "let." + key);
    pending_.erase(key);
    values_[key] = v;
    return v;
  }

  [[noreturn]] void wrong(const std::string& field, const json& v, std::string_view rule) const {
    throw Failure{printable(fmt::format("{} = {}: {} ({})", field, text_of(v), rule, d_.name))};
  }

  double number_of(const std::string& field, const json& v, FieldDefault::Type type) const {
    using Type = FieldDefault::Type;
    if (type == Type::kBool || v.is_boolean()) {
      if (!v.is_boolean()) wrong(field, v, "must be true or false");
      return v.get<bool>() ? 1 : 0;
    }
    if (type == Type::kInteger && (!v.is_number_integer() || v.get<double>() < 0 || v.get<double>() > kMaxInteger))
      wrong(field, v, "must be an integer from 0 to 2^30");
    if (!v.is_number()) wrong(field, v, "must be a number");
    return v.get<double>();
  }

  void bind_list(const std::string& field, const json& v) {
    const json list = v.is_array() ? v : json::array({v});
    for (size_t i = 0; i < list.size(); ++i) {
      const json& e = list[i];
      if (!e.is_number_integer() || e.get<double>() < 0 || e.get<double>() > kMaxInteger)
        wrong(field, v, "must be an integer or an array of integers from 0 to 2^30");
      values_[fmt::format("{}_{}", field, i)] = e.get<double>();
    }
    values_[field + "_len"] = static_cast<double>(list.size());
    if (!v.is_array()) values_[field] = v.get<double>();
  }

  void bind_string(const std::string& field, const json& v) {
    const auto c = d_.choices.find(field);
    if (c == d_.choices.end()) return;  // a string the structure does not depend on
    const std::string key = v.is_null() ? "null" : v.is_string() ? v.get<std::string>() : "";
    const auto it = c->second.find(key);
    if (it == c->second.end()) {
      std::vector<std::string> known;
      for (const auto& [k, n] : c->second) known.push_back(k == "null" ? "null" : "\"" + k + "\"");
      wrong(field, v, fmt::format("must be one of {}", join_or(known)));
    }
    values_[field] = it->second;
  }

  void bind(const std::string& field, const FieldDefault& def) {
    using Type = FieldDefault::Type;
    const auto it = config_.find(field);
    const bool present = it != config_.end();  // null included: Python's None, not the default
    values_["has_" + field] = present && !it->is_null() ? 1 : 0;
    const json& v = present ? *it : def.value;
    if (d_.choices.count(field)) return bind_string(field, v);
    if (v.is_null()) {  // None: 0, and has_<field> says so
      values_[field] = 0;
      values_[field + "_len"] = 0;
      return;
    }
    if (v.is_string() && (def.type == Type::kString || def.type == Type::kNone)) return;  // no expression reads it
    if (def.type == Type::kList || v.is_array()) return bind_list(field, v);
    values_[field] = number_of(field, v, def.type);
  }

  const ClassSpec::Data& d_;
  const json& config_;
  std::map<std::string, double, std::less<>> values_;
  std::set<std::string> pending_;
};

std::string pick(Scope& s, const std::vector<Alternative>& alternatives, std::string_view what) {
  for (const auto& a : alternatives)
    if (!a.when || s.evaluate(*a.when, what) != 0) return a.value;
  throw Failure{fmt::format("no {} alternative holds", what)};
}

int whole(Scope& s, const ClassSpec::Data& d, const char* key) {
  const double v = s.evaluate(d.numbers.at(key), key);
  if (v != std::floor(v) || v < 0 || v > kMaxInteger)
    throw Failure{fmt::format("{} = {}: must be a whole number from 0 to 2^30 ({})", key, v, d.name)};
  return static_cast<int>(v);
}

// "{num_layers} blocks, {heads} x {head_dim} heads": each {name} a field or let value.
std::string summary_of(Scope& s, const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const size_t close = text[i] == '{' ? text.find('}', i) : std::string::npos;
    if (close == std::string::npos) {
      out += text[i];
      continue;
    }
    out += fmt::format("{}", s.get(std::string_view(text).substr(i + 1, close - i - 1)));
    i = close;
  }
  return out;
}

template <class E>
E enum_of(const std::string& value, std::initializer_list<std::pair<std::string_view, E>> names,
          std::string_view what) {
  for (const auto& [n, e] : names)
    if (n == value) return e;
  throw Failure{fmt::format("{} = \"{}\": not a known value", what, value)};
}

void check_fields(Scope& s, const ClassSpec::Data& d, const json& config) {
  for (const auto& f : d.required) {
    const auto it = config.find(f);
    if (it == config.end() || it->is_null()) throw Failure{fmt::format("{}: missing ({} needs it)", f, d.name)};
  }
  for (const auto& f : d.positive)
    if (s.get("has_" + f) != 0 || d.defaults.at(f).type != FieldDefault::Type::kNone)
      if (s.get(f) < 1) throw Failure{fmt::format("{} = {}: must be at least 1 for {}", f, s.shown(f), d.name)};
  for (const auto& c : d.checks) {
    if (s.evaluate(c.holds, "checks") != 0) continue;
    if (c.field.empty()) throw Failure{fmt::format("{}: {}", d.name, c.rule)};
    throw Failure{printable(fmt::format("{} = {}: {} ({})", c.field, s.shown(c.field), c.rule, d.name))};
  }
}

TransformerShape shape_of(Scope& s, const ClassSpec::Data& d) {
  TransformerShape t;
  if (!d.pipeline.empty()) t.pipeline = pick(s, d.pipeline, "pipeline");
  for (const auto& b : d.blocks) {
    const double count = s.evaluate(b.count, "blocks.count");
    if (count < 1) continue;  // a group the config leaves empty (SD3 without dual-attention layers)
    const bool self = b.image_self_attention && s.evaluate(*b.image_self_attention, "image_self_attention") != 0;
    t.blocks.push_back(BlockGroup{b.kind, static_cast<int>(count), self, b.sequential, b.temporal, b.skip, b.text_kv_only});
  }
  t.heads = whole(s, d, "heads");
  t.head_dim = whole(s, d, "head_dim");
  t.ffn_hidden = whole(s, d, "ffn_hidden");
  t.ffn_kind = enum_of<FfnKind>(pick(s, d.ffn, "ffn"),
                                {{"gelu", FfnKind::kGelu}, {"swiglu", FfnKind::kSwiGlu}, {"conv_glu", FfnKind::kConvGlu}},
                                "ffn");
  if (!d.attention.empty())
    t.attention = enum_of<AttentionKind>(pick(s, d.attention, "attention"),
                                         {{"softmax", AttentionKind::kSoftmax}, {"linear", AttentionKind::kLinear}},
                                         "attention");
  const auto optional = [&](const char* key) { return d.numbers.count(key) ? whole(s, d, key) : 0; };
  t.experts = optional("experts");
  t.active_experts = optional("active_experts");
  t.shared_experts = optional("shared_experts");
  t.text_hidden = optional("text_hidden");
  t.text_ffn_hidden = optional("text_ffn_hidden");
  t.ffn_temporal_taps = optional("ffn_temporal_taps");
  t.side_cross = {optional("side_cross_every"), optional("side_cross_tokens"), optional("side_cross_inner"),
                  optional("side_cross_width")};
  if (t.side_cross.incomplete())
    throw Failure{fmt::format("side_cross_every = {}: {} ({})", t.side_cross.every,
                              ModelProfile::SideCross::kIncompleteRule, d.name)};
  t.qk_norm = s.evaluate(d.numbers.at("qk_norm"), "qk_norm") != 0;
  t.rope = !d.numbers.count("rope") || s.evaluate(d.numbers.at("rope"), "rope") != 0;
  t.modulation = enum_of<Modulation>(pick(s, d.modulation, "modulation"),
                                     {{"block", Modulation::kBlock}, {"shared", Modulation::kShared},
                                      {"expert", Modulation::kExpert}, {"table", Modulation::kTable}},
                                     "modulation");
  t.patch_spatial = whole(s, d, "patch_spatial");
  t.patch_temporal = d.numbers.count("patch_temporal") ? whole(s, d, "patch_temporal") : 1;
  t.in_channels = whole(s, d, "in_channels");
  if (!d.guidance.empty())
    t.guidance = enum_of<Guidance>(pick(s, d.guidance, "guidance"),
                                   {{"none", Guidance::kNone}, {"distilled", Guidance::kDistilled},
                                    {"true_cfg", Guidance::kTrueCfg}},
                                   "guidance");
  if (!d.text_handling.empty())
    t.text_handling = enum_of<TextHandling>(pick(s, d.text_handling, "text_handling"),
                                            {{"joint", TextHandling::kJoint}, {"cross", TextHandling::kCross}},
                                            "text_handling");
  if (d.numbers.count("text_tokens")) t.text_tokens = whole(s, d, "text_tokens");
  for (const auto& [name, term] : d.params) t.params += s.evaluate(term, "params." + name);
  t.summary = summary_of(s, d.summary);
  return t;
}

}  // namespace

Result<TransformerShape> ClassSpec::derive(const json& config) const {
  const Data& d = *data_;
  if (!d.missing.empty()) return Error{fmt::format("{}: {}", d.name, d.missing)};
  try {
    Scope s(d, config);
    check_fields(s, d, config);
    return shape_of(s, d);
  } catch (const Failure& f) {
    return Error{f.message};
  }
}

Result<TransformerShape> ClassSpec::derive_defaults() const {
  json config = json::object();
  for (const auto& [name, def] : data_->defaults) config[name] = def.value;
  return derive(config);
}

}  // namespace cpplan
