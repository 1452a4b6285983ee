#!/usr/bin/env bash
# Issue 10 (hardening) regressions for rudnn-run and the graph runner: sizes that overflow or cannot
# be allocated, strict numeric options, integer and ui8 arguments, all-or-nothing outputs, MoE
# attributes and foreign offsets, duplicate names. Every bad input must exit 1 with an error line
# naming what was wrong (never a crash: exit codes >= 128 are signals), and write nothing.
# usage: rudnn_run_hardening_test.sh RUDNN_RUN WORK_DIR
set -u
RUN=$1; WORK=$2
rm -rf "$WORK"; mkdir -p "$WORK"
export RUDNN_CACHE_DIR=$WORK/cache RUDNN_DEVICE=host
fails=0
check() { if eval "$2"; then echo "ok   - $1"; else echo "FAIL - $1"; fails=$((fails+1)); fi; }
# rejected <what> <expected text> <args...>: exit code 1 (an error, not a signal), the text on stderr.
rejected() {
  local what=$1 text=$2; shift 2
  "$RUN" "$@" > "$WORK/out.txt" 2> "$WORK/err.txt"; local rc=$?
  check "$what: exits 1" "[ $rc -eq 1 ]"
  check "$what: says '$text'" "grep -qF -- '$text' $WORK/err.txt || { cat $WORK/err.txt; false; }"
}

cat > "$WORK/rms.mlir" <<'MLIR'
func.func @main(%x: tensor<?x64xf32> {rudnn.name = "x"}, %g: tensor<64xf32> {rudnn.name = "g"}) -> (tensor<?x64xf32> {rudnn.name = "y"}) {
  %0 = rudnn.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : tensor<?x64xf32>, tensor<64xf32>
  return %0 : tensor<?x64xf32>
}
MLIR
cat > "$WORK/static_huge.mlir" <<'MLIR'
func.func @main(%x: tensor<4503599627370496x4096xf32> {rudnn.name = "x"}, %g: tensor<4096xf32>) -> tensor<4503599627370496x4096xf32> {
  %0 = rudnn.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : tensor<4503599627370496x4096xf32>, tensor<4096xf32>
  return %0 : tensor<4503599627370496x4096xf32>
}
MLIR
cat > "$WORK/static_big.mlir" <<'MLIR'
func.func @main(%x: tensor<1000000000x4096xf32> {rudnn.name = "x"}, %g: tensor<4096xf32>) -> tensor<1000000000x4096xf32> {
  %0 = rudnn.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : tensor<1000000000x4096xf32>, tensor<4096xf32>
  return %0 : tensor<1000000000x4096xf32>
}
MLIR

# --- item 2/3: sizes. The address space is capped so that an allocation that slipped through
# would fail at once instead of touching terabytes.
(
  ulimit -v 8000000
  rejected "2^58 x 64 elements (wraps to 0)" "x: expected a shape whose size in bytes fits in 64 bits, got [288230376151711744, 64] of f32" \
    "$WORK/rms.mlir" --random-inputs=1 --dynamic-dim 288230376151711744
  rejected "a static 2^52 x 4096 argument" "x: expected a shape whose size in bytes fits in 64 bits" \
    "$WORK/static_huge.mlir" --random-inputs=1
  rejected "10^12 x 64 f32 cannot be allocated" "x: expected 256000000000000 bytes of host memory" \
    "$WORK/rms.mlir" --random-inputs=1 --dynamic-dim 1000000000000
  rejected "a static 10^9 x 4096 argument cannot be allocated" "x: expected 16384000000000 bytes of host memory" \
    "$WORK/static_big.mlir" --random-inputs=1
  exit $fails
); fails=$?

# --- item 10: numeric options are parsed whole and named with their value.
rejected "--time 5abc" '--time: expected an integer in [1, 1000000], got "5abc"' "$WORK/rms.mlir" --random-inputs=1 --time 5abc
rejected "--time 0" '--time: expected an integer in [1, 1000000], got "0"' "$WORK/rms.mlir" --random-inputs=1 --time 0
rejected "--dynamic-dim 1e3" '--dynamic-dim: expected an integer >= 0, got "1e3"' "$WORK/rms.mlir" --random-inputs=1 --dynamic-dim 1e3
rejected "--dynamic-dim ' 5'" '--dynamic-dim: expected an integer >= 0, got " 5"' "$WORK/rms.mlir" --random-inputs=1 --dynamic-dim ' 5'
rejected "--dynamic-dim 2^63" '--dynamic-dim: expected an integer >= 0, got "9223372036854775808"' "$WORK/rms.mlir" --random-inputs=1 --dynamic-dim 9223372036854775808
rejected "--random-inputs=-1" '--random-inputs: expected an integer in [0, 18446744073709551615], got "-1"' "$WORK/rms.mlir" --random-inputs=-1
rejected "--random-inputs=" '--random-inputs: expected an integer in [0, 18446744073709551615], got ""' "$WORK/rms.mlir" --random-inputs=
rejected "--random-range LO 0x1" '--random-range x LO: expected a finite number, got "0x1"' "$WORK/rms.mlir" --random-inputs=1 --random-range x=0x1,2
rejected "--random-range HI nan" '--random-range x HI: expected a finite number, got "nan"' "$WORK/rms.mlir" --random-inputs=1 --random-range x=0,nan
rejected '--device ""' '--device: expected host or cuda:N, got ""' "$WORK/rms.mlir" --random-inputs=1 --device ""
rejected "--input given twice" "--input x: expected each NAME once" "$WORK/rms.mlir" --input x=a.npy --input x=b.npy
"$RUN" "$WORK/rms.mlir" --random-inputs=18446744073709551615 --dynamic-dim 3 --random-range x=-2,2.5e0 --time 1 --quiet > /dev/null 2>&1; rc=$?
check "the largest seed, a 2.5e0 range bound and --time 1 are accepted" "[ $rc -eq 0 ]"

# --- item 15: outputs are checked before the run and written all or nothing.
cat > "$WORK/two.mlir" <<'MLIR'
func.func @main(%x: tensor<?x64xf32> {rudnn.name = "x"}, %g: tensor<64xf32> {rudnn.name = "g"}) -> (tensor<?x64xf32> {rudnn.name = "a"}, tensor<?x64xf32> {rudnn.name = "b"}) {
  %0 = rudnn.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : tensor<?x64xf32>, tensor<64xf32>
  %1 = rudnn.softmax_last_axis %x : tensor<?x64xf32>
  return %0, %1 : tensor<?x64xf32>, tensor<?x64xf32>
}
MLIR
mkdir -p "$WORK/out/d.npy"
rejected "a bad second --output path" "--output b: expected a path in an existing directory" \
  "$WORK/two.mlir" --random-inputs=1 --dynamic-dim 2 --output a="$WORK/out/a.npy" --output b="$WORK/nodir/b.npy"
check "... and the first output is not written" "[ ! -e $WORK/out/a.npy ]"
rejected "a directory as output" "--output b: expected a file path" \
  "$WORK/two.mlir" --random-inputs=1 --dynamic-dim 2 --output a="$WORK/out/a.npy" --output b="$WORK/out/d.npy"
check "... and nothing is left in out/ (no a.npy, no .tmp)" "[ \"\$(ls -A $WORK/out)\" = d.npy ] && [ -z \"\$(ls -A $WORK/out/d.npy)\" ]"
rejected "two outputs to one file" "--output b: expected a file no other output writes" \
  "$WORK/two.mlir" --random-inputs=1 --dynamic-dim 2 --output a="$WORK/out/same.npy" --output b="$WORK/out/../out/same.npy"
rejected "an output onto a device" "--output a: expected a regular file path" \
  "$WORK/two.mlir" --random-inputs=1 --dynamic-dim 2 --output a=/dev/null
"$RUN" "$WORK/two.mlir" --random-inputs=1 --dynamic-dim 2 --output a="$WORK/out/a.npy" --output b="$WORK/out/b.npy" --quiet \
  > /dev/null 2>&1; rc=$?
check "good outputs are all written, no staging left" "[ $rc -eq 0 ] && [ -s $WORK/out/a.npy ] && [ -s $WORK/out/b.npy ] && [ \$(ls -A $WORK/out | wc -l) -eq 3 ]"

# --- item 21: ui8 arguments; duplicate rudnn.name.
cat > "$WORK/ui8.mlir" <<'MLIR'
func.func @main(%m: tensor<2x3xui8> {rudnn.name = "mask"}, %n: tensor<4xui32> {rudnn.name = "n"}) -> (tensor<2x3xui8> {rudnn.name = "m"}, tensor<4xui32>) {
  return %m, %n : tensor<2x3xui8>, tensor<4xui32>
}
MLIR
"$RUN" "$WORK/ui8.mlir" --random-inputs=2 --random-range n=4000000000,4000000003 --output m="$WORK/m.npy" --output result1="$WORK/n.npy" > "$WORK/ui8.txt" 2>&1; rc=$?
check "a ui8 argument runs (random integers 0/1)" "[ $rc -eq 0 ] && grep -q 'm: \\[2, 3\\] ui8' $WORK/ui8.txt"
cat > "$WORK/values.py" <<'PY'
import struct, sys
path, fmt, lo, hi = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
data = open(path, 'rb').read()
values = struct.unpack('<' + fmt, data[-struct.calcsize('<' + fmt):])
assert all(lo <= v <= hi for v in values), values
PY
check "ui8 is written as |u1 with 0/1 values" "head -c 128 $WORK/m.npy | grep -aqF \"'|u1'\" && python3 $WORK/values.py $WORK/m.npy 6B 0 1"
check "ui32 random integers stay exact near 2^32" "python3 $WORK/values.py $WORK/n.npy 4I 4000000000 4000000002"
rejected "a random range outside ui8" "--random-range mask: expected a range of integers inside [0, 255] (ui8), got [-1, 1)" \
  "$WORK/ui8.mlir" --random-inputs=2 --random-range mask=-1,1
rejected "a random range holding no integer" "--random-range n: expected a range of integers inside [0, 4294967295] (ui32)" \
  "$WORK/ui8.mlir" --random-inputs=2 --random-range n=0.2,0.7
cat > "$WORK/si8.mlir" <<'MLIR'
func.func @main(%m: tensor<2xsi8>) -> tensor<2xsi8> {
  return %m : tensor<2xsi8>
}
MLIR
rejected "an element type rudnn lacks is named" "arg0: expected f32/f16/bf16/ui8/ui32/i32/i64/f8E4M3FN, got si8" "$WORK/si8.mlir" --random-inputs
cat > "$WORK/dup.mlir" <<'MLIR'
func.func @main(%a: tensor<2xf32> {rudnn.name = "x"}, %b: tensor<2xf32> {rudnn.name = "x"}) -> (tensor<2xf32>, tensor<2xf32>) {
  return %a, %b : tensor<2xf32>, tensor<2xf32>
}
MLIR
rejected "duplicate argument names" 'argument 1 rudnn.name: expected a name no other argument of @main has, got "x", the name of argument 0' "$WORK/dup.mlir" --random-inputs
cat > "$WORK/dup2.mlir" <<'MLIR'
func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> (tensor<2xf32> {rudnn.name = "result1"}, tensor<2xf32>) {
  return %a, %b : tensor<2xf32>, tensor<2xf32>
}
MLIR
rejected "a result name equal to another's default" 'result 1 rudnn.name: expected a name no other result of @main has, got "result1", the name of result 0' "$WORK/dup2.mlir" --random-inputs

# --- item 7: dispatch {experts} against the routing's expert count; item 8: foreign offsets.
cat > "$WORK/experts_static.mlir" <<'MLIR'
func.func @main(%x: tensor<?x16xf32>, %l: tensor<?x8xf32>) -> tensor<5xui32> {
  %i, %w = rudnn.route %l {top_k = 2 : i64, renormalize = true} : tensor<?x8xf32> -> tensor<?x2xui32>, tensor<?x2xf32>
  %r, %o, %s = rudnn.dispatch %x, %i {experts = 4 : i64} : tensor<?x16xf32>, tensor<?x2xui32> -> tensor<?x16xf32>, tensor<5xui32>, tensor<?x2xui32>
  return %o : tensor<5xui32>
}
MLIR
rejected "dispatch experts 4 after routing over 8 (verifier)" "experts: expected 8 (the experts of the rudnn.route its indices come from), got 4" \
  "$WORK/experts_static.mlir" --random-inputs=1 --dynamic-dim 3
cat > "$WORK/experts_dynamic.mlir" <<'MLIR'
func.func @main(%x: tensor<?x16xf32>, %l: tensor<?x?xf32>) -> tensor<5xui32> {
  %i, %w = rudnn.route %l {top_k = 2 : i64, renormalize = true} : tensor<?x?xf32> -> tensor<?x2xui32>, tensor<?x2xf32>
  %r, %o, %s = rudnn.dispatch %x, %i {experts = 4 : i64} : tensor<?x16xf32>, tensor<?x2xui32> -> tensor<?x16xf32>, tensor<5xui32>, tensor<?x2xui32>
  return %o : tensor<5xui32>
}
MLIR
rejected "dispatch experts 4 after routing over 8 (run time)" "rudnn.dispatch experts: expected 8 (the expert count of the routing its indices come from), got 4" \
  "$WORK/experts_dynamic.mlir" --random-inputs=1 --dynamic-dim 8 --output result0="$WORK/off.npy"
check "... and writes no output" "[ ! -e $WORK/off.npy ]"
"$RUN" "$WORK/experts_dynamic.mlir" --random-inputs=1 --dynamic-dim 4 > "$WORK/exp4.txt" 2>&1; rc=$?
check "dispatch experts 4 after routing over 4 runs, 5 offsets" "[ $rc -eq 0 ] && grep -q 'result0: \\[5\\] ui32' $WORK/exp4.txt"
cat > "$WORK/offsets.mlir" <<'MLIR'
func.func @main(%x: tensor<?x16xbf16>, %l: tensor<?x4xbf16>, %off: tensor<5xui32> {rudnn.name = "off"},
                %g: tensor<4x8x16xbf16>, %u: tensor<4x8x16xbf16>, %d: tensor<4x16x8xbf16>) -> tensor<?x16xbf16> {
  %i, %w = rudnn.route %l {top_k = 2 : i64, renormalize = true} : tensor<?x4xbf16> -> tensor<?x2xui32>, tensor<?x2xbf16>
  %r, %o, %s = rudnn.dispatch %x, %i {experts = 4 : i64} : tensor<?x16xbf16>, tensor<?x2xui32> -> tensor<?x16xbf16>, tensor<5xui32>, tensor<?x2xui32>
  %y = rudnn.swiglu_experts %r, %off, %g, %u, %d {strategy = "scalar"} : tensor<?x16xbf16>, tensor<5xui32>, tensor<4x8x16xbf16>, tensor<4x8x16xbf16>, tensor<4x16x8xbf16> -> tensor<?x16xbf16>
  %z = rudnn.combine %y, %s, %w : tensor<?x16xbf16>, tensor<?x2xui32>, tensor<?x2xbf16> -> tensor<?x16xbf16>
  return %z : tensor<?x16xbf16>
}
MLIR
rejected "swiglu_experts with offsets from an argument" "rudnn.swiglu_experts offsets: expected the offsets of the dispatch the rows came from" \
  "$WORK/offsets.mlir" --random-inputs=1 --dynamic-dim 3
sed 's/%r, %off, %g/%r, %o, %g/' "$WORK/offsets.mlir" > "$WORK/offsets_ok.mlir"
"$RUN" "$WORK/offsets_ok.mlir" --random-inputs=1 --dynamic-dim 3 --quiet > "$WORK/off_ok.txt" 2>&1; rc=$?
check "... and with the dispatch's own offsets it runs" "[ $rc -eq 0 ] || { cat $WORK/off_ok.txt; false; }"

# --- item 9: integer arguments take only integral values inside their type, exactly (no cast
# through double): out-of-range, fractional, NaN and huge values are errors naming the element.
cat > "$WORK/ints.mlir" <<'MLIR'
func.func @main(%u: tensor<1xui32> {rudnn.name = "u"}, %i: tensor<1xi32> {rudnn.name = "i"}, %l: tensor<2xi64> {rudnn.name = "l"}) -> (tensor<1xui32>, tensor<1xi32>, tensor<2xi64> {rudnn.name = "l_out"}) {
  return %u, %i, %l : tensor<1xui32>, tensor<1xi32>, tensor<2xi64>
}
MLIR
cat > "$WORK/npy.py" <<'PY'
import struct, sys
def npy(path, descr, fmt, values):
    h = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (descr, len(values))
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    data = struct.pack("<" + fmt * len(values), *values)
    open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + data)
w = sys.argv[1]
npy(f"{w}/minus1.npy", "<i8", "q", [-1])
npy(f"{w}/two32p3.npy", "<i8", "q", [2**32 + 3])
npy(f"{w}/nan.npy", "<f8", "d", [float("nan")])
npy(f"{w}/frac.npy", "<f8", "d", [1.7])
npy(f"{w}/big.npy", "<f8", "d", [1e20])
npy(f"{w}/two63.npy", "<u8", "Q", [2**63, 0])
npy(f"{w}/u_ok.npy", "<f8", "d", [4294967295.0])
npy(f"{w}/i_ok.npy", "<i2", "h", [-7])
npy(f"{w}/l_ok.npy", "<i8", "q", [2**63 - 1, -2**63])
PY
python3 "$WORK/npy.py" "$WORK"
OK_INPUTS="--input u=$WORK/u_ok.npy --input i=$WORK/i_ok.npy --input l=$WORK/l_ok.npy"
rejected "-1 for ui32" "expected an integer in [0, 4294967295] (ui32), got -1 at element 0" \
  "$WORK/ints.mlir" --input u="$WORK/minus1.npy" --input i="$WORK/i_ok.npy" --input l="$WORK/l_ok.npy"
rejected "2^32 + 3 for ui32" "expected an integer in [0, 4294967295] (ui32), got 4294967299 at element 0" \
  "$WORK/ints.mlir" --input u="$WORK/two32p3.npy" --input i="$WORK/i_ok.npy" --input l="$WORK/l_ok.npy"
rejected "NaN for i32" "expected an integer in [-2147483648, 2147483647] (i32), got nan at element 0" \
  "$WORK/ints.mlir" --input u="$WORK/u_ok.npy" --input i="$WORK/nan.npy" --input l="$WORK/l_ok.npy"
rejected "1.7 for i32" "(i32), got 1.7 at element 0" \
  "$WORK/ints.mlir" --input u="$WORK/u_ok.npy" --input i="$WORK/frac.npy" --input l="$WORK/l_ok.npy"
rejected "1e20 for i32" "(i32), got 1e+20 at element 0" \
  "$WORK/ints.mlir" --input u="$WORK/u_ok.npy" --input i="$WORK/big.npy" --input l="$WORK/l_ok.npy"
rejected "2^63 for i64" "(i64), got 9223372036854775808 at element 0" \
  "$WORK/ints.mlir" --input u="$WORK/u_ok.npy" --input i="$WORK/i_ok.npy" --input l="$WORK/two63.npy"
check "... naming the --input" "grep -qF -- '--input l=' $WORK/err.txt"
"$RUN" "$WORK/ints.mlir" $OK_INPUTS --output l_out="$WORK/l_out.npy" --output result0="$WORK/u_out.npy" \
  --output result1="$WORK/i_out.npy" --quiet > "$WORK/ints.txt" 2>&1; rc=$?
check "in-range integers run" "[ $rc -eq 0 ] || { cat $WORK/ints.txt; false; }"
check "i64 2^63 - 1 and -2^63 come back exactly" "python3 -c \"import struct; d=open('$WORK/l_out.npy','rb').read(); assert struct.unpack('<2q', d[-16:]) == (2**63 - 1, -2**63)\""
check "ui32 4294967295 (from f8) and i32 -7 (from i2) come back exactly" "python3 $WORK/values.py $WORK/u_out.npy I 4294967295 4294967295 && python3 $WORK/values.py $WORK/i_out.npy i -7 -7"

echo "$fails failed"
[ $fails -eq 0 ]
