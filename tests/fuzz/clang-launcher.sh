#!/bin/sh
# CXX_COMPILER_LAUNCHER / CXX_LINKER_LAUNCHER of the fuzz targets: CMake runs
#   clang-launcher.sh CLANGXX <the project's C++ compiler> <its arguments...>
# and this replaces the compiler (g++) with clang++ and adds libFuzzer + ASan, so a fuzz target
# is compiled and linked by clang inside the g++ build, with the project's own flags and link line.
clang=$1
shift 2
# clang 14 warns about operator== overloads in the LLVM 22 headers that g++ accepts.
exec "$clang" "$@" -g -fsanitize=fuzzer,address -Wno-ambiguous-reversed-operator
