"""report.py: the pass/fail report the page's test scripts share (check_page.py, check_gpu.py,
check_offline.py, check_layout.py): one line a check, then the counts; and their --shots option.

    from report import check
    check(got == want, "what must hold", f"got {got}")   # prints ok or FAIL (and the detail)
    sys.exit(report.summary())                           # 'N passed, M failed'; 1 on a failure
"""
import os
import sys

passed = failed = 0


def shots_dir(args):
    """Take '--shots DIR' out of args (a list, changed in place): DIR made and returned, or None
    when the option is not there. A --shots with no folder after it exits with a message."""
    if "--shots" not in args:
        return None
    i = args.index("--shots")
    if i + 1 >= len(args) or args[i + 1].startswith("--"):
        sys.exit("--shots needs a folder to keep the screenshots in")
    shots = args[i + 1]
    del args[i:i + 2]
    os.makedirs(shots, exist_ok=True)
    return shots


def check(ok, what, detail=""):
    """Count and print one check; its truth, so that a caller can go on from it."""
    global passed, failed
    if ok:
        passed += 1
        print(f"  ok    {what}")
    else:
        failed += 1
        print(f"  FAIL  {what}" + (f"\n        {detail}" if detail else ""))
    return ok


def summary(prefix=""):
    """Print 'N passed, M failed' (after prefix); the exit status: 1 if any check failed."""
    print(f"{prefix}{passed} passed, {failed} failed")
    return 1 if failed else 0
