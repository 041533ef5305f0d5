#!/usr/bin/env python3
"""summary.py: the file bench.js --vkstats and the layer fs_vkstats.c wrote together, as a table.

    python3 bench/webgpu/vkstats/summary.py vkstats.log [--grep TEXT]

One row a pipeline the driver made while bench.js was making a kernel's (the "bench pipeline
begin" line before it names the kernel: its WGSL file, entry point, subgroups or not, the
preprocessor's flags and the constants), its columns the driver's statistics in the order it
first gave them. A kernel made twice with the same name and the same statistics is one row.
Pipelines made outside any pair (Dawn's own) are counted, not shown. --grep keeps the rows
whose kernel contains TEXT. Exit 1 when the file holds no statistics at all (the layer was not
loaded, or the driver offers none: the file's "vkstats device" line says which).
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
            m = re.match(r'vkstats pipeline \d+ module (\w+) spirv (\d+):(.*)$', line)
            if not m:
                continue
            if kernel is None:
                outside += 1
                continue
            stats = {}
            for exe in m.group(3).split(' exe ')[1:]:
                head, _, body = exe.partition('|')
                for part in body.split(';'):
                    name, eq, value = part.strip().partition('=')
                    if eq:
                        stats[name] = value
            rows.append((kernel, int(m.group(2)), stats))
    return rows, outside, devices


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
    for kernel, spirv, stats in rows:
        for n in stats:
            if n not in names:
                names.append(n)
        key = (kernel, tuple(sorted(stats.items())))
        if key in seen or (grep and grep not in kernel):
            continue
        seen.add(key)
        out.append((kernel, spirv, stats))
    for d in sorted(set(devices)):
        print(f'device: {d}')
    if not any(stats for _, _, stats in rows):
        print(f'summary.py: {argv[0]}: no statistics ({len(rows)} pipelines of bench.js, {outside} others)', file=sys.stderr)
        return 1
    clean = lambda s: ''.join(c if c.isprintable() and c != '|' else '?' for c in s)
    print('| kernel | SPIR-V bytes | ' + ' | '.join(clean(n) for n in names) + ' |')
    print('|---|---:|' + '---:|' * len(names))
    for kernel, spirv, stats in out:
        print(f'| {clean(kernel)} | {spirv} | ' + ' | '.join(clean(stats.get(n, '-')) for n in names) + ' |')
    print(f'{len(out)} kernels ({len(rows)} pipelines of bench.js, {outside} made outside its pairs)')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
