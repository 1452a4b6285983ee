// rudnn::norm::row_norm<RmsNorm> on the host emulation device vs the FP64 oracle: every dtype,
// h in {1, 3, 31, 32, 33, 34, 36, 257, 4096, 4097}, rows in {1, 3, 70}, three geometries, forward
// and reverse schedules (the reverse runs use a 2-block grid stride), poisoned outputs.
#include "row_norm_harness.h"

namespace {
using namespace row_norm_test;
using rudnn::norm::RmsNorm;

TEST(RowNormRmsNorm, F32) { run_all<RmsNorm, float>(Op::RmsNorm, "f32"); }
TEST(RowNormRmsNorm, F16) { run_all<RmsNorm, rudnn::f16>(Op::RmsNorm, "f16"); }
TEST(RowNormRmsNorm, BF16) { run_all<RmsNorm, rudnn::bf16>(Op::RmsNorm, "bf16"); }

}  // namespace
