#!/usr/bin/env python3
"""make_array_seeds.py: write the seed corpus of fuzz_array.c into tests/fuzz/array-seeds.

Each seed is one selector byte (fuzz_array.c: bits 0-1 the reader, bit 2 non-finite values
allowed, bit 3 bfloat16 bits) and then a file's bytes: valid .npy files (float16, float32,
float64, bfloat16 bits; 1-D to 4-D; both byte orders; C and Fortran order; header versions 1 to
3), files the reader must refuse (bad magic, a shape larger than the data, NaN), text matrices with
comments, commas and CRLF, and parent lists. Run it again after changing it; the seeds are kept
in the repository so the fuzz step needs nothing but the compiler.
Usage: python3 tests/fuzz/make_array_seeds.py
"""
import math, os, struct

TEXT, NPY, INTS, NEGINF = 0, 1, 2, 3
NONFINITE, BF16 = 4, 8
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "array-seeds")


def npy(shape, descr="<f4", fortran=False, version=1, values=None, header=None):
    count = 1
    for s in shape:
        count *= s
    if values is None:
        values = [((i * 37) % 11 - 5) / 4 for i in range(count)]
    dims = ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
    head = header or "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }" % (descr, fortran, dims)
    pre = 10 if version == 1 else 12
    head += " " * ((64 - (pre + len(head) + 1) % 64) % 64) + "\n"
    size = struct.pack("<H", len(head)) if version == 1 else struct.pack("<I", len(head))
    code = {"f2": "e", "f4": "f", "f8": "d", "u2": "H", "i2": "h"}[descr[1:]]
    order = ">" if descr[0] == ">" else "<"
    if code in "Hh":
        values = [int(v * 64) & 0xFFFF if code == "H" else int(v * 64) for v in values]
    body = struct.pack(order + "%d%s" % (len(values), code), *values)
    return b"\x93NUMPY" + bytes([version, 0]) + size + head.encode() + body


def write(name, selector, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    with open(os.path.join(out, name), "wb") as f:
        f.write(bytes([selector]) + payload)


os.makedirs(out, exist_ok=True)
write("npy-f16-2d", NPY, npy((3, 4), "<f2"))
write("npy-f32-3d", NPY, npy((2, 3, 2), "<f4"))
write("npy-f64-4d", NPY, npy((1, 2, 2, 3), "<f8"))
write("npy-f32-1d", NPY, npy((5,), "<f4"))
write("npy-f64-big-endian", NPY, npy((2, 2), ">f8"))
write("npy-f32-v2", NPY, npy((2, 2), "<f4", version=2))
write("npy-f16-v3", NPY, npy((2, 3), "<f2", version=3))
write("npy-bf16-bits", NPY | BF16, npy((2, 4), "<u2"))
write("npy-i2-refused", NPY, npy((2, 2), "<i2"))
write("npy-fortran", NPY, npy((2, 3), "<f4", fortran=True))
write("npy-nan", NPY, npy((2, 2), "<f4", values=[1, math.nan, 2, 3]))
write("npy-inf-allowed", NPY | NONFINITE, npy((2, 2), "<f2", values=[1, math.inf, -math.inf, math.nan]))
write("npy-shape-too-large", NPY, npy((2, 2), "<f4", header="{'descr': '<f4', 'fortran_order': False, "
                                        "'shape': (100000, 100000), }"))
write("npy-shape-more-than-data", NPY, npy((2, 2), "<f4", header="{'descr': '<f4', 'fortran_order': False, "
                                             "'shape': (3, 3), }"))
write("npy-five-dims", NPY, npy((1, 1, 1, 2, 2), "<f4"))
write("npy-no-shape", NPY, npy((2, 2), "<f8", header="{'descr': '<f8', 'fortran_order': False, }"))
write("npy-truncated", NPY, npy((4, 4), "<f4")[:90])
write("npy-bad-magic", NPY, b"\x93NUMPZ" + npy((2, 2))[6:])
write("text-comments", TEXT, "# q: 2 rows\n1, 2 ,3\n\n  4\t5 6 # trailing\r\n-0.5e-3 7 8\n")
write("text-nonfinite", TEXT | NONFINITE, "nan 1\n-inf inf\n")
write("text-ragged", TEXT, "1 2\n3\n")
write("text-control", TEXT, "1 2\n3 \x1b[31m\n")
write("text-neg-inf", NEGINF, "0 -inf\n-inf 1.5\n")
write("ints-tree", INTS, "-1 0 0 1\n# a comment\n2\n")
write("ints-bad", INTS, "-1 0\n0 x7\n")
