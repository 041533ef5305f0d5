#!/usr/bin/env bash
# run-cpu.sh: run `flashstep bench` for the record, with what a reader needs to trust the
# figures: the machine, the date, the exact command, the git revision, and the load of the
# machine just before and just after (the figures are only as good as the quiet they ran in).
#
#   bench/run-cpu.sh NAME [bench options...]      e.g.  bench/run-cpu.sh quick --quick
#
# Writes into a new run folder, bench/results/DATE-NAME/ (bench/new-run-dir.sh: DATE in UTC, with
# a NOTE.txt stub naming the date, machine, revision and command), NAME.jsonl (the rows), NAME.txt
# (the table and the context) and NAME.png (the plot, when gnuplot is installed). With RUN_DIR set
# it writes into that folder instead (decode-ratios.sh records its runs in one folder so). Every row kind of the bench goes through as it
# is: prefill (flash-vK, baseline-blas), backward (flash-bwd-vK, baseline-bwd) and decode
# (decode-vK, decode-vK-f16 / -bf16); with --cpu-time the ms column is CPU time.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: bench/run-cpu.sh NAME [flashstep bench options]}
shift
bin=${FLASHSTEP:-build/flashstep}
[ -x "$bin" ] || { echo "run-cpu.sh: build first (make)" >&2; exit 2; }
if [ -n "${RUN_DIR:-}" ]; then out=$RUN_DIR; mkdir -p "$out"
else out=$(bench/new-run-dir.sh "$name" bench/run-cpu.sh "$name" "$@"); fi
txt="$out/$name.txt"
{
  echo "# date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "# machine:  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  echo "# revision: $(git rev-parse --short HEAD 2>/dev/null || echo unknown) (HEAD; the binary was built $(date -u -r "$bin" '+%H:%M:%S UTC'))"
  echo "# command:  $bin bench $* --format jsonl --plot $out/$name.png"
  echo "# load before: $(uptime | sed 's/.*load average: //')"
} > "$txt"
# busy jiffies of the whole machine before and after, and the bench's own CPU time: the
# difference is what other processes took while the bench ran (the measure of its disturbance)
busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
hz=$(getconf CLK_TCK)
b0=$(busy); w0=$(date +%s.%N)
TIMEFORMAT='%U %S'
{ time "$bin" bench "$@" --format jsonl --plot "$out/$name.png" > "$out/$name.jsonl" 2>> "$txt"; } 2> "$out/.cpu.$$"
b1=$(busy); w1=$(date +%s.%N)
read -r u s < "$out/.cpu.$$"; rm -f "$out/.cpu.$$"
echo "# load after:  $(uptime | sed 's/.*load average: //')" >> "$txt"
awk -v b0="$b0" -v b1="$b1" -v hz="$hz" -v u="$u" -v s="$s" -v w0="$w0" -v w1="$w1" -v n="$(nproc)" 'BEGIN {
  other = (b1 - b0) / hz - u - s; if (other < 0) other = 0
  printf "# other processes: %.1f CPU-seconds during the %.1f s run (%.0f %% of the machine)\n", other, w1 - w0, 100 * other / ((w1 - w0) * n) }' >> "$txt"
# the rows again as a table, for reading
awk -F'[:,]' 'BEGIN { printf "%-16s %7s %5s %6s %7s %11s %9s %8s %8s %9s\n", "kernel", "N", "d", "causal", "threads", "ms", "GFLOP/s", "of peak", "GB/s", "RSS MiB" }
  { gsub(/[{}"]/, ""); printf "%-16s %7s %5s %6s %7s %11s %9s %7.1f%% %8s %9s\n", $2, $4, $6, $8, $10, $12, $14, 100*$16, $18, $20 }' \
  "$out/$name.jsonl" >> "$txt"
cat "$txt"
