#include <gtest/gtest.h>

#include <cmath>

#include "contracts/normalization.h"
#include "rudnn/error.h"

namespace rudnn {
namespace {

TEST(Error, MessageNamesArgumentExpectedActual) {
  RuntimeError e(ErrorKind::ShapeMismatch, "gamma", "shape [4]", "[5]", "in layer_norm");
  EXPECT_EQ(e.message(), "gamma: expected shape [4], got [5] (in layer_norm)");
  EXPECT_EQ(e.kind(), ErrorKind::ShapeMismatch);
  EXPECT_EQ(error_kind_name(e.kind()), "ShapeMismatch");
}

TEST(Error, FamilyErrorWrapsRuntimeError) {
  RuntimeError r(ErrorKind::CompileFailure, "kernel k", "ok", "failed");
  NormalizationError n = NormalizationError::from(r);
  EXPECT_EQ(n.kind(), ErrorKind::CompileFailure);
  EXPECT_EQ(n.message(), r.message());
}

TEST(Result, ValueAndError) {
  Result<int, RuntimeError> ok = 3;
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 3);
  Result<int, RuntimeError> bad = RuntimeError(ErrorKind::Internal, "a", "b", "c");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().argument(), "a");
  Status<RuntimeError> fine;
  EXPECT_TRUE(fine.ok());
  Status<RuntimeError> failed = RuntimeError(ErrorKind::Internal, "x", "y", "z");
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().argument(), "x");
}

// The contract of SPEC §2 on plain signatures: one case per contract line.
using contracts::NormKind;
using contracts::NormSignature;

NormSignature valid(NormKind kind) {
  NormSignature s;
  s.kind = kind;
  s.input = {{4, 8}, DType::BF16, 0};
  if (kind != NormKind::Softmax) s.gamma = contracts::NormOperand{{8}, DType::F32, 0};
  if (kind == NormKind::LayerNorm) s.beta = contracts::NormOperand{{8}, DType::F32, 0};
  s.epsilon = 1e-5;
  return s;
}

TEST(NormContract, AcceptsValid) {
  for (auto k : {NormKind::LayerNorm, NormKind::RmsNorm, NormKind::Softmax})
    EXPECT_FALSE(contracts::check_normalization(valid(k)).has_value());
  auto dynamic = valid(NormKind::LayerNorm);
  dynamic.input.shape = {contracts::kDynamic, 8};
  EXPECT_FALSE(contracts::check_normalization(dynamic).has_value());
}

TEST(NormContract, EachLineRejected) {
  auto expect = [](NormSignature s, ErrorKind kind, const char* arg) {
    auto e = contracts::check_normalization(s);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->kind(), kind) << e->message();
    EXPECT_EQ(e->argument(), arg) << e->message();
  };
  auto s = valid(NormKind::LayerNorm);
  s.input.dtype = DType::FP8E4M3;
  expect(s, ErrorKind::QuantizedDType, "input");
  s = valid(NormKind::LayerNorm);
  s.input.dtype = DType::I32;
  expect(s, ErrorKind::UnsupportedDType, "input");
  s = valid(NormKind::Softmax);
  s.input.shape = {3, 0};
  expect(s, ErrorKind::EmptyDimension, "logits");
  s = valid(NormKind::RmsNorm);
  s.gamma->shape = {7};
  expect(s, ErrorKind::ShapeMismatch, "gamma");
  s = valid(NormKind::LayerNorm);
  s.beta->dtype = DType::BF16;
  expect(s, ErrorKind::UnsupportedDType, "beta");
  s = valid(NormKind::LayerNorm);
  s.gamma->dtype = DType::FP8E4M3;
  expect(s, ErrorKind::QuantizedDType, "gamma");
  s = valid(NormKind::LayerNorm);
  s.beta->device = 1;
  expect(s, ErrorKind::DeviceMismatch, "beta");
  for (double eps : {0.0, -1.0, double(INFINITY), double(NAN)}) {
    s = valid(NormKind::RmsNorm);
    s.epsilon = eps;
    expect(s, ErrorKind::InvalidValue, "epsilon");
  }
}

}  // namespace
}  // namespace rudnn
