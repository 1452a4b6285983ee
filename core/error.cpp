#include "rudnn/error.h"

#include <fmt/format.h>

namespace rudnn {

std::string_view error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::QuantizedDType: return "QuantizedDType";
    case ErrorKind::UnsupportedDType: return "UnsupportedDType";
    case ErrorKind::ShapeMismatch: return "ShapeMismatch";
    case ErrorKind::EmptyDimension: return "EmptyDimension";
    case ErrorKind::DeviceMismatch: return "DeviceMismatch";
    case ErrorKind::QueueMismatch: return "QueueMismatch";
    case ErrorKind::InvalidValue: return "InvalidValue";
    case ErrorKind::Unsupported: return "Unsupported";
    case ErrorKind::NoDevice: return "NoDevice";
    case ErrorKind::DriverFailure: return "DriverFailure";
    case ErrorKind::OutOfMemory: return "OutOfMemory";
    case ErrorKind::CompileFailure: return "CompileFailure";
    case ErrorKind::LaunchFailure: return "LaunchFailure";
    case ErrorKind::EmulatorFault: return "EmulatorFault";
    case ErrorKind::CaptureViolation: return "CaptureViolation";
    case ErrorKind::CacheFailure: return "CacheFailure";
    case ErrorKind::JitDisabled: return "JitDisabled";
    case ErrorKind::IoFailure: return "IoFailure";
    case ErrorKind::Internal: return "Internal";
  }
  return "?";
}

Error::Error(ErrorKind kind, std::string argument, std::string expected, std::string actual, std::string detail)
    : kind_(kind),
      argument_(std::move(argument)),
      expected_(std::move(expected)),
      actual_(std::move(actual)),
      detail_(std::move(detail)) {
  message_ = fmt::format("{}: expected {}, got {}", argument_, expected_, actual_);
  if (!detail_.empty()) message_ += fmt::format(" ({})", detail_);
}

}  // namespace rudnn
