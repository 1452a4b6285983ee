// rudnn::norm::row_norm<LayerNorm> on the host emulation device vs the FP64 oracle: every dtype,
// h in {1, 3, 31, 32, 33, 34, 36, 257, 4096, 4097}, rows in {1, 3, 70}, three geometries, forward
// and reverse schedules (the reverse runs use a 2-block grid stride), poisoned outputs.
#include "row_norm_harness.h"

namespace {
using namespace row_norm_test;
using rudnn::norm::LayerNorm;

TEST(RowNormLayerNorm, F32) { run_all<LayerNorm, float>(Op::LayerNorm, "f32"); }
TEST(RowNormLayerNorm, F16) { run_all<LayerNorm, rudnn::f16>(Op::LayerNorm, "f16"); }
TEST(RowNormLayerNorm, BF16) { run_all<LayerNorm, rudnn::bf16>(Op::LayerNorm, "bf16"); }

}  // namespace
