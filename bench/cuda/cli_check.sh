#!/usr/bin/env bash
# cli_check.sh: `flashstep trace --backend cuda` against the engine, through the command line.
#
#   bash bench/cuda/cli_check.sh BUILD_DIR LOG_DIR
#   (FS_CLI_PREBUILT=1: use BUILD_DIR/flashstep as it is, built elsewhere and carried)
#
# Builds the program with CUDA and without the window (make CUDA=1 NO_GUI=1: GPU machines lack
# SDL2), then for random problems and for 000's n = 6 example compares the JSONL of the engine
# and of the GPU event by event (bench/cuda/cmp_jsonl.py, float32 tolerance), the forward's
# (tile, skip, row, out) and the backward's (--backward: lse, delta, btile, bskip, brow, bkey,
# grad, with GQA, dO = 1 and dropout among them). Needs a GPU.
set -u
B=${1:-build/cuda}
LOG=${2:-/tmp/fs-cli-check}
mkdir -p "$LOG"
if [ "${FS_CLI_PREBUILT:-0}" = 1 ] && [ -x "$B/flashstep" ]; then
  : # FS_CLI_PREBUILT=1: $B/flashstep was built elsewhere (make CUDA=1 NO_GUI=1) and carried
else
  make CUDA=1 NO_GUI=1 BUILD="$B" -j"$(nproc)" "$B/flashstep" > "$LOG/build_cli.log" 2>&1 \
    || { tail -20 "$LOG/build_cli.log"; echo "cli_check: the program did not build"; exit 1; }
fi
python3 - "$LOG" <<'PY'
import random, sys
r = random.Random()
def mat(rows, cols, path):
    with open(path, "w") as f:
        for _ in range(rows):
            f.write(" ".join(f"{r.uniform(-2, 2):.6f}" for _ in range(cols)) + "\n")
d = sys.argv[1]
mat(14, 5, f"{d}/q.txt"); mat(17, 5, f"{d}/k.txt"); mat(17, 4, f"{d}/v.txt"); mat(14, 4, f"{d}/do.txt")
PY
ok=1
A=assets/doc000_tiled
compare() {  # name, then trace arguments
  local name=$1; shift
  $B/flashstep trace "$@" --format jsonl > "$LOG/engine.jsonl" 2> "$LOG/engine.err"
  $B/flashstep trace "$@" --format jsonl --backend cuda > "$LOG/cuda.jsonl" 2> "$LOG/cuda.err"
  local rc=$?
  if [ $rc != 0 ]; then echo "  [$name] cuda run failed (rc=$rc): $(head -1 "$LOG/cuda.err")"; ok=0; return; fi
  local verdict
  verdict=$(python3 bench/cuda/cmp_jsonl.py "$LOG/engine.jsonl" "$LOG/cuda.jsonl") || ok=0
  echo "  [$name] $(wc -l < "$LOG/engine.jsonl") events: $verdict"
}
R=(--q "$LOG/q.txt" --k "$LOG/k.txt" --v "$LOG/v.txt")
compare "000's n=6 causal, Bq=2 Bk=3, unnormalized" --q $A/Q.txt --k $A/K.txt --v $A/V.txt --bq 2 --bk 3 --mask causal --form unnormalized
compare "random 14x17 causal" "${R[@]}" --mask causal
compare "random window 5, kv-outer" "${R[@]}" --window 5 --order kv-outer
compare "random exp2, unnormalized, Bq=4 Bk=5" "${R[@]}" --form unnormalized --exp2 --bq 4 --bk 5
compare "random one query at a time" "${R[@]}" --query
compare "backward: 000's n=6 causal, Bq=2 Bk=3, its dO" --backward --q $A/Q.txt --k $A/K.txt --v $A/V.txt --do $A/dO.txt --bq 2 --bk 3 --mask causal
compare "backward: random 14x17 causal, kv-outer, dO given" "${R[@]}" --backward --do "$LOG/do.txt" --mask causal --order kv-outer
compare "backward: random window 5, heads 2:1, dO = 1, Bq=3 Bk=4" "${R[@]}" --backward --window 5 --heads 2:1 --bq 3 --bk 4
compare "backward: random, dropout 0.3 seed 7, soft-cap 2" "${R[@]}" --backward --do "$LOG/do.txt" --dropout 0.3 --seed 7 --softcap 2
$B/flashstep trace --q $A/Q.txt --k $A/K.txt --v $A/V.txt --bq 2 --bk 3 --mask causal --backend cuda | tail -8
$B/flashstep trace --backward --q $A/Q.txt --k $A/K.txt --v $A/V.txt --do $A/dO.txt --bq 2 --bk 3 --mask causal \
  --backend cuda | tail -8
[ $ok = 1 ] && echo "cli_check: every CUDA trace matches the engine" || { echo "cli_check: FAILED"; exit 1; }
