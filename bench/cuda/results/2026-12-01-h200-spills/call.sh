#!/usr/bin/env bash
# One device call (repository root): where do the Hopper prefill kernels that ptxas reports with
# spills (4-12 bytes: float16 d = 64 persistent and split-last-round, e4m3 d = 128 and 256
# split-last-round) load and store their spilled registers? The two objects were built on the 2-core
# EPYC (make CUDA=1 NO_GUI=1 BUILD=build/cuda cuda-bench, nvcc 13.0) and carried. Results:
# $OUT/spills.tar.gz (res-usage.txt, spills.txt: every STL/LDL of each kernel with its source line
# and the loop it sits in), $OUT/steps.txt.
set -u
O=${OUT:-/tmp/out}; C=/tmp/c; mkdir -p $C/x
B="$PWD/build/cuda/obj/src/kernels/cuda/hopper_prefill.cu.o $PWD/build/cuda/obj/src/kernels/cuda/hopper_fp8.cu.o"
export PATH=/usr/local/cuda/bin:$PATH
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; nvcc --version | tail -1; } > $C/machine.txt 2>&1
for b in $B; do cuobjdump -res-usage $b; done > $C/res-usage.txt 2>&1
for b in $B; do d=$C/x/$(basename $b); mkdir -p $d; (cd $d && cuobjdump -xelf all $b > /dev/null 2>&1); done
for f in $C/x/*/*.cubin; do
  nvdisasm -g -c "$f" > "$f.sass" 2>/dev/null || nvdisasm -c "$f" > "$f.sass" 2>/dev/null
done
ls -laR $C/x > $C/cubins.txt
# the kernels with a stack frame, then every local load or store in them with its line
python3 - "$C" > $C/spills.txt 2>&1 <<'PY'
import glob, re, sys
C = sys.argv[1]
for f in sorted(glob.glob(C + '/x/*/*.sass')):
    fn = None; line = None; body = {}
    for s in open(f, errors='replace'):
        m = re.match(r'\s*\.text\.(\S+):', s)
        if m: fn = m.group(1); body[fn] = []; continue
        m = re.search(r'//## File "([^"]+)", line (\d+)', s)
        if m: line = m.group(1).split('/')[-1] + ':' + m.group(2); continue
        if fn is not None and s.strip(): body[fn].append((line, s.rstrip()))
    for fn, ins in body.items():
        hits = [(i, l, s) for i, (l, s) in enumerate(ins) if re.search(r'\b(STL|LDL)\b', s)]
        if not hits: continue
        label = {}
        for i, (l, s) in enumerate(ins):
            m = re.match(r'\s*(\.L_x_\d+):', s)
            if m: label[m.group(1)] = i
        loops = []   # (start, end, line of the branch) for each backward branch
        for i, (l, s) in enumerate(ins):
            m = re.search(r'\bBRA\b.*?(\.L_x_\d+)', s)
            if m and m.group(1) in label and label[m.group(1)] < i: loops.append((label[m.group(1)], i, l))
        print('==', fn, f.split('/')[-1], len(ins), 'lines,', len(loops), 'loops')
        for i, l, s in hits:
            inside = [(a, b, bl) for a, b, bl in loops if a <= i <= b]
            where = 'in %d loop(s), innermost %d-%d (branch at %s)' % ((len(inside),) + min(((b - a, a, b, bl) for a, b, bl in inside))[1:]) if inside else 'outside every loop'
            print('  %6d %-26s %-60s %s' % (i, l, re.sub(r'\s+', ' ', s.strip())[:60], where))
PY
cd /; tar czf $O/spills.tar.gz -C $C machine.txt res-usage.txt spills.txt cubins.txt
head -c 6000 $C/spills.txt
