#pragma once
// Helpers shared by the emulator tests: binding, launching a test kernel, checking faults.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>

#include "host/emulator.h"
#include "rudnn/prelude.cuh"

extern "C" void rudnn_emu_bind(const rudnn_emu_api* api);

namespace emu_test {

namespace host = rudnn::runtime::host;

inline const host::ScheduleOptions kForward{host::Schedule::Forward, 0};
inline const host::ScheduleOptions kReverse{host::Schedule::Reverse, 0};
inline const host::ScheduleOptions kRandom{host::Schedule::Random, 12345};
inline const host::ScheduleOptions kAllSchedules[] = {kForward, kReverse, kRandom};

inline std::string schedule_name(const host::ScheduleOptions& s) {
  return s.order == host::Schedule::Forward   ? "forward"
         : s.order == host::Schedule::Reverse ? "reverse"
                                              : "random:" + std::to_string(s.seed);
}

class EmulatorTest : public ::testing::Test {
 protected:
  void SetUp() override { rudnn_emu_bind(host::emulator_api()); }
  void TearDown() override {
    host::set_worker_threads(0);
    host::set_shared_memory_limit(host::kDefaultSharedMemoryLimit);
  }
};

// Launches `kernel` with args[i] = the i-th pointer.
template <class... P>
rudnn::Status<rudnn::RuntimeError> run(host::ThreadEntry kernel, host::Dim3 grid, host::Dim3 block,
                                       std::size_t shared_bytes, const host::ScheduleOptions& schedule, P*... ptrs) {
  void* args[] = {const_cast<void*>(static_cast<const void*>(ptrs))..., nullptr};
  return host::launch(kernel, args, grid, block, shared_bytes, schedule);
}

template <class T>
T& arg(void** args, int i) {
  return *static_cast<T*>(args[i]);
}
template <class T>
T* ptr(void** args, int i) {
  return static_cast<T*>(args[i]);
}

// Checks an EmulatorFault whose message contains every piece of `parts`.
inline void expect_fault(const rudnn::Status<rudnn::RuntimeError>& status, std::initializer_list<const char*> parts) {
  ASSERT_FALSE(status.ok()) << "expected an emulator fault";
  if (std::getenv("RUDNN_EMU_TEST_SHOW_FAULTS") != nullptr)
    std::printf("fault: %s\n", status.error().message().c_str());
  EXPECT_EQ(status.error().kind(), rudnn::ErrorKind::EmulatorFault) << status.error().message();
  for (const char* p : parts)
    EXPECT_NE(status.error().message().find(p), std::string::npos)
        << "missing \"" << p << "\" in: " << status.error().message();
}

#define EMU_EXPECT_OK(status)                                                 \
  do {                                                                        \
    const auto& s_ = (status);                                                \
    EXPECT_TRUE(s_.ok()) << (s_.ok() ? std::string() : s_.error().message()); \
  } while (0)

}  // namespace emu_test
