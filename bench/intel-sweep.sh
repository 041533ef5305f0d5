#!/usr/bin/env bash
# intel-sweep.sh: every CPU variant worth comparing on one machine, in one go, written to one
# folder: the prefill micro-tiles (--block), tile sizes, builds that leave one part of the prefill
# out (what each part costs), one and two threads, decode versions and storage, the backward,
# and `flashstep bench --quick` twice. Made for a machine reached once (a lent GPU machine's host
# CPU, no compiler or OpenBLAS there): run it from a folder holding static binaries.
#
#   bench/intel-sweep.sh OUT_DIR [PART...]       PART: ctx blocks tiles ablate one decode backward
#                                                stream pairs ws ab ablatec decfar tiles7 steady
#                                                quick quickblocks (default: all but stream,
#                                                pairs, ws, ab, ablatec, decfar, tiles7, steady
#                                                and quickblocks)
#
# Binaries: $BIN (default ./flashstep), for part ab a second build $BIN2 timed against it, and,
# for the ablate part, $BIN-ablK: builds with
# `make CFLAGS='-O2 -g -DFS_CPU_ABLATE=K'` (cpu_internal.h: 1 no softmax, 2 no P V, 3 no Q K^T,
# 4 packing only; results wrong, times informative). Pinned to $CORES (default 2,3) with
# taskset, two threads. Each part is cut off by timeout so that one slow part does not cost the
# others. OUT_DIR gets one .jsonl per bench run (.err: the machine lines), sweep.log with each
# command, its start time, the load, and the steal time the host took from the pinned vCPUs
# during it, and all of it again as OUT_DIR.tar.gz (one file: the lent machine sends back only a
# few files).
set -uo pipefail
out=${1:?usage: bench/intel-sweep.sh OUT_DIR [PART...]}
shift
parts=${*:-ctx blocks tiles ablate one decode backward quick}
mkdir -p "$out"
BIN=${BIN:-./flashstep}
CORES=${CORES:-2,3}
log="$out/sweep.log"

steal() {   # steal: the ticks the host took from the pinned vCPUs (/proc/stat's 8th field)
    local c sum=0
    for c in ${CORES//,/ }; do
        sum=$((sum + $(awk -v c="cpu$c" '$1 == c { print $9 }' /proc/stat)))
    done
    echo "$sum"
}

run() {   # run NAME TIMEOUT_S BINARY bench-args...: one bench run, pinned, to NAME.jsonl
    local name=$1 lim=$2 bin=$3 s0 rc
    shift 3
    echo "## $(date -u '+%H:%M:%S') load $(cut -d' ' -f1-3 /proc/loadavg) $name: taskset -c $CORES $bin bench $*" >> "$log"
    s0=$(steal)
    timeout "$lim" taskset -c "$CORES" "$bin" bench "$@" --format jsonl > "$out/$name.jsonl" 2> "$out/$name.err"
    rc=$?
    echo "## rc $rc at $(date -u '+%H:%M:%S'), steal $(( $(steal) - s0 )) ticks of 1/$(getconf CLK_TCK) s on vCPUs $CORES" >> "$log"
}

P="--n 4096 --threads 2 --no-baseline --no-decode --no-backward --reps 3"   # the newest version
for part in $parts; do
    case $part in
    ctx)
        { date -u; uptime; lscpu; grep -m1 flags /proc/cpuinfo; free -g
          echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"; } > "$out/context.txt" 2>&1 ;;
    blocks)   # the micro-tiles, d = 128 and 64, causal and not
        for b in 6x64 12x32; do run "block-$b" 40 "$BIN" $P --d 128,64 --causal 0,1 --block "$b"; done ;;
    tiles)    # Bq x Bk around version 6's 192 x 128, default micro-tile, not causal
        for bq in 96 192 384; do for bk in 64 128 256; do
            run "tile-$bq-$bk" 30 "$BIN" $P --d 128,64 --causal 0 --bq "$bq" --bk "$bk"; done; done ;;
    ablate)   # the same rows with one part left out
        for k in 1 2 3 4; do
            [ -x "$BIN-abl$k" ] && run "ablate-$k" 30 "$BIN-abl$k" $P --d 128,64 --causal 0; done ;;
    one)      # one thread: the core alone
        for b in 6x64 12x32; do
            run "one-$b" 40 "$BIN" --n 4096 --threads 1 --no-baseline --no-decode --no-backward --reps 3 --d 128,64 --causal 0 --block "$b"; done ;;
    decode)   # decode versions 4 and 5, float32 and float16 K/V, twice
        for r in 1 2; do
            run "decode-$r" 60 "$BIN" --threads 2 --no-prefill --no-backward --no-baseline --decode-n 32768,131072 --decode-version 4,5 --decode-dtype f32,f16; done ;;
    backward) # the backward, default tiles and two others
        run "backward" 60 "$BIN" --threads 2 --no-prefill --no-decode --no-baseline --backward-n 4096 --d 128,64 --causal 0,1 --reps 3
        for t in "--bq 192 --bk 64" "--bq 96 --bk 128" "--bq 48 --bk 64" "--bq 192 --bk 128"; do
            run "backward-${t// /}" 40 "$BIN" --threads 2 --no-prefill --no-decode --no-baseline --backward-n 4096 --d 128 --causal 0 --reps 3 $t; done ;;
    stream)   # prefill version 6 against 7 and backward 1 against 2 (the next tile streamed into
              # L2), in alternating rounds; then one thread, prefill only
        for r in 1 2 3 4 5; do for v in 6 7; do
            run "stream-$r-v$v" 40 "$BIN" $P --d 128,64 --causal 0,1 --version "$v"; done; done
        for r in 1 2 3 4; do for v in 1 2; do
            run "bstream-$r-v$v" 60 "$BIN" --threads 2 --no-prefill --no-decode --no-baseline --backward-n 4096 --d 128,64 --causal 0,1 --reps 3 --backward-version "$v"; done; done
        for r in 1 2 3; do for v in 6 7; do
            run "stream1-$r-v$v" 40 "$BIN" --n 4096 --threads 1 --no-baseline --no-decode --no-backward --reps 3 --d 128,64 --causal 0 --version "$v"; done; done ;;
    pairs)    # where two threads lose against one: the 2-thread row on three pairs of vCPUs;
              # one thread alone on each of two vCPUs, then on both at once (two processes);
              # causal and not on one thread
        for r in 1 2; do for c in 2,3 2,9 6,7; do
            CORES=$c run "pair-$r-${c/,/-}" 40 "$BIN" $P --d 128 --causal 0; done; done
        one="--n 4096 --threads 1 --no-baseline --no-decode --no-backward --reps 3 --d 128 --causal 0"
        for r in 1 2 3; do
            CORES=2 run "solo-$r-2" 40 "$BIN" $one
            CORES=3 run "solo-$r-3" 40 "$BIN" $one
            CORES=2 run "both-$r-2" 40 "$BIN" $one & CORES=3 run "both-$r-3" 40 "$BIN" $one & wait
        done
        CORES=2 run "one-causal" 60 "$BIN" --n 4096 --threads 1 --no-baseline --no-decode --no-backward --reps 3 --d 128,64 --causal 0,1 ;;
    ws)       # a workspace kept across calls (the default) against each call's own memory
        for r in 1 2 3 4; do for m in ws own; do f=; [ "$m" = own ] && f=--alloc-per-call
            run "ws-$r-$m" 40 "$BIN" $P --d 128,64 --causal 0,1 $f; done; done
        for r in 1 2 3; do for m in ws own; do f=; [ "$m" = own ] && f=--alloc-per-call
            run "bws-$r-$m" 60 "$BIN" --threads 2 --no-prefill --no-decode --no-baseline --backward-n 4096 --d 128,64 --causal 0,1 --reps 3 $f; done; done ;;
    ab)       # $BIN against $BIN2 in alternating rounds, two threads and one (files named
              # $AB-…, default ab)
        : "${BIN2:?intel-sweep.sh: part ab needs BIN2, a second build to time against BIN}"
        for r in 1 2 3 4; do for b in 1 2; do bin=$BIN; [ "$b" = 2 ] && bin=$BIN2
            run "${AB:-ab}-$r-bin$b" 40 "$bin" $P --d 128,64 --causal 0,1; done; done
        for r in 1 2 3; do for b in 1 2; do bin=$BIN; [ "$b" = 2 ] && bin=$BIN2
            run "${AB:-ab}1-$r-bin$b" 60 "$bin" --n 4096 --threads 1 --no-baseline --no-decode --no-backward --reps 3 --d 128,64 --causal 0,1; done; done ;;
    ablatec)  # the ablation builds (and the full one, abl0) causal and not, 2 threads twice, then
              # 1 thread: which part does not halve under the mask
        for r in 1 2; do for k in 0 1 2 3 4; do bin=$BIN; [ "$k" != 0 ] && bin=$BIN-abl$k
            [ -x "$bin" ] && run "ablc-$r-abl$k" 40 "$bin" $P --d 128,64 --causal 0,1; done; done
        for k in 0 1 2 3 4; do bin=$BIN; [ "$k" != 0 ] && bin=$BIN-abl$k
            [ -x "$bin" ] && run "ablc1-abl$k" 60 "$bin" --n 4096 --threads 1 --no-baseline --no-decode --no-backward --reps 3 --d 128,64 --causal 0,1; done ;;
    decfar)   # decode version 5's float16 L2 distance: $BIN (the default) against $BIN-farK,
              # builds with CFLAGS='-O2 -g -DFS_CPU_DEC5_FAR_16=K', in alternating rounds, float16
              # and float32 K/V, two threads; then float16 on one thread
        for r in 1 2 3 4; do for k in 0 48 96; do bin=$BIN; [ "$k" != 0 ] && bin=$BIN-far$k
            [ -x "$bin" ] && run "decfar-$r-far$k" 60 "$bin" --threads 2 --no-prefill --no-backward --no-baseline --decode-n 32768,131072 --decode-dtype f16,f32; done; done
        for r in 1 2; do for k in 0 48 96; do bin=$BIN; [ "$k" != 0 ] && bin=$BIN-far$k
            [ -x "$bin" ] && run "decfar1-$r-far$k" 60 "$bin" --threads 1 --no-prefill --no-backward --no-baseline --decode-n 32768 --decode-dtype f16; done; done ;;
    tiles7)   # the newest version's tile sizes in alternating rounds, causal and not
        for r in 1 2 3 4; do for t in 192x256 384x256 192x512 384x128; do
            run "tiles7-$r-$t" 40 "$BIN" $P --d 128,64 --causal 0,1 --bq "${t%x*}" --bk "${t#*x}"; done; done ;;
    steady)   # how far rows move from round to round, and why: ten rounds of the prefill at
              # d = 128 and 64, causal and not, on one thread timed by CPU time (--cpu-time) and
              # on two by the wall clock, each run's steal ticks in sweep.log; then the decode's
              # float32 rows on one and two threads, three times
        for r in 1 2 3 4 5 6 7 8 9 10; do
            CORES=${CORES%%,*} run "steady1-$r" 60 "$BIN" --n 4096 --threads 1 --cpu-time --no-baseline --no-decode --no-backward --reps 3 --d 128,64 --causal 0,1
            run "steady2-$r" 40 "$BIN" $P --d 128,64 --causal 0,1; done
        for r in 1 2 3; do
            run "steadydec-$r" 60 "$BIN" --threads 1,2 --no-prefill --no-backward --no-baseline --decode-n 32768,131072 --decode-dtype f32; done ;;
    quick)    # the command the targets name, twice
        for r in 1 2; do run "quick-$r" 90 "$BIN" --quick --threads 2; done ;;
    quickblocks)   # the same with the other micro-tile
        for b in 12x32; do run "quick-$b" 90 "$BIN" --quick --threads 2 --block "$b"; done ;;
    *) echo "intel-sweep.sh: unknown part '$part'" >&2; exit 2 ;;
    esac
done
{ echo "## end $(date -u '+%H:%M:%S') load $(cut -d' ' -f1-3 /proc/loadavg)"; } >> "$log"
tar -czf "$out.tar.gz" -C "$(dirname "$out")" "$(basename "$out")"
