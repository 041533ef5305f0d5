#!/usr/bin/env python3
"""check_play_terminal.py FLASHSTEP: the terminal player at 80 x 24 in tmux, and its --all output.

What a student at 80 x 24 must see (src/cli/cmd_play_terminal.c):
  - the matrices page before step 0 and on `m` (Q, K, V with row indices and the lesson's numbers);
  - the mask as a grid of ■ and · with the tiles' classes, on `t` and before step 0;
  - one step per claim for a lesson that only checks claims (claim, expression, verdict in words);
  - checks pages that fit the screen with the title on every one ("checks, page i of N");
  - `--step N` (interactive and with --all) and the chapter keys c/C (narrated steps) and ]/[ (tiles);
  - no line wider than 80 columns, and `lessons --course` within 80 columns;
  - the glossary on `y` (every symbol, the lesson defining it), paged;
  - the questions: asked before their step, a wrong answer told the right one and why, the score
    in the footer, `a` turning them off, --all printing each with its answer (--no-questions: none).
Steps carry the trace's 0-based index ("step 13 of 0–21"). One lesson and one step are drawn at
random each run (the seed is printed on failure). Skipped without tmux. Exit 1 on failure.
"""
import os, random, re, shutil, subprocess, sys, time

exe = os.path.abspath(sys.argv[1])
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
seed = int(os.environ.get("SEED", random.randrange(1 << 30)))
rng = random.Random(seed)
passed = failed = 0


def check(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}" + (f"\n{detail}" if detail else ""))


def run(*args, env=None):
    e = {k: v for k, v in os.environ.items() if k not in ("LINES", "COLUMNS")}
    e.update(env or {})
    return subprocess.run([exe, *args], capture_output=True, text=True, env=e, stdin=subprocess.DEVNULL, timeout=120)


# ---- --all output (no terminal) --------------------------------------------------------------
lessons_dir = os.path.join(root, "lessons")
stems = sorted(f[:-7] for f in os.listdir(lessons_dir) if f.endswith(".lesson"))
traced = []
for s in ["000_02", "000_04", "000_07", "003_06", "004_09"]:
    p = run("play", s, "--terminal", "--all", env={"COLUMNS": "80", "LINES": "24"})
    wide = [l for l in p.stdout.split("\n") if len(l) > 80]
    check(p.returncode == 0 and not wide, f"play {s} --all at 80 columns", "\n".join(wide[:3]) + p.stderr)

# the ending: every lesson's last page sums it up; a variation runs, and points back
p = run("play", "000_04", "--terminal", "--all", "--no-questions", env={"COLUMNS": "80"})
tail = p.stdout.rstrip("\n").split("\n")[-9:]
check(any(l.startswith("keep: ") for l in tail) and any(l.startswith("next: ") for l in tail)
      and tail[-1].strip() == "flashstep play 000_04_tiled_causal_n6 --bq 3 --bk 3",
      "play 000_04 --all ends with the summary and the try command", "\n".join(tail))
p = run("play", "000_04", "--terminal", "--all", "--no-questions", "--bq", "3", "--bk", "3", env={"COLUMNS": "80"})
check(p.returncode == 0 and "(varied: --bq 3 --bk 3)" in p.stdout.split("\n")[0] and "step 18 of 0–18" in p.stdout
      and p.stdout.rstrip().endswith("flashstep play 000_04_tiled_causal_n6 --terminal"),
      "play 000_04 --bq 3 --bk 3: the variation, 19 steps, then the way back", p.stdout[-400:] + p.stderr)
p = run("play", "003_04", "--terminal", "--all", "--no-questions", env={"COLUMNS": "80"})
check(p.returncode == 0 and 'this ends the section "Softmax, one number at a time"' in p.stdout
      and "    flashstep quiz 1\n" in p.stdout,
      "a section's last lesson offers the section's quiz", p.stdout[-600:] + p.stderr)
p = run("play", "000_04", "--terminal", "--all", "--no-questions", env={"COLUMNS": "80"})
check("flashstep quiz" not in p.stdout, "a lesson inside a section offers no quiz", p.stdout[-400:])
p = run("play", "000_01", "--terminal", "--all", "--bq", "2")
check(p.returncode == 2 and "command line:1:6: --bq changes nothing in a lesson of algo: softmax" in p.stderr,
      "an option the lesson's algorithm ignores is refused at its column", p.stderr)

p = run("play", "000_02", "--terminal", "--all", env={"COLUMNS": "80"})
check("Q (1 × 2)" in p.stdout and "K (3 × 2)" in p.stdout and re.search(r"0 │\s+0\.5000\s+0\.3000", p.stdout),
      "000_02 shows Q and K (K[0] = [0.5, 0.3]) before step 0", p.stdout[:1500])
check("step 0 of 0–6 · tile" in p.stdout and "step 6 of 0–6" in p.stdout, "000_02's steps are numbered 0–6")

p = run("play", "000_07", "--terminal", "--all", env={"COLUMNS": "80"})
grid = [l for l in p.stdout.split("\n") if re.match(r"^\d+  [■·]", l)]
check(len(grid) == 9 and "100000000" not in p.stdout, "000_07's tree mask drawn as 9 rows of ■ and ·",
      "\n".join(grid))
check(re.search(r"^ ?0  ■ · · │ · · · │ · · ·\s+◐ ○ ○$", p.stdout, re.M) is not None,
      "000_07's first row: one visible key, tile classes ◐ ○ ○", p.stdout[:2500])

p = run("play", "004_09", "--terminal", "--all", env={"COLUMNS": "80"})
n9 = len(re.findall(r"^── step \d+ of 0–\d+ · claim", p.stdout, re.M))
want = len(re.findall(r"^expect ", open(os.path.join(lessons_dir, "004_09_fp8_e4m3.lesson")).read(), re.M))
check(n9 == want and n9 > 0, f"004_09 (claims only) has one step per claim: {n9} of {want}")
check("the lesson computes: e4m3(1000)" in p.stdout and "exact result: 448" in p.stdout,
      "a claim step shows the expression and its exact value", p.stdout[:1200])
# a claim step's claim is its page's sentence: a capital first, unless it opens with a symbol
firsts = re.findall(r"^── step \d+ of 0–\d+ · claim ─+\n(?:.*\n\n)?(\S+)", p.stdout, re.M)
check(firsts and all(w[0].isupper() or w[0].isdigit() or re.match(r"[a-z]\w*[\[_(0-9]", w) for w in firsts),
      f"a claim step opens with a capital: {firsts[:6]}", p.stdout[:1500])
p = run("play", "000_09", "--terminal", "--all", "--no-questions", env={"COLUMNS": "80"})
check("the document claims: >= 3.40e38" in p.stdout and "the document prints: >=" not in p.stdout
      and "the check expects: +inf" in p.stdout,
      "a claim step calls a bound what the document claims, and an own check what the check expects",
      p.stdout[:1500])

p = run("play", "003_06", "--terminal", "--all", env={"COLUMNS": "80"})
check("KiB" in p.stdout and "8.192 KB" not in p.stdout and "1 KiB = 1024 B" in p.stdout,
      "003_06: bytes in binary units, the convention stated")
check("document: wrong (an erratum)" in p.stdout, "003_06: an erratum said in words")

# several heads: each head's matrices come before its first step. Causal query 0 sees key 0 alone,
# so head 1's output row 0 is row 0 of the V its page shows (head 0's V would not give it).
p = run("play", "004_07", "--terminal", "--all", "--no-questions", env={"COLUMNS": "80"})
page1, step14 = p.stdout.find("── head 1's matrices"), p.stdout.find("── step 14 of 0–27")
v0 = re.search(r"V \(4 × 8\): values\n0 │\s*(-?\d+\.\d+)", p.stdout[page1:]) if page1 >= 0 else None
o0 = re.search(r"output row 0: .*O = \(head 1\) \[(-?\d+\.\d+)", p.stdout)
check(0 <= page1 < step14 and v0 is not None and o0 is not None and v0.group(1) == o0.group(1),
      "004_07 --all: head 1's matrices before its first step, its V giving its output",
      p.stdout[page1:page1 + 1500] if page1 >= 0 else p.stdout[:1500])

for s in ["001_15", "001_16"]:
    p = run("play", s, "--terminal", "--all")
    check("-nan" not in p.stdout and "exact nan" not in p.stdout and "not a number" in p.stdout,
          f"{s}: NaN said in words, never 'exact -nan'")
    v = run("verify", s)
    check(v.returncode == 0 and "-nan" not in v.stdout, f"verify {s}: no '-nan'", v.stdout)

# --step with --all: a lesson and a step drawn at random
pick = None
for _ in range(20):
    s = rng.choice(stems)
    p = run("play", s, "--terminal", "--all")
    heads = re.findall(r"^── step (\d+) of 0–(\d+)", p.stdout, re.M)
    if heads and int(heads[0][1]) < 5000:
        pick = (s, int(heads[0][1]))
        break
if pick:
    s, last = pick
    n = rng.randrange(last + 1)
    p = run("play", s, "--terminal", "--all", "--step", str(n))
    heads = re.findall(r"^── step (\d+) of 0–(\d+)", p.stdout, re.M)
    check(heads and int(heads[0][0]) == n and int(heads[-1][0]) == last and len(heads) == last + 1 - n,
          f"play {s} --all --step {n} prints steps {n} to {last} (seed {seed})", str(heads[:3]))
    p = run("play", s, "--terminal", "--all", "--step", str(last + 1))
    check(p.returncode == 2 and f"0–{last}" in p.stderr, f"--step {last + 1} past {s}'s last step is refused",
          p.stderr)

for args in (["lessons", "--course"], ["lessons"]):
    p = run(*args)
    wide = [l for l in p.stdout.split("\n") if len(l) > 80]
    check(p.returncode == 0 and not wide, f"{' '.join(args)} fits 80 columns", "\n".join(wide[:3]))

# ---- the interactive player in tmux at 80 x 24 --------------------------------------------------
if not shutil.which("tmux"):
    print(f"play terminal: {passed} passed, {failed} failed (interactive part skipped: no tmux)")
    sys.exit(1 if failed else 0)
sock = f"flashstep-play-{os.getpid()}"


def tmux(*a):
    return subprocess.run(["tmux", "-L", sock, *a], capture_output=True, text=True).stdout


def screen():
    return tmux("capture-pane", "-t", "t", "-p")


def wait_for(pattern, seconds=10):
    end = time.time() + seconds
    while time.time() < end:
        s = screen()
        if re.search(pattern, s, re.M):
            return s
        time.sleep(0.05)
    return screen()


def start(*args, questions=False):
    """The player in a fresh 80 x 24 tmux session; questions off unless asked for (the walks
    below check pages and keys; the questions have their own part)."""
    if not questions:
        args = (*args, "--no-questions")
    tmux("kill-server")
    time.sleep(0.2)
    tmux("new-session", "-d", "-s", "t", "-x", "80", "-y", "24", "-c", root)
    tmux("set-option", "-t", "t", "status", "off")
    for _ in range(100):   # the shell's prompt first: keys typed before it may be lost
        if screen().strip():
            break
        time.sleep(0.05)
    cmd = " ".join([f"'{exe}'", "play", *args, "--terminal"]) + "; echo status $?"
    tmux("send-keys", "-t", "t", cmd, "Enter")


def key(k, pattern):
    tmux("send-keys", "-t", "t", k)
    return wait_for(pattern)


def position(s):
    """The footer's position: its last line's right end, after the run of spaces that sets it
    apart from the keys."""
    lines = [l for l in s.split("\n") if l.strip()]
    return re.split(r" {2,}", lines[-1].strip())[-1] if lines else ""


def to_question(at):
    """000_04 from the step before `at`, questions on, Enter: the question's page, whole."""
    start("000_04", "--step", str(at - 1), questions=True)
    wait_for(rf"step {at - 1} of 0–21")
    return key("Enter", r"q alone: quit\)")


def fits(s, title, what):
    lines = s.rstrip("\n").split("\n")
    check(all(len(l) <= 80 for l in lines) and lines[0].startswith(title[:40]),
          f"{what}: the title on top, nothing past 80 columns", s)


try:
    # --all piped to a file (a pager) from an 80-column terminal, $COLUMNS not exported: wrapped
    # at the terminal's 80 columns (stderr's), not at 96
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"fs-all-{os.getpid()}.txt")
    tmux("kill-server")
    time.sleep(0.2)
    tmux("new-session", "-d", "-s", "t", "-x", "80", "-y", "24", "-c", root)
    for _ in range(100):   # the shell's prompt first
        if screen().strip():
            break
        time.sleep(0.05)
    tmux("send-keys", "-t", "t", f"env -u COLUMNS '{exe}' play ring_04 --terminal --all > '{out}'; echo piped $?", "Enter")
    s = wait_for(r"^piped \d+")
    check(os.path.exists(out), "--all into a file from tmux ran", s)
    with open(out, encoding="utf-8") as f:
        widest = max(len(l) for l in f.read().split("\n"))
    os.remove(out)
    check(widest <= 80, f"--all into a file from an 80-column terminal wraps at 80 (widest line {widest})")
    start("000_02")
    s = wait_for(r"before step 0 \(1 of")
    title = s.split("\n")[0]
    fits(s, title, "000_02's first page")
    s = key("Enter", r"the lesson's matrices")
    check("K (3 × 2)" in s and re.search(r"1 │\s+0\.8000\s+-0\.2000", s) is not None,
          "000_02 at 80 x 24: K shown with its row indices", s)
    s = key("Enter", r"step 0 of 0–6")
    check(position(s) == "step 0 of 0–6", "the footer says the step as the heading does", s)
    s = key("m", r"any key: back to step 0")
    check("V (3 × 2)" in s, "m shows the matrices over a step", s)
    s = key("x", r" {2,}step 0 of 0–6")
    check("step 0 of 0–6 · tile" in s, "any key returns from the matrices to the step", s)
    s = key("y", r"glossary, 1 of \d+")
    fits(s, title, "the glossary on y")
    check(re.search(r"^ℓ \(l\): the running sum", s, re.M) is not None, "y shows the glossary: ℓ and its meaning", s)
    pages = int(re.search(r"glossary, 1 of (\d+)", s).group(1))
    s = key("y", rf"glossary, {min(2, pages)} of {pages}")
    check(f"glossary, {min(2, pages)} of {pages}" in s, "y again: the glossary's next page", s)
    s = key("x", r" {2,}step 0 of 0–6")
    check("step 0 of 0–6 · tile" in s, "any other key returns from the glossary", s)
    tmux("send-keys", "-t", "t", "q")

    # a final dK or dV row's event names its KV head: m over it shows that KV head's K and V, as
    # read by the query head whose step came before (it showed query head 1's, reading KV head 0)
    start("tests/lessons/ok_gqa_backward.lesson", "--step", "125")
    s = wait_for(r"step 125 of 0–127")
    check("dV row 1 is final" in s and "(KV head 1)" in s, "a GQA backward's step 125: KV head 1's final dV row", s)
    s = key("m", r"any key: back to step 125")
    check("(reading KV head 1 of 2)" in s and "head 1 of 4" not in s,
          "m over a final dV row shows the matrices of its own KV head", s)
    tmux("send-keys", "-t", "t", "q")

    start("000_07", "--step", "5")
    s = wait_for(r"step 5 of 0–")
    check("── step 5 of 0–" in s, "--step 5 opens at step 5", s)
    s = key("t", r"tree mask")
    fits(s, title="The speculative-decoding tree", what="000_07's mask on t")
    check(len(re.findall(r"^\s*\d+  [■·]", s, re.M)) == 9 and "● full, ◐ partial, ○ skipped" in s,
          "t draws the 9 x 9 tree mask with the classes' legend", s)
    tmux("send-keys", "-t", "t", "q")

    # chapters: ] to the next tile, c to the next narrated step, from --all's headings and the file
    allout = run("play", "000_04", "--terminal", "--all").stdout
    kinds = {int(a): b for a, b in re.findall(r"^── step (\d+) of 0–\d+ · (\w+)", allout, re.M)}
    tiles = sorted(k for k, v in kinds.items() if v in ("tile", "skip"))
    narrated = sorted(int(x) for x in re.findall(r"^step (\d+):", open(
        os.path.join(lessons_dir, "000_04_tiled_causal_n6.lesson")).read(), re.M))
    start("000_04", "--step", "1")
    wait_for(r"step 1 of 0–21")
    nxt = min(k for k in tiles if k > 1)
    s = key("]", rf" {{2,}}step {nxt} of")
    check(position(s) == f"step {nxt} of 0–21", f"] goes from step 1 to the next tile, step {nxt}", s)
    prv = max(k for k in tiles if k < nxt)
    s = key("[", rf" {{2,}}step {prv} of")
    check(position(s) == f"step {prv} of 0–21", f"[ goes back to the tile at step {prv}", s)
    after = [k for k in narrated if k > prv]
    if after:
        s = key("c", rf" {{2,}}step {after[0]} of")
        check(position(s) == f"step {after[0]} of 0–21", f"c goes to the next narrated step, {after[0]}", s)
        before = [k for k in narrated if k < after[0]]
        if before:
            s = key("C", rf" {{2,}}step {before[-1]} of")
            check(position(s) == f"step {before[-1]} of 0–21", f"C goes back to narrated step {before[-1]}", s)
    # the end: the summary in three lines and the try command to copy, within 80 x 24
    title = run("play", "000_04", "--terminal", "--all").stdout.split("\n")[0]
    s = key("G", r" {2,}step 21 of 0–21")
    check(position(s) == "step 21 of 0–21", "G (End) first goes to the last step, before the checks", s)
    s = key("G", r" {2,}the end")
    fits(s, title, "000_04's ending")
    check("── summary" in s and "keep: KV tile b is skipped" in s and "next: Which tiles a causal" in s
          and "try this: square tiles" in s and "flashstep play 000_04_tiled_causal_n6 --bq 3 --bk 3" in s
          and len(s.rstrip("\n").split("\n")) <= 24, "G: the ending, its summary and try command", s)
    # the checks pages: each fits the screen with the title on top
    s = key("p", r"checks, page (\d+) of \1")
    m = re.search(r"checks, page (\d+) of (\d+)", s)
    check(m is not None, "G: the last checks page", s)
    if m:
        pages = int(m.group(2))
        for i in range(pages, 0, -1):
            s = wait_for(rf"checks, page {i} of {pages}")
            fits(s, title, f"000_04's checks page {i} of {pages}")
            check(len(s.rstrip("\n").split("\n")) <= 24 and f"checks, page {i} of {pages}" in s,
                  f"checks page {i} of {pages} fits 24 rows", s)
            if i > 1:
                tmux("send-keys", "-t", "t", "p")
    tmux("send-keys", "-t", "t", "q")

    # questions: before the first rescale of 000_04 the player asks for α; a wrong answer is told
    # the right one and why, a right one is counted, `a` turns them off
    allout = run("play", "000_04", "--terminal", "--all").stdout
    found = None
    for block in re.split(r"\n(?=── )", allout):   # one block a heading
        h = re.match(r"── a question before step (\d+) of 0–21", block)
        a = re.search(r"Answer: (\S+)\.", block)
        if h and a and "What is α" in block:
            found = (int(h.group(1)), a.group(1))
            break
    check(found is not None, "000_04 --all prints a question on α with its answer", allout[:3000])
    if found:
        at, ans = found
        s = to_question(at)
        fits(s, "Tiled causal attention", "the question's page")
        check(f"a question before step {at} of 0–21" in s and re.search(r"What\s+is\s+α", s) and "Type your answer" in s,
              f"moving to step {at} asks for α first", s)
        tmux("send-keys", "-t", "t", "0.5", "Enter")
        s = wait_for(r"any key: on to the step")
        check(f"Not quite: you typed 0.5; it is {ans}" in s and "exp(" in s and "(0 of 1 right so far)" in s,
              "a wrong answer: echoed, the right one and why", s)
        s = key("x", rf"step {at} of 0–21 · row")
        check(re.search(r"a questions on, 0/1 right", s) is not None, "the footer keeps the score", s)
        tmux("send-keys", "-t", "t", "q")
        to_question(at)
        tmux("send-keys", "-t", "t", ans, "Enter")
        s = wait_for(r"any key: on to the step")
        check(f"Right: you typed {ans}" in s and "(1 of 1 right so far)" in s, "the right answer is counted", s)
        tmux("send-keys", "-t", "t", "q")
        # an arrow pressed at the question (its escape sequence typed into the line) is no answer:
        # alone it is Enter alone (the answer shown, nothing counted); before a number, the number
        to_question(at)
        tmux("send-keys", "-t", "t", "Right", "Enter")
        s = wait_for(r"any key: on to the step")
        check("not a number" not in s and "[C" not in s.split("Type your answer")[-1].split("\n", 2)[-1] and "(0 of 0 right so far)" in s and ans in s,
              "an arrow key at a question is not judged as an answer (the answer shown, nothing counted)", s)
        tmux("send-keys", "-t", "t", "q")
        to_question(at)
        tmux("send-keys", "-t", "t", "Right", ans, "Enter")
        s = wait_for(r"any key: on to the step")
        check(f"Right: you typed {ans}" in s and "(1 of 1 right so far)" in s, "an arrow key before the answer is left out of it", s)
        tmux("send-keys", "-t", "t", "q")
        # while it is typed, the line shows what the answer holds: no ^[[C for an arrow, a
        # character taken back by Backspace gone from the screen as from the answer
        to_question(at)
        tmux("send-keys", "-t", "t", "Left", "9", "Right", "BSpace", ans, "Up")
        s = wait_for(r"^> " + re.escape(ans) + r"\s*$")
        check(re.search(r"^> " + re.escape(ans) + r"\s*$", s, re.M) is not None and "^[" not in s,
              "the answer line shows the answer alone: arrows not echoed, Backspace erases", s)
        tmux("send-keys", "-t", "t", "Enter")
        s = wait_for(r"any key: on to the step")
        check(f"Right: you typed {ans}" in s and "(1 of 1 right so far)" in s, "the edited line is judged as shown", s)
        tmux("send-keys", "-t", "t", "q")
        # what is no number (a word, a unit) shows the answer and counts nothing; a decimal comma
        # is read as the point; q alone quits
        s = to_question(at)
        check("at least two significant digits" in s and "q alone: quit" in s, "the prompt says how many digits, and that q quits", s)
        tmux("send-keys", "-t", "t", "about one", "Enter")
        s = wait_for(r"any key: on to the step")
        check("is not a number" in s and "(0 of 0 right so far)" in s, "a word at a question shows the answer and counts nothing", s)
        tmux("send-keys", "-t", "t", "q")
        # a number with a unit is asked again for the number alone, then judged
        to_question(at)
        tmux("send-keys", "-t", "t", ans + " units", "Enter")
        s = wait_for(r"type the number alone")
        check("any key: on to the step" not in s, "a number with a unit is asked again, not judged", s)
        tmux("send-keys", "-t", "t", ans, "Enter")
        s = wait_for(r"any key: on to the step")
        check(f"Right: you typed {ans}" in s and "(1 of 1 right so far)" in s, "the number typed again is judged", s)
        tmux("send-keys", "-t", "t", "q")
        if "." in ans:
            to_question(at)
            tmux("send-keys", "-t", "t", ans.replace(".", ","), "Enter")
            s = wait_for(r"any key: on to the step")
            check("Right: you typed" in s and "(1 of 1 right so far)" in s, "a decimal comma is read as the point", s)
            tmux("send-keys", "-t", "t", "q")
        to_question(at)
        tmux("send-keys", "-t", "t", "q", "Enter")
        s = wait_for(r"^status \d+")
        check("status 0" in s and "any key: on to the step" not in s, "q alone at a question quits the player", s)
        start("000_04", "--step", str(at - 1), questions=True)
        wait_for(rf"step {at - 1} of 0–21")
        s = key("a", r"questions off")
        s = key("Enter", rf" {{2,}}step {at} of 0–21")
        check("a question before" not in s and "a questions off" in s,
              "with questions off, the step comes without a question", s)
        tmux("send-keys", "-t", "t", "q")
    p = run("play", "000_04", "--terminal", "--all", "--no-questions")
    check("a question before" not in p.stdout and p.returncode == 0, "--all --no-questions prints no question")
    # the mask page does not answer step 0's question on the skipped tiles before it is asked
    start("000_07", questions=True)
    wait_for(r"before step 0")
    s = key("t", r"tree mask")
    check("(classes after the questions)" in s and "skipped" not in s and "○" not in s and "■ " in s,
          "questions on, nothing answered: t shows the tree mask's cells without the tiles' classes", s)
    tmux("send-keys", "-t", "t", "q")

    start("003_06", "--step", "10")
    s = wait_for(r" {2,}step 10 of 0–21")   # the footer's own count: the screen drawn to its last line
    fits(s, "What naive attention", "003_06 (claims only) at step 10")
    check("→/Enter next · ←/Bksp back · g/G first/last · q quit" in s and "]/[ tile" not in s and "t mask" not in s,
          "a claims-only lesson's footer offers no keys of tiles, masks or matrices (it runs nothing)", s)
    check("· claim" in s and "document: wrong (an erratum)" in s and "the lesson computes:" in s,
          "003_06's step 10 is a claim with its verdict in words", s)
    tmux("send-keys", "-t", "t", "q")
finally:
    tmux("kill-server")

print(f"play terminal: {passed} passed, {failed} failed" + (f" (seed {seed})" if failed else ""))
sys.exit(1 if failed else 0)
