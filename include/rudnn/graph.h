#pragma once
// Op graphs from MLIR text: the `func.func @main` of a module of `rudnn` ops, run op by op through
// the public entries on one device. This is how rudnn-run and external test suites drive rudnn.
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

 private:
  struct Impl;
  explicit Graph(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rudnn::graph
