#!/usr/bin/env bash
# decode-ratios.sh: the decode figures of the CPU kernels in one go, as shares of the read
# bandwidth measured beside them: float32 and float16 K/V, contiguous and paged (pages of 16 and
# 256 tokens), decode versions 4 and 5, at 32768 positions (GQA 32/8, d = 128, all cores).
#
#   bench/decode-ratios.sh [NAME] [RUNS]          defaults: decode-ratios, 3 runs
#
# Everything goes into one new run folder, bench/results/DATE-NAME/ (bench/new-run-dir.sh, with a
# NOTE.txt stub): each run is one `flashstep bench` recorded there by bench/run-cpu.sh (NAME-K.txt
# and .jsonl: date, machine, command, revision, load), and the summary is NAME-summary.txt. Inside a run every decode row alternates one
# pass of the read probe (as many bytes as the row's K and V, as many threads) with one kernel
# call, and reports the median over the pairs of (kernel GB/s) / (probe GB/s of the pass just
# before): the "of probe" share. The summary then gives, per row, the median over the runs of
# that share, the median GB/s, and for each paged row its share divided by the share of the
# contiguous row of the same run, storage and version ("of contiguous": paged against
# contiguous, both measured against the same probe within minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:-decode-ratios}
runs=${2:-3}
cores=$(nproc)
dir=$(bench/new-run-dir.sh "$name" bench/decode-ratios.sh "$name" "$runs")
for k in $(seq 1 "$runs"); do
  RUN_DIR=$dir bench/run-cpu.sh "$name-$k" --no-prefill --no-backward --no-baseline --decode-n 32768 \
    --decode-heads 32/8 --decode-d 128 --decode-dtype f32,f16 --decode-page 0,16,256 \
    --decode-version 4,5 --threads "$cores" > /dev/null
done
out=$dir/$name-summary.txt
{
  echo "# $runs runs of: flashstep bench --no-prefill --no-backward --no-baseline --decode-n 32768 --decode-heads 32/8 --decode-d 128 --decode-dtype f32,f16 --decode-page 0,16,256 --decode-version 4,5 --threads $cores"
  echo "# records: $dir/$name-1.txt … $name-$runs.txt (date, machine, revision, load)"
  for k in $(seq 1 "$runs"); do
    grep -E '^# (date|load before|load after|other processes)' "$dir/$name-$k.txt" | sed "s/^# /#   run $k: /"
  done
  # kernel, run, share of probe, GB/s, probe GB/s  →  medians per kernel; paged / contiguous
  for k in $(seq 1 "$runs"); do
    sed 's/[{}"]//g' "$dir/$name-$k.jsonl" | awk -F, -v run="$k" '
      { for (i = 1; i <= NF; i++) { split($i, kv, ":"); f[kv[1]] = kv[2] }
        if (f["kernel"] ~ /^decode/ && f["peak_fraction"] != "null")
          print f["kernel"], run, f["peak_fraction"], f["gbps"], f["probe_gbps"] }'
  done | sort -k1,1 -k3,3n | awk '
    { n[$1]++; share[$1, n[$1]] = $3; gb[$1, n[$1]] = $4; pr[$1, n[$1]] = $5; byrun[$1, $2] = $3
      if (!($1 in seen)) { seen[$1] = 1; order[++m] = $1 } ; runs[$2] = 1 }
    function med(a, k, c,   t, i, j, x) {   # median of a[k, 1..c] (sorted copy)
      for (i = 1; i <= c; i++) t[i] = a[k, i]
      for (i = 2; i <= c; i++) { x = t[i]; for (j = i - 1; j >= 1 && t[j] > x; j--) t[j + 1] = t[j]; t[j + 1] = x }
      return c % 2 ? t[(c + 1) / 2] : (t[c / 2] + t[c / 2 + 1]) / 2 }
    END {
      printf "%-20s %5s %10s %10s %10s %14s\n", "row", "runs", "of probe", "GB/s", "probe GB/s", "of contiguous"
      for (i = 1; i <= m; i++) {
        k = order[i]; c = n[k]; rel = ""
        base = k; sub(/-p[0-9]+$/, "", base)
        if (base != k) {   # paged: its share over that of the contiguous row, run by run
          nr = 0
          for (r in runs) if (((k, r) in byrun) && ((base, r) in byrun) && byrun[base, r] > 0) rr[++nr] = byrun[k, r] / byrun[base, r]
          for (a = 1; a <= nr; a++) q[1, a] = rr[a]
          if (nr > 0) rel = sprintf("%.1f %%", 100 * med(q, 1, nr))
        }
        printf "%-20s %5d %9.1f%% %10.2f %10.2f %14s\n", k, c, 100 * med(share, k, c), med(gb, k, c), med(pr, k, c), rel
      } }'
} > "$out"
cat "$out"
