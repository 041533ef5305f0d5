#!/usr/bin/env bash
# plot-cpu.sh: draw `flashstep bench --format jsonl` rows (one or more files, later rows of the
# same kernel/N/d/causal/threads replacing earlier ones) as a PNG of three panels: prefill
# GFLOP/s against N, peak resident memory against N (log-log: linear for the flash kernel,
# quadratic for the baseline until it no longer fits), and decode GB/s against the KV length.
# Rows at the largest thread count in the files are drawn.
#
#   bench/plot-cpu.sh OUT.png FILE.jsonl [MORE.jsonl ...]
set -euo pipefail
out=${1:?usage: bench/plot-cpu.sh OUT.png FILE.jsonl [MORE.jsonl ...]}
shift
[ $# -ge 1 ] || { echo "plot-cpu.sh: no input files" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "plot-cpu.sh: gnuplot not found: no plot written" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# kernel N d causal threads ms gflops peak_fraction gbps rss_mb, measured rows only, last wins
cat "$@" | awk -F'[:,]' '{ gsub(/[{}"]/, ""); if ($12 != "null") print $2, $4, $6, $8, $10, $12, $14, $16, $18, $20 }' |
  awk '{ key = $1 " " $2 " " $3 " " $4 " " $5; row[key] = $0; if (!(key in seen)) { seen[key] = 1; order[n++] = key } }
       END { for (i = 0; i < n; i++) print row[order[i]] }' > "$tmp/rows"
threads=$(awk 'BEGIN { t = 0 } $5 > t { t = $5 } END { print t }' "$tmp/rows")
# one block per series, each opening with its title
awk -v t="$threads" '$5 == t && $1 !~ /^decode/ { s = $1 " d=" $3 ($4 == "true" ? " causal" : ""); if (!(s in has)) { has[s] = 1; names[n++] = s } data[s] = data[s] $2 " " $7 " " $10 "\n" }
     END { for (i = 0; i < n; i++) printf "\"%s\" GFLOPs MiB\n%s\n\n", names[i], data[names[i]] }' "$tmp/rows" > "$tmp/prefill"
awk -v t="$threads" '$5 == t && $1 ~ /^decode/ { s = $1 " d=" $3; if (!(s in has)) { has[s] = 1; names[n++] = s } data[s] = data[s] $2 " " $9 "\n" }
     END { for (i = 0; i < n; i++) printf "\"%s\" GBs\n%s\n\n", names[i], data[names[i]] }' "$tmp/rows" > "$tmp/decode"
np=$(grep -c '^"' "$tmp/prefill" || true)
nd=$(grep -c '^"' "$tmp/decode" || true)
{
  echo "set terminal pngcairo size 1500,480 noenhanced"
  echo "set output '$out'"
  echo "set multiplot layout 1,3 title 'flashstep bench, $threads threads'"
  echo "set logscale x 2; set xlabel 'N'; set grid; set key left top font ',7'"
  if [ "$np" -gt 0 ]; then
    echo "set ylabel 'GFLOP/s'; plot for [s=0:$((np - 1))] '$tmp/prefill' index s using 1:2 with linespoints title columnheader(1)"
    echo "set logscale y 2; set ylabel 'peak resident memory (MiB)'; plot for [s=0:$((np - 1))] '$tmp/prefill' index s using 1:3 with linespoints title columnheader(1)"
    echo "unset logscale y"
  fi
  if [ "$nd" -gt 0 ]; then
    echo "set xlabel 'KV length'; set ylabel 'GB/s of K and V read'; plot for [s=0:$((nd - 1))] '$tmp/decode' index s using 1:2 with linespoints title columnheader(1)"
  fi
  echo "unset multiplot"
} > "$tmp/plot.gp"
gnuplot "$tmp/plot.gp" 2>&1 | grep -v "^Warning: empty" >&2 || true
echo "plot-cpu.sh: wrote $out" >&2
