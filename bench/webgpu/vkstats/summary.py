#!/usr/bin/env python3
"""summary.py: the file bench.js --vkstats and the layer fs_vkstats.c wrote together, as a table.

    python3 bench/webgpu/vkstats/summary.py vkstats.log [--grep TEXT]

One row a pipeline the driver made while bench.js was making a kernel's (the "bench pipeline
begin" line before it names the kernel: its WGSL file, entry point, subgroups or not, the
preprocessor's flags and the constants), its columns the workgroup's invocations (from the
SPIR-V) and the driver's statistics in the order it first gave them. A kernel made twice with the
same name and the same statistics is one row.

Where the driver gives "Register Count" (NVIDIA's does), the last column says how many warps and
workgroups an SM of a Hopper GPU holds, by CUDA's occupancy rules there: registers given out 8 an
invocation at a time from 65536 an SM, at most 64 warps and 32 workgroups an SM, and 228 KiB of
shared memory an SM with 1 KiB of it kept back a workgroup ("Shared Memory Size"). It is
arithmetic on the statistics, right for NVIDIA's sm_90 GPUs only.

Pipelines made outside any pair (Dawn's own) are counted, not shown. --grep keeps the rows
whose kernel contains TEXT. Exit 1 when the file holds no statistics at all (the layer was not
loaded, or the driver offers none: the file's "vkstats device" line says which); 2 when the file
cannot be read or the arguments are wrong.
"""
import re
import sys


def parse(lines):
    rows, outside, kernel, devices = [], 0, None, []
    for line in lines:
        line = line.rstrip('\n')
        if line.startswith('bench pipeline begin '):
            kernel = line[len('bench pipeline begin '):]
        elif line == 'bench pipeline end':
            kernel = None
        elif line.startswith('vkstats device: '):
            devices.append(line[len('vkstats device: '):])
        elif line.startswith('vkstats pipeline '):
            m = re.match(r'vkstats pipeline \d+ module (\w+) spirv (\d+)(?: wg (\d+))?:(.*)$', line)
            if not m:
                continue
            if kernel is None:
                outside += 1
                continue
            stats = {}
            for exe in m.group(4).split(' exe ')[1:]:
                head, _, body = exe.partition('|')
                for part in body.split(';'):
                    name, eq, value = part.strip().partition('=')
                    if eq:
                        stats[name] = value
            rows.append((kernel, int(m.group(2)), int(m.group(3) or 0), stats))
    return rows, outside, devices


def hopper(wg, stats):
    """'warps (workgroups)' an SM of a Hopper GPU holds, or '-' without the numbers it needs."""
    try:
        regs = int(stats['Register Count'])
        shared = int(stats.get('Shared Memory Size', '0'))
    except (KeyError, ValueError):
        return '-'
    if not wg or regs <= 0:
        return '-'
    warps_wg = -(-wg // 32)
    warps_by_regs = 65536 // (32 * (-(-regs // 8) * 8))
    groups = min(warps_by_regs // warps_wg, 64 // warps_wg, 32, (228 * 1024) // (shared + 1024))
    return f'{groups * warps_wg} ({groups})'


def main(argv):
    if not argv or argv[0] in ('-h', '--help'):
        print(__doc__.strip())
        return 0 if argv else 2
    grep = None
    if '--grep' in argv:
        k = argv.index('--grep')
        if k + 1 >= len(argv):
            print('summary.py: --grep needs a value', file=sys.stderr)
            return 2
        grep = argv[k + 1]
        del argv[k:k + 2]
    try:
        with open(argv[0], encoding='utf-8', errors='replace') as f:
            rows, outside, devices = parse(f)
    except OSError as e:
        print(f'summary.py: {e}', file=sys.stderr)
        return 2
    names, seen, out = [], set(), []
    for kernel, spirv, wg, stats in rows:
        for n in stats:
            if n not in names:
                names.append(n)
        key = (kernel, wg, tuple(sorted(stats.items())))
        if key in seen or (grep and grep not in kernel):
            continue
        seen.add(key)
        out.append((kernel, spirv, wg, stats))
    for d in sorted(set(devices)):
        print(f'device: {d}')
    if not any(stats for _, _, _, stats in rows):
        print(f'summary.py: {argv[0]}: no statistics ({len(rows)} pipelines of bench.js, {outside} others)', file=sys.stderr)
        return 1
    clean = lambda s: ''.join(c if c.isprintable() and c != '|' else '?' for c in s)
    print('| kernel | SPIR-V bytes | invocations | ' + ' | '.join(clean(n) for n in names) + ' | warps (workgroups) an SM, Hopper |')
    print('|---|---:|---:|' + '---:|' * len(names) + '---:|')
    for kernel, spirv, wg, stats in out:
        print(f'| {clean(kernel)} | {spirv} | {wg or "-"} | ' + ' | '.join(clean(stats.get(n, '-')) for n in names) +
              f' | {hopper(wg, stats)} |')
    print(f'{len(out)} kernels ({len(rows)} pipelines of bench.js, {outside} made outside its pairs)')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
