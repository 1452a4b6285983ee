#!/bin/bash
# On the device: build old and new templates' kernels, print registers and times.
cd "$(dirname "$0")"
nvcc --version | tail -1
for v in old new; do
  inc=$([ $v = old ] && echo old || echo ../templates)
  (nvcc -std=c++20 -O3 -arch=sm_90a -I$inc -Xptxas -v -o bench_$v bench.cu > ptxas_$v.txt 2>&1; echo "rc $?" >> ptxas_$v.txt; cp ptxas_$v.txt $OUT/) &
done
wait
tail -5 ptxas_new.txt
for v in old new old new; do echo "== $v"; [ -x bench_$v ] && timeout 60 ./bench_$v; done
