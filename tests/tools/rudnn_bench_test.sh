#!/usr/bin/env bash
# rudnn-bench as the GPU check drives it, on the host emulation device at tiny shapes: the CSV header
# and rows of each benchmark (scripts/bench_*_torch.py parse them), the TensorCore skip note, and bad
# options exiting non-zero with an error line.
set -u
BENCH=$1; WORK=$2
rm -rf "$WORK"; mkdir -p "$WORK"
export RUDNN_CACHE_DIR=$WORK/cache RUDNN_DEVICE=host
fails=0
check() { if eval "$2"; then echo "ok   - $1"; else echo "FAIL - $1"; fails=$((fails+1)); fi; }
T="--iters 1 --runs 1"

"$BENCH" --help > "$WORK/help.txt"; rc=$?
check "--help exits 0" "[ $rc -eq 0 ]"
check "--help names every benchmark" "grep -q '^  norm' $WORK/help.txt && grep -q '^  moe' $WORK/help.txt && grep -q '^  gated-delta' $WORK/help.txt"
"$BENCH" > /dev/null 2>&1; rc=$?
check "no benchmark exits non-zero" "[ $rc -ne 0 ]"
"$BENCH" moe --help > "$WORK/moe-help.txt"; rc=$?
check "moe --help exits 0 and lists --tokens" "[ $rc -eq 0 ] && grep -q -- '--tokens' $WORK/moe-help.txt"

"$BENCH" norm --shape 3x40 --dtype bf16 $T > "$WORK/norm.csv" 2> "$WORK/norm.err"; rc=$?
check "norm runs" "[ $rc -eq 0 ]"
check "norm CSV header" "[ \"\$(head -1 $WORK/norm.csv)\" = 'op,shape,dtype,device,median_us,gb_per_s' ]"
check "norm: one row per op" "[ \$(grep -c ',3x40,bf16,host,' $WORK/norm.csv) -eq 3 ]"

"$BENCH" moe --tokens 5 --experts 4 --hidden 16 --inter 8 --top-k 2 $T > "$WORK/moe.csv" 2> "$WORK/moe.err"; rc=$?
check "moe runs" "[ $rc -eq 0 ]"
check "moe CSV header" "[ \"\$(head -1 $WORK/moe.csv)\" = 'step,tokens,experts,hidden,inter,top_k,dtype,strategy,device,median_us,tflops' ]"
check "moe: 7 rows (route, dispatch, 2 experts, combine, 2 forward)" "[ \$(tail -n +2 $WORK/moe.csv | wc -l) -eq 7 ]"
check "moe: route has no strategy and no tflops" "grep -Eq '^route,5,4,16,8,2,bf16,,host,[0-9.]+,\$' $WORK/moe.csv"
check "moe: TensorCore experts with tflops" "grep -Eq '^experts,5,4,16,8,2,bf16,tensorcore,host,[0-9.]+,[0-9.]+\$' $WORK/moe.csv"
check "moe: Scalar forward" "grep -Eq '^forward,5,4,16,8,2,bf16,scalar,host,' $WORK/moe.csv"

"$BENCH" moe --tokens 3 --experts 2 --hidden 8 --inter 8 --top-k 1 --dtype f32 --steps experts $T > "$WORK/f32.csv" 2> "$WORK/f32.err"; rc=$?
check "moe f32: TensorCore skipped with a note, Scalar measured" "[ $rc -eq 0 ] && grep -q 'tensorcore skipped' $WORK/f32.err && [ \$(grep -c '^experts,.*,scalar,' $WORK/f32.csv) -eq 1 ] && ! grep -q tensorcore $WORK/f32.csv"

"$BENCH" gated-delta --batch 1 --heads 2 --seq 20 --key-dim 16 --value-dim 8 --chunk 16 --decode-batch 3 $T \
  > "$WORK/gd.csv" 2> "$WORK/gd.err"; rc=$?
check "gated-delta runs" "[ $rc -eq 0 ]"
check "gated-delta CSV header" "[ \"\$(head -1 $WORK/gd.csv)\" = 'mode,batch,heads,seq,key_dim,value_dim,chunk,dtype,device,median_us,tokens_per_s,gb_per_s' ]"
check "gated-delta: prefill row with its chunk" "grep -Eq '^prefill,1,2,20,16,8,16,bf16,host,[0-9.]+,[0-9]+,[0-9.]+\$' $WORK/gd.csv"
check "gated-delta: decode row, T = 1, no chunk" "grep -Eq '^decode,3,2,1,16,8,,bf16,host,' $WORK/gd.csv"

bad() {  # $1: what, rest: arguments that must be rejected with an error line and no CSV
  local what=$1; shift
  "$BENCH" "$@" > "$WORK/bad.out" 2> "$WORK/bad.err"; local rc=$?
  check "$what exits non-zero with an error" "[ $rc -ne 0 ] && grep -q 'rudnn-bench: error:' $WORK/bad.err && [ ! -s $WORK/bad.out ]"
}
bad "an unknown benchmark" frob
bad "an unknown option" moe --bogus 1
bad "a non-integer --tokens" moe --tokens 12x
bad "a zero --experts" moe --experts 0
bad "a missing value" gated-delta --seq
bad "top-k over the experts" moe --experts 4 --top-k 8
bad "an unknown step" moe --steps route,nope
bad "an unknown strategy" moe --strategies warp
bad "an unknown mode" gated-delta --modes prefill,nope
bad "a bad dtype" gated-delta --dtype i8
bad "a bad device" moe --device tpu:0
bad "a bad --shape" norm --shape 4xq

echo "$fails failed"
[ $fails -eq 0 ]
