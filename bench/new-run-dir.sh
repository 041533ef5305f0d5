#!/usr/bin/env bash
# new-run-dir.sh: make the folder one benchmark run is recorded in, and print its path.
#
#   bench/new-run-dir.sh NAME COMMAND...      e.g.  bench/new-run-dir.sh quick bench/run-cpu.sh quick --quick
#
# bench/results/DATE-NAME (DATE in UTC; -2, -3, ... added if that folder exists), holding a
# NOTE.txt stub: the date, the machine (CPU model, cores, memory), the revision and COMMAND. The
# recording scripts (run-cpu.sh, decode-ratios.sh, ggml-side-by-side.sh) call it; whoever keeps
# the run completes the NOTE with what the run was for and what it showed, as
# bench/cuda/results/*/NOTE.txt do.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: bench/new-run-dir.sh NAME COMMAND...}
shift
case $name in
  */*|.*|'') echo "new-run-dir.sh: NAME must be a plain file name, not '$name'" >&2; exit 2 ;;
esac
base=bench/results/$(date -u +%F)-$name
dir=$base k=1
while [ -e "$dir" ]; do k=$((k + 1)); dir=$base-$k; done
mkdir -p "$dir"
cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //' || true)
mem=$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null || true)
{
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'): $*"
  echo "Machine: ${cpu:-unknown CPU}, $(nproc) cores${mem:+, $mem}; revision $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
  echo
  echo "(Stub written by bench/new-run-dir.sh. Say here why this ran, whether the machine was quiet"
  echo "(each .txt gives the load), and what it showed.)"
} > "$dir/NOTE.txt"
echo "$dir"
