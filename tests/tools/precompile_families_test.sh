#!/usr/bin/env bash
# Issue 11: rudnn-precompile packs every graph rudnn-run can run. For each example graph (every op
# family: normalization, MoE routing, dispatch, SwiGLU experts, combine, attention, the gated delta
# rule, convolution), precompile for `host`, then run it with RUDNN_KERNEL_PACK, RUDNN_DISABLE_JIT=1 and an empty
# kernel cache: zero compiles, and outputs bit for bit those of a JIT run of the same inputs.
set -u
PRECOMPILE=$1; RUN=$2; SRC=$3; WORK=$4
EXAMPLES=$SRC/../../examples
rm -rf "$WORK"; mkdir -p "$WORK"
export RUDNN_DEVICE=host
unset RUDNN_KERNEL_PACK RUDNN_DISABLE_JIT
fails=0
check() { if eval "$2"; then echo "ok   - $1"; else echo "FAIL - $1"; fails=$((fails+1)); fi; }

GD_RANGES="--random-range query=-0.15,0.15 --random-range key=-0.15,0.15 --random-range step_query=-0.15,0.15
  --random-range step_key=-0.15,0.15 --random-range log_decay=-0.5,0 --random-range step_log_decay=-0.5,0
  --random-range beta=0,1 --random-range step_beta=0,1"

# example | --dynamic-dim | seed | outputs | extra rudnn-run options
while IFS='|' read -r name dyn seed outputs extra; do
  [ -z "$name" ] && continue
  graph=$EXAMPLES/$name.mlir
  "$PRECOMPILE" "$graph" --arch host --jobs 2 --quiet -o "$WORK/$name.pack" > "$WORK/$name.precompile.txt" 2>&1; rc=$?
  check "$name: precompile for host succeeds" "[ $rc -eq 0 ] && [ -s $WORK/$name.pack ]"
  [ $rc -eq 0 ] || { cat "$WORK/$name.precompile.txt"; continue; }
  for run in jit pack; do
    mkdir -p "$WORK/$name.out-$run"
    out_args=""
    for o in $outputs; do out_args+=" --output $o=$WORK/$name.out-$run/$o.npy"; done
    if [ $run = jit ]; then
      env RUDNN_CACHE_DIR="$WORK/jit-cache" "$RUN" "$graph" --random-inputs=$seed --dynamic-dim $dyn $extra $out_args \
        > "$WORK/$name.$run.txt" 2>&1; rc=$?
    else
      mkdir -p "$WORK/$name.empty-cache"
      env RUDNN_CACHE_DIR="$WORK/$name.empty-cache" RUDNN_KERNEL_PACK="$WORK/$name.pack" RUDNN_DISABLE_JIT=1 \
        "$RUN" "$graph" --random-inputs=$seed --dynamic-dim $dyn $extra $out_args > "$WORK/$name.$run.txt" 2>&1; rc=$?
    fi
    check "$name: the $run run succeeds" "[ $rc -eq 0 ]" || cat "$WORK/$name.$run.txt"
  done
  check "$name: the pack run compiles nothing" "grep -q 'jit_compiles=0 ' $WORK/$name.pack.txt"
  check "$name: ... and takes every kernel from the pack" "grep -q 'pack_hits=[1-9]' $WORK/$name.pack.txt && grep -q 'disk_cache_hits=0 ' $WORK/$name.pack.txt"
  check "$name: ... and writes nothing to the kernel cache" "[ -z \"\$(find $WORK/$name.empty-cache -name '*.bin')\" ]"
  for o in $outputs; do
    check "$name: output $o is bit for bit the JIT run's" "cmp -s $WORK/$name.out-jit/$o.npy $WORK/$name.out-pack/$o.npy"
  done
done <<TABLE
normalization|5|3|normed probs|
odd_sizes|2|4|a_rms b_softmax|
moe_routing|16|5|indices weights grouped_indices grouped_weights|
moe_forward|16|6|moe_out expert_offsets|
attention|1|7|attn_out|
gated_delta|2|8|prefill_out decode_out state|$(echo $GD_RANGES)
resnet_block|2|9|output|
conv_training|2|10|output grad_input grad_weight grad_bias depthwise sequence_out|
TABLE

# A graph whose kernels need a static extent the file leaves dynamic: a typed error naming it.
cat > "$WORK/dynamic_hidden.mlir" <<'MLIR'
func.func @main(%x: tensor<4x?xf32>, %g: tensor<?xf32>) -> tensor<4x?xf32> {
  %y = rudnn.rms_norm %x, %g {epsilon = 1.0e-06 : f32} : tensor<4x?xf32>, tensor<?xf32>
  return %y : tensor<4x?xf32>
}
MLIR
"$PRECOMPILE" "$WORK/dynamic_hidden.mlir" --arch host -o "$WORK/bad.pack" > "$WORK/bad.txt" 2>&1; rc=$?
check "a dynamic last dim is an error" "[ $rc -ne 0 ] && [ ! -e $WORK/bad.pack ]"
check "... naming the op, the operand and the dim" "grep -q 'rudnn.rms_norm #1 input' $WORK/bad.txt && grep -q 'static last dim' $WORK/bad.txt"

echo "$fails failed"
[ $fails -eq 0 ]
