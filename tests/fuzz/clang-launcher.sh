#!/bin/sh
# CXX_COMPILER_LAUNCHER / CXX_LINKER_LAUNCHER of the fuzz targets: CMake runs
#   clang-launcher.sh CLANGXX SANITIZERS <the project's C++ compiler> <its arguments...>
# and this replaces the compiler (g++) with clang++, so a fuzz target is compiled and linked by
# clang inside the g++ build, with the project's own flags and link line. A compile (-c) gets
# -fsanitize=SANITIZERS (fuzzer: coverage for libFuzzer; address: ASan); the link always gets
# libFuzzer and the ASan runtime (signal handling on an alternate stack, allocation limits).
# -g1: line tables, enough for file:line in a crash report; full -g made each file ~15 % slower
# to compile (and the instrumented compiler is ~70 files).
clang=$1
sanitizers=$2
shift 3
for arg in "$@"; do
  if [ "$arg" = "-c" ]; then
    # clang 14 warns about operator== overloads in the LLVM 22 headers that g++ accepts.
    exec "$clang" "$@" -g1 -fsanitize="$sanitizers" -Wno-ambiguous-reversed-operator
  fi
done
exec "$clang" "$@" -g1 -fsanitize=fuzzer,address
