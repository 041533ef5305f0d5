"""report.py: the pass/fail report the page's test scripts share (check_page.py, check_gpu.py,
check_offline.py, check_layout.py): one line a check, then the counts.

    from report import check
    check(got == want, "what must hold", f"got {got}")   # prints ok or FAIL (and the detail)
    sys.exit(report.summary())                           # 'N passed, M failed'; 1 on a failure
"""
passed = failed = 0


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
