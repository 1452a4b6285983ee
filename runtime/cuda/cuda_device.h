#pragma once
#include "device_backend.h"

namespace rudnn::runtime::cuda {

// Number of CUDA GPUs (0 without a usable driver).
int device_count();
// The process-lifetime backend of GPU `ordinal`, or NoDevice naming why not.
Result<DeviceBackend*, RuntimeError> device_backend(int ordinal);

}  // namespace rudnn::runtime::cuda
