"""cli_test.py: what the command-line tests (tests/cli/check_*_cli.py) share.

check() counts each expectation and prints a failed one; random_source() draws the run's seed
(FS_SEED=... replays a run) and from then on every failure names it; scratch() makes the folder
for a test's files, removed when the test ends unless a check failed (its path is then printed);
run() runs one flashstep command; has_window() tells a build without the window (whose render
cases are skipped); write_rows() and write_npy() write input matrices; finish()
prints the counts and exits 1 if anything failed. The tests import this from their own folder, which Python puts first on
sys.path when it runs a script (`python3 tests/cli/check_trace_cli.py ...` from anywhere).
"""
import atexit, os, random, shutil, struct, subprocess, sys, tempfile

passed = failed = 0
seed = None


def random_source():
    """A random.Random seeded from FS_SEED when set, otherwise from the system."""
    global seed
    seed = int(os.environ.get("FS_SEED") or random.SystemRandom().randrange(1 << 32))
    return random.Random(seed)


_scratch = []


def scratch(prefix):
    """A new temporary folder for the test's files (in the system's temporary folder)."""
    path = tempfile.mkdtemp(prefix=prefix)
    _scratch.append(path)
    return path


@atexit.register
def _remove_scratch():
    for path in _scratch:
        if failed:
            print(f"(the test's files are kept in {path})")
        else:
            shutil.rmtree(path, ignore_errors=True)


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}" if seed is None else f"FAIL: {what} [replay with FS_SEED={seed}]")


def finish(summary):
    """Print summary with {passed}, {failed} and {seed} filled in; exit 1 on any failure."""
    print(summary.format(passed=passed, failed=failed, seed=seed))
    sys.exit(1 if failed else 0)


def run(exe, command, args, timeout=60, **options):
    """Run `exe command args...`: (exit status, stdout, stderr)."""
    p = subprocess.run([exe, command, *args], capture_output=True, text=True, timeout=timeout, **options)
    return p.returncode, p.stdout, p.stderr


def has_window(exe):
    """False for a build without the window (make NO_GUI=1): its `render` and `play`'s window
    options refuse to run, so the tests of those skip (and say so) instead of failing."""
    p = subprocess.run([exe, "render", "--help"], capture_output=True, text=True, timeout=60)
    return "this build has no window" not in p.stdout + p.stderr


def write_rows(folder, name, rows, sep=" ", first_line=""):
    """A text matrix, one row a line, each number as repr writes it; returns its path."""
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(first_line)
        for r in rows:
            f.write(sep.join(repr(x) for x in r) + "\n")
    return path


def write_npy(folder, name, x, descr="<f8", fortran=False):
    """Nested lists (any depth, rectangular) as .npy, version 1, C order (or Fortran order: the
    first index fastest, as np.save writes a transpose); returns its path."""
    def flat(y):
        return [v for r in y for v in flat(r)] if isinstance(y, list) else [y]

    def shape(y):
        return [len(y)] + shape(y[0]) if isinstance(y, list) else []

    def reversed_axes(y):   # y with every axis reversed: its C order is y's Fortran order
        shp = shape(y)

        def get(ix):
            z = y
            for i in ix:
                z = z[i]
            return z

        def build(rev):   # rev: the indices chosen so far, last axis first
            if len(rev) == len(shp):
                return get(list(reversed(rev)))
            return [build(rev + [i]) for i in range(shp[len(shp) - 1 - len(rev)])]
        return build([])

    path = os.path.join(folder, name)
    shp = shape(x)
    if fortran:
        x = reversed_axes(x)
    head = "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }" % (
        descr, fortran, ", ".join(map(str, shp)) + ("," if len(shp) == 1 else ""))
    head += " " * ((64 - (10 + len(head) + 1) % 64) % 64) + "\n"
    code = {"<f2": "e", "<f4": "f", "<f8": "d", "<u2": "H", "|u1": "B"}[descr]
    vals = flat(x)
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode())
        f.write(struct.pack("<%d%s" % (len(vals), code), *vals))
    return path
