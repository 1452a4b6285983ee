#pragma once
// What the compiler hands the runtime: for each kernel of a lowered op, its generated source and the
// rules that turn a call's runtime sizes into launch geometry and kernel arguments. Plain C++: the
// runtime and ops layers read this without touching MLIR.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace rudnn::compiler {

// A runtime value the launch depends on. Operands are numbered as the op's operands in order
// (an absent optional operand keeps its slot), then its results.
struct SizeRef {
  enum class Kind { Const, Rows, Dim, RowStride, Stride };
  Kind kind = Kind::Const;
  int operand = -1;        // Rows, Dim, RowStride (elements between rows: the last extent unless a view), Stride
  int dim = -1;            // Dim, Stride (the element stride of that dim; 0 at extent 1): index into the shape
  std::int64_t value = 1;  // Const
};

// ceil_div(product(factors), divisor); an empty product is 1.
struct SizeExpr {
  std::vector<SizeRef> factors;
  std::int64_t divisor = 1;
};

// One kernel parameter and where its value comes from.
struct KernelParam {
  enum class Kind {
    Buffer,      // device pointer of operand `operand`
    NullBuffer,  // an absent optional operand: nullptr
    Size,        // int64 `size`
    F32,         // a float baked from an op attribute (e.g. epsilon)
  };
  Kind kind = Kind::Buffer;
  std::string c_type;  // as spelled in the generated source: "const rudnn::bf16*", "long long", "float"
  std::string name;
  int operand = -1;
  SizeExpr size;
  float f32 = 0.0f;
};

// The configuration a kernel was instantiated with, as (name, value) pairs in a fixed order
// (e.g. threads_per_row=256, rows_per_block=1, vector_width=8). Autotune and heuristics produce it.
struct KernelConfig {
  std::vector<std::pair<std::string, std::int64_t>> values;
  std::int64_t get(const std::string& key, std::int64_t fallback = 0) const {
    for (auto& [k, v] : values)
      if (k == key) return v;
    return fallback;
  }
  std::string to_string() const;  // "threads_per_row=256,rows_per_block=1,vector_width=8"
};

struct KernelLaunch {
  std::string entry;                // extern "C" symbol of the kernel
  std::string source;               // CUDA C++ translation unit that only instantiates a template
  std::vector<KernelParam> params;  // in the kernel's parameter order
  std::array<SizeExpr, 3> grid;     // x, y, z
  std::array<std::int64_t, 3> block{1, 1, 1};
  std::int64_t dynamic_shared_bytes = 0;
  KernelConfig config;
};

// A device buffer that lives only during one call of a multi-kernel op: one launch writes it, later
// launches read it (e.g. the SwiGLU intermediate between the two expert GEMMs). The runtime
// allocates it on the call's queue (stream-ordered) and releases it after the last launch.
struct Temporary {
  SizeExpr elements;  // over the op's operand/result slots
  std::int64_t element_bytes = 0;
  // The tensor type's extents, -1 for the one dynamic extent (= elements / the others' product), so
  // that rows(k)/dim(k, d) of a temporary mean what they mean for any operand.
  std::vector<std::int64_t> shape;
};

// The kernels of one op, in launch order on one queue. Slots: the op's operands, then its results,
// then `temporaries` (temporary i is slot first_temporary_slot + i).
struct LoweredOp {
  std::string op_name;  // "rudnn.layer_norm"
  std::string call;     // the call's operands with their shapes, for errors ("input [16, 4096] bf16, ...")
  std::vector<KernelLaunch> launches;
  std::vector<Temporary> temporaries;
  int first_temporary_slot = 0;
};

}  // namespace rudnn::compiler
