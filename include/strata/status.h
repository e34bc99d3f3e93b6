// Status and Result<T>: how every Strata call reports success or failure.
//
// A Status is OK or carries a code and a message naming the file, offset, key
// or limit involved. Result<T> holds either a value or a non-OK Status. No
// exception crosses the public API.
//
// Thread-compatible value types. Intentionally copyable.
#ifndef STRATA_STATUS_H_
#define STRATA_STATUS_H_

#include <cassert>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace strata {

class [[nodiscard]] Status {
 public:
  // DO NOT CHANGE the values: they appear in logs and tool exit codes.
  enum class Code : unsigned char {
    kOk = 0,
    kNotFound = 1,
    kCorruption = 2,
    kNotSupported = 3,
    kInvalidArgument = 4,
    kIOError = 5,
    kBusy = 6,
    kAborted = 7,
    kAlreadyExists = 8,
    kResourceExhausted = 9,
    kFailedPrecondition = 10,
    kTimedOut = 11,
  };

  Status() noexcept = default;  // OK
  // Intentionally copyable.
  Status(const Status& s) : state_(s.state_ ? std::make_unique<State>(*s.state_) : nullptr) {}
  Status& operator=(const Status& s) {
    if (this != &s) state_ = s.state_ ? std::make_unique<State>(*s.state_) : nullptr;
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status OK() { return Status(); }
  static Status NotFound(std::string_view msg) { return Status(Code::kNotFound, msg); }
  static Status Corruption(std::string_view msg) { return Status(Code::kCorruption, msg); }
  static Status NotSupported(std::string_view msg) { return Status(Code::kNotSupported, msg); }
  static Status InvalidArgument(std::string_view msg) {
    return Status(Code::kInvalidArgument, msg);
  }
  static Status IOError(std::string_view msg) { return Status(Code::kIOError, msg); }
  static Status Busy(std::string_view msg) { return Status(Code::kBusy, msg); }
  static Status Aborted(std::string_view msg) { return Status(Code::kAborted, msg); }
  static Status AlreadyExists(std::string_view msg) { return Status(Code::kAlreadyExists, msg); }
  static Status ResourceExhausted(std::string_view msg) {
    return Status(Code::kResourceExhausted, msg);
  }
  static Status FailedPrecondition(std::string_view msg) {
    return Status(Code::kFailedPrecondition, msg);
  }
  static Status TimedOut(std::string_view msg) { return Status(Code::kTimedOut, msg); }

  bool ok() const { return state_ == nullptr; }
  Code code() const { return state_ ? state_->code : Code::kOk; }
  bool IsNotFound() const { return code() == Code::kNotFound; }
  bool IsCorruption() const { return code() == Code::kCorruption; }
  bool IsNotSupported() const { return code() == Code::kNotSupported; }
  bool IsInvalidArgument() const { return code() == Code::kInvalidArgument; }
  bool IsIOError() const { return code() == Code::kIOError; }
  bool IsBusy() const { return code() == Code::kBusy; }
  bool IsAborted() const { return code() == Code::kAborted; }
  bool IsAlreadyExists() const { return code() == Code::kAlreadyExists; }
  bool IsResourceExhausted() const { return code() == Code::kResourceExhausted; }
  bool IsFailedPrecondition() const { return code() == Code::kFailedPrecondition; }
  bool IsTimedOut() const { return code() == Code::kTimedOut; }

  // The message without the code name; empty for OK.
  std::string_view message() const {
    return state_ ? std::string_view(state_->message) : std::string_view();
  }
  // "OK" or "<Code name>: <message>".
  std::string ToString() const;

  // Returns a copy with `context + ": "` put in front of the message.
  Status WithContext(std::string_view context) const;

  // Marks a deliberately ignored status. Say why at the call site.
  void PermitUncheckedError() const {}

 private:
  struct State {
    Code code;
    std::string message;
  };
  Status(Code code, std::string_view msg)
      : state_(std::make_unique<State>(State{code, std::string(msg)})) {}

  std::unique_ptr<State> state_;
};

const char* StatusCodeName(Status::Code code);

// Either a value of type T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    assert(!status_.ok() && "Result built from an OK status has no value");
    if (status_.ok()) status_ = Status::InvalidArgument("Result built from OK status");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const& { return status_; }
  Status status() && { return std::move(status_); }

  // REQUIRES: ok()
  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace strata

// Returns from the enclosing function when `expr` yields a non-OK Status.
#define STRATA_RETURN_IF_ERROR(expr)          \
  do {                                        \
    ::strata::Status _strata_s = (expr);      \
    if (!_strata_s.ok()) return _strata_s;    \
  } while (0)

// Evaluates `expr`, a Result<T>; returns its Status from the enclosing
// function when not OK, else assigns its value to `lhs` (a declaration or
// an lvalue).
#define STRATA_ASSIGN_OR_RETURN(lhs, expr) \
  STRATA_ASSIGN_OR_RETURN_IMPL_(STRATA_CONCAT_(_strata_result_, __LINE__), lhs, expr)
#define STRATA_ASSIGN_OR_RETURN_IMPL_(result, lhs, expr) \
  auto result = (expr);                                  \
  if (!result.ok()) return std::move(result).status();   \
  lhs = std::move(result).value()
#define STRATA_CONCAT_(a, b) STRATA_CONCAT_INNER_(a, b)
#define STRATA_CONCAT_INNER_(a, b) a##b

#endif  // STRATA_STATUS_H_
