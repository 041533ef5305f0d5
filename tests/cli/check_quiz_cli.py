#!/usr/bin/env python3
"""check_quiz_cli.py: `flashstep quiz`, from outside.

The list of sections; a quiz answered wrongly on purpose (a score of 0, every lesson to revisit
named, the score kept in the state file and shown by the list); a quiz answered right, with the
answers read from the same seed's questions through the judge's own feedback, and again behind
arrow keys' escape sequences (left out of the answer); the same seed giving the same questions;
an early end of input keeping no score; and every bad input: exit 2 with one line on stderr. The seed is drawn fresh each run (printed; FS_SEED replays).
Usage: check_quiz_cli.py BUILD/flashstep
"""
import os, re, sys

import cli_test
from cli_test import check

exe = sys.argv[1]
rng = cli_test.random_source()
tmp = cli_test.scratch("fs-quiz-cli-")
state = os.path.join(tmp, "sub", "quiz.tsv")
env = dict(os.environ, FLASHSTEP_STATE=state)


class Result:
    def __init__(self, t):
        self.returncode, self.stdout, self.stderr = t


def quiz(args, answers=""):
    return Result(cli_test.run(exe, "quiz", args, input=answers, env=env))


r = quiz([])
check(r.returncode == 0 and "not taken yet" in r.stdout, f"the list: {r.stdout[:200]!r} {r.stderr!r}")
sections = re.findall(r"^\s*(\d+)  ", r.stdout, re.M)
check(len(sections) >= 10, f"at least ten sections listed ({len(sections)})")
section = rng.randrange(1, len(sections) + 1)
seed = rng.randrange(1 << 62)

# wrong on purpose: a word is never an answer
r = quiz([str(section), "--seed", str(seed)], "nope\n" * 5)
check(r.returncode == 0, f"a finished quiz exits 0 (section {section}, seed {seed}): {r.stderr!r}")
check("Score: 0 of 5." in r.stdout, f"five wrong answers score 0: {r.stdout[-400:]!r}")
check(r.stdout.count("is not a number") + r.stdout.count("is none of the choices") == 5,
      "each word is answered as not a number or not a choice")
check("To revisit" in r.stdout, "the lessons to revisit are named")
wide = [l for l in r.stdout.split("\n") if len(l) > 80]
check(not wide and f"(seed {seed}: --seed asks the same ones again)" in r.stdout,
      f"every line within 80 columns, the seed whole on its own line: {wide[:3]!r}")
check(os.path.exists(state), "the state file is made, with its folder")
with open(state) as f:
    lines = f.read().splitlines()
check(len(lines) == 1 and lines[0].split("\t")[1:4] == ["0", "5", str(seed)], f"one line kept: {lines!r}")
first = re.findall(r"^\d of 5 \(from [^)]*\)\n(.*?)\n>", r.stdout, re.M | re.S)
check(len(first) == 5, f"five questions shown ({len(first)})")

# right: the feedback of the wrong run says what each answer is ("it is X." / "the answer is X.")
rights = re.findall(r"(?:it\s+is|the\s+answer\s+is)\s+(\S+?)\.(?:\s|$)", r.stdout)   # (a line may wrap inside it)
check(len(rights) == 5, f"five right answers found in the feedback: {rights!r}")
r2 = quiz([str(section), "--seed", str(seed)], "".join(a + "\n" for a in rights))
again = re.findall(r"^\d of 5 \(from [^)]*\)\n(.*?)\n>", r2.stdout, re.M | re.S)
check(again == first, "the same seed asks the same questions")
check("Score: 5 of 5." in r2.stdout, f"the answers as printed score 5: {r2.stdout[-600:]!r}")
# the same answers behind the escape sequences of arrow keys (pressed at the prompt out of habit):
# the keys are no part of the answer (a quiz taken again on the same seed)
r3 = quiz([str(section), "--seed", str(seed)], "".join("\x1b[C\x1bOD" + a + "\n" for a in rights))
check("Score: 5 of 5." in r3.stdout and "\x1b" not in r3.stdout, f"arrow keys before each answer are left out of it: {r3.stdout[-600:]!r}")
# a number typed with a unit is asked again for the number alone, not judged
def numeric(a):
    try:
        float(a.replace(",", ""))
        return True
    except ValueError:
        return False
r4 = quiz([str(section), "--seed", str(seed)], "".join((a + " units\n" if numeric(a) else "") + a + "\n" for a in rights))
n_num = sum(numeric(a) for a in rights)
check("Score: 5 of 5." in r4.stdout and r4.stdout.count("type the number alone") == n_num,
      f"each number with a unit asked again ({n_num}), then judged right: {r4.stdout[-600:]!r}")
r = quiz([])
check(f"best 5/5, last 5/5" in r.stdout, "the list shows the best and the last score")

# an early end keeps nothing
r = quiz([str(section), "--seed", str(seed + 1)], "1\n")
check(r.returncode == 1 and "no score kept" in r.stdout, f"an unfinished quiz exits 1 and keeps no score: {r.returncode}")
with open(state) as f:
    check(len(f.read().splitlines()) == 4, "the unfinished quiz added no line")

# bad input
for args, what in [(["0"], "no section"), ([str(len(sections) + 1)], "no section"), (["--seed", "x", "1"], "--seed"),
                   (["--seed", "-1", "1"], "--seed"), (["--frobnicate"], "unknown option"), (["1", "2"], "one section"),
                   (["--seed"], "needs a value"), (["zzz"], "no section")]:
    r = quiz(args)
    check(r.returncode == 2 and what in r.stderr and r.stdout == "", f"quiz {args}: exit 2 naming {what!r}: {r.returncode} {r.stderr!r}")
r = quiz(["\x1b[31m"])
check(r.returncode == 2 and "\x1b" not in r.stderr, "a control byte in the section is shown escaped")
r = quiz(["--help"])
check(r.returncode == 0 and "usage: flashstep quiz" in r.stdout, "--help")

cli_test.finish("check_quiz_cli: {passed} passed, {failed} failed (seed {seed})")
