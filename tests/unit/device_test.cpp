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
}

TEST(Device, DefaultHonoursRudnnDevice) {
  setenv("RUDNN_DEVICE", "host", 1);
  EXPECT_EQ(Device::default_device().kind(), DeviceKind::Host);
  setenv("RUDNN_DEVICE", "nonsense", 1);
  EXPECT_EQ(Device::default_device().kind(), DeviceKind::Host);  // unusable value: host, with a log line
  unsetenv("RUDNN_DEVICE");
  if (Device::cuda_device_count() == 0) EXPECT_EQ(Device::default_device().kind(), DeviceKind::Host);
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
