#pragma once
// Expected failures come back as values (DuckDB / Ceres style): a Result holds either a value
// or an Error whose message names the field, its value and the rule it breaks.

#include <string>
#include <utility>
#include <variant>

namespace cpplan {

struct Error {
  std::string message;
};

template <class T>
class Result {
 public:
  Result(T value) : data_(std::move(value)) {}            // NOLINT: implicit by design
  Result(Error error) : data_(std::move(error)) {}        // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(data_); }
  explicit operator bool() const { return ok(); }
  const T& value() const& { return std::get<T>(data_); }
  T& value() & { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<Error>(data_); }

 private:
  std::variant<T, Error> data_;
};

}  // namespace cpplan
