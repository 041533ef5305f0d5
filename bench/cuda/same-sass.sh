#!/bin/sh
# same-sass.sh: does a change to the Hopper kernels leave their machine code (SASS) as it was?
#
#   bash bench/cuda/same-sass.sh REV
#
# Compiles every src/kernels/cuda/hopper_*.cu of the working tree and of git revision REV (each
# with its own side's src/, headers included) with the flags `make CUDA=1` gives these files
# (module.mk: NVCC_BASE and NVCC_ARCH_HOPPER), keeps the sm_90a cubin nvcc builds into the
# object, and compares it kernel by kernel: per kernel the bytes of its code (.text.<kernel>:
# every instruction with its scheduling bits, what `cuobjdump -sass` disassembles), of its
# attributes (.nv.info.<kernel>: registers, barriers, parameter layout), its relocations, its
# constant bank 0 and its static shared memory. Line-number and debug sections are left out (they
# follow the source lines), and so is the hash nvcc puts in the names of kernels in an
# anonymous namespace (it changes from one compilation to another). One line a kernel:
# "identical", "different (sections ...)", or "only here" / "only in REV"; a file on one side
# only is named and skipped. Needs nvcc ($NVCC, else
# $CUDA_HOME/bin/nvcc, else /usr/local/cuda/bin/nvcc) and python3, no GPU and no cuobjdump.
# Exit 0 when every kernel is identical, 1 otherwise, 2 on a usage or build error.
set -eu
[ $# -eq 1 ] || { echo "usage: bash bench/cuda/same-sass.sh REV" >&2; exit 2; }
rev=$1
cd "$(git rev-parse --show-toplevel)"
git rev-parse -q --verify "$rev^{commit}" > /dev/null || { echo "same-sass: no revision $rev" >&2; exit 2; }
nvcc=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
flags="-std=c++17 -O3 -lineinfo -Isrc -Xcompiler -Wall,-Wextra -gencode arch=compute_90a,code=sm_90a"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/old/tree" "$tmp/new"
git archive "$rev" src | tar -x -C "$tmp/old/tree"

# cubin SIDE SRCDIR NAME: SIDE/NAME.cubin, the cubin of src/kernels/cuda/NAME.cu under SRCDIR
cubin() {
    mkdir -p "$tmp/$1/$3.keep"
    (cd "$2" && $nvcc $flags -c "src/kernels/cuda/$3.cu" -o "$tmp/$1/$3.o" --keep --keep-dir "$tmp/$1/$3.keep") \
        > "$tmp/$1/$3.log" 2>&1 || { cat "$tmp/$1/$3.log" >&2; echo "same-sass: $1 $3.cu does not compile" >&2; return 1; }
    mv "$tmp/$1/$3.keep/$3.cubin" "$tmp/$1/$3.cubin"
}

# compare OLD.cubin NEW.cubin: one line a kernel (python3 reads the two ELF files' sections)
compare() {
    python3 - "$1" "$2" "$rev" <<'PY'
import re, struct, sys
def sections(path):
    d = open(path, 'rb').read()
    shoff, = struct.unpack_from('<Q', d, 0x28)
    size, num, stri = struct.unpack_from('<HHH', d, 0x3A)
    sh = [struct.unpack_from('<IIQQQQIIQQ', d, shoff + i * size) for i in range(num)]
    names = d[sh[stri][4]:sh[stri][4] + sh[stri][5]]
    out = {}
    for name, typ, _, _, off, n, *_ in sh:
        # an anonymous namespace's kernels carry a hash of where the file was compiled: dropped
        nm = re.sub(r'_GLOBAL__N__[0-9a-f]+_', '_GLOBAL__N_', names[name:names.index(b'\0', name)].decode())
        out[nm] = (n, b'' if typ == 8 else d[off:off + n])   # NOBITS (shared memory): the size alone
    return out
old, new, rev = sections(sys.argv[1]), sections(sys.argv[2]), sys.argv[3]
kinds = ('.text.', '.nv.info.', '.rela.text.', '.rel.text.', '.nv.constant0.', '.nv.shared.')
def kernels(s): return {k[len('.text.'):] for k in s if k.startswith('.text.')}
bad = 0
for k in sorted(kernels(old) | kernels(new)):
    if k not in kernels(new): print(f'  {k}: only in {rev}'); bad = 1; continue
    if k not in kernels(old): print(f'  {k}: only here'); bad = 1; continue
    diff = [p.strip('.') for p in kinds if old.get(p + k) != new.get(p + k)]
    print(f'  {k}: ' + ('different (' + ', '.join(diff) + ')' if diff else 'identical'))
    bad |= bool(diff)
sys.exit(bad)
PY
}

status=0
for f in src/kernels/cuda/hopper_*.cu; do
    name=$(basename "$f" .cu)
    if [ ! -f "$tmp/old/tree/$f" ]; then echo "$name.cu: only here, not compared"; continue; fi
    cubin old "$tmp/old/tree" "$name" & p1=$!
    cubin new . "$name" & p2=$!
    wait $p1 && wait $p2 || exit 2
    echo "$name.cu:"
    compare "$tmp/old/$name.cubin" "$tmp/new/$name.cubin" || status=1
done
for f in $(cd "$tmp/old/tree" && ls src/kernels/cuda/hopper_*.cu); do
    [ -f "$f" ] || echo "$(basename "$f"): only in $rev, not compared"
done
exit $status
