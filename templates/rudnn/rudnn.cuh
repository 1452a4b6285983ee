#pragma once
// Umbrella header: the whole template library. Kernel translation units may include just the
// headers they need instead; both work under NVRTC and the host compiler.
#include "rudnn/prelude.cuh"
#include "rudnn/numeric.cuh"
#include "rudnn/vector.cuh"
#include "rudnn/reduce.cuh"
#include "rudnn/norm/row_norm.cuh"
