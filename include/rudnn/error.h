#pragma once
// Typed errors and Result. Nothing in the public API throws or aborts on bad input: every fallible
// entry returns Result<T, XError>, whose error names the argument, the expected and the actual value.
#include <string>
#include <utility>
#include <variant>

#include "rudnn/export.h"

namespace rudnn {

enum class ErrorKind {
  // contract violations (the call wrote nothing)
  QuantizedDType,    // a non-quantized tensor was required
  UnsupportedDType,  // dtype outside the supported set
  ShapeMismatch,     // rank or extent differs from the contract
  EmptyDimension,    // an extent that must be > 0 is 0
  DeviceMismatch,    // tensors on different devices
  QueueMismatch,     // tensors on different queues of one device
  InvalidValue,      // a scalar option is out of range (epsilon, top_k, ...)
  Unsupported,       // a valid request this build or device cannot serve
  // runtime failures
  NoDevice,       // no such device (no driver, ordinal out of range)
  DriverFailure,  // a CUDA Driver API call failed
  OutOfMemory,
  CompileFailure,  // NVRTC or the host compiler rejected generated code
  LaunchFailure,
  EmulatorFault,  // the host emulation device caught a kernel bug (divergent barrier, ...)
  CacheFailure,
  JitDisabled,  // RUDNN_DISABLE_JIT=1 and the kernel is in no cache or pack
  IoFailure,
  Internal,
  // Appended (the values above keep their numbers):
  CaptureViolation,  // the queue's stream is being captured and the call would break the capture
};

RUDNN_API std::string_view error_kind_name(ErrorKind kind);

// The common payload of every error type.
class RUDNN_API Error {
 public:
  Error(ErrorKind kind, std::string argument, std::string expected, std::string actual, std::string detail = {});
  ErrorKind kind() const { return kind_; }
  const std::string& argument() const { return argument_; }
  const std::string& expected() const { return expected_; }
  const std::string& actual() const { return actual_; }
  const std::string& detail() const { return detail_; }
  // "<argument>: expected <expected>, got <actual> (<detail>)"
  const std::string& message() const { return message_; }

 private:
  ErrorKind kind_;
  std::string argument_, expected_, actual_, detail_, message_;
};

// Device, compile and launch failures. The op-family errors wrap it.
struct RuntimeError : Error {
  using Error::Error;
};

// One distinct type per op family, as the guide names them.
template <class Tag>
struct FamilyError : Error {
  using Error::Error;
  // A runtime failure seen while serving a call of this family.
  static FamilyError from(const RuntimeError& e) { return FamilyError(static_cast<const Error&>(e)); }
  explicit FamilyError(const Error& e) : Error(e) {}
};
struct NormalizationErrorTag {};
using NormalizationError = FamilyError<NormalizationErrorTag>;
struct MoeErrorTag {};
using MoeError = FamilyError<MoeErrorTag>;
struct GatedDeltaErrorTag {};
using GatedDeltaError = FamilyError<GatedDeltaErrorTag>;
struct AttentionSetupErrorTag {};
using AttentionSetupError = FamilyError<AttentionSetupErrorTag>;

template <class T, class E>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Result(E error) : v_(std::in_place_index<1>, std::move(error)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const E& error() const { return std::get<1>(v_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, E> v_;
};

template <class E>
class [[nodiscard]] Result<void, E> {
 public:
  Result() = default;
  Result(E error) : error_(std::move(error)), ok_(false) {}
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const E& error() const { return std::get<1>(error_); }

 private:
  std::variant<std::monostate, E> error_;
  bool ok_ = true;
};

template <class E>
using Status = Result<void, E>;

}  // namespace rudnn
