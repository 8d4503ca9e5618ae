#pragma once
// The TOML field reader shared by the profile loaders (models, hardware, topologies): every
// error names the file, the dotted field, its value and the rule. Included by core sources only
// (toml++ is a private dependency of cpplan_core).

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <initializer_list>
#include <string>
#include <string_view>
#include <toml++/toml.h>
#include <vector>

#include "core/result.h"
#include "core/text.h"

namespace cpplan::detail {

// Reads fields of one TOML table, remembering the first error with file and dotted field name.
class Reader {
 public:
  Reader(const toml::table& table, std::string file, std::string prefix, std::string* error)
      : table_(table), file_(std::move(file)), prefix_(std::move(prefix)), error_(error) {}

  bool ok() const { return error_->empty(); }
  bool has(std::string_view key) const { return table_.get(key) != nullptr; }
  const std::string& file() const { return file_; }

  void fail(std::string_view key, std::string_view value, std::string_view rule) {
    if (!ok()) return;
    // Keys and values are the file's: escaped, so that the message stays one line.
    *error_ = printable(fmt::format("{}: {} = {}: {}", file_, field(key), value, rule));
  }

  // Rejects keys outside `allowed`, suggesting the closest one (catches typos in hand edits).
  void only(std::initializer_list<std::string_view> allowed) {
    std::vector<std::string> names(allowed.begin(), allowed.end());
    for (const auto& [key, node] : table_) {
      const std::string k(key.str());
      if (std::find(names.begin(), names.end(), k) != names.end()) continue;
      const auto near = closest_names(k, names, 1);
      fail(k, "...", near.empty() ? "unknown field" : fmt::format("unknown field (did you mean {}?)", near[0]));
    }
  }

  // Integer in [lo, hi]; `required` or keeps `out`.
  template <class T>
  void integer(std::string_view key, T& out, long long lo, long long hi, bool required = true) {
    const toml::node* n = table_.get(key);
    if (!n) return missing(key, required);
    if (!n->is_integer()) return fail(key, describe(*n), "must be an integer");
    const long long v = n->as_integer()->get();
    if (v < lo || v > hi) return fail(key, std::to_string(v), fmt::format("must be between {} and {}", lo, hi));
    out = static_cast<T>(v);
  }

  // Number (integer or float) in (lo, hi] when lo_open, else [lo, hi].
  void number(std::string_view key, double& out, double lo, double hi, bool required = true,
              bool lo_open = false) {
    const toml::node* n = table_.get(key);
    if (!n) return missing(key, required);
    if (!n->is_number()) return fail(key, describe(*n), "must be a number");
    const double v = n->value<double>().value_or(0);
    if ((lo_open ? v <= lo : v < lo) || v > hi)
      return fail(key, fmt::format("{}", v),
                  fmt::format("must be {} {} and at most {}", lo_open ? "above" : "at least", lo, hi));
    out = v;
  }

  void boolean(std::string_view key, bool& out, bool required = false) {
    const toml::node* n = table_.get(key);
    if (!n) return missing(key, required);
    if (!n->is_boolean()) return fail(key, describe(*n), "must be true or false");
    out = n->as_boolean()->get();
  }

  void string(std::string_view key, std::string& out, bool required = true) {
    const toml::node* n = table_.get(key);
    if (!n) return missing(key, required);
    if (!n->is_string()) return fail(key, describe(*n), "must be a string");
    out = n->as_string()->get();
  }

  // A string that must be one of `choices`; returns its index.
  template <class E>
  void choice(std::string_view key, E& out, std::initializer_list<std::string_view> choices,
              bool required = true) {
    std::string s;
    const toml::node* n = table_.get(key);
    if (!n) return missing(key, required);
    string(key, s);
    if (!ok()) return;
    int i = 0;
    for (auto c : choices) {
      if (c == s) {
        out = static_cast<E>(i);
        return;
      }
      ++i;
    }
    fail(key, fmt::format("\"{}\"", s),
         fmt::format("must be one of {}", join_or(std::vector<std::string>(choices.begin(), choices.end()))));
  }

  // An array of strings; `required` or keeps `out`.
  void strings(std::string_view key, std::vector<std::string>& out, bool required = true) {
    const toml::node* n = table_.get(key);
    if (!n) return missing(key, required);
    if (!n->is_array()) return fail(key, describe(*n), "must be an array of strings");
    std::vector<std::string> values;
    for (const auto& e : *n->as_array()) {
      if (!e.is_string()) return fail(key, describe(e), "must be an array of strings");
      values.push_back(e.as_string()->get());
    }
    out = std::move(values);
  }

  // A sub-table, or nullptr (with an error when required).
  const toml::table* table(std::string_view key, bool required = true) {
    const toml::node* n = table_.get(key);
    if (!n) {
      missing(key, required);
      return nullptr;
    }
    if (!n->is_table()) {
      fail(key, describe(*n), "must be a table");
      return nullptr;
    }
    return n->as_table();
  }

  // An array of tables; each element is read by `each(Reader&)`.
  template <class F>
  void tables(std::string_view key, bool required, F&& each) {
    const toml::node* n = table_.get(key);
    if (!n) return missing(key, required);
    if (!n->is_array()) return fail(key, describe(*n), "must be an array of tables");
    std::size_t i = 0;
    for (const auto& element : *n->as_array()) {
      if (!element.is_table()) return fail(fmt::format("{}[{}]", key, i), describe(element), "must be a table");
      Reader r(*element.as_table(), file_, fmt::format("{}[{}].", field(key), i), error_);
      each(r);
      if (!ok()) return;
      ++i;
    }
  }

  Reader sub(const toml::table& t, std::string_view key) {
    return Reader(t, file_, field(key) + ".", error_);
  }

  std::string field(std::string_view key) const { return prefix_ + std::string(key); }

 private:
  void missing(std::string_view key, bool required) {
    if (required) fail(key, "(missing)", "is required");
  }
  static std::string describe(const toml::node& n) {
    if (n.is_string()) return fmt::format("\"{}\"", n.as_string()->get());
    if (n.is_integer()) return std::to_string(n.as_integer()->get());
    if (n.is_floating_point()) return fmt::format("{}", n.as_floating_point()->get());
    if (n.is_boolean()) return n.as_boolean()->get() ? "true" : "false";
    if (n.is_array()) return "[...]";
    if (n.is_table()) return "{...}";
    return "?";
  }

  const toml::table& table_;
  std::string file_;
  std::string prefix_;
  std::string* error_;
};

// The parsed file, or "<file>: not a readable file" / "<file>:<line>:<column>: invalid TOML: ...".
inline Result<toml::table> parse_toml(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return Error{fmt::format("{}: not a readable file", path)};
  try {
    return toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    // toml++ quotes the offending characters raw ("saw '<newline>'").
    return Error{fmt::format("{}:{}:{}: invalid TOML: {}", path, e.source().begin.line,
                             e.source().begin.column, printable(e.description()))};
  }
}

// The same for a file's text already read; `path` names it in messages.
inline Result<toml::table> parse_toml_text(std::string_view text, const std::string& path) {
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return Error{fmt::format("{}:{}:{}: invalid TOML: {}", path, e.source().begin.line,
                             e.source().begin.column, printable(e.description()))};
  }
}

// `name` must equal the file stem, so that names and files cannot disagree.
inline void read_name(Reader& r, const std::string& path, std::string& name) {
  r.string("name", name);
  const std::string stem = std::filesystem::path(path).stem().string();
  if (r.ok() && name != stem)
    r.fail("name", fmt::format("\"{}\"", name), fmt::format("must equal the file name \"{}\"", stem));
}

// The [text], [vae], [parallel] and [pipeline] sections of a model profile, all required, read from
// `t` (a class file's [template]; `prefix` names it in messages): the pipeline around a transformer
// (core/profiles.cpp). The cross-field rules wait for the transformer.
Result<struct ModelProfile> read_pipeline_template(const toml::table& t, const std::string& path,
                                                   const std::string& prefix);

}  // namespace cpplan::detail
