// Devices, queues and tensors through the public API (librudnn.so).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "rudnn/device.h"
#include "rudnn/tensor.h"

namespace rudnn {
namespace {

TEST(Device, HostIsAlwaysThere) {
  Device h = Device::host();
  EXPECT_EQ(h.kind(), DeviceKind::Host);
  EXPECT_EQ(h.to_string(), "host");
  EXPECT_EQ(h.info().warp_size, 32);
  EXPECT_EQ(h.info().max_threads_per_block, 1024);
}

TEST(Device, CudaWithoutDriverIsATypedError) {
  if (Device::cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  auto d = Device::cuda(0);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().kind(), ErrorKind::NoDevice);
  EXPECT_FALSE(d.error().message().empty());
}

TEST(Device, ParseSpecs) {
  EXPECT_TRUE(Device::parse("host").ok());
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "cuda:1x", ""}) {
    auto d = Device::parse(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_TRUE(d.error().kind() == ErrorKind::InvalidValue || d.error().kind() == ErrorKind::NoDevice) << bad;
  }
  // The ordinal is digits only: no sign or space is read as a number (RUDNN_DEVICE's rule too).
  for (const char* bad : {"cuda: 1", "cuda:+1", "cuda:-0", "cuda:1 ", "cuda:99999999999"}) {
    auto d = Device::parse(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.error().kind(), ErrorKind::InvalidValue) << bad << ": " << d.error().message();
  }
}

TEST(Device, DefaultHonoursRudnnDevice) {
  setenv("RUDNN_DEVICE", "host", 1);
  auto host = Device::default_device();
  ASSERT_TRUE(host.ok()) << host.error().message();
  EXPECT_EQ(host->kind(), DeviceKind::Host);
  // A value that is not host|cuda:N is an error naming the variable and the value, never the host.
  for (const char* bad : {"nonsense", "cuda:x", "gpu0", "HOST"}) {
    setenv("RUDNN_DEVICE", bad, 1);
    auto d = Device::default_device();
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.error().kind(), ErrorKind::InvalidValue) << d.error().message();
    EXPECT_EQ(d.error().argument(), "RUDNN_DEVICE");
    EXPECT_NE(d.error().message().find(bad), std::string::npos) << d.error().message();
  }
  // A GPU this machine lacks is NoDevice, not a silent run on the host.
  setenv("RUDNN_DEVICE", "cuda:63", 1);
  auto missing = Device::default_device();
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind(), ErrorKind::NoDevice) << missing.error().message();
  EXPECT_EQ(missing.error().argument(), "RUDNN_DEVICE");
  if (Device::cuda_device_count() == 0) {
    setenv("RUDNN_DEVICE", "cuda:0", 1);
    auto none = Device::default_device();
    ASSERT_FALSE(none.ok());
    EXPECT_EQ(none.error().kind(), ErrorKind::NoDevice) << none.error().message();
  }
  unsetenv("RUDNN_DEVICE");
  if (Device::cuda_device_count() == 0) {
    auto d = Device::default_device();
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->kind(), DeviceKind::Host);
  }
}

// Every switch follows one rule: documented values or unset; anything else is an error at first use.
TEST(Device, EverySwitchRejectsUndocumentedValues) {
  const std::pair<const char*, const char*> cases[] = {
      {"RUDNN_DISABLE_JIT", "yes"},
      {"RUDNN_DISABLE_JIT", "2"},
      {"RUDNN_DISABLE_JIT", "true"},
      {"RUDNN_AUTOTUNE", "garbage"},
      {"RUDNN_AUTOTUNE_CACHE_READONLY", "on"},
      {"RUDNN_POISON_OUTPUTS", "y"},
      {"RUDNN_LOG", "verbose"},
      {"RUDNN_EMU_SCHEDULE", "random:x"},
      {"RUDNN_EMU_THREADS", "0"},
      {"RUDNN_EMU_STACK_KIB", "16"},
  };
  unsetenv("RUDNN_DEVICE");
  for (auto [name, value] : cases) {
    const char* saved = std::getenv(name);
    const std::string keep = saved ? saved : "";
    setenv(name, value, 1);
    auto d = Device::default_device();
    if (saved)
      setenv(name, keep.c_str(), 1);
    else
      unsetenv(name);
    ASSERT_FALSE(d.ok()) << name << "=" << value;
    EXPECT_EQ(d.error().kind(), ErrorKind::InvalidValue);
    EXPECT_EQ(d.error().argument(), name) << d.error().message();
    EXPECT_NE(d.error().message().find(value), std::string::npos) << d.error().message();
  }
  for (auto [name, value] : {std::pair{"RUDNN_DISABLE_JIT", "0"},
                             {"RUDNN_AUTOTUNE", "off"},
                             {"RUDNN_LOG", "info"},
                             {"RUDNN_EMU_SCHEDULE", "random:42"},
                             {"RUDNN_EMU_THREADS", "2"}}) {
    const char* saved = std::getenv(name);
    const std::string keep = saved ? saved : "";
    setenv(name, value, 1);
    auto d = Device::default_device();
    if (saved)
      setenv(name, keep.c_str(), 1);
    else
      unsetenv(name);
    EXPECT_TRUE(d.ok()) << name << "=" << value << ": " << d.error().message();
  }
}

// Sizes formed from a shape are checked: an element count or byte size that overflows int64 is an
// InvalidValue naming the shape (it once wrapped to 0 and gave a 0-byte buffer for a huge tensor),
// and a size the host cannot allocate is OutOfMemory naming the tensor and the bytes.
TEST(Tensor, HugeShapesAreTypedErrors) {
  const Device host = Device::host();
  for (const Shape& wraps : {Shape{std::int64_t{1} << 58, 64}, Shape{4503599627370496, 4096},
                             Shape{0, std::int64_t{1} << 40, std::int64_t{1} << 40}, Shape{std::int64_t{1} << 62, 2, 2},
                             Shape{3, std::int64_t{1} << 61}}) {
    auto t = Tensor::empty(wraps, DType::F32, host);
    ASSERT_FALSE(t.ok()) << shape_to_string(wraps);
    EXPECT_EQ(t.error().kind(), ErrorKind::InvalidValue) << t.error().message();
    EXPECT_EQ(t.error().argument(), "shape");
    // The builder of host data holds no bytes for it; uploading that is the same typed error.
    HostData d = HostData::from_f64(wraps, DType::F32, {});
    EXPECT_TRUE(d.bytes.empty());
    EXPECT_TRUE(d.to_f64().empty());
    auto u = Tensor::upload(d, host);
    ASSERT_FALSE(u.ok());
    EXPECT_EQ(u.error().kind(), ErrorKind::InvalidValue) << u.error().message();
  }
  // 2^40 · 4096 f32 = 16 PiB: representable, more than any host has.
  auto huge = Tensor::empty({std::int64_t{1} << 40, 4096}, DType::F32, host);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.error().kind(), ErrorKind::OutOfMemory) << huge.error().message();
  EXPECT_NE(huge.error().message().find("18014398509481984 bytes"), std::string::npos) << huge.error().message();
  EXPECT_NE(huge.error().argument().find("tensor"), std::string::npos) << huge.error().message();
  EXPECT_EQ(checked_element_count({-1, 4}), std::nullopt);
  EXPECT_EQ(checked_element_count({3, 0, std::int64_t{1} << 62}), 0);
  EXPECT_EQ(checked_byte_count({7, 5}, DType::BF16), 70);
}

TEST(Queue, DefaultQueueIsStablePerDevice) {
  Device h = Device::host();
  EXPECT_EQ(Queue::default_queue(h), Queue::default_queue(h));
  auto q = Queue::create(h);
  ASSERT_TRUE(q.ok());
  EXPECT_FALSE(q.value() == Queue::default_queue(h));
  EXPECT_TRUE(q->synchronize().ok());
}

TEST(Tensor, UploadAndReadBack) {
  std::vector<double> v(24);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i) - 7.5;
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I64, DType::U32, DType::FP8E4M3}) {
    auto data = HostData::from_f64({2, 3, 4}, t, v);
    auto tensor = Tensor::upload(data, Device::host());
    ASSERT_TRUE(tensor.ok()) << tensor.error().message();
    EXPECT_EQ(tensor->shape(), (Shape{2, 3, 4}));
    EXPECT_EQ(tensor->strides(), (Shape{12, 4, 1}));
    EXPECT_TRUE(tensor->is_contiguous());
    auto back = to_host(tensor.value());
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->bytes, data.bytes);
    EXPECT_EQ(back->dtype, t);
  }
}

TEST(Tensor, EmptyAndZeroSized) {
  auto t = Tensor::empty({0, 5}, DType::F32, Device::host());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->numel(), 0);
  auto back = to_host(t.value());
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->bytes.empty());
  auto bad = Tensor::empty({-1, 5}, DType::F32, Device::host());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind(), ErrorKind::ShapeMismatch);
}

TEST(Tensor, UploadChecksByteCount) {
  HostData d;
  d.shape = {4};
  d.dtype = DType::F32;
  d.bytes.resize(15);
  auto t = Tensor::upload(d, Device::host());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().argument(), "data");
}

TEST(Tensor, PoisonFillsNaN) {
  auto t = Tensor::empty({8}, DType::F32, Device::host());
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->poison().ok());
  auto back = to_host(t.value());
  for (double x : back->to_f64()) EXPECT_TRUE(std::isnan(x));
}

}  // namespace
}  // namespace rudnn
