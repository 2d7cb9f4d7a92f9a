#pragma once
/// \file
/// Errors as values. `Expected<T>` holds a T or an `Error`; `Status` is `Expected<void>`.
/// Member names follow std::expected so that a move to C++23 makes `Expected<T>` an alias of
/// `std::expected<T, Error>`. Our own bugs are not errors: they abort through `TT_CHECK`.

#include <sstream>
#include <string>
#include <utility>
#include <variant>

namespace tensortune {

namespace detail {
/// value() of an Expected holding an error: our bug. Prints the error and aborts.
[[noreturn]] void value_of_error(const std::string& message);
}  // namespace detail

/// Named after grpc::StatusCode so that service adapters translate with one table.
enum class ErrorCode {
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kFailedPrecondition,
  kOutOfRange,
  kUnimplemented,
  kInternal,
  kUnavailable,
  kDataLoss,
};

const char* error_code_name(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  /// Lower-case, no final period, names the field and the value.
  std::string message;

  /// Prefixes the message with context: "reading x.npy: header is truncated".
  Error with_context(const std::string& context) const {
    return Error{code, context + ": " + message};
  }
};

inline Error invalid_argument(std::string message) {
  return Error{ErrorCode::kInvalidArgument, std::move(message)};
}
inline Error not_found(std::string message) {
  return Error{ErrorCode::kNotFound, std::move(message)};
}
inline Error internal_error(std::string message) {
  return Error{ErrorCode::kInternal, std::move(message)};
}
inline Error data_loss(std::string message) {
  return Error{ErrorCode::kDataLoss, std::move(message)};
}
/// Valid input that names something we do not support (an operator, a dtype, an attribute).
inline Error unimplemented(std::string message) {
  return Error{ErrorCode::kUnimplemented, std::move(message)};
}
inline Error unavailable(std::string message) {
  return Error{ErrorCode::kUnavailable, std::move(message)};
}

/// Wraps an Error so that it converts into any Expected<T>.
struct Unexpected {
  Error error;
};
inline Unexpected unexpected(Error e) { return Unexpected{std::move(e)}; }

template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : storage_(std::in_place_index<0>, std::move(value)) {}
  Expected(Error error) : storage_(std::in_place_index<1>, std::move(error)) {}
  Expected(Unexpected u) : storage_(std::in_place_index<1>, std::move(u.error)) {}

  bool has_value() const { return storage_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { return check(), std::get<0>(storage_); }
  const T& value() const& { return check(), std::get<0>(storage_); }
  T&& value() && { return check(), std::move(std::get<0>(storage_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(storage_); }
  template <typename U>
  T value_or(U&& fallback) const& {
    return has_value() ? std::get<0>(storage_) : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  void check() const {
    if (!has_value()) detail::value_of_error(error().message);
  }
  std::variant<T, Error> storage_;
};

template <>
class [[nodiscard]] Expected<void> {
 public:
  Expected() = default;
  Expected(Error error) : error_(std::move(error)), ok_(false) {}
  Expected(Unexpected u) : error_(std::move(u.error)), ok_(false) {}
  bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Expected<void>;
inline Status ok_status() { return Status(); }

namespace detail {
/// Streams a message and aborts in its destructor; used only by TT_CHECK for our own bugs.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* cond) {
    stream_ << "internal error at " << file << ":" << line << ": check failed: " << cond << " ";
  }
  [[noreturn]] ~CheckFailure();  // prints the message to stderr and aborts
  template <typename T>
  CheckFailure& operator<<(const T& v) {
    stream_ << v;
    return *this;
  }

 private:
  std::ostringstream stream_;
};
}  // namespace detail

}  // namespace tensortune

/// Aborts with a message when an invariant of ours is broken (never for user input).
#define TT_CHECK(cond) \
  if (cond) {          \
  } else               \
    ::tensortune::detail::CheckFailure(__FILE__, __LINE__, #cond)

#define TT_CONCAT_INNER(a, b) a##b
#define TT_CONCAT(a, b) TT_CONCAT_INNER(a, b)

/// Returns the error of a failed Status/Expected from the enclosing function.
#define TT_RETURN_IF_ERROR(expr)                                                      \
  do {                                                                                \
    auto&& tt_status_ = (expr);                                                       \
    if (!tt_status_.has_value()) return ::tensortune::unexpected(tt_status_.error()); \
  } while (0)

#define TT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)                      \
  auto tmp = (expr);                                                  \
  if (!tmp.has_value()) return ::tensortune::unexpected(tmp.error()); \
  lhs = std::move(tmp).value()

/// `TT_ASSIGN_OR_RETURN(auto x, f())` binds x to f()'s value or returns its error.
#define TT_ASSIGN_OR_RETURN(lhs, expr) \
  TT_ASSIGN_OR_RETURN_IMPL(TT_CONCAT(tt_expected_, __LINE__), lhs, expr)
