#!/usr/bin/env bash
# rudnn-run as a user drives it: help, a good run, bad graphs and inputs (non-zero exit, error text,
# no output file), .npy round trip, and four processes compiling into one empty cache.
set -u
RUN=$1; SRC=$2; WORK=$3
EXAMPLES=$SRC/../../examples
rm -rf "$WORK"; mkdir -p "$WORK"
export RUDNN_CACHE_DIR=$WORK/cache RUDNN_DEVICE=host
fails=0
check() { if eval "$2"; then echo "ok   - $1"; else echo "FAIL - $1"; fails=$((fails+1)); fi; }

"$RUN" --help > "$WORK/help.txt"; rc=$?
check "--help exits 0" "[ $rc -eq 0 ]"
check "--help shows an example" "grep -q 'example:' $WORK/help.txt"

"$RUN" "$EXAMPLES/normalization.mlir" --random-inputs=7 --dynamic-dim 5 --output normed="$WORK/normed.npy" \
  --output probs="$WORK/probs.npy" > "$WORK/good.txt" 2>&1; rc=$?
check "a good graph runs" "[ $rc -eq 0 ]"
check "outputs are written" "[ -s $WORK/normed.npy ] && [ -s $WORK/probs.npy ]"
check "the output header names f4 and the shape" "head -c 128 $WORK/probs.npy | grep -aq \"'<f4'.*(5, 4096)\""

# The written output feeds another run as an input (cast back to bf16).
"$RUN" "$EXAMPLES/normalization.mlir" --random-inputs=8 --input x="$WORK/normed.npy" --quiet > /dev/null 2>&1; rc=$?
check ".npy output is accepted as an input" "[ $rc -eq 0 ]"

# MoE routing: two results per op (indices ui32, weights); grouped weights sum to the scale per row.
"$RUN" "$EXAMPLES/moe_routing.mlir" --random-inputs=3 --dynamic-dim 6 --output grouped_weights="$WORK/gw.npy" \
  > "$WORK/moe.txt" 2>&1; rc=$?
check "the MoE routing example runs" "[ $rc -eq 0 ]"
check "routing indices are ui32 [6, 8]" "grep -q 'grouped_indices: \\[6, 8\\] ui32' $WORK/moe.txt"
check "grouped weights are written" "head -c 128 $WORK/gw.npy | grep -aq \"'<f4'.*(6, 8)\""

# The MoE layer (route → dispatch → experts → combine): the u32 offsets end at T·top_k = 16·8 = 128.
"$RUN" "$EXAMPLES/moe_forward.mlir" --random-inputs=4 --dynamic-dim 16 --output expert_offsets="$WORK/off.npy" \
  > "$WORK/moe_forward.txt" 2>&1; rc=$?
check "the MoE forward example runs" "[ $rc -eq 0 ]"
check "the MoE output is [16, 64] bf16" "grep -q 'moe_out: \\[16, 64\\] bf16' $WORK/moe_forward.txt"
check "the offsets end at 128" "python3 -c \"import struct,sys; d=open('$WORK/off.npy','rb').read(); print(struct.unpack('<I', d[-4:])[0])\" | grep -qx 128"

# Gated delta prefill then decode, with ranges for the decay, beta and normalized keys.
GD_RANGES="--random-range query=-0.15,0.15 --random-range key=-0.15,0.15 --random-range step_query=-0.15,0.15
  --random-range step_key=-0.15,0.15 --random-range log_decay=-0.5,0 --random-range step_log_decay=-0.5,0
  --random-range beta=0,1 --random-range step_beta=0,1"
"$RUN" "$EXAMPLES/gated_delta.mlir" --random-inputs=5 --dynamic-dim 1 $GD_RANGES > "$WORK/gd.txt" 2>&1; rc=$?
check "the gated delta example runs" "[ $rc -eq 0 ]"
check "the decode state is [1, 4, 128, 128] f32" "grep -q 'state: \\[1, 4, 128, 128\\] f32' $WORK/gd.txt"
"$RUN" "$EXAMPLES/gated_delta.mlir" --random-inputs --random-range beta=1,0 > "$WORK/range.txt" 2>&1; rc=$?
check "an empty --random-range is rejected" "[ $rc -ne 0 ] && grep -q 'LO < HI' $WORK/range.txt"
"$RUN" "$EXAMPLES/gated_delta.mlir" --random-inputs --random-range nosuch=0,1 > "$WORK/range2.txt" 2>&1; rc=$?
check "a --random-range of no argument is rejected" "[ $rc -ne 0 ] && grep -q nosuch $WORK/range2.txt"

# Attention (Llama-style GQA, causal, Autotune strategy) after an rms_norm.
"$RUN" "$EXAMPLES/attention.mlir" --random-inputs=6 --dynamic-dim 1 > "$WORK/attn.txt" 2>&1; rc=$?
check "the attention example runs" "[ $rc -eq 0 ]"
check "the attention output is [1, 32, 64, 128] bf16" "grep -q 'attn_out: \\[1, 32, 64, 128\\] bf16' $WORK/attn.txt"

cat > "$WORK/bad_eps.mlir" <<'MLIR'
func.func @main(%x: tensor<?x8xf32>, %g: tensor<8xf32>) -> tensor<?x8xf32> {
  %0 = rudnn.rms_norm %x, %g {epsilon = 0.0 : f32} : tensor<?x8xf32>, tensor<8xf32>
  return %0 : tensor<?x8xf32>
}
MLIR
"$RUN" "$WORK/bad_eps.mlir" --random-inputs --output result0="$WORK/bad.npy" > "$WORK/bad.txt" 2>&1; rc=$?
check "a bad graph exits non-zero" "[ $rc -ne 0 ]"
check "the error names epsilon" "grep -q epsilon $WORK/bad.txt"
check "a bad graph writes no output" "[ ! -e $WORK/bad.npy ]"

"$RUN" "$EXAMPLES/normalization.mlir" --random-inputs --input ln_gamma="$WORK/normed.npy" \
  --output normed="$WORK/bad2.npy" > "$WORK/bad2.txt" 2>&1; rc=$?
check "an input of the wrong shape exits non-zero" "[ $rc -ne 0 ]"
check "the error names the argument" "grep -q ln_gamma $WORK/bad2.txt"
check "a bad input writes no output" "[ ! -e $WORK/bad2.npy ]"

"$RUN" "$EXAMPLES/normalization.mlir" --output nosuch="$WORK/x.npy" --random-inputs > /dev/null 2>&1; rc=$?
check "an unknown output name exits non-zero" "[ $rc -ne 0 ]"
"$RUN" "$WORK/missing.mlir" > /dev/null 2>&1; rc=$?
check "a missing file exits non-zero" "[ $rc -ne 0 ]"

# Four processes compile the same kernels into one empty cache at once.
export RUDNN_CACHE_DIR=$WORK/shared-cache
pids=()
for i in 1 2 3 4; do
  "$RUN" "$EXAMPLES/odd_sizes.mlir" --random-inputs=$i --quiet > "$WORK/par$i.txt" 2>&1 & pids+=($!)
done
ok=1; for p in "${pids[@]}"; do wait "$p" || ok=0; done
check "four concurrent compiles succeed" "[ $ok -eq 1 ]"
entries=$(find "$WORK/shared-cache/kernels" -name '*.bin' | wc -l)
temps=$(find "$WORK/shared-cache/kernels" -name '*.tmp.*' | wc -l)
check "one entry per kernel (2), no temporaries ($entries, $temps)" "[ $entries -eq 2 ] && [ $temps -eq 0 ]"
RUDNN_DISABLE_JIT=1 "$RUN" "$EXAMPLES/odd_sizes.mlir" --random-inputs --quiet > "$WORK/nojit.txt" 2>&1; rc=$?
check "the entries are good: a run with JIT disabled loads them" "[ $rc -eq 0 ]"
rm -rf "$WORK/empty-cache"
RUDNN_CACHE_DIR=$WORK/empty-cache RUDNN_DISABLE_JIT=1 "$RUN" "$EXAMPLES/odd_sizes.mlir" --random-inputs \
  > "$WORK/nojit2.txt" 2>&1; rc=$?
check "JIT disabled + empty cache is a clear error" "[ $rc -ne 0 ] && grep -q RUDNN_DISABLE_JIT $WORK/nojit2.txt"

# --- Issue 10 item 4 (T1): malformed .npy inputs are an error naming `--input x=FILE`, exit 1, no
# crash, no output (docs/input-limits.md). The files are written here, one per reproducer.
python3 - "$WORK" <<'PY'
import struct, sys
w = sys.argv[1]
def npy(name, descr, shape, fortran="False", data=b""):
    h = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    open(f"{w}/{name}.npy", "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + data)
npy("extent_overflow", "<f4", "(99999999999999999999, 4096)")
npy("huge_width", "<f99999999999", "(2, 4096)")
npy("negative", "<f4", "(-2, 4096)", data=bytes(2 * 4096 * 4))
npy("string_extent", "<f4", "('2', 4096)", data=bytes(2 * 4096 * 4))
npy("double_comma", "<f4", "(2, 4096,,)", data=bytes(2 * 4096 * 4))
npy("fortran_int", "<f4", "(2, 4096)", fortran="1", data=bytes(2 * 4096 * 4))
npy("count_overflow", "<f4", "(4503599627370496, 4096)")
npy("no_data", "<f4", "(1000000000000, 4096)", data=bytes(16))
PY
for spec in "extent_overflow.npy:int64" "huge_width.npy:<f99999999999" "negative.npy:(-2, 4096)" \
            "string_extent.npy:('2', 4096)" "double_comma.npy:(2, 4096,,)" "fortran_int.npy:True or False" \
            "count_overflow.npy:element count" "no_data.npy:truncated" "/dev/zero:a character device" \
            "$WORK:a directory"; do
  f=${spec%%:*}; pattern=${spec#*:}
  path=$f; [ "${f#/}" = "$f" ] && path=$WORK/$f
  rm -f "$WORK/npy_out.npy"
  "$RUN" "$EXAMPLES/normalization.mlir" --random-inputs --input x="$path" --output normed="$WORK/npy_out.npy" \
    > "$WORK/npy_err.txt" 2>&1; rc=$?
  check "--input x=$f: exit 1 (got $rc)" "[ $rc -eq 1 ]"
  check "--input x=$f: the error names the argument and says '$pattern'" \
    "grep -qF -- '--input x=$path: expected' $WORK/npy_err.txt && grep -qF -- \"$pattern\" $WORK/npy_err.txt"
  check "--input x=$f: no output written" "[ ! -e $WORK/npy_out.npy ]"
done

echo "$fails failure(s)"
[ $fails -eq 0 ]
