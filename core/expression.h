#pragma once
// The arithmetic a class file writes (profiles/classes/*.toml, docs/profiles.md): numbers, names,
// + - * / ^ (power, right-associative), unary -, comparisons (== != < <= > >=, giving 1 or 0),
// && and || (0 is false), `c ? a : b`, parentheses, and calls of the functions below. Parsed once;
// evaluated against any set of named values.
//
// A hand-written recursive-descent parser: the planning binary links statically, and Debian's
// expression libraries (muparser) ship no static archive.
//
// Functions (parameter counts as torch counts them, weights and biases):
//   linear(in, out)          in x out + out        linear_nb(in, out)   in x out
//   layer_norm(d)            2d                    rms_norm(d)          d
//   ffn(d, inner)            linear(d, inner) + linear(inner, d)
//   gated_ffn(d, inner)      linear(d, 2 inner) + linear(inner, d)   (GEGLU, SwiGLU)
//   ffn_nb, gated_ffn_nb     the same without biases
//   timestep_embedding(in, d)  linear(in, d) + linear(d, d)   (diffusers' TimestepEmbedding)
//   floor(x), ceil(x), min(a, b), max(a, b)

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cpplan {

class Expression {
 public:
  struct Node;
  // A syntax error is one line: "at column C: what was expected".
  static Result<Expression> parse(std::string_view text);

  const std::string& text() const { return text_; }
  // The names it reads, each once, in order of first use.
  const std::vector<std::string>& names() const { return names_; }

  // `lookup` gives a name's value (nullopt: unknown, an error naming it).
  using Lookup = std::function<std::optional<double>(std::string_view)>;
  Result<double> evaluate(const Lookup& lookup) const;

 private:
  std::shared_ptr<const Node> root_;
  std::string text_;
  std::vector<std::string> names_;
};

// The function names an expression may call.
std::vector<std::string> expression_functions();

}  // namespace cpplan
