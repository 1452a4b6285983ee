#!/usr/bin/env bash
# The MLIR input limits (issue 10 item 6, docs/input-limits.md) as a user meets them: a file nested
# deep enough to overflow MLIR's parser, an affine operator chain, a file over 64 MiB, /dev/zero, a
# directory and a pipe are a clear error (exit 1, naming the file and the limit) in rudnn-opt,
# rudnn-precompile and rudnn-run, never a crash (exit >= 128) or an unbounded read.
set -u
OPT=$1; PRECOMPILE=$2; RUN=$3; WORK=$4
rm -rf "$WORK"; mkdir -p "$WORK"
export RUDNN_CACHE_DIR=$WORK/cache RUDNN_DEVICE=host
fails=0
check() { if eval "$2"; then echo "ok   - $1"; else echo "FAIL - $1"; fails=$((fails+1)); fi; }

python3 - "$WORK" <<'PY'
import sys, os
w = sys.argv[1]
open(f"{w}/deep.mlir", "w").write("module {" * 4000 + "}" * 4000)
open(f"{w}/brackets.mlir", "w").write("module attributes {x = " + "[" * 100000 + "]" * 100000 + "} {}")
open(f"{w}/chain.mlir", "w").write("#m = affine_map<(d0) -> (" + "d0 + " * 1000000 + "d0)>\nmodule attributes {x = #m} {}")
open(f"{w}/fold.mlir", "w").write("#m = affine_map<(d0) -> (d0" + " floordiv 2" * 200000 + ")>\nmodule attributes {x = #m} {}")
with open(f"{w}/big.mlir", "w") as f:  # sparse: 64 MiB + 1 byte
    f.truncate(64 * 1024 * 1024 + 1)
os.mkfifo(f"{w}/fifo")
PY

# rc must be 1 and stderr must name the file and say what the limit is.
expect_limit() {  # label tool-command... ; file ; pattern
  local label=$1 file=$2 pattern=$3; shift 3
  timeout 120 "$@" > "$WORK/out.txt" 2> "$WORK/err.txt"; local rc=$?
  check "$label: exit 1 (got $rc)" "[ $rc -eq 1 ]"
  check "$label: the error names $file and says '$pattern'" \
    "grep -qF -- '$file' $WORK/err.txt && grep -qF -- '$pattern' $WORK/err.txt"
}

for tool in opt precompile run; do
  for f in deep brackets chain fold; do
    case $tool in
      opt) cmd=("$OPT" "$WORK/$f.mlir") ;;
      precompile) cmd=("$PRECOMPILE" "$WORK/$f.mlir" --arch host -o "$WORK/p.pack" --quiet) ;;
      run) cmd=("$RUN" "$WORK/$f.mlir" --random-inputs) ;;
    esac
    expect_limit "rudnn-$tool $f.mlir" "$f.mlir" "nested at most 64 deep" "${cmd[@]}"
  done
  for spec in "big.mlir:at most 67108864 bytes" "/dev/zero:a character device" "fifo:a pipe" "$WORK:a directory"; do
    f=${spec%%:*}; pattern=${spec#*:}
    path=$f; [ "${f#/}" = "$f" ] && path=$WORK/$f
    case $tool in
      opt) cmd=("$OPT" "$path") ;;
      precompile) cmd=("$PRECOMPILE" "$path" --arch host -o "$WORK/p.pack" --quiet) ;;
      run) cmd=("$RUN" "$path" --random-inputs) ;;
    esac
    expect_limit "rudnn-$tool $f" "$f" "$pattern" "${cmd[@]}"
  done
done
check "rudnn-precompile wrote no pack" "[ ! -e $WORK/p.pack ]"

# rudnn-opt reads standard input too: bounded, and still an mlir-opt.
timeout 120 "$OPT" < /dev/zero > /dev/null 2> "$WORK/err.txt"; rc=$?
check "rudnn-opt < /dev/zero: exit 1 after the limit (got $rc)" "[ $rc -eq 1 ] && grep -q '<stdin>: expected MLIR source of at most' $WORK/err.txt"
python3 -c "print('module {' * 4000 + '}' * 4000)" | "$OPT" > /dev/null 2> "$WORK/err.txt"; rc=$?
check "rudnn-opt deep stdin: exit 1 (got $rc)" "[ $rc -eq 1 ] && grep -q '<stdin>: expected MLIR nested at most 64' $WORK/err.txt"
echo 'func.func @f() { return }' | "$OPT" --mlir-print-op-generic | "$OPT" > "$WORK/rt.txt" 2>&1; rc=$?
check "rudnn-opt still round-trips through pipes" "[ $rc -eq 0 ] && grep -q 'func.func @f()' $WORK/rt.txt"
"$OPT" --help > "$WORK/help.txt" 2>&1
check "rudnn-opt --help states the limits" "grep -q 'at most 64 MiB and nests at most 64 deep' $WORK/help.txt"
"$RUN" --help > "$WORK/run_help.txt" 2>&1; "$PRECOMPILE" --help > "$WORK/pre_help.txt" 2>&1
check "rudnn-run and rudnn-precompile --help state the limits" \
  "grep -q 'at most 64 MiB' $WORK/run_help.txt && grep -q 'at most 64 MiB' $WORK/pre_help.txt"
"$OPT" --show-dialects < /dev/null > "$WORK/dialects.txt" 2>&1
check "rudnn-opt --show-dialects reads no input" "grep -q rudnn $WORK/dialects.txt"
printf '// expected-error@+2 {{custom op}}\n// expected-note@+1 {{Available dialects}}\nfoo.bar\n' > "$WORK/diag.mlir"
"$OPT" "$WORK/diag.mlir" --verify-diagnostics --split-input-file > /dev/null 2>&1; rc=$?
check "rudnn-opt --verify-diagnostics still works" "[ $rc -eq 0 ]"

echo "$fails failure(s)"
[ $fails -eq 0 ]
