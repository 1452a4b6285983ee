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
check "--help names every benchmark" "grep -q '^  norm' $WORK/help.txt && grep -q '^  moe' $WORK/help.txt && grep -q '^  gated-delta' $WORK/help.txt && grep -q '^  attention' $WORK/help.txt && grep -q '^  conv' $WORK/help.txt && grep -q '^  paged' $WORK/help.txt && grep -q '^  moe-backward' $WORK/help.txt && grep -q '^  paged-backward' $WORK/help.txt"
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
check "gated-delta CSV header" "[ \"\$(head -1 $WORK/gd.csv)\" = 'mode,batch,heads,seq,key_dim,value_dim,chunk,dtype,device,median_us,tokens_per_s,gb_per_s,kernel' ]"
check "gated-delta: prefill row with its chunk and the chunked kernel" "grep -Eq '^prefill,1,2,20,16,8,16,bf16,host,[0-9.]+,[0-9]+,[0-9.]+,(rudnn_gated_delta_chunked_bf16_bf16_t128_c32(_tc)?)?\$' $WORK/gd.csv"
check "gated-delta: decode row, T = 1, no chunk, the recurrent kernel" "grep -Eq '^decode,3,2,1,16,8,,bf16,host,.*,(rudnn_gated_delta_recurrent_bf16_bf16_w4_r4)?\$' $WORK/gd.csv"

# Attention at a tiny shape: B = 64 / 32 = 2, GQA 2, causal and not; f32 skips flash_mma with a note.
"$BENCH" attention --tokens 64 --seq 32 --q-heads 4 --kv-heads 2 --head-dim 64 --causal 0 --causal 1 $T \
  > "$WORK/attn.csv" 2> "$WORK/attn.err"; rc=$?
check "attention runs" "[ $rc -eq 0 ]"
check "attention CSV header" "[ \"\$(head -1 $WORK/attn.csv)\" = 'strategy,batch,q_heads,kv_heads,seq,head_dim,causal,dtype,device,median_us,tflops' ]"
check "attention: 8 rows (4 strategies × causal 0/1)" "[ \$(tail -n +2 $WORK/attn.csv | wc -l) -eq 8 ]"
check "attention: flash_mma non-causal with tflops" "grep -Eq '^flash_mma,2,4,2,32,64,0,bf16,host,[0-9.]+,[0-9.]+\$' $WORK/attn.csv"
check "attention: every strategy, causal" "(for s in flash_mma flash_unit fallback autotune; do grep -Eq \"^\$s,2,4,2,32,64,1,bf16,host,\" $WORK/attn.csv || exit 1; done)"
"$BENCH" attention --tokens 8 --seq 8 --q-heads 2 --kv-heads 1 --head-dim 64 --causal 1 --dtype f32 \
  --strategies flash_mma,flash_unit $T > "$WORK/attn32.csv" 2> "$WORK/attn32.err"; rc=$?
check "attention f32: flash_mma skipped with a note, flash_unit measured" "[ $rc -eq 0 ] && grep -q 'flash_mma skipped' $WORK/attn32.err && [ \$(grep -c '^flash_unit,1,2,1,8,64,1,f32,host,' $WORK/attn32.csv) -eq 1 ] && ! grep -q '^flash_mma' $WORK/attn32.csv"

# Paged attention at tiny shapes: decode, split (2 splits), mixed, MLA and MLA split, one row each, every
# row's output checked against the FP64 reference (check=ok), the copy bandwidth measured.
"$BENCH" paged --batch 2 --seq-len 40 --page-size 16 --q-heads 4 --kv-heads 2 --head-dim 32 --splits 2 \
  --prefill-seqs 2 --prefill-len 8 --decode-rows 2 --decode-len 40 --mla-heads 4 --mla-latent 64 --mla-rope 16 \
  --copy-mib 8 $T > "$WORK/paged.csv" 2> "$WORK/paged.err"; rc=$?
check "paged runs" "[ $rc -eq 0 ]"
check "paged CSV header" "[ \"\$(head -1 $WORK/paged.csv)\" = 'set,batch,seq_len,prefill_seqs,prefill_len,page_size,q_heads,kv_heads,head_dim,value_dim,rope_dim,splits,rows,dtype,device,median_us,tflops,gb_per_s,copy_gb_per_s,pct_copy,merge_pct,max_err,check' ]"
check "paged: 5 rows, every one checked ok" "[ \$(tail -n +2 $WORK/paged.csv | wc -l) -eq 5 ] && [ \$(grep -c ',ok\$' $WORK/paged.csv) -eq 5 ]"
check "paged: decode row" "grep -Eq '^decode,2,40,0,0,16,4,2,32,32,0,1,2,bf16,host,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+,,' $WORK/paged.csv"
check "paged: split row with its merge share" "grep -Eq '^split,2,40,0,0,16,4,2,32,32,0,2,2,bf16,host,([0-9.]+,){6}[0-9.e+-]+,ok\$' $WORK/paged.csv"
check "paged: mixed row (2 prefill sequences of 8 rows + 2 decode rows)" "grep -Eq '^mixed,2,40,2,8,16,4,2,32,32,0,1,18,bf16,host,' $WORK/paged.csv"
check "paged: MLA rows" "grep -Eq '^mla,2,40,0,0,64,4,1,64,64,16,1,2,bf16,host,' $WORK/paged.csv && grep -Eq '^mla_split,2,40,0,0,64,4,1,64,64,16,2,2,bf16,host,' $WORK/paged.csv"

# MoE backward at tiny shapes: router, combine Serial and Plane, experts Scalar and TensorCore,
# dispatch, the whole step with its overhead share; every row checked against FP64 slices
# (check=ok). F32 has no tensor-core backward: its TensorCore rows say 'unsupported'.
"$BENCH" moe-backward --tokens 12 --experts 4 --hidden 16 --inter 8 --top-k 2 $T > "$WORK/moeb.csv" 2> "$WORK/moeb.err"; rc=$?
check "moe-backward runs" "[ $rc -eq 0 ]"
check "moe-backward CSV header" "[ \"\$(head -1 $WORK/moeb.csv)\" = 'step,tokens,experts,hidden,inter,top_k,dtype,strategy,device,median_us,tflops,overhead_pct,max_err,check' ]"
check "moe-backward: 8 rows, every one checked ok" "[ \$(tail -n +2 $WORK/moeb.csv | wc -l) -eq 8 ] && [ \$(grep -c ',ok\$' $WORK/moeb.csv) -eq 8 ]"
check "moe-backward: router row, no strategy and no tflops" "grep -Eq '^router,12,4,16,8,2,bf16,,host,[0-9.]+,,,[0-9.e+-]+,ok\$' $WORK/moeb.csv"
check "moe-backward: combine serial and plane" "grep -Eq '^combine,12,4,16,8,2,bf16,serial,host,[0-9.]+,,,' $WORK/moeb.csv && grep -Eq '^combine,12,4,16,8,2,bf16,plane,host,[0-9.]+,,,' $WORK/moeb.csv"
check "moe-backward: Scalar experts with tflops" "grep -Eq '^experts,12,4,16,8,2,bf16,scalar,host,[0-9.]+,[0-9.]+,,[0-9.e+-]+,ok\$' $WORK/moeb.csv"
check "moe-backward: dispatch row" "grep -Eq '^dispatch,12,4,16,8,2,bf16,,host,[0-9.]+,,,[0-9.e+-]+,ok\$' $WORK/moeb.csv"
check "moe-backward: the step with its overhead share" "grep -Eq '^backward,12,4,16,8,2,bf16,scalar,host,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.e+-]+,ok\$' $WORK/moeb.csv"
check "moe-backward: TensorCore experts and step measured" "grep -Eq '^experts,12,4,16,8,2,bf16,tensorcore,host,[0-9.]+,[0-9.]+,,[0-9.e+-]+,ok\$' $WORK/moeb.csv && grep -Eq '^backward,12,4,16,8,2,bf16,tensorcore,host,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.e+-]+,ok\$' $WORK/moeb.csv"
"$BENCH" moe-backward --tokens 12 --experts 4 --hidden 16 --inter 8 --top-k 2 --dtype f32 --steps experts $T \
  > "$WORK/moebf.csv" 2> "$WORK/moebf.err"; rc=$?
check "moe-backward f32: TensorCore unsupported row and a note, exit 0" "[ $rc -eq 0 ] && grep -Eq '^experts,12,4,16,8,2,f32,tensorcore,host,,,,,unsupported\$' $WORK/moebf.csv && grep -Eq '^experts,12,4,16,8,2,f32,scalar,host,[0-9.]+,' $WORK/moebf.csv && grep -q 'tensorcore unsupported' $WORK/moebf.err"
"$BENCH" moe-backward --tokens 1 --experts 1 --hidden 8 --inter 8 --top-k 1 --dtype f32 --steps backward --strategies scalar \
  --check 0 $T > "$WORK/moeb1.csv" 2> "$WORK/moeb1.err"; rc=$?
check "moe-backward T = E = top_k = 1, step only, unchecked" "[ $rc -eq 0 ] && [ \$(tail -n +2 $WORK/moeb1.csv | wc -l) -eq 1 ] && grep -Eq '^backward,1,1,8,8,1,f32,scalar,host,[0-9.]+,[0-9.]+,[0-9.]+,,\$' $WORK/moeb1.csv"

# The paged backward (atomic and ordered paths) at tiny shapes: prefill and decode rows, dq checked
# against FP64, the ordered path's time over the atomic one.
"$BENCH" paged-backward --batch 2 --seq-len 20 --page-size 8 $T > "$WORK/pagedb.csv" 2> "$WORK/pagedb.err"; rc=$?
check "paged-backward runs" "[ $rc -eq 0 ]"
check "paged-backward CSV header" "[ \"\$(head -1 $WORK/pagedb.csv)\" = 'set,batch,seq_len,page_size,q_heads,kv_heads,head_dim,rows,dtype,path,device,median_us,tflops,vs_atomic,max_err,check' ]"
check "paged-backward: prefill row (40 rows), checked ok" "grep -Eq '^prefill,2,20,8,4,2,32,40,bf16,atomic,host,[0-9.]+,[0-9.]+,1.000,[0-9.e+-]+,ok\$' $WORK/pagedb.csv"
check "paged-backward: decode row (2 rows), checked ok" "grep -Eq '^decode,2,20,8,4,2,32,2,bf16,atomic,host,[0-9.]+,[0-9.]+,1.000,[0-9.e+-]+,ok\$' $WORK/pagedb.csv"
check "paged-backward: the ordered path's rows, checked ok" "[ \$(grep -Ec '^(prefill|decode),2,20,8,4,2,32,[0-9]+,bf16,ordered,host,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.e+-]+,ok\$' $WORK/pagedb.csv) -eq 2 ]"
"$BENCH" paged-backward --batch 1 --seq-len 20 --page-size 8 --sets mla-prefill,mla-decode $T > "$WORK/pagedb3.csv" 2> "$WORK/pagedb3.err"; rc=$?
check "paged-backward: MLA rows (R 128 as head_dim, one kv head), both paths checked ok" "[ $rc -eq 0 ] && grep -Eq '^mla-prefill,1,20,8,4,1,128,20,bf16,atomic,host,[0-9.]+,[0-9.]+,1.000,[0-9.e+-]+,ok\$' $WORK/pagedb3.csv && grep -Eq '^mla-decode,1,20,8,4,1,128,1,bf16,ordered,host,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.e+-]+,ok\$' $WORK/pagedb3.csv"
"$BENCH" paged-backward --batch 1 --seq-len 9 --page-size 4 --sets decode --paths ordered-rows-compact --check 0 $T > "$WORK/pagedb2.csv" 2> "$WORK/pagedb2.err"; rc=$?
check "paged-backward: an ordered path alone (no vs_atomic), unchecked" "[ $rc -eq 0 ] && grep -Eq '^decode,1,9,4,4,2,32,1,bf16,ordered-rows-compact,host,[0-9.]+,[0-9.]+,,,\$' $WORK/pagedb2.csv"

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
bad "a bad --causal" attention --causal 2
bad "an unknown attention strategy" attention --strategies flash_mma,wgmma
bad "--tokens not a multiple of --seq" attention --tokens 100 --seq 64
bad "--kv-heads not dividing --q-heads" attention --q-heads 32 --kv-heads 5
bad "an unknown paged set" paged --sets decode,nope
bad "a paged --splits over 32" paged --splits 40
bad "paged --kv-heads not dividing --q-heads" paged --q-heads 32 --kv-heads 5
bad "an unknown moe-backward step" moe-backward --steps router,nope
bad "an unknown paged-backward set" paged-backward --sets prefill,split
bad "a paged-backward rope dim past 256" paged-backward --sets mla-decode --rope-dim 257
bad "an unknown paged-backward path" paged-backward --paths atomic,sorted
bad "paged-backward kv heads not dividing q heads" paged-backward --q-heads 6 --kv-heads 4
bad "an unknown moe-backward combine strategy" moe-backward --combine warp
bad "a moe-backward top-k over 64" moe-backward --top-k 65
bad "moe-backward top-k over the experts" moe-backward --experts 4 --top-k 8
bad "a bad moe-backward --check" moe-backward --check 2

# Issue 10 items 2/3 and 10: numeric options parse whole; sizes that overflow are rejected, sizes the
# host cannot allocate are an OutOfMemory error line (exit 1, no crash; address space capped so
# nothing large is ever touched).
bad "an --iters with a suffix" norm --iters 5abc
bad "a --tokens in exponent form" moe --tokens 1e3
bad "a --seq with a leading space" gated-delta --seq ' 5'
bad "an overflowing --shape (2^52 x 4096)" norm --shape 4503599627370496x4096
check "... named with its value" "grep -qF -- '--shape: expected RxH, integers >= 1 whose product' $WORK/bad.err && grep -qF '4503599627370496x4096' $WORK/bad.err"
(ulimit -v 8000000; "$BENCH" norm --shape 1000000000x4096 --dtype f32 $T > /dev/null 2> "$WORK/oom.err"); rc=$?
check "an unallocatable norm shape is OutOfMemory, exit 1" "[ $rc -eq 1 ] && grep -qF '16384000000000 bytes of host memory' $WORK/oom.err"
(ulimit -v 8000000; "$BENCH" moe --experts 4503599627370496 --hidden 4096 --inter 4096 --tokens 1 --top-k 1 $T > /dev/null 2> "$WORK/moe-big.err"); rc=$?
check "overflowing expert weights are an error, exit 1" "[ $rc -eq 1 ] && grep -qF 'fits in 64 bits' $WORK/moe-big.err"

echo "$fails failed"
[ $fails -eq 0 ]
