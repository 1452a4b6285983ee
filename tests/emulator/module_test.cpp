// Loads a separately built kernel module the way the runtime loads generated kernels.
#include <dlfcn.h>

#include <vector>

#include "emu_test.h"

namespace emu_test {
namespace {

TEST_F(EmulatorTest, DlopenedModuleRunsThroughTheAbiOnly) {
  void* handle = dlopen(RUDNN_EMU_TEST_MODULE, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto version = reinterpret_cast<rudnn_emu_module_abi_version_fn>(dlsym(handle, RUDNN_EMU_MODULE_ABI_VERSION_SYMBOL));
  auto bind = reinterpret_cast<rudnn_emu_bind_fn>(dlsym(handle, RUDNN_EMU_BIND_SYMBOL));
  auto entry = reinterpret_cast<host::ThreadEntry>(dlsym(handle, "rudnn_test_scale_rows"));
  ASSERT_NE(version, nullptr);
  ASSERT_NE(bind, nullptr);
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(version(), RUDNN_EMU_ABI_VERSION);
  // Hidden visibility: nothing but the entry points is exported.
  EXPECT_EQ(dlsym(handle, "_ZN5rudnn10emu_detail3apiE"), nullptr);
  bind(host::emulator_api());
  std::vector<float> x(256), y(256, 0.0f);
  for (int i = 0; i < 256; ++i) x[i] = static_cast<float>(i);
  float alpha = 2.0f;
  void* args[] = {x.data(), y.data(), &alpha};
  const auto status = host::launch(entry, args, {4, 1, 1}, {64, 1, 1}, 64 * sizeof(float), kRandom);
  EXPECT_TRUE(status.ok()) << (status.ok() ? "" : status.error().message());
  for (int b = 0; b < 4; ++b)
    for (int t = 0; t < 64; ++t) EXPECT_EQ(y[b * 64 + t], 2.0f * static_cast<float>(b * 64 + 63 - t));
  dlclose(handle);
}

}  // namespace
}  // namespace emu_test
