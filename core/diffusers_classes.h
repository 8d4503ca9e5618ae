#pragma once
// Internal to core/diffusers_config.cpp: typed access to the fields of a component's config (the
// text encoders'). The transformer classes are data: profiles/classes/*.toml (core/class_spec.h).

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>


namespace cpplan::diffusers::detail {

// A field a class needs is missing or has the wrong type: thrown by ConfigFields, caught by the
// importer, which prefixes the file. `message` is "FIELD = VALUE: RULE" or "FIELD: missing (...)".
struct FieldError {
  std::string message;
};

// Typed access to a config's fields; a required field that is absent or mistyped throws
// FieldError naming the field and the class that needs it.
class ConfigFields {
 public:
  ConfigFields(const nlohmann::json& config, std::string class_name)
      : config_(config), class_name_(std::move(class_name)) {}
  const std::string& class_name() const { return class_name_; }
  bool has(std::string_view field) const;  // present and not null
  int integer(std::string_view field) const;
  int integer_or(std::string_view field, int fallback) const;
  double number_or(std::string_view field, double fallback) const;
  bool boolean_or(std::string_view field, bool fallback) const;
  std::string string_or(std::string_view field, std::string fallback) const;
  // An integer array (or, where a class accepts both, one integer as a one-element array).
  std::vector<int> integers(std::string_view field) const;
  std::vector<int> integers_or(std::string_view field, std::vector<int> fallback) const;
  const nlohmann::json& config() const { return config_; }

 private:
  const nlohmann::json* find(std::string_view field) const;
  [[noreturn]] void wrong_type(std::string_view field, std::string_view rule) const;
  const nlohmann::json& config_;
  std::string class_name_;
};

}  // namespace cpplan::diffusers::detail
