#include "core/expression.h"

#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <map>

namespace cpplan {

namespace {

double linear(double in, double out) { return in * out + out; }
double linear_nb(double in, double out) { return in * out; }

struct Function {
  int arity;
  double (*fn)(const double*);
};

const std::map<std::string, Function, std::less<>>& functions() {
  static const std::map<std::string, Function, std::less<>> table{
      {"linear", {2, [](const double* a) { return linear(a[0], a[1]); }}},
      {"linear_nb", {2, [](const double* a) { return linear_nb(a[0], a[1]); }}},
      {"layer_norm", {1, [](const double* a) { return 2 * a[0]; }}},
      {"rms_norm", {1, [](const double* a) { return a[0]; }}},
      {"ffn", {2, [](const double* a) { return linear(a[0], a[1]) + linear(a[1], a[0]); }}},
      {"gated_ffn", {2, [](const double* a) { return linear(a[0], 2 * a[1]) + linear(a[1], a[0]); }}},
      {"ffn_nb", {2, [](const double* a) { return linear_nb(a[0], a[1]) + linear_nb(a[1], a[0]); }}},
      {"gated_ffn_nb", {2, [](const double* a) { return linear_nb(a[0], 2 * a[1]) + linear_nb(a[1], a[0]); }}},
      {"timestep_embedding", {2, [](const double* a) { return linear(a[0], a[1]) + linear(a[1], a[1]); }}},
      {"floor", {1, [](const double* a) { return std::floor(a[0]); }}},
      {"ceil", {1, [](const double* a) { return std::ceil(a[0]); }}},
      {"min", {2, [](const double* a) { return std::min(a[0], a[1]); }}},
      {"max", {2, [](const double* a) { return std::max(a[0], a[1]); }}},
  };
  return table;
}

}  // namespace

// One node of the tree: a number, a name, an operator over its children, or a call.
struct Expression::Node {
  enum class Kind { kNumber, kName, kNegate, kBinary, kChoice, kCall } kind = Kind::kNumber;
  double number = 0;
  std::string name;  // kName: the variable; kBinary: the operator; kCall: the function
  std::vector<std::shared_ptr<const Node>> children;
};

namespace {

using NodePtr = std::shared_ptr<const Expression::Node>;
using Kind = Expression::Node::Kind;

NodePtr make(Kind kind, std::string name, std::vector<NodePtr> children, double number = 0) {
  auto n = std::make_shared<Expression::Node>();
  n->kind = kind;
  n->name = std::move(name);
  n->children = std::move(children);
  n->number = number;
  return n;
}

// Precedence climbing over the binary operators, lowest first.
const std::vector<std::vector<std::string_view>> kLevels = {
    {"||"}, {"&&"}, {"==", "!="}, {"<=", ">=", "<", ">"}, {"+", "-"}, {"*", "/"}};

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  NodePtr parse(std::vector<std::string>& names) {
    names_ = &names;
    NodePtr n = choice();
    skip();
    if (pos_ != s_.size()) fail("an operator or the end");
    return n;
  }
  const std::string& error() const { return error_; }

 private:
  // c ? a : b, right-associative.
  NodePtr choice() {
    NodePtr c = binary(0);
    if (!eat("?")) return c;
    NodePtr a = choice();
    if (!eat(":")) fail("':'");
    NodePtr b = choice();
    return make(Kind::kChoice, "", {c, a, b});
  }

  NodePtr binary(size_t level) {
    if (level == kLevels.size()) return unary();
    NodePtr left = binary(level + 1);
    for (;;) {
      const std::string_view op = match(kLevels[level]);
      if (op.empty()) return left;
      left = make(Kind::kBinary, std::string(op), {left, binary(level + 1)});
    }
  }

  // Unary minus binds looser than ^ (-2^2 = -4), as in Python.
  NodePtr unary() {
    if (eat("-")) return make(Kind::kNegate, "", {unary()});
    if (eat("+")) return unary();
    return power();
  }

  NodePtr power() {
    NodePtr base = primary();
    if (!eat("^")) return base;
    return make(Kind::kBinary, "^", {base, unary()});  // right-associative; 2^-1 allowed
  }

  NodePtr primary() {
    skip();
    if (eat("(")) {
      NodePtr n = choice();
      if (!eat(")")) fail("')'");
      return n;
    }
    if (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.')) return number();
    if (pos_ < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) return word();
    fail("a number, a name or '('");
    return make(Kind::kNumber, "", {});
  }

  NodePtr number() {
    const char* begin = s_.data() + pos_;
    char* end = nullptr;
    const double v = std::strtod(begin, &end);
    if (end == begin) fail("a number");
    pos_ += static_cast<size_t>(end - begin);
    return make(Kind::kNumber, "", {}, v);
  }

  NodePtr word() {
    const size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    std::string name(s_.substr(start, pos_ - start));
    if (!eat("(")) {
      if (std::find(names_->begin(), names_->end(), name) == names_->end()) names_->push_back(name);
      return make(Kind::kName, std::move(name), {});
    }
    const auto f = functions().find(name);
    if (f == functions().end()) fail(fmt::format("a known function, not {}", name));
    std::vector<NodePtr> args;
    if (!eat(")")) {
      do args.push_back(choice());
      while (eat(","));
      if (!eat(")")) fail("',' or ')'");
    }
    if (f != functions().end() && static_cast<int>(args.size()) != f->second.arity)
      fail(fmt::format("{} argument(s) for {}", f->second.arity, name));
    return make(Kind::kCall, std::move(name), std::move(args));
  }

  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(std::string_view token) {
    skip();
    if (s_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  std::string_view match(const std::vector<std::string_view>& ops) {
    skip();
    for (std::string_view op : ops) {
      // "<" must not take the first character of "<=" (listed first), nor "|" of "||".
      if (s_.substr(pos_, op.size()) == op) {
        pos_ += op.size();
        return op;
      }
    }
    return {};
  }
  void fail(const std::string& expected) {
    if (error_.empty()) error_ = fmt::format("at column {}: expected {}", pos_ + 1, expected);
    pos_ = s_.size();
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string error_;
  std::vector<std::string>* names_ = nullptr;
};

double apply(std::string_view op, double a, double b) {
  if (op == "+") return a + b;
  if (op == "-") return a - b;
  if (op == "*") return a * b;
  if (op == "/") return a / b;
  if (op == "^") return std::pow(a, b);
  if (op == "==") return a == b;
  if (op == "!=") return a != b;
  if (op == "<") return a < b;
  if (op == "<=") return a <= b;
  if (op == ">") return a > b;
  if (op == ">=") return a >= b;
  if (op == "&&") return a != 0 && b != 0;
  return a != 0 || b != 0;  // ||
}

Result<double> eval(const Expression::Node& n, const Expression::Lookup& lookup) {
  switch (n.kind) {
    case Kind::kNumber:
      return n.number;
    case Kind::kName: {
      const auto v = lookup(n.name);
      if (!v) return Error{fmt::format("unknown name {}", n.name)};
      return *v;
    }
    case Kind::kNegate: {
      auto v = eval(*n.children[0], lookup);
      return v ? Result<double>(-*v) : v;
    }
    case Kind::kChoice: {
      auto c = eval(*n.children[0], lookup);
      if (!c) return c;
      return eval(*n.children[*c != 0 ? 1 : 2], lookup);  // only the branch taken is evaluated
    }
    case Kind::kBinary: {
      auto a = eval(*n.children[0], lookup);
      if (!a) return a;
      auto b = eval(*n.children[1], lookup);
      if (!b) return b;
      return apply(n.name, *a, *b);
    }
    case Kind::kCall: {
      double args[4] = {};
      for (size_t i = 0; i < n.children.size() && i < 4; ++i) {
        auto v = eval(*n.children[i], lookup);
        if (!v) return v;
        args[i] = *v;
      }
      return functions().find(n.name)->second.fn(args);
    }
  }
  return 0.0;
}

}  // namespace

Result<Expression> Expression::parse(std::string_view text) {
  Expression e;
  e.text_ = std::string(text);
  Parser p(text);
  e.root_ = p.parse(e.names_);
  if (!p.error().empty()) return Error{p.error()};
  return e;
}

Result<double> Expression::evaluate(const Lookup& lookup) const { return eval(*root_, lookup); }

std::vector<std::string> expression_functions() {
  std::vector<std::string> out;
  for (const auto& [name, f] : functions()) out.push_back(name);
  return out;
}

}  // namespace cpplan
