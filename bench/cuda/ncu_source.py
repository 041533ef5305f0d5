#!/usr/bin/env python3
"""ncu_source.py: where a kernel's instructions and stalls go, opcode by opcode.

    ncu --section SourceCounters -k regex:KERNELS -o prof bench_cuda --profile
    ncu --import prof.ncu-rep --page source --csv --print-source sass > source.csv
    python3 bench/cuda/ncu_source.py source.csv [--top N]

ncu's source page lists every SASS instruction of every profiled kernel with how often it ran
and how many of the sampled warp states sat on it (tens of MB for a few kernels). This prints,
per kernel, the instructions executed, the share of each opcode (the part before the first dot:
FFMA, MUFU, HGMMA, ...) in them and in the stall samples, and the N instructions with the most
samples. It is how prefill version 21 was found: in version 17's listing, integer compares and
selects of the element mask were a fifth of the instructions of tiles that need no mask.
"""
import csv
import io
import re
import sys
from collections import Counter


def kernels(text):
    """(kernel name, rows as dicts) for each kernel section of the CSV."""
    for part in re.split(r'(?m)^"Kernel Name",', text)[1:]:
        head, _, body = part.partition("\n")
        rows = list(csv.DictReader(io.StringIO(body)))
        yield head.strip().strip(",").strip('"'), rows


def count(row, key):
    try:
        return int((row.get(key) or "0").replace(",", ""))
    except ValueError:
        return 0


def summary(name, rows, top):
    ops, stalls, hot = Counter(), Counter(), []
    n_all = s_all = 0
    for r in rows:
        src = (r.get("Source") or "").split()
        if not src:
            continue
        n = count(r, "Instructions Executed")
        s = count(r, "Warp Stall Sampling (All Samples)")
        op = (src[1] if src[0].startswith("@") and len(src) > 1 else src[0]).split(".")[0]
        ops[op] += n
        stalls[op] += s
        n_all += n
        s_all += s
        hot.append((s, " ".join(src)))
    out = [name, "  instructions executed %d, stall samples %d" % (n_all, s_all),
           "  opcode: share of the instructions / share of the stall samples"]
    for op, n in ops.most_common(20):
        out.append("    %-8s %5.1f %% / %5.1f %%" % (op, 100 * n / max(n_all, 1), 100 * stalls[op] / max(s_all, 1)))
    out.append("  the %d instructions with the most stall samples:" % top)
    for s, src in sorted(hot, key=lambda x: -x[0])[:top]:
        # branch targets are absolute addresses of this process: they say nothing across runs
        out.append("    %5.1f %%  %s" % (100 * s / max(s_all, 1), re.sub(r"0x7f[0-9a-f]{10}", "ADDR", src)))
    return "\n".join(out)


def main(argv):
    args = argv[1:]
    top = 10
    if "--top" in args:
        i = args.index("--top")
        try:
            top = int(args[i + 1])
        except (IndexError, ValueError):
            print("ncu_source.py: --top takes a number", file=sys.stderr)
            return 2
        del args[i:i + 2]
    if len(args) != 1:
        print("usage: ncu_source.py SOURCE.csv [--top N]", file=sys.stderr)
        return 2
    try:
        text = open(args[0], encoding="utf-8", errors="replace").read()
    except OSError as e:
        print("ncu_source.py: %s: %s" % (args[0], e.strerror), file=sys.stderr)
        return 1
    seen, n = Counter(), 0
    for name, rows in kernels(text):
        # one kernel launched again (two versions that share it, or another problem) gets its
        # own section, in launch order
        seen[name] += 1
        label = name if seen[name] == 1 else "%s  [launch %d of this kernel]" % (name, seen[name])
        print(summary(label, rows, top))
        print()
        n += 1
    if n == 0:
        print("ncu_source.py: %s: no kernel sections (expected ncu --page source --csv output)" % args[0],
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except BrokenPipeError:   # the reader (head, less) stopped early
        sys.exit(0)
