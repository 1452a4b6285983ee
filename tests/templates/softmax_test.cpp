// rudnn::norm::row_norm<Softmax> on the host emulation device vs the FP64 oracle: every dtype,
// h in {1, 3, 31, 32, 33, 34, 36, 257, 4096, 4097}, rows in {1, 3, 70}, three geometries, forward
// and reverse schedules (the reverse runs use a 2-block grid stride), poisoned outputs.
#include "row_norm_harness.h"

namespace {
using namespace row_norm_test;
using rudnn::norm::Softmax;

TEST(RowNormSoftmax, F32) { run_all<Softmax, float>(Op::Softmax, "f32"); }
TEST(RowNormSoftmax, F16) { run_all<Softmax, rudnn::f16>(Op::Softmax, "f16"); }
TEST(RowNormSoftmax, BF16) { run_all<Softmax, rudnn::bf16>(Op::Softmax, "bf16"); }

}  // namespace
