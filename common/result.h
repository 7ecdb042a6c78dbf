// Result<T>: a value or an Error. No exception crosses a library boundary; functions that
// can fail return Result and callers add context as the error travels up.
#pragma once

#include <type_traits>
#include <utility>
#include <variant>

#include "common/error.h"

namespace fabric {

template <typename T> class [[nodiscard]] Result {
public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

  template <typename U> T value_or(U&& fallback) const& {
    return ok() ? value() : static_cast<T>(std::forward<U>(fallback));
  }

  // Adds context to the error, if any, and passes the result on.
  Result&& context(std::string text) && {
    if (!ok()) std::get<1>(v_).with_context(std::move(text));
    return std::move(*this);
  }

private:
  std::variant<T, Error> v_;
};

template <> class [[nodiscard]] Result<void> {
public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const& { return error_; }
  Error&& error() && { return std::move(error_); }

  Result&& context(std::string text) && {
    if (!ok_) error_.with_context(std::move(text));
    return std::move(*this);
  }

private:
  Error error_{ErrorCode::kInternal, ""};
  bool ok_ = true;
};

// Ok() for Result<void> returns; reads better than `return {};`.
inline Result<void> Ok() {
  return {};
}

} // namespace fabric

#define FABRIC_CONCAT_INNER(a, b) a##b
#define FABRIC_CONCAT(a, b) FABRIC_CONCAT_INNER(a, b)

// Evaluates a Result-returning expression; on error returns that error from the
// enclosing function (which must itself return some Result). The temporary's name is
// unique per expansion so that a FABRIC_TRY inside a lambda passed to another FABRIC_TRY
// does not shadow the outer one.
#define FABRIC_TRY(expr) FABRIC_TRY_IMPL(FABRIC_CONCAT(fabric_try_result_, __COUNTER__), expr)
#define FABRIC_TRY_IMPL(tmp, expr)                                                                 \
  do {                                                                                             \
    auto tmp = (expr);                                                                             \
    if (!tmp.ok()) return std::move(tmp).error();                                                  \
  } while (0)
// FABRIC_ASSIGN_OR_RETURN(auto x, make_x()) declares x from the value or returns the error.
#define FABRIC_ASSIGN_OR_RETURN(decl, expr)                                                        \
  FABRIC_ASSIGN_OR_RETURN_IMPL(FABRIC_CONCAT(fabric_result_, __COUNTER__), decl, expr)
#define FABRIC_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr)                                              \
  auto tmp = (expr);                                                                               \
  if (!tmp.ok()) return std::move(tmp).error();                                                    \
  decl = std::move(tmp).value()
