#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time on a fresh copy of its seeds (CTest label "fuzz").
#   run_fuzz.sh FUZZER SECONDS WORK SEED...   (a SEED is a file or a directory of files)
# Fails (non-zero) on a crash, an abort, an ASan report, a timeout of one input or running out of
# memory; the input that did it is left as WORK/crash-*, WORK/timeout-* or WORK/oom-* (and printed),
# so `FUZZER WORK/crash-...` reproduces it.
set -u
FUZZER=$1; SECONDS_TOTAL=$2; WORK=$3; shift 3
rm -rf "$WORK"; mkdir -p "$WORK/corpus"
for seed in "$@"; do
  if [ -d "$seed" ]; then cp "$seed"/* "$WORK/corpus/" 2>/dev/null; else cp "$seed" "$WORK/corpus/"; fi
done
# A lit file's `// -----` pieces are seeds of their own, their first function renamed @main, so
# that each reaches the lowering (the harness, like the tools, lowers only @main).
for f in "$WORK"/corpus/*.mlir; do
  [ -e "$f" ] && grep -q '^// -----' "$f" || continue
  awk -v out="${f%.mlir}" 'BEGIN { n = 0 } /^\/\/ -----/ { n++; next } { print > (out "." n ".piece.mlir") }' "$f"
  for p in "${f%.mlir}".*.piece.mlir; do
    grep -q 'func.func @main' "$p" || sed -i '0,/func\.func @[A-Za-z0-9_]*/s//func.func @main/' "$p"
  done
done
echo "run_fuzz: $(ls "$WORK/corpus" | wc -l) seeds, ${SECONDS_TOTAL}s"
# -timeout: one input may take at most 60 s; -rss_limit_mb / -malloc_limit_mb: a huge allocation
# (what a reader must never do) is an "out-of-memory" failure. CTest turns leak detection off for
# the MLIR target (MLIR keeps process-wide registrations).
"$FUZZER" "$WORK/corpus" -max_total_time="$SECONDS_TOTAL" -timeout=60 \
  -rss_limit_mb=4096 -malloc_limit_mb=2048 -max_len=65536 -artifact_prefix="$WORK/" -print_final_stats=1 \
  > "$WORK/fuzz.log" 2>&1
rc=$?
tail -n 40 "$WORK/fuzz.log"
for a in "$WORK"/crash-* "$WORK"/timeout-* "$WORK"/oom-* "$WORK"/leak-*; do
  [ -e "$a" ] && { echo "run_fuzz: failing input $a:"; head -c 2000 "$a" | cat -v; echo; }
done
exit $rc
