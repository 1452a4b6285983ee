#pragma once
#include "device_backend.h"

namespace rudnn::runtime {

// The host emulation device: memory is host memory, a queue runs its work at once on the calling
// thread (so it is trivially ordered), kernels are host shared objects run by the SIMT emulator.
DeviceBackend& host_device_backend();

// The device limits the host device reports (Hopper-like by default; tests may change them).
DeviceInfo& host_device_info();

}  // namespace rudnn::runtime
