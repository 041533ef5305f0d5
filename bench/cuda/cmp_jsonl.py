"""cmp_jsonl.py: compare two `flashstep trace --format jsonl` outputs line by line.

    python3 bench/cuda/cmp_jsonl.py engine.jsonl cuda.jsonl [rel_tol]

Same number of lines, same keys, equal strings and integers; floating-point numbers equal
within rel_tol · max(1, |engine|) (default 2e-4: float32 against float64). Exit 0 when they
agree, 1 with the first difference otherwise.

It reads no event kind in particular: every key of every line is compared, nested lists
included, so the forward's events (tile, skip, row, out) and the backward's (lse, delta, btile,
bskip, brow, bkey, grad; the dropped cells [[i, j], ...] as integers, exactly) are covered alike.
A number the trace prints as an integer (%.17g of 2.0 is "2") is compared within the tolerance
when the other side printed a fraction, exactly when both are integers.
"""
import json
import math
import sys


def same(a, b, tol, where):
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{where}: keys {sorted(a.keys() ^ b.keys())} differ"
        for k in a:
            r = same(a[k], b[k], tol, f"{where}.{k}")
            if r:
                return r
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where}: lengths {len(a)} and {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            r = same(x, y, tol, f"{where}[{i}]")
            if r:
                return r
        return None
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            if math.isnan(a) or math.isnan(b) or abs(a - b) > tol * max(1.0, abs(a)):
                return f"{where}: {a!r} vs {b!r}"
            return None
    return None if a == b else f"{where}: {a!r} vs {b!r}"


def main():
    tol = float(sys.argv[3]) if len(sys.argv) > 3 else 2e-4
    la = open(sys.argv[1]).read().splitlines()
    lb = open(sys.argv[2]).read().splitlines()
    if len(la) != len(lb):
        print(f"cmp_jsonl: {len(la)} lines against {len(lb)}")
        return 1
    for i, (x, y) in enumerate(zip(la, lb)):
        r = same(json.loads(x), json.loads(y), tol, f"line {i + 1}")
        if r:
            print(f"cmp_jsonl: {r}")
            return 1
    print(f"cmp_jsonl: {len(la)} lines agree (tolerance {tol})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
