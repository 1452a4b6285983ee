#!/usr/bin/env bash
# Issue 11: rudnn-precompile packs every graph rudnn-run can run. For each example graph
# (examples/*.mlir: every op family — normalization, MoE routing, dispatch, SwiGLU experts, combine,
# attention, the gated delta rule — and the whole normalization search space), precompile for
# `host`, then run it with RUDNN_KERNEL_PACK, RUDNN_DISABLE_JIT=1 and an empty kernel cache: zero
# compiles, and outputs bit for bit those of a JIT run of the same inputs. Each example states how it
# is run in one line, so a new family's example is covered with no edit here (one without the line
# fails):
#   // pack-round-trip: <--dynamic-dim> | <seed> | <outputs (rudnn.name or resultI)> | <extra rudnn-run options>
# In the extra options `{examples}` is the examples directory (inputs an example ships as .npy files).
set -u
PRECOMPILE=$1; RUN=$2; SRC=$3; WORK=$4
EXAMPLES=$SRC/../../examples
rm -rf "$WORK"; mkdir -p "$WORK"
export RUDNN_DEVICE=host
unset RUDNN_KERNEL_PACK RUDNN_DISABLE_JIT
fails=0
check() { if eval "$2"; then echo "ok   - $1"; else echo "FAIL - $1"; fails=$((fails+1)); fi; }

examples=0
for graph in "$EXAMPLES"/*.mlir; do
  name=$(basename "$graph" .mlir)
  examples=$((examples+1))
  spec=$(sed -n 's|^// pack-round-trip: ||p' "$graph" | head -n 1)
  check "$name: states its round trip (// pack-round-trip: ...)" "[ -n \"\$spec\" ]"
  [ -n "$spec" ] || continue
  IFS='|' read -r dyn seed outputs extra <<< "$spec"
  extra=${extra//\{examples\}/$EXAMPLES}
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
done
check "the examples were found ($examples)" "[ $examples -ge 7 ]"

# Under the wgmma opt-in the entry runs decode-like calls (group·Tq ≤ 64) on the mma.sync tile and
# others on the wgmma one (rudnn.short_panels): a pack made under it holds both, so decode runs from
# it with JIT disabled.
cat > "$WORK/decode_wgmma.mlir" <<'MLIR'
func.func @main(%q: tensor<2x8x1x64xbf16>, %k: tensor<2x2x?x64xbf16>, %v: tensor<2x2x?x64xbf16>) -> tensor<2x8x1x64xbf16> {
  %o = rudnn.attention %q, %k, %v {scale = 0.125 : f32, causal = false, strategy = "flash_mma"}
      : tensor<2x8x1x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x2x?x64xbf16> -> tensor<2x8x1x64xbf16>
  return %o : tensor<2x8x1x64xbf16>
}
MLIR
env RUDNN_WGMMA=1 "$PRECOMPILE" "$WORK/decode_wgmma.mlir" --arch host --quiet -o "$WORK/decode_wgmma.pack" \
  > "$WORK/decode_wgmma.precompile.txt" 2>&1; rc=$?
check "decode under RUDNN_WGMMA=1: precompile succeeds" "[ $rc -eq 0 ]" || cat "$WORK/decode_wgmma.precompile.txt"
mkdir -p "$WORK/decode_wgmma.empty-cache"
env RUDNN_WGMMA=1 RUDNN_CACHE_DIR="$WORK/decode_wgmma.empty-cache" RUDNN_KERNEL_PACK="$WORK/decode_wgmma.pack" \
  RUDNN_DISABLE_JIT=1 "$RUN" "$WORK/decode_wgmma.mlir" --random-inputs=5 --dynamic-dim 37 \
  > "$WORK/decode_wgmma.run.txt" 2>&1; rc=$?
check "... and runs from the pack with JIT disabled" "[ $rc -eq 0 ] && grep -q 'jit_compiles=0 ' $WORK/decode_wgmma.run.txt" ||
  cat "$WORK/decode_wgmma.run.txt"

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
