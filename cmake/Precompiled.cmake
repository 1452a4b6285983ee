# Precompiled MLIR headers for the dialect's and the compiler's sources. Parsing MLIR's headers is
# about half of what each of those files costs to compile (NormToLaunch.cpp: 8.6 s → 4.5 s with
# them precompiled, g++ -O3); the two targets are ~70 files, built twice in CI (release and ASan).
# Each target gets its own precompiled header (its own flags); sources still include what they use,
# which the fuzz build checks: it compiles the same sources with clang and no precompiled header
# (tests/fuzz). RUDNN_PCH=OFF builds without them.
option(RUDNN_PCH "Precompile the MLIR headers of the dialect and the compiler" ON)

function(rudnn_precompile_mlir_headers target)
  if(NOT RUDNN_PCH)
    return()
  endif()
  target_precompile_headers(${target} PRIVATE
    <fmt/format.h>
    <llvm/Support/raw_ostream.h>
    <mlir/IR/Builders.h>
    <mlir/IR/BuiltinOps.h>
    <mlir/Dialect/Func/IR/FuncOps.h>
    <mlir/Pass/PassManager.h>
    <rudnn/Dialect/Rudnn/IR/RudnnOps.h>)
endfunction()
