#pragma once
// Op graphs from MLIR text: the `func.func @main` of a module of `rudnn` ops, run op by op through
// the public entries on one device. This is how rudnn-run and external test suites drive rudnn.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rudnn/error.h"
#include "rudnn/export.h"
#include "rudnn/tensor.h"

namespace rudnn::graph {

struct Value {
  std::string name;  // `rudnn.name` attribute if present, else "arg<i>" / "result<i>"
  Shape shape;       // -1 for a dynamic extent
  DType dtype = DType::F32;
};

// What Graph::prepare did: the graph runs, and the plans and kernels they made (counted
// process-wide: work on other threads meanwhile counts too).
struct PrepareReport {
  std::int64_t runs = 0;
  std::int64_t plans_made = 0;        // plan cache misses
  std::int64_t kernels_compiled = 0;  // JIT compiles (0 when every kernel came from a pack or the disk cache)
};

class RUDNN_API Graph {
 public:
  // Parses and verifies a module; errors carry MLIR's diagnostics. Two arguments (or two results)
  // with one name are an error.
  static Result<Graph, RuntimeError> parse(const std::string& text, const std::string& source_name = "<string>");
  static Result<Graph, RuntimeError> parse_file(const std::string& path);
  ~Graph();
  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;

  const std::vector<Value>& inputs() const;
  const std::vector<Value>& outputs() const;
  // Checks each input against @main's argument types, then runs every op in order; every value an op
  // produces is checked against its declared type and every result against @main's result type
  // (a dynamic extent matches any), so what runs never silently differs from what the IR says.
  Result<std::vector<Tensor>, RuntimeError> run(const std::vector<Tensor>& inputs) const;
  // Warm-up before serving (SPEC §13): makes the plans of every op for each bucket, one shape per
  // @main argument (its dynamic extents resolved: a decode batch size, a prefill chunk), by running
  // the graph once per bucket on zero-filled inputs on `queue`, then waiting for it. A later run on
  // those shapes misses no plan and compiles nothing, so it may be captured into a CUDA graph.
  // Plans depend on the shapes, not the values (an MoE layer's experts plan on the average load
  // T·top_k / E, not on where the tokens go), so zeros make the plans any data of those shapes
  // uses — with rudnn's own, aligned buffers: a later call on misaligned views of the engine's
  // memory (normalization's scalar variant) or on strided views with other layouts (attention's
  // head panels) needs its own warm-up call.
  // An error names the bucket (`buckets[b]`, or the argument as run() names it) and stops there.
  Result<PrepareReport, RuntimeError> prepare(const std::vector<std::vector<Shape>>& buckets, const Queue& queue) const;

 private:
  struct Impl;
  explicit Graph(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rudnn::graph
