#!/bin/sh
# rudnn-autotune on the host device: --help, a tuning, the refusal to write host timings where a
# GPU could read them, two processes tuning into one cache at once, --merge, and rudnn-run reading
# the cache in cached mode (the plan's log line says "cache").
# usage: rudnn_autotune_test.sh RUDNN_AUTOTUNE RUDNN_RUN SOURCE_DIR
set -eu
tool=$1 run=$2 src=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export RUDNN_CACHE_DIR="${RUDNN_CACHE_DIR:-$work/kernels}"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$tool" --help | grep -q "example" || fail "--help shows no example"
"$tool" "$src/softmax_h3.mlir" --device host --rows 4 -o "$work/t.sqlite" 2> "$work/refused.txt" && fail "host tuning written to a GPU-readable name"
grep -q '.host.' "$work/refused.txt" || fail "refusal does not say why: $(cat "$work/refused.txt")"
[ ! -e "$work/t.sqlite" ] || fail "refused output was created"
"$tool" --rows 0 "$src/softmax_h3.mlir" -o x 2>&1 | grep -q -- '--rows: expected an integer >= 1, got "0"' || fail "bad --rows not named"

# Two processes tuning into one cache at once (different buckets), then a third with both.
"$tool" "$src/softmax_h3.mlir" --device host --rows 4 --jobs 1 --repeats 3 -o "$work/shared.host.sqlite" > "$work/a.txt" 2>&1 &
pid=$!
"$tool" "$src/softmax_h3.mlir" --device host --rows 100 --jobs 1 --repeats 3 -o "$work/shared.host.sqlite" > "$work/b.txt" 2>&1 || fail "second process: $(cat "$work/b.txt")"
wait $pid || fail "first process: $(cat "$work/a.txt")"
grep -q "rudnn.softmax_last_axis" "$work/a.txt" || fail "no summary table: $(cat "$work/a.txt")"
"$tool" --merge "$work/shared.host.sqlite" -o "$work/merged.host.sqlite" | grep -q ": 2 records" || fail "both processes' records not in the cache"

# The runtime reads it (cached mode never tunes): rows 4 → bucket 4 is in the cache.
RUDNN_AUTOTUNE_CACHE="$work/merged.host.sqlite" RUDNN_AUTOTUNE=cached RUDNN_LOG=info \
  "$run" "$src/softmax_h3.mlir" --device host --random-inputs --dynamic-dim 4 --quiet 2> "$work/run.txt" || fail "rudnn-run: $(cat "$work/run.txt")"
grep -q "plan rudnn.softmax_last_axis f32 \[3\] buckets \[4\] on host: .*; cache)" "$work/run.txt" || fail "cached variant not used: $(cat "$work/run.txt")"

# Issue 10 item 16: a run that fails before storing a record creates no cache file; a missing
# directory is named as such (not SQLite's "read-only"). Item 10: numeric options parse whole.
printf 'func.func @main( broken\n' > "$work/broken.mlir"
printf 'func.func @main(%%x: tensor<4xf32>) -> tensor<4xf32> {\n  return %%x : tensor<4xf32>\n}\n' > "$work/no_ops.mlir"
printf 'func.func @main(%%x: tensor<?x?xf32>) -> tensor<?x?xf32> {\n  %%0 = rudnn.softmax_last_axis %%x : tensor<?x?xf32>\n  return %%0 : tensor<?x?xf32>\n}\n' > "$work/dyn.mlir"
for input in missing broken no_ops dyn; do
  "$tool" "$work/$input.mlir" --device host --rows 4 -o "$work/$input.host.sqlite" > "$work/$input.txt" 2>&1 && fail "$input.mlir accepted"
  grep -q "rudnn-autotune: error:" "$work/$input.txt" || fail "$input.mlir: no error line: $(cat "$work/$input.txt")"
  [ ! -e "$work/$input.host.sqlite" ] || fail "$input.mlir left a cache file behind"
done
"$tool" "$src/softmax_h3.mlir" --device host --rows 4 -o "$work/nodir/t.host.sqlite" 2> "$work/nodir.txt" && fail "missing directory accepted"
grep -q "expected a path in an existing directory" "$work/nodir.txt" || fail "missing directory not named: $(cat "$work/nodir.txt")"
"$tool" "$src/softmax_h3.mlir" --device host --jobs 5abc -o "$work/j.host.sqlite" 2>&1 | grep -q -- '--jobs: expected an integer in \[1, 2147483647\], got "5abc"' || fail "--jobs 5abc not rejected"
"$tool" "$src/softmax_h3.mlir" --device host --rows 4,1e3 -o "$work/j.host.sqlite" 2>&1 | grep -q -- '--rows: expected an integer >= 1, got "1e3"' || fail "--rows 1e3 not rejected"
# Issue 11: every tunable family of a graph, keyed as the runtime keys it (the tool runs the graph and
# tunes the keys the runtime asks for), and the runtime then takes each op's config from the cache.
"$tool" "$src/families.mlir" --device host --rows 2 --jobs 2 --repeats 2 -o "$work/families.host.sqlite" \
  > "$work/families.txt" 2>&1 || fail "families.mlir: $(cat "$work/families.txt")"
for op in rudnn.rms_norm rudnn.route rudnn.dispatch rudnn.swiglu_experts rudnn.combine rudnn.attention rudnn.gated_delta \
    rudnn.conv_forward rudnn.conv_weight_backward; do
  grep -q "^$op " "$work/families.txt" || fail "families.mlir: $op not tuned: $(cat "$work/families.txt")"
done
RUDNN_AUTOTUNE_CACHE="$work/families.host.sqlite" RUDNN_AUTOTUNE=cached RUDNN_LOG=info \
  "$run" "$src/families.mlir" --device host --random-inputs --dynamic-dim 2 --quiet 2> "$work/families-run.txt" ||
  fail "rudnn-run families.mlir: $(cat "$work/families-run.txt")"
for op in rudnn.rms_norm rudnn.route rudnn.dispatch rudnn.swiglu_experts rudnn.combine rudnn.attention rudnn.gated_delta \
    rudnn.conv_forward rudnn.conv_weight_backward; do
  grep -q "plan $op .* on host: .*; cache)" "$work/families-run.txt" || fail "$op: cached config not used: $(cat "$work/families-run.txt")"
done
echo PASS
