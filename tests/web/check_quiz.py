#!/usr/bin/env python3
"""check_quiz.py URL FLASHSTEP [AXE_JS] [--shots DIR]: the questions and the sections' quizzes in
the page, in headless Chromium (docs/questions.md, docs/web.md).

  - the questions are on by default: a lesson opened at step 0 asks step 0's question at once
    (the scene covered, and the Describe panel's words keep the step hidden too until it is
    answered); the answer box under it answers it wrongly (judged "not quite", with
    the right answer and why, the score 0 of 1), and after a reload the canvas's own keys answer
    it rightly with the number the feedback gave (1 of 1);
  - the Questions button turns them off (and remembers it: off after a reload), ?questions=on in
    the address turns them on for a visit, ?questions=off off;
  - a section's quiz from the course list ("Start here"): five questions, the same as
    `flashstep quiz N --seed S` (FLASHSTEP, the native program) asks for the page's seed, answered
    four right and one wrong from the native program's answers, each judged with the right answer
    and why; the score 4 of 5 with the wrong answer's lesson to revisit, kept: after a reload
    the course list still shows it;
  - at the last step of a section's last lesson the page offers the section's quiz; Enter on the
    canvas there opens it too;
  - with AXE_JS (scripts/web-axe.sh): no WCAG 2.1 A/AA violation with the answer box, the quiz
    panel and its score shown.
Any console error or uncaught exception fails the run. --shots DIR keeps screenshots to look at.
"""
import base64
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser, CDPError  # noqa: E402
from check_a11y import axe as a11y_axe  # noqa: E402
from check_page import Page, TOOLBAR  # noqa: E402
import report  # noqa: E402
from report import check  # noqa: E402



def shot(b, shots, name):
    if not shots:
        return
    png = b.send("Page.captureScreenshot", {"format": "png"})["data"]
    with open(os.path.join(shots, name + ".png"), "wb") as f:
        f.write(base64.b64decode(png))


def axe(b, axe_js, what):
    """check_a11y.py's axe-core check, where an axe-core script was given."""
    if axe_js:
        a11y_axe(b, axe_js, what)


def visible(b, elid):
    return b.eval(f"(() => {{ const e = document.getElementById('{elid}'); return !!e && !e.hidden && !e.closest('[hidden]') "
                  f"&& getComputedStyle(e).display !== 'none' && e.getClientRects().length > 0; }})()")


def the_answer(feedback):
    """The right answer a judge's feedback names ("... it is 0.4596. ...")."""
    m = re.search(r"it is\s+(\S+?)\.?(?:\s|$)", " ".join(feedback.split()))
    return m.group(1) if m else None


def key_names(text):
    """The canvas's key names that type text (digits, the point, the minus)."""
    names = {".": "Period", "-": "Minus"}
    return [names.get(c, c) for c in text]


def native_answers(flashstep, section, seed, tmp):
    """The right answers of `flashstep quiz N --seed S`, from its feedback to empty answers."""
    env = dict(os.environ, FLASHSTEP_STATE=os.path.join(tmp, "quiz.tsv"))
    p = subprocess.run([flashstep, "quiz", str(section + 1), "--seed", str(seed)], input="\n" * 5, capture_output=True,
                       text=True, env=env)
    text = " ".join(p.stdout.split())
    got = re.findall(r"No answer typed: it is (\S+?)\.? ", text)
    prompts = re.findall(r"\d of 5 \(from (\S+)\)", text)
    return got, prompts, p.stdout


def main():
    args = sys.argv[1:]
    shots = report.shots_dir(args)
    if len(args) not in (2, 3):
        sys.exit(__doc__)
    url, flashstep = args[0].rstrip("/") + "/", os.path.abspath(args[1])
    axe_js = open(args[2]).read() if len(args) == 3 else None
    tmp = tempfile.mkdtemp(prefix="flashstep-quiz-")
    try:
        with Browser("chromium", 1280, 720 + TOOLBAR, timeout=60, questions=True) as b:
            page = Page(b, url, tmp)
            page.size(1280, 720 + TOOLBAR)
            run_checks(page, flashstep, tmp, axe_js, shots)
            page.drain()
            check(not page.errors, "no console error or uncaught exception", "; ".join(page.errors[:5]))
    except CDPError as e:
        check(False, "the browser session", str(e))
    sys.exit(report.summary("check_quiz: "))


def run_checks(page, flashstep, tmp, axe_js, shots):
    b = page.b
    print("a lesson's questions, on by default")
    s = page.load("#000_04/0")
    check(s["predict"] == 2 and s["step"] == 0 and s["covers"] and len(s["question"]) == 4,
          "000_04 opens asking step 0's question, the scene covered", json.dumps(s)[:300])
    check(b.eval("document.getElementById('b-questions').getAttribute('aria-pressed')") == "true",
          "the Questions button says they are on (aria-pressed)")
    check(visible(b, "ask") and s["question"][0] in page.text_of("ask-q"), "the answer box shows, with the question for a screen reader")
    shot(b, shots, "question-step0")
    axe(b, axe_js, "the answer box")
    # The Describe panel keeps step 0 hidden as the scene does (its words gave the answer away).
    say = json.loads(b.eval("JSON.stringify(Module.flashstep.describe())"))["say"]
    page.click_id("b-desc")
    b.wait_for("!document.getElementById('p-desc').hidden", what="the Describe panel")
    txt = page.text_of("desc")
    check(say and say not in txt and "stays hidden" in txt and "Its formulas" not in txt and "score grid" not in txt,
          "Describe keeps step 0 hidden while its question covers the scene", txt[:300])
    page.click_id("b-desc")
    b.eval("document.getElementById('ask-in').value = '7'")
    page.click_id("ask-check")
    s = page.wait_state(lambda x: x["predict"] == 3, "the answer judged")
    b.wait_for("document.getElementById('ask-msg').textContent !== ''", what="the box's feedback")
    fb = page.text_of("ask-msg")
    right = the_answer(s["question"][3])
    check(s["right"] == 0 and s["asked"] == 1 and "not quite" in s["question"][2] and "you typed 7" in s["question"][3],
          "a wrong answer typed into the box: not quite, the typed answer echoed, 0 of 1", json.dumps(s["question"]))
    check(right is not None and right in fb and "you typed 7" in fb, "the box says the right answer and why", fb)
    for _ in range(6):   # on past step 0's questions: the step is shown, and described
        if not page.state()["covers"]:
            break
        b.eval("Module.flashstep.key('Right')")
        time.sleep(0.2)
    page.click_id("b-desc")
    b.wait_for("!document.getElementById('p-desc').hidden", what="the Describe panel")
    check(not page.state()["covers"] and say in page.text_of("desc"), "once the step is shown, Describe describes step 0",
          page.text_of("desc")[:300])
    page.click_id("b-desc")
    shot(b, shots, "question-wrong")
    # A lesson of claims only asks about its figures as it opens, the claims and the introduction
    # covered (the page's words too), one question after another; then the list shows.
    s = page.load("#000_09/0")
    check(s["predict"] == 2 and s["covers"] and s.get("claims_asked") and s["question"]
          and s["question"][0].startswith("A figure of the lesson (1 of "),
          "a claims-only lesson (000_09) opens asking about its first figure, the claims covered", json.dumps(s)[:300])
    check(visible(b, "ask") and "A figure of the lesson" in page.text_of("ask-q"), "the answer box shows its question")
    page.click_id("b-desc")
    b.wait_for("!document.getElementById('p-desc').hidden", what="the Describe panel")
    txt = page.text_of("desc")
    check("figures stay hidden" in txt and "2.69e43" not in txt, "Describe keeps the figures hidden while they are asked", txt[:300])
    page.click_id("b-desc")
    page.click_id("b-claims")
    b.wait_for("!document.getElementById('p-claims').hidden", what="the Claims panel")
    txt = page.text_of("claims-text")
    check("figures stay hidden" in txt and "2.69e43" not in txt, "the Claims panel keeps the figures hidden while they are asked",
          txt[:300])
    page.click_id("b-claims")
    shot(b, shots, "question-claims")
    n = int(re.search(r"\(1 of (\d+)\)", s["question"][0]).group(1))
    for _ in range(2 * n):
        b.eval("Module.flashstep.key('Right')")   # reveal, then go on
        time.sleep(0.1)
    s = page.state()
    check(not s["covers"] and s["question"] == [] and s["predict"] == 1,
          f"after its {n} questions the claims show and nothing more is asked", json.dumps(s)[:300])
    page.click_id("b-claims")
    b.wait_for("document.getElementById('claims-text').textContent.includes('2.69e43')", what="the claims listed")
    page.click_id("b-claims")
    # The same question after a reload, answered rightly with the canvas's own keys.
    s = page.load("#000_04/0")
    b.eval("document.getElementById('canvas').focus()")
    for k in key_names(right or "?"):
        b.eval(f"Module.flashstep.key('{k}')")
    b.eval("Module.flashstep.key('Enter')")
    s = page.wait_state(lambda x: x["predict"] == 3, "the answer judged")
    check(s["right"] == 1 and s["asked"] == 1 and "right!" in s["question"][2],
          f"the right answer ({right}) typed on the canvas: right, 1 of 1", json.dumps(s["question"])[:300])
    b.wait_for("document.getElementById('ask-msg').textContent.includes('you typed')", what="the box's feedback")
    check("right" in page.text_of("ask-msg").lower(), "the box shows the feedback of an answer typed on the canvas too",
          page.text_of("ask-msg"))
    b.eval("Module.flashstep.key('Right')")
    s = page.wait_state(lambda x: x["predict"] != 3 or x["question"] == [], "on")
    check(s["step"] == 0, "Right after the answer: step 0's next question or step 0 itself", json.dumps(s)[:200])

    print("the Questions button and ?questions=")
    page.click_id("b-questions")
    s = page.wait_state(lambda x: x["predict"] == 0, "questions off")
    b.wait_for("document.getElementById('b-questions').getAttribute('aria-pressed') === 'false'", what="the button's state")
    check(b.eval("document.getElementById('b-questions').getAttribute('aria-pressed')") == "false" and not visible(b, "ask"),
          "the button turns them off (aria-pressed false, no answer box)")
    s = page.load("#000_04/0")
    check(s["predict"] == 0 and not s["question"], "off is remembered after a reload", json.dumps(s)[:200])
    page.b.navigate("about:blank")
    page.b.wait_for("location.href === 'about:blank'", what="about:blank")
    page.b.navigate(page.url + "?questions=on#000_04/0")
    page.b.wait_for("window.Module && Module.flashstep && Module.flashstep.state() && Module.firstFrameMs", timeout=60, what="the page")
    s = page.state()
    check(s["predict"] == 2, "?questions=on asks them for this visit", json.dumps(s)[:200])
    page.click_id("b-questions")
    page.click_id("b-questions")   # on again, remembered
    page.b.navigate("about:blank")
    page.b.wait_for("location.href === 'about:blank'", what="about:blank")
    page.b.navigate(page.url + "?questions=off#000_04/0")
    page.b.wait_for("window.Module && Module.flashstep && Module.flashstep.state() && Module.firstFrameMs", timeout=60, what="the page")
    check(page.state()["predict"] == 0, "?questions=off: none, whatever was remembered")

    print("a section's quiz, from the course list")
    s = page.load("#000_04/5")
    check(s["predict"] == 1 and not visible(b, "ask"), "no question pending at step 5: no answer box")
    page.click_id("b-lessons")
    b.wait_for("document.querySelectorAll('#course-list .quiz-go').length > 0", what="the course list's quizzes")
    n_sec = b.eval("document.querySelectorAll('#course-list .quiz-go').length")
    n_head = b.eval("document.querySelectorAll('#course-list h3').length")
    check(n_sec == n_head and n_sec >= 10, f"every section of the course has its quiz ({n_sec})")
    check(b.eval("document.querySelector('#course-list .quiz-score').textContent") == "not taken yet", "no score yet")
    section = 3   # "The tiled forward pass"
    b.eval(f"document.querySelectorAll('#course-list .quiz-go')[{section}].click()")
    b.wait_for("!document.getElementById('p-quiz').hidden", what="the quiz panel")
    q = b.eval("JSON.stringify(Module.flashstep.quiz())")
    q = json.loads(q)
    answers, lessons, out = native_answers(flashstep, section, q["seed"], tmp)
    check(len(answers) == 5, "the native program answers the same quiz (flashstep quiz N --seed S)", out[-400:])
    check(q["title"] in out, "the same section", q["title"])
    shot(b, shots, "quiz-question")
    axe(b, axe_js, "the quiz panel")
    # The answer field's focus ring (3 pixels, 1 off) stays clear of its label's words.
    gap = b.eval("(() => { const l = document.querySelector('label[for=quiz-answer]').getBoundingClientRect(), "
                 "i = document.getElementById('quiz-answer').getBoundingClientRect(); "
                 "return l.bottom <= i.top ? 99 : i.left - l.right; })()")
    check(gap >= 6, f"the quiz's answer field keeps clear of its label ({gap:.1f} pixels)")
    wrong_at = 2
    unit_asked = False
    for i in range(5):
        prompt = page.text_of("quiz-prompt")
        check(" ".join(prompt.split())[:150] in " ".join(out.split()), f"question {i + 1} is the native quiz's", prompt[:200])
        count = page.text_of("quiz-count")
        check(f"Question {i + 1} of 5" in count and i < len(lessons) and lessons[i] in count,
              f"question {i + 1} names its lesson as the native quiz does", count)
        typed = "9999" if i == wrong_at else (answers[i] if i < len(answers) else "")
        if i != wrong_at and not unit_asked and re.fullmatch(r"-?[0-9.]+", typed):
            # a number with a unit is asked again for the number alone: not judged, not counted
            unit_asked = True
            b.eval(f"(() => {{ const a = document.getElementById('quiz-answer'); a.value = {json.dumps(typed + ' units')}; }})()")
            page.click_id("quiz-check")
            b.wait_for("document.getElementById('quiz-feedback').textContent !== ''", what="the unit's hint")
            check("number alone" in page.text_of("quiz-feedback") and b.eval("document.getElementById('quiz-next').hidden"),
                  "a number typed with a unit is asked again, not judged", page.text_of("quiz-feedback"))
        b.eval(f"(() => {{ const a = document.getElementById('quiz-answer'); a.value = {json.dumps(typed)}; }})()")
        page.click_id("quiz-check")
        b.wait_for("!document.getElementById('quiz-next').hidden", what="the judged answer")
        fb = page.text_of("quiz-feedback")
        if i == wrong_at:
            check(fb.startswith("Not quite") or "none of" in fb or "not a number" in fb, "a wrong answer is judged wrong", fb)
            check(i < len(answers) and answers[i] in fb, "with the right answer", fb)
        else:
            check(fb.startswith("Right"), f"the native program's answer {typed} is right in the page", f"{prompt} / {fb}")
        if i == 0:
            shot(b, shots, "quiz-feedback")
        page.click_id("quiz-next")
    b.wait_for("!document.getElementById('quiz-done').hidden", what="the score")
    score = page.text_of("quiz-score")
    revisit = page.text_of("quiz-revisit")
    check(score.startswith("4 of 5 right") and "best 4/5" in score, "the score: 4 of 5", score)
    check(wrong_at < len(lessons) and lessons[wrong_at] in revisit, "the wrong answer's lesson to revisit", revisit)
    shot(b, shots, "quiz-score")
    axe(b, axe_js, "the quiz's score")
    kept = json.loads(b.eval("JSON.stringify(Module.flashstep.quizScores())"))
    check(kept.get(q["title"], {}).get("best") == 4, "kept in the browser's storage", json.dumps(kept))

    print("the score after a reload")
    page.load("#000_04/5")
    page.click_id("b-lessons")
    b.wait_for("document.querySelectorAll('#course-list .quiz-score').length > 0", what="the course list")
    got = b.eval(f"document.querySelectorAll('#course-list .quiz-score')[{section}].textContent")
    check(got == "best 4/5, last 4/5", "the course list still shows the score", got)
    shot(b, shots, "course-list-score")

    print("the quiz offered at a section's end")
    # 003_04_exp2 is the last lesson of the course's first section (lessons/course.txt)
    s = page.load("#003_04_exp2/4")
    s = page.wait_state(lambda x: x["section_end"] == 0, "the section's end")
    b.wait_for("!document.getElementById('quiz-offer').hidden", what="the quiz offered")
    check(s["section_title"] in page.text_of("quiz-offer"), "the last step offers the section's quiz", page.text_of("quiz-offer"))
    shot(b, shots, "quiz-offer")
    b.eval("Module.flashstep.key('Enter')")
    b.wait_for("!document.getElementById('p-quiz').hidden", what="the quiz from Enter on the canvas")
    q2 = json.loads(b.eval("JSON.stringify(Module.flashstep.quiz())"))
    check(q2["section"] == 0 and q2["at"] == 0, "Enter on the canvas opens that section's quiz", json.dumps(q2))


if __name__ == "__main__":
    main()
