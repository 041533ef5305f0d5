/* page.js: the page around the window's C code (src/web/web.c, compiled to flashstep.wasm).
 *
 * The C side draws every scene into the canvas and keeps every piece of state; this file only
 * connects the browser to it: the address bar (#LESSON/STEP, Back and Forward), the buttons,
 * swipes, the lesson list, the claims panel (flashstep verify's own output), one's own problem
 * (files written into the program's file system, then the command line's option parser), and
 * downloads (the JSONL trace, a PNG of the frame), and the GPU panel, which hands the WGSL
 * kernels (webgpu/fsgpu.js) the job the C side makes and gives their records back to it to be
 * compared with the engine, and the questions: the box that answers the canvas's question, the
 * toggle that turns them on and off (?questions=off in the address: off for this visit), and a
 * section's quiz in its own panel, its score kept beside the course's progress. Nothing here
 * computes attention.
 *
 * For every student (docs/web.md, "For every student"): the description beside the canvas
 * (web_describe: the step's words, formulas, rows and tile, as HTML a screen reader reads, and
 * a polite live region that says each step), focus that follows the keyboard (the canvas lets Tab
 * and Esc go; every panel opens on its heading and gives the focus back where it was on closing),
 * and reduced motion honoured.
 */
'use strict';
(function () {
  const $ = (id) => document.getElementById(id);
  const canvas = $('canvas');
  const MAX_INPUT = 16 << 20;   /* bytes of one input file; see docs/web.md */
  let W = 0;                    /* the web_page pointer web_start returned */
  let state = null;             /* web_state, after the last painted frame */
  let lessons = [];             /* web_lessons */
  let captured = null;          /* {out: [], err: []} while a C call's output is collected */

  /* A page left alone runs its loop four times a second, not at every animation frame (web.c,
   * web_frame); any call that may change what is shown, and any input (below, at start), puts it
   * back on the animation frames at once. Reading the state or the words wakes nothing. */
  const READS = new Set(['web_state', 'web_describe', 'web_lessons', 'web_course_next', 'web_ending']);
  const wake = () => { if (W) Module._web_wake(W); };
  const call = (name, ret, types, args) => {
    if (!READS.has(name)) wake();
    return Module.ccall(name, ret, types, args);
  };

  /* Run fn with what the C side prints collected; returns {rc, out, err}. */
  function capture(fn) {
    captured = { out: [], err: [] };
    let rc;
    try { rc = fn(); } finally {
      var c = captured;
      captured = null;
    }
    return { rc, out: c.out.length ? c.out.join('\n') + '\n' : '', err: c.err.join('\n') };
  }

  /* "#000_04/14" -> {name: "000_04", step: 14}; step -1 when none is given. */
  function parseHash(h) {
    const m = /^#([^/]+)(?:\/(\d+))?$/.exec(h || '');
    if (!m) return { name: '', step: -1 };
    let name;
    try { name = decodeURIComponent(m[1]); } catch (e) { name = m[1]; }   /* a stray % in a hand-made link */
    return { name, step: m[2] !== undefined ? Number(m[2]) : -1 };
  }
  const hashOf = (s) => '#' + encodeURIComponent(s.name) + '/' + s.step;

  function readState() {
    state = JSON.parse(Module.UTF8ToString(call('web_state', 'number', ['number'], [W])));
    return state;
  }

  /* After each painted frame: the address bar, the bar's words, the play button. */
  function frameDone() {
    if (!W) return;
    const s = readState();
    if (!Module.firstFrameMs) Module.firstFrameMs = performance.now();   /* ms after navigation */
    $('b-play').textContent = s.playing ? '❚❚' : '▶';
    $('where').textContent = s.n > 0 ? `${s.name} · step ${s.step} of 0–${s.n - 1}` : s.name;
    document.title = `${s.name} · flashstep`;
    if (s.link) {
      const h = hashOf(s), want = parseHash(location.hash);
      /* the link that opened this, spelled out (a prefix, a step past the end): no new entry */
      const same = want.name && s.name.startsWith(want.name) && (want.step === s.step || want.step < 0 || want.step >= s.n);
      if (h !== location.hash) {
        if (s.playing || same) history.replaceState(null, '', h);
        else history.pushState(null, '', h);
      }
    }
    markLesson();
    atLessonEnd(s);
    atLessonEndTry(s);
    questionsShown(s);
    placeEndButtons(s);
    if (!$('p-claims').hidden) showClaims();
    describe(s);
    fitCanvas(s);
  }

  /* ---- the lesson in words (web_describe): the panel Describe and the live region ---- */
  const reduceMotion = window.matchMedia ? window.matchMedia('(prefers-reduced-motion: reduce)') : { matches: false };
  let describedAt = '', liveTimer = 0;
  const el = (tag, text, cls) => {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  };
  const COVERED = 'This step stays hidden while the question about it is asked: answer it, or reveal it, and it is described here.';
  const COVERED_CLAIMS = "The lesson's figures stay hidden while the questions about them are asked: answer each, or reveal it, and they are listed here.";
  const stepWords = (d) => (d.n > 0 ? `Step ${d.step} of ${d.n - 1}` : 'No steps');

  /* A table with a caption, a header row and one header cell a row: head is the column names
   * (the first names the row headers' column), rows are [row header, cells...]. Wrapped in a box
   * that scrolls sideways on its own when it is wider than the page. */
  function table(caption, head, rows) {
    /* focusable and named, so that a keyboard can scroll a wide one */
    const box = el('div', undefined, 'table-box'), t = el('table');
    box.tabIndex = 0;
    box.setAttribute('role', 'group');
    box.setAttribute('aria-label', caption);
    t.appendChild(el('caption', caption));
    const hr = el('tr');
    for (const h of head) { const th = el('th', h); th.scope = 'col'; hr.appendChild(th); }
    t.appendChild(el('thead')).appendChild(hr);
    const tb = t.appendChild(el('tbody'));
    for (const [h, ...cells] of rows) {
      const tr = el('tr'), th = el('th', h);
      th.scope = 'row';
      tr.appendChild(th);
      for (const c of cells) tr.appendChild(el('td', c));
      tb.appendChild(tr);
    }
    box.appendChild(t);
    return box;
  }

  const TILE_NAMES = { s: 'scores s', p: 'weights P̃ = exp(s − m_blk)', dp: 'dP', ds: 'dS' };
  const TILE_NAMES_BWD = { s: 'scores S', p: 'probabilities P = exp(S − L)', dp: 'dP = dO Vᵀ', ds: 'dS = P ∘ (dP − D)' };

  /* The description of what is shown, rebuilt from web_describe when the lesson or the step
   * changes; the live region gets its short form (the step and its words) a moment after the
   * last change, so that playing does not queue one announcement a step. */
  function describe(s, force) {
    const key = `${s.name}|${s.lesson}|${s.step}|${s.n}|${s.covers}|${s.claims_asked}`;
    if (key === describedAt && !force) return;
    const first = describedAt === '';
    describedAt = key;
    const d = JSON.parse(Module.UTF8ToString(call('web_describe', 'number', ['number'], [W])));
    clearTimeout(liveTimer);
    /* A question about step 0 covers the scene until it is answered: the words keep the step
     * hidden as the scene does (they would give the answer away). */
    const hidden = !!s.covers, say = hidden ? (s.claims_asked ? COVERED_CLAIMS : COVERED) : d.say;
    if (!first) liveTimer = setTimeout(() => { $('live').textContent = `${stepWords(d)}. ${say}`; }, s.playing ? 600 : 150);
    if ($('p-desc').hidden && !force) return;
    const box = $('desc'), open = new Set([...box.querySelectorAll('details[open]')].map((x) => x.dataset.part));
    box.textContent = '';
    box.appendChild(el('h3', d.title || d.name));
    if (d.words) box.appendChild(el('p', `From ${d.words}.`, 'hint'));
    const intro = el('details');
    intro.dataset.part = 'intro';
    intro.appendChild(el('summary', 'About this lesson'));
    intro.appendChild(el('p', d.intro || 'No introduction.'));
    if (open.has('intro')) intro.open = true;
    box.appendChild(intro);
    box.appendChild(el('h3', `${stepWords(d)}${d.kind && !hidden ? ` (event: ${d.kind})` : ''}`));
    box.appendChild(el('p', say || 'Nothing to step through.'));
    if (hidden) return;
    if (d.formulas.length) {
      box.appendChild(el('h4', 'Its formulas, with the numbers'));
      box.appendChild(el('p', s.scene === 'backward'
        ? 'S is a score, L the row\'s log-sum-exp kept from the forward pass, P = exp(S − L) a weight recomputed from it; ' +
          'dO is the gradient of the output O, D = rowsum(dO ∘ O), dP and dS the gradients of P and S.'
        : 's is a row\'s scores against this step\'s keys, m its running maximum score, ℓ (written l; some lessons ' +
          'call it s) its running sum of exp(score − m), m_blk and l_blk the same over this step\'s keys alone, α and β ' +
          '(the correction and the weight) the factors that bring the old sum and the new block to the new maximum, ' +
          'o the running output (O = o / ℓ at the end).', 'hint'));
      const ul = box.appendChild(el('ul', undefined, 'formulas'));
      for (const f of d.formulas) ul.appendChild(el('li', f));
    }
    if (d.changed) {
      box.appendChild(el('h4', 'What changed'));
      box.appendChild(el('p', d.changed));
    }
    if (d.rows.length) {
      box.appendChild(el('h4', 'Each row so far'));
      const heads = d.rows.some((r) => r.head > 0);
      const who = (r) => (r.row < 0 ? 'the vector' : heads ? `head ${r.head}, row ${r.row}` : `row ${r.row}`);
      box.appendChild(table(`The running maximum m and sum ℓ of each row after step ${d.step}`, ['row', 'm', 'ℓ', 'finished'],
                            d.rows.map((r) => [who(r), r.m, r.l, r.out ? 'yes' : 'no'])));
    }
    if (d.tile) {
      const t = d.tile, names = !t.backward ? TILE_NAMES : t.dropout ? Object.assign({}, TILE_NAMES_BWD, { dp: 'dP = Z ∘ (dO Vᵀ) / (1 − p)' }) : TILE_NAMES_BWD;
      const det = el('details');
      det.dataset.part = 'tile';
      const keys = Array.from({ length: t.keys }, (_, j) => `key ${t.c0 + j}`);
      det.appendChild(el('summary', `The tile as a table: query rows ${t.r0}–${t.r1 - 1} against keys ${t.c0}–${t.c1 - 1}` +
                                    ` (Q tile ${t.qt}, KV tile ${t.kt}${t.partial ? ', partly masked' : ''})`));
      if (!t.rows.length) det.appendChild(el('p', 'No row of this tile is computed yet: step on to fill it.'));
      if (t.keys < t.c1 - t.c0) det.appendChild(el('p', `The first ${t.keys} of its ${t.c1 - t.c0} keys; each row's step lists them all.`, 'hint'));
      for (const v of ['s', 'p', 'dp', 'ds']) {
        const rows = t.rows.filter((r) => r[v]);
        if (rows.length) det.appendChild(table(`The tile's ${names[v]}, the rows reached so far (${v === 's' ? '-inf' : '0'}: masked)`, ['query row', ...keys],
                                               rows.map((r) => [`row ${r.row}`, ...r[v]])));
      }
      if (open.has('tile')) det.open = true;
      box.appendChild(det);
    }
    if (d.grid) {
      const g = d.grid, det = el('details');
      det.dataset.part = 'grid';
      det.appendChild(el('summary', `The whole score grid as a table: ${g.rows} queries × ${g.cols} keys${g.head ? `, head ${g.head}` : ''}`));
      det.appendChild(table(`The scores S after step ${d.step}, as the scene shows them (-inf: masked; skipped: in a tile skipped whole; empty: not reached yet)`,
                            ['query', ...Array.from({ length: g.cols }, (_, j) => `key ${j}`)],
                            g.cells.map((row, i) => [`query ${i}`, ...row])));
      if (open.has('grid')) det.open = true;
      box.appendChild(det);
    }
    if (d.claims.length && s.scene === 'claims') {
      box.appendChild(el('h4', 'The document\'s numbers, recomputed'));
      const ul = box.appendChild(el('ul'));
      for (const [c, v] of d.claims) ul.appendChild(el('li', `${c}: ${v}`));
    }
  }

  /* Upright, the canvas is as tall as the lesson needs for its numbers at full size (the C
   * layout says how tall: web_fit_height), and the stage scrolls; asked again when the lesson,
   * the stage's size or the text scale changes. On its side the canvas fills the stage. */
  let fitKey = '';
  function fitCanvas(s) {
    const stage = $('stage'), vw = stage.clientWidth, vh = stage.clientHeight;
    const key = `${s.name}|${s.lesson}|${vw}|${vh}|${s.zoom}`;
    if (key === fitKey || !vw || !vh) return;
    fitKey = key;
    const h = call('web_fit_height', 'number', ['number', 'number'], [W, vh]);
    const want = h > vh ? h + 'px' : '';
    if (canvas.style.height !== want) {
      canvas.style.height = want;
      window.dispatchEvent(new Event('resize'));   /* SDL follows the canvas's CSS size */
    }
  }

  function say(el, text, ok) {
    el.textContent = text;
    el.classList.toggle('ok', !!ok);
  }

  /* Back and Forward, or a link edited by hand. */
  function followHash() {
    const want = parseHash(location.hash);
    if (!W || !want.name) return;
    if (state && state.link && state.name.startsWith(want.name) && (want.step < 0 || want.step === state.step)) return;
    const r = capture(() => call('web_open', 'number', ['number', 'string', 'number'], [W, want.name, want.step]));
    notice(r.rc !== 0 ? r.err : '');
  }

  /* A message in the bar that stays until the next one (a bad link, a failed download). */
  function notice(text) {
    $('notice').textContent = text;
    $('notice').title = text;
  }

  function key(name, shift) {
    if (W) call('web_key', null, ['number', 'string', 'number'], [W, name, shift ? 1 : 0]);
  }

  function download(bytes, fileName, type) {
    const url = URL.createObjectURL(new Blob([bytes], { type }));
    const a = document.createElement('a');
    a.href = url;
    a.download = fileName;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  }

  /* ---- panels ---- */
  /* One panel at a time. Opening one moves the focus to its heading and remembers where the focus
   * was; closing gives it back there (or, when that control is hidden now, to the menu button or
   * the scene; toScene: to the scene, after a choice that shows something new). The description
   * comes back when the panel that covered it closes. */
  const PANEL_BUTTON = { 'p-lessons': 'b-lessons', 'p-desc': 'b-desc', 'p-claims': 'b-claims', 'p-mine': 'b-mine', 'p-gpu': 'b-gpu', 'p-help': 'b-help' };
  let returnTo = null, descUnder = false;
  const visible = (e) => !!e && e.isConnected && e.offsetParent !== null && !e.closest('[hidden]');
  function toggle(id, open, toScene) {
    const p = $(id);
    const show = open === undefined ? p.hidden : open;
    if (show === !p.hidden) return;
    if (show) {
      const from = document.activeElement;
      const other = [...document.querySelectorAll('.panel')].find((x) => !x.hidden);
      if (other) {
        if (other.id === 'p-desc') descUnder = true;
        other.hidden = true;
        if (PANEL_BUTTON[other.id]) $(PANEL_BUTTON[other.id]).setAttribute('aria-expanded', 'false');
      }
      /* where the focus was, unless that was inside the panel just hidden (then where it was before) */
      if (from && from !== document.body && !p.contains(from) && !(other && other.contains(from))) returnTo = from;
      else if (!other) returnTo = null;
    }
    p.hidden = !show;
    if (PANEL_BUTTON[id]) $(PANEL_BUTTON[id]).setAttribute('aria-expanded', String(show));   /* (the quiz has none) */
    if (show && id === 'p-claims') showClaims(true);
    if (show && id === 'p-lessons') loadLessons();
    if (show && id === 'p-desc' && state) describe(state, true);
    if (show) { p.querySelector('h2').focus(); return; }
    if (id !== 'p-desc' && descUnder) {
      descUnder = false;
      p.hidden = true;
      $('p-desc').hidden = false;
      $('b-desc').setAttribute('aria-expanded', 'true');
      if (state) describe(state, true);
    } else if (id === 'p-desc') descUnder = false;
    const back = toScene ? canvas : visible(returnTo) ? returnTo : visible($('b-menu')) ? $('b-menu') : canvas;
    returnTo = null;
    back.focus();
  }

  let claimsFor = null;
  function showClaims(force) {
    if (!state) return;
    const key = (state.lesson >= 0 ? state.name : state.link ? '(demo)' : '') + (state.claims_asked ? '|asked' : '');
    if (!force && key === claimsFor) return;
    claimsFor = key;
    if (state.claims_asked) {   /* the figures are being asked about: the list would give the answers */
      $('claims-doc').textContent = '';
      $('claims-text').textContent = COVERED_CLAIMS;
      return;
    }
    if (state.lesson < 0) {
      $('claims-doc').textContent = '';
      $('claims-text').textContent = state.link ? `The built-in demo ${state.name}: it comes from no document, so no printed numbers to check.`
        : 'Your own problem or a saved trace: no printed numbers to check.';
      return;
    }
    const r = capture(() => call('web_cli', 'number', ['string'], ['verify\n' + key]));
    $('claims-text').textContent = r.out + (r.err ? '\n' + r.err : '');
    $('claims-doc').textContent = state.source ? `From ${state.words || state.source}` : '';
  }

  /* The lessons, two ways: the course (lessons/course.txt: one path for a newcomer, in sections,
   * with what this browser has seen to the end marked done) and by document. */
  const DONE_KEY = 'flashstep.done';
  function doneSet() {
    try { return new Set(JSON.parse(localStorage.getItem(DONE_KEY) || '[]')); } catch (e) { return new Set(); }
  }
  function saveDone(set) {
    try { localStorage.setItem(DONE_KEY, JSON.stringify([...set])); } catch (e) { /* storage off: nothing kept */ }
  }

  function lessonItem(l, label) {
    const li = document.createElement('li');
    li.dataset.name = l.name;
    /* a button, so that Tab reaches it and Enter or Space opens it */
    const pick = document.createElement('button');
    pick.className = 'pick';
    pick.title = `${l.name}.lesson · ${l.source}`;   /* the file names, where a reader needs them */
    const n = document.createElement('span'); n.className = 'name'; n.textContent = label;
    const t = document.createElement('span'); t.className = 'title'; t.textContent = l.title;
    const s = document.createElement('span'); s.className = 'src'; s.textContent = l.words || l.source;
    pick.append(n, t, s);
    li.append(pick);
    li.addEventListener('click', () => {   /* the button's click reaches it, and so does a click on the item (tests) */
      const r = capture(() => call('web_open', 'number', ['number', 'string', 'number'], [W, l.name, 0]));
      notice(r.rc !== 0 ? r.err : '');
      toggle('p-lessons', false, true);
    });
    return li;
  }

  /* Headings and lists: groups is [[heading, [[lesson, label], ...]], ...]. */
  function fillList(el, groups) {
    el.textContent = '';
    el.classList.add('lessons');
    for (const [head, items] of groups) {
      const h = document.createElement('h3'); h.textContent = head;
      const ol = document.createElement('ol');
      for (const [l, label] of items) ol.appendChild(lessonItem(l, label));
      el.append(h, ol);
    }
  }

  const course = () => lessons.filter((l) => l.course >= 0).sort((a, b) => a.course - b.course);

  function loadLessons() {
    if (!W) return;
    if (!lessons.length) {
      lessons = JSON.parse(Module.UTF8ToString(call('web_lessons', 'number', ['number'], [W])));
      const docs = new Map();
      lessons.forEach((l, i) => {
        const d = l.doc || (l.words ? l.words.split(',')[0] : l.source.split(',')[0]) || 'other';
        if (!docs.has(d)) docs.set(d, []);
        docs.get(d).push([l, `${i + 1}. ${l.name}`]);
      });
      fillList($('lesson-list'), [...docs].map(([d, items]) => [`${d}${items[0][0].doc ? ' (' + items[0][0].source.split(',')[0] + ')' : ''}`, items]));
      const sections = new Map();
      for (const l of course()) {
        if (!sections.has(l.section)) sections.set(l.section, []);
        sections.get(l.section).push([l, `${l.course + 1}. ${l.name}`]);
      }
      fillList($('course-list'), [...sections].map(([sec, items], k) => [`${k + 1}. ${sec}`, items]));
      addQuizLines([...sections.keys()]);
      if (!sections.size) $('course-list').textContent = 'No course here (course.txt is missing beside the lessons).';
    }
    markLesson();
  }

  function showTab(which) {
    $('t-course').setAttribute('aria-selected', String(which === 'course'));
    $('t-docs').setAttribute('aria-selected', String(which !== 'course'));
    $('t-course').tabIndex = which === 'course' ? 0 : -1;
    $('t-docs').tabIndex = which === 'course' ? -1 : 0;
    $('course').hidden = which !== 'course';
    $('lesson-list').hidden = which === 'course';
  }

  function markLesson() {
    if (!state) return;
    const done = doneSet(), path = course();
    for (const li of document.querySelectorAll('.lessons li')) {
      li.classList.toggle('current', li.dataset.name === state.name);
      li.classList.toggle('done', done.has(li.dataset.name));
      const pick = li.firstChild;
      if (li.dataset.name === state.name) pick.setAttribute('aria-current', 'true');
      else pick.removeAttribute('aria-current');
      const mark = pick.querySelector('.done-mark');
      if (done.has(li.dataset.name) && !mark) pick.querySelector('.name').appendChild(el('span', '  ✓ done', 'done-mark'));
      else if (!done.has(li.dataset.name) && mark) mark.remove();
    }
    if (path.length) $('course-progress').textContent = `${path.filter((l) => done.has(l.name)).length} of ${path.length} done.`;
  }

  /* At a lesson's last step (or on a lesson with no steps): done, and the course's next one offered
   * (web_course_next loads that one lesson only, for its title). */
  let offeredFor = '';
  function atLessonEnd(s) {
    const end = s.lesson >= 0 && (s.n === 0 || s.step === s.n - 1);
    const btn = $('next-lesson');
    if (!end) { btn.hidden = true; offeredFor = ''; return; }
    if (offeredFor === s.name) return;
    offeredFor = s.name;
    const done = doneSet();
    if (!done.has(s.name)) { done.add(s.name); saveDone(done); markLesson(); }
    const next = JSON.parse(Module.UTF8ToString(call('web_course_next', 'number', ['number', 'string'], [W, s.name])));
    if (!next.name) { btn.hidden = true; return; }
    btn.textContent = `Next: ${next.title} →`;
    btn.title = `the course's lesson ${next.place} of ${next.of}: ${next.name}`;
    btn.dataset.name = next.name;
    btn.hidden = false;
  }

  /* The lesson's last step: its buttons (a section's quiz, "Try this", "Next") in the strip the
   * layout keeps free at the foot of the canvas's ending box (state box 6, canvas pixels), right-
   * aligned in one row, or one under the other on an upright page; the room they take is
   * told to the layout (web_ending_room: the next frame's). Out of sight while no ending box
   * shows (a question, the menu or the help over the last step). */
  function placeEndButtons(s) {
    const eb = s.boxes && s.boxes[6];
    const btns = ['quiz-offer', 'try-lesson', 'next-lesson'].map($).filter((b) => !b.hidden);
    const shown = !!(eb && eb[3] > 0 && btns.length);
    ['quiz-offer', 'try-lesson', 'next-lesson'].forEach((id) => { $(id).style.visibility = shown ? '' : 'hidden'; });
    if (!shown) { call('web_ending_room', null, ['number', 'number'], [W, 0]); return; }
    const sx = canvas.clientWidth / (s.w || 1), sy = canvas.clientHeight / (s.h || 1), gap = 8;
    const left = eb[0] * sx, width = eb[2] * sx, inner = width - 2 * gap;
    /* side by side one row, each button at most its share (its words whole in the box above);
     * upright one under the other, each as wide as the box */
    const row = !s.portrait;
    const each = row ? (inner - gap * (btns.length - 1)) / btns.length : inner;
    btns.forEach((b) => { b.style.maxWidth = `${Math.max(80, Math.floor(each))}px`; });
    const widths = btns.map((b) => b.offsetWidth), bh = Math.max(...btns.map((b) => b.offsetHeight));
    const need = row ? bh + 2 * gap : btns.length * (bh + gap) + gap;
    const foot = (eb[1] + eb[3]) * sy;
    if (row) {   /* laid from the right: the last button rightmost */
      let x = left + width - gap;
      for (let i = btns.length - 1; i >= 0; i--) {
        x -= widths[i];
        btns[i].style.left = `${Math.round(x)}px`;
        btns[i].style.top = `${Math.round(foot - gap - bh)}px`;
        x -= gap;
      }
    } else {
      btns.forEach((b, i) => {
        b.style.left = `${Math.round(left + width - gap - widths[i])}px`;
        b.style.top = `${Math.round(foot - need + gap + i * (bh + gap))}px`;
      });
    }
    call('web_ending_room', null, ['number', 'number'], [W, Math.ceil(need / sy)]);
  }

  /* At a lesson's last step: its "try this" (web_ending), a button that presses V, which loads the
   * lesson again with its try's options; in that variation the same button goes back to the
   * lesson as written. Hidden elsewhere and for a lesson with neither. */
  let tryFor = '';
  function atLessonEndTry(s) {
    const end = s.lesson >= 0 && (s.n === 0 || s.step === s.n - 1);
    const btn = $('try-lesson');
    if (!end) { btn.hidden = true; tryFor = ''; return; }
    if (tryFor === s.title) return;
    tryFor = s.title;
    const e = JSON.parse(Module.UTF8ToString(call('web_ending', 'number', ['number'], [W])));
    if (!e.variation && !e.try_opts) { btn.hidden = true; return; }
    btn.textContent = e.variation ? 'Back to the lesson as written (V)' : `Try this: ${e.try_label} (V)`;
    btn.setAttribute('aria-label', e.variation ? `back to the lesson as written, without ${e.variation}`
      : `try this: ${e.try_label}; plays the lesson again with ${e.try_opts}`);
    btn.title = e.variation ? `this is the variation ${e.variation}`
      : `flashstep play ${e.name} ${e.try_opts}`;
    btn.hidden = false;
  }

  /* ---- the questions and the sections' quizzes (docs/questions.md) ---- */
  /* The questions are on unless the address says ?questions=off (for this visit: a teacher
   * projecting) or the Questions button turned them off in this browser (remembered). */
  const QUESTIONS_KEY = 'flashstep.questions';
  function questionsAtStart() {
    const q = new URLSearchParams(location.search).get('questions');
    if (q !== null) return !/^(off|0|no|false)$/i.test(q);
    try { return localStorage.getItem(QUESTIONS_KEY) !== 'off'; } catch (e) { return true; }
  }
  /* (page.js's button() is defined further down: these listen directly) */
  $('b-questions').addEventListener('click', (e) => {
    const on = !(state && state.predict > 0);
    key('Q');
    try { localStorage.setItem(QUESTIONS_KEY, on ? 'on' : 'off'); } catch (err) { /* storage off: for this visit */ }
    if (e.detail > 0) canvas.focus();
  });

  /* After each frame: the Questions button, the answer box under the canvas's question, the
   * section's quiz offered at the end of its last lesson. */
  let askedKey = '';
  function questionsShown(s) {
    const on = s.predict > 0, b = $('b-questions');
    b.setAttribute('aria-pressed', String(on));   /* (its name stays: a toggle button) */
    const q = s.question || [], box = $('ask');
    if (!q.length) { box.hidden = true; askedKey = ''; }
    else {
      const k = `${s.name}|${s.step}|${q[0]}|${s.predict}`;
      if (k !== askedKey) {
        askedKey = k;
        box.hidden = false;
        $('ask-q').textContent = q[0] + (q[1] ? ` (${q[1]})` : '');
        const asking = s.predict === 2;
        if (asking) $('live').textContent = `Question: ${$('ask-q').textContent}`;   /* said, as a step is */
        $('ask-in').disabled = !asking;
        if (asking) $('ask-in').value = '';
        $('ask-check').hidden = !asking;
        $('ask-on').hidden = asking;
        $('ask-msg').textContent = asking ? '' : `${q[2]}. ${q[3].replace(/\s+Right: go on\s+/, ' ')}`;
      }
      /* at the bottom right of the canvas's question box (its layout's prompt box, canvas
       * pixels), in the strip the layout keeps free at the box's foot, so that the question's
       * own words stay in view; just below the box when the layout is upright (a phone), where
       * the layout keeps the same room free (web_answer_room: the next frame's layout) */
      const pr = s.boxes && s.boxes[5], sx = canvas.clientWidth / (s.w || 1), sy = canvas.clientHeight / (s.h || 1);
      if (pr && pr[3] > 0) {
        const below = s.portrait;
        call('web_answer_room', null, ['number', 'number'], [W, Math.ceil((box.offsetHeight + (below ? 8 : 12)) / sy)]);
        box.style.left = `${Math.max(4, Math.round((pr[0] + pr[2]) * sx - box.offsetWidth - 8))}px`;
        box.style.top = `${Math.round(below ? (pr[1] + pr[3]) * sy + 4
                                            : Math.max(pr[1] * sy + 6, (pr[1] + pr[3]) * sy - box.offsetHeight - 6))}px`;
      }
    }
    offerQuiz(s);
  }
  $('ask').addEventListener('submit', (ev) => {
    ev.preventDefault();
    call('web_answer', null, ['number', 'string'], [W, $('ask-in').value]);
  });
  $('ask-on').addEventListener('click', () => key('Right'));

  const QUIZ_KEY = 'flashstep.quiz';   /* {section title: {best, last, of, when}} */
  function quizScores() {
    try { return JSON.parse(localStorage.getItem(QUIZ_KEY) || '{}') || {}; } catch (e) { return {}; }
  }
  function keepQuizScore(title, right, of) {
    const all = quizScores(), old = all[title];
    all[title] = { best: Math.max(right, old ? old.best : -1), last: right, of, when: new Date().toISOString() };
    try { localStorage.setItem(QUIZ_KEY, JSON.stringify(all)); } catch (e) { /* storage off: not kept */ }
  }
  const scoreWords = (sc) => (sc ? `best ${sc.best}/${sc.of}, last ${sc.last}/${sc.of}` : 'not taken yet');

  /* Under each section's heading in the course: its quiz, and its score in this browser. */
  function addQuizLines(titles) {
    const heads = $('course-list').querySelectorAll('h3');
    titles.forEach((title, k) => {
      if (!heads[k]) return;
      const p = el('p', undefined, 'quiz-line');
      const go = el('button', `Quiz: ${title}`, 'quiz-go');
      go.dataset.section = String(k);
      go.title = 'five questions from this section\'s lessons, on fresh random problems';
      go.addEventListener('click', () => openQuiz(k));
      const sc = el('span', '', 'quiz-score');
      sc.dataset.title = title;
      p.append(go, ' ', sc);
      heads[k].after(p);
    });
    markQuizzes();
  }
  function markQuizzes() {
    const all = quizScores();
    for (const sc of document.querySelectorAll('.quiz-score')) sc.textContent = scoreWords(all[sc.dataset.title]);
  }

  /* The last step of a section's last lesson: its quiz offered beside the next lesson. */
  function offerQuiz(s) {
    const btn = $('quiz-offer');
    const end = s.lesson >= 0 && s.section_end >= 0 && (s.n === 0 || s.step === s.n - 1) && s.predict !== 2 && s.predict !== 3;
    if (!end || !$('p-quiz').hidden) { btn.hidden = true; return; }
    const sc = quizScores()[s.section_title];
    btn.textContent = `Quiz: ${s.section_title}${sc ? ` (best ${sc.best}/${sc.of})` : ''}`;
    btn.title = 'the end of this section of the course: five questions from its lessons, on fresh problems';
    btn.dataset.section = String(s.section_end);
    btn.hidden = false;
  }
  $('quiz-offer').addEventListener('click', () => openQuiz(Number($('quiz-offer').dataset.section)));

  /* A quiz: made on a fresh seed (web_quiz), asked one question at a time in the panel, each
   * answer judged (web_quiz_judge) with the right one and why; then the score, kept, and the
   * lessons of the wrong answers, each a button that opens it. */
  let quiz = null;
  function openQuiz(section) {
    if (!W) return;
    const seed = Math.floor(Math.random() * 2 ** 52);
    const q = JSON.parse(Module.UTF8ToString(call('web_quiz', 'number', ['number', 'number', 'number'], [W, section, seed])));
    if (q.error || !q.questions || !q.questions.length) { notice(`no quiz: ${q.error || 'no questions'}`); return; }
    quiz = { section, title: q.section, seed: q.seed, questions: q.questions, at: 0, right: 0, wrong: [] };
    $('h-quiz').textContent = `Quiz: ${q.section}`;
    $('quiz-done').hidden = true;
    $('quiz-form').hidden = false;
    toggle('p-quiz', true);
    quizQuestion();
  }
  function quizQuestion() {
    const q = quiz.questions[quiz.at];
    $('quiz-count').textContent = `Question ${quiz.at + 1} of ${quiz.questions.length} (from ${q.lesson}), on a fresh problem`;
    $('quiz-prompt').textContent = q.prompt;
    $('quiz-choices').textContent = q.numeric ? 'A number: at least two significant digits.'
      : 'Type one of: ' + q.options.map((o, i) => `${i + 1} ${o}`).join(', ') + ' (its name or its number).';
    $('quiz-answer').value = '';
    $('quiz-answer').disabled = false;
    $('quiz-check').hidden = false;
    $('quiz-next').hidden = true;
    say($('quiz-feedback'), '');
    $('quiz-answer').focus();
  }
  $('quiz-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (!quiz || $('quiz-answer').disabled) return;
    const r = JSON.parse(Module.UTF8ToString(call('web_quiz_judge', 'number', ['number', 'number', 'string'], [W, quiz.at, $('quiz-answer').value])));
    if (r.again) {   /* a number typed with its unit: asked again for the number alone */
      say($('quiz-feedback'), r.feedback);
      $('quiz-answer').select();
      return;
    }
    if (r.right) quiz.right++;
    else quiz.wrong.push(quiz.questions[quiz.at].lesson);
    say($('quiz-feedback'), r.feedback, r.right);
    $('quiz-answer').disabled = true;
    $('quiz-check').hidden = true;
    $('quiz-next').textContent = quiz.at + 1 < quiz.questions.length ? 'Next question' : 'See the score';
    $('quiz-next').hidden = false;
    $('quiz-next').focus();
  });
  $('quiz-next').addEventListener('click', () => {
    if (!quiz) return;
    if (++quiz.at < quiz.questions.length) { quizQuestion(); return; }
    const n = quiz.questions.length;
    keepQuizScore(quiz.title, quiz.right, n);
    $('quiz-form').hidden = true;
    $('quiz-count').textContent = '';
    $('quiz-prompt').textContent = '';
    $('quiz-choices').textContent = '';
    say($('quiz-feedback'), '');
    $('quiz-done').hidden = false;
    $('quiz-score').textContent = `${quiz.right} of ${n} right on “${quiz.title}” (${scoreWords(quizScores()[quiz.title])}; kept in this browser with the course's progress).`;
    const rv = $('quiz-revisit');
    rv.textContent = '';
    const again = [...new Set(quiz.wrong)];
    if (!again.length) rv.textContent = 'Every answer right: on to the next section.';
    else {
      rv.append('To revisit: ');
      again.forEach((name, i) => {
        const b = el('button', name, 'quiz-lesson');
        b.addEventListener('click', () => {
          const r = capture(() => call('web_open', 'number', ['number', 'string', 'number'], [W, name, 0]));
          notice(r.rc !== 0 ? r.err : '');
          toggle('p-quiz', false, true);
        });
        rv.append(b, i + 1 < again.length ? ' ' : '');
      });
    }
    markQuizzes();
    $('quiz-score').focus();
  });
  $('quiz-again').addEventListener('click', () => { if (quiz) openQuiz(quiz.section); });

  /* ---- one's own problem ---- */
  const inputs = { q: 'q.txt', k: 'k.txt', v: 'v.txt', tree: 'tree.txt' };
  const chosen = {};   /* key -> {name, bytes} of an uploaded file */

  /* A file's last path part, made safe for the program's file system. */
  const safeName = (n) => (n.split(/[\\/]/).pop() || 'input').replace(/[^\w.+-]/g, '_').slice(0, 80);

  for (const inp of document.querySelectorAll('#mine-form input[type=file][data-for]')) {
    inp.addEventListener('change', async () => {
      const f = inp.files[0], k = inp.dataset.for;
      delete chosen[k];
      if (!f) return;
      if (f.size > MAX_INPUT) {
        say($('mine-msg'), `${f.name}: ${(f.size / 1048576).toFixed(1)} MB; the page reads files up to ${MAX_INPUT >> 20} MB (far more than the trace's limits allow)`);
        inp.value = '';
        return;
      }
      chosen[k] = { name: safeName(f.name), bytes: new Uint8Array(await f.arrayBuffer()) };
      const ta = $('m-' + k);
      ta.value = '';
      ta.placeholder = `(${f.name})`;
    });
  }
  for (const k of Object.keys(inputs)) $('m-' + k).addEventListener('input', () => { delete chosen[k]; });

  /* The arguments `flashstep play` would take, with the files written under /input. */
  function problemArgs() {
    const args = [];
    const FS = Module.FS;
    for (const [k, def] of Object.entries(inputs)) {
      let name = null, bytes = null;
      if (chosen[k]) ({ name, bytes } = chosen[k]);
      else if ($('m-' + k).value.trim() !== '') { name = def; bytes = new TextEncoder().encode($('m-' + k).value); }   /* UTF-8: its bytes, not its characters, are counted */
      if (name === null) continue;
      if (bytes.length > MAX_INPUT) throw new Error(`${name}: more than the ${MAX_INPUT >> 20} MB the page reads (far more than the trace's limits allow)`);
      FS.writeFile('/input/' + name, bytes);
      args.push('--' + k, name);
    }
    const v = (id) => $(id).value.trim();
    if (v('o-mask') !== 'none') args.push('--mask', v('o-mask'));
    if (v('o-window')) args.push('--window', v('o-window'));
    if (v('o-bq')) args.push('--bq', v('o-bq'));
    if (v('o-bk')) args.push('--bk', v('o-bk'));
    if (v('o-form')) args.push('--form', v('o-form'));
    if (v('o-scale')) args.push('--scale', v('o-scale'));
    if (v('o-more')) args.push(...v('o-more').split(/\s+/));
    return args;
  }

  $('mine-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    let args;
    try { args = problemArgs(); } catch (e) { say($('mine-msg'), e.message); return; }
    const r = capture(() => call('web_problem', 'number', ['number', 'string'], [W, args.join('\n')]));
    if (r.rc !== 0) { say($('mine-msg'), r.err || 'not shown'); return; }
    say($('mine-msg'), 'shown: flashstep play ' + args.join(' '), true);
    history.pushState(null, '', location.pathname + location.search);
    toggle('p-mine', false, true);
  });

  $('mine-example').addEventListener('click', () => {
    const FS = Module.FS;
    for (const k of ['q', 'k', 'v']) {
      delete chosen[k];
      $('m-' + k).value = FS.readFile(`/flashstep/assets/doc000_tiled/${k.toUpperCase()}.txt`, { encoding: 'utf8' });
    }
    $('m-tree').value = '';
    $('o-mask').value = 'causal';
    $('o-bq').value = '2';
    $('o-bk').value = '3';
    $('o-form').value = 'unnormalized';
  });

  $('trace-file').addEventListener('change', async () => {
    const f = $('trace-file').files[0];
    if (!f) return;
    if (f.size > MAX_INPUT) { say($('mine-msg'), `${f.name}: more than the ${MAX_INPUT >> 20} MB the page reads`); return; }
    const name = safeName(f.name);
    Module.FS.writeFile('/input/' + name, new Uint8Array(await f.arrayBuffer()));
    const r = capture(() => call('web_trace_file', 'number', ['number', 'string'], [W, name]));
    $('trace-file').value = '';
    if (r.rc !== 0) { say($('mine-msg'), r.err || 'not read'); return; }
    say($('mine-msg'), 'replaying ' + f.name, true);
    history.pushState(null, '', location.pathname + location.search);
    toggle('p-mine', false, true);
  });

  /* ---- buttons, swipes ---- */
  /* A click with the mouse gives the scene the focus (so that its keys work at once); a button
   * pressed from the keyboard (Enter or Space: a click of detail 0) keeps it, as do the ones that
   * open a panel (it takes the focus itself). */
  const button = (id, fn, keepFocus) => $(id).addEventListener('click', (e) => {
    fn(e);
    if (!keepFocus && e.detail > 0 && !e.target.closest('.panel')) canvas.focus();
  });
  button('b-home', () => key('Home'));
  button('b-prev', (e) => key('Left', e.shiftKey));
  button('b-next', (e) => key('Right', e.shiftKey));
  button('b-play', () => key('Space'));
  button('b-slower', () => key('Down'));
  button('b-faster', () => key('Up'));
  button('b-theme', () => key('T'));
  button('b-help', () => toggle('p-help'), true);
  button('b-lessons', () => toggle('p-lessons'), true);
  button('b-desc', () => toggle('p-desc'), true);
  button('d-prev', () => key('Left'));
  button('d-next', () => key('Right'));
  $('skip').addEventListener('click', (e) => { e.preventDefault(); toggle('p-desc', true); });
  $('t-course').addEventListener('click', () => showTab('course'));
  $('t-docs').addEventListener('click', () => showTab('docs'));
  /* the tabs as a tab list: Left and Right (Home, End) move between them */
  for (const t of ['t-course', 't-docs'])
    $(t).addEventListener('keydown', (e) => {
      if (!['ArrowLeft', 'ArrowRight', 'Home', 'End'].includes(e.key)) return;
      e.preventDefault();
      const to = e.key === 'Home' ? 'course' : e.key === 'End' ? 'docs' : t === 't-course' ? 'docs' : 'course';
      showTab(to);
      $(to === 'course' ? 't-course' : 't-docs').focus();
    });
  $('course-clear').addEventListener('click', () => {
    try { localStorage.removeItem(DONE_KEY); localStorage.removeItem(QUIZ_KEY); } catch (e) { /* nothing kept anyway */ }
    offeredFor = '';
    markLesson();
    markQuizzes();
  });
  button('next-lesson', () => {
    const r = capture(() => call('web_open', 'number', ['number', 'string', 'number'], [W, $('next-lesson').dataset.name, 0]));
    notice(r.rc !== 0 ? r.err : '');
  });
  button('try-lesson', () => { key('V'); tryFor = ''; });
  button('b-claims', () => toggle('p-claims'), true);
  button('b-mine', () => toggle('p-mine'), true);
  button('b-png', () => call('web_save_png', null, ['number'], [W]));
  /* Narrow screens: the less used buttons in one menu, closed by any choice or a tap elsewhere. */
  const menu = (open) => { $('bar').classList.toggle('open', open); $('b-menu').setAttribute('aria-expanded', String(open)); };
  $('b-menu').addEventListener('click', (e) => {
    e.stopPropagation();
    const open = !$('bar').classList.contains('open');
    menu(open);
    if (open) $('more').querySelector('button').focus();   /* the first choice; Esc closes, Tab walks on */
  });
  /* leaving the menu with Tab (past its last choice, or back before the ☰) closes it */
  $('more').addEventListener('focusout', (e) => {
    if ($('bar').classList.contains('open') && e.relatedTarget && !$('more').contains(e.relatedTarget) && e.relatedTarget !== $('b-menu')) menu(false);
  });
  $('more').addEventListener('click', () => menu(false));
  document.addEventListener('click', (e) => { if (!e.target.closest('#more')) menu(false); });
  button('b-download', () => {
    const r = capture(() => call('web_save_trace', 'number', ['number', 'string'], [W, '/output/trace.jsonl']));
    if (r.rc !== 0) { notice(r.err); return; }
    download(Module.FS.readFile('/output/trace.jsonl'), `${state ? state.name : 'flashstep'}.jsonl`, 'application/x-ndjson');
  });

  /* ---- "Run on this GPU" (docs/webgpu.md) ---- */
  let gpu = null, gpuPlain = null, gpuOpening = null, gpuResults = null, gpuStop = false, gpuBusy = false;
  const wgsl = (name) => fetch(`webgpu/${name}.wgsl`).then((r) => {
    if (!r.ok) throw new Error(`webgpu/${name}.wgsl: ${r.status} ${r.statusText}`);
    return r.text();
  });
  const gpuMsg = (text, ok) => say($('gpu-msg'), text, ok);

  /* The device, opened once; a lost device is opened again on the next use. load: another
   * source of the .wgsl files (the tests plant faults through it); null goes back to the page's. */
  let gpuLoad = wgsl;
  async function openGpu(load) {
    if (load !== undefined) {
      gpuLoad = load || wgsl;
      if (gpu) gpu.destroy();
      if (gpuPlain) gpuPlain.destroy();
      gpu = gpuPlain = null;
    }
    if (gpu && !gpu.lost) return gpu;
    if (typeof FSGPU === 'undefined') throw new Error('webgpu/fsgpu.js did not load');
    if (!navigator.gpu) throw new Error('this browser offers no WebGPU: the page works as before, without the GPU panel (Chrome and Edge 113+, Safari 26, Firefox 141 have it; on Linux Chrome may need it enabled)');
    if (!gpuOpening) gpuOpening = FSGPU.open(navigator.gpu, gpuLoad);
    try { gpu = await gpuOpening; } finally { gpuOpening = null; }
    gpuPlain = null;
    return gpu;
  }

  function describeGpu(g) {
    const i = g.info, L = i.limits, mib = (x) => `${Math.round(x / 1048576)} MiB`;
    return [`${i.vendor || 'unknown vendor'}${i.architecture ? ' ' + i.architecture : ''}${i.device ? ' · ' + i.device : ''}${i.description ? ' · ' + i.description : ''}`,
      `subgroups: ${i.subgroups ? (i.subgroups.min === i.subgroups.max ? i.subgroups.min : `${i.subgroups.min}-${i.subgroups.max}`) + ' lanes' : 'no'}` +
      ` · shader-f16: ${i.f16 ? 'yes' : 'no'} · timestamps: ${i.timestamps ? 'yes' : 'no (queue completion)'}` +
      ` · subgroup matrices: ${i.subgroup_matrix ? (i.subgroup_matrix_configs.map((c) => `${c.component}→${c.result} ${c.M}×${c.N}×${c.K}`).join(', ') || 'offered') + (i.subgroup_matrix_kernel ? ` (prefill-v7 uses ${i.subgroup_matrix_kernel.M}×${i.subgroup_matrix_kernel.N}×${i.subgroup_matrix_kernel.K})` : ' (none that prefill-v7 takes)') : 'not offered'}`,
      `largest buffer bound: ${mib(L.maxStorageBufferBindingSize)} · workgroup memory: ${L.maxComputeWorkgroupStorageSize} bytes · invocations a workgroup: ${L.maxComputeInvocationsPerWorkgroup}`].join('\n');
  }

  async function showGpu() {
    const list = $('gpu-kernels');
    try {
      const g = await openGpu();
      say($('gpu-adapter'), describeGpu(g), true);
      if (!list.childElementCount)
        for (const [name, k] of Object.entries(g.kernels)) {
          const dt = document.createElement('dt'), dd = document.createElement('dd');
          dt.textContent = `${name} (${k.file}.wgsl)`;
          dd.textContent = k.what;
          list.append(dt, dd);
        }
      for (const b of ['gpu-trace', 'gpu-check', 'gpu-bench']) $(b).disabled = gpuBusy;
    } catch (e) {
      say($('gpu-adapter'), e.message);
      for (const b of ['gpu-trace', 'gpu-check', 'gpu-bench']) $(b).disabled = true;
    }
  }

  /* Run fn with the panel's buttons held; a lost device or an error is said, not thrown. */
  async function gpuTask(fn) {
    if (gpuBusy) return null;
    gpuBusy = true;
    for (const b of ['gpu-trace', 'gpu-check', 'gpu-bench']) $(b).disabled = true;
    try { return await fn(); } catch (e) {
      gpuMsg((gpu && gpu.lost ? `the GPU device was lost (${gpu.lost}); the next run opens it again. ` : '') + e.message);
      return null;
    } finally {
      gpuBusy = false;
      for (const b of ['gpu-trace', 'gpu-check', 'gpu-bench']) $(b).disabled = false;
      $('gpu-stop').hidden = true;
      $('gpu-progress').hidden = true;
    }
  }

  /* The traced run of what is shown: the C side makes the job, the kernel runs, the C side turns
   * its records into events and compares them with the engine's. Returns that answer. */
  async function gpuTrace(kernels = true) {
    const g = await openGpu();
    const job = JSON.parse(Module.UTF8ToString(call('web_gpu_job', 'number', ['number'], [W])));
    if (!job.ok) { gpuMsg(`not traced on the GPU: ${job.why}`); return job; }
    const heap = () => Module.HEAPU8.buffer;
    const f32 = (p, n) => (n ? new Float32Array(heap(), p, n).slice() : new Float32Array(4));
    const u32 = (p, n) => (n ? new Uint32Array(heap(), p, n).slice() : null);
    const out = await g.trace({kind: job.kind, params: u32(job.params, 24), qs: f32(job.qs, job.n_qs), k: f32(job.k, job.n_k),
      v: f32(job.v, job.n_v), bits: u32(job.bits, job.n_bits), sched: u32(job.sched, 3 * job.n_sched),
      rec_floats: job.rec_floats, node_floats: job.node_floats, o_floats: job.o_floats, ml_floats: job.ml_floats});
    const put = (a) => {
      if (!a) return 0;
      const p = Module._malloc(a.byteLength);
      Module.HEAPU8.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), p);
      return p;
    };
    const ptrs = [put(out.rec), put(out.node), put(out.O), put(out.ml)];
    let res;
    try {
      res = JSON.parse(Module.UTF8ToString(call('web_gpu_compare', 'number', ['number', 'number', 'number', 'number', 'number'], [W, ...ptrs])));
    } finally {
      ptrs.forEach((p) => p && Module._free(p));
    }
    if (!res.ok) gpuMsg(`GPU trace not compared: ${res.why}`);
    else gpuMsg(`${state ? state.name : ''}: ${job.kind === 'tiled' ? 'fwd_trace.wgsl' : 'decode_trace.wgsl'} on the GPU against the engine: ` +
                (res.match ? `matches: ${res.message}` : `differs at ${res.message}`), res.match);
    $('gpu-trace-dl').disabled = !res.ok;
    if (res.ok && kernels) {
      /* the full-size kernels (003's among them) on the same problem, against float64 */
      res.kernels = await sameProblem(g, job, u32(job.params, 24), f32(job.qs, job.n_qs), f32(job.k, job.n_k), f32(job.v, job.n_v),
                                      u32(job.bits, job.n_bits));
      const ran = res.kernels.filter((k) => !k.said.startsWith('not run'));
      const skipped = res.kernels.filter((k) => k.said.startsWith('not run')).map((k) => k.name);
      gpuMsg($('gpu-msg').textContent + '\n' + ran.map((k) => `${k.name}: ${k.said}`).join('\n') +
             (skipped.length ? `\nnot run on this problem (its sizes do not suit them): ${skipped.join(', ')}` : ''), res.match);
    }
    return res;
  }

  /* Every full-size kernel that takes the job's problem (given scores excepted: they score Q Kᵀ,
   * and d_v = d), run on it and checked against float64: [{name, ok, said}]. */
  async function sameProblem(g, job, P, q, k, v, bits) {
    const F = new Float32Array(P.buffer), I = new Int32Array(P.buffer);
    if (P[14] & 8) return [{name: 'full-size kernels', ok: true, said: 'not run: they score Q Kᵀ, and this run gives the scores'}];
    if (P[4] !== P[5]) return [{name: 'full-size kernels', ok: true, said: `not run: they take d_v = d (here ${P[5]} and ${P[4]})`}];
    const p = {n_q_heads: P[0], n_kv_heads: P[1], n_q: P[2], n_kv: P[3], d: P[4], scale: F[16], softcap: F[17], q, k, v,
               mask: {kind: P[10], offset: I[12], window: I[13], words: P[11], bits: bits || undefined}};
    const out = [];
    for (const [name, K] of Object.entries(g.kernels)) {
      const why = K.ok(p);
      if (why) { out.push({name, ok: true, said: `not run: it takes ${why}`}); continue; }
      const r = await g.check(name, p);
      out.push({name, ok: r.ok, said: r.ok ? `O matches float64 (largest error ${r.worst.toExponential(1)})` : `WRONG: ${JSON.stringify(r.where)}`});
    }
    return out;
  }

  /* Every kernel against float64 on random problems drawn from a fresh seed (printed), with
   * subgroups and, where the adapter has them, without. Returns {ran, bad, seed, lines}. */
  /* part = [k, n] (the tests): the no-subgroups pass only for the kernels i with i % n == k, the
     others said to wait for another run (each pipeline costs seconds on a CPU's WebGPU) */
  async function gpuCheck(seed, count = 6, dims = [32, 64, 128], part = null) {
    const g = await openGpu();
    if (g.subgroups && !gpuPlain) gpuPlain = await FSGPU.open(navigator.gpu, gpuLoad, {subgroups: false});
    seed = seed === undefined ? Math.floor(Math.random() * 1e6) : seed;
    const lines = [];
    let ran = 0, bad = 0;
    /* the names' column: as wide as the longest name (decode-v2-paged-f16), so that the rows line up */
    const w = Math.max('akunu-softmax'.length, ...Object.keys(g.kernels).map((n) => n.length));
    /* decode-sized and prefill-sized shapes alternate, so that a small count still gives each kernel both */
    const shapes = [{n_q: 1, n_kv: 150, mask: 'causal', n_q_heads: 8, n_kv_heads: 2, split_len: 40}, {n_q: 40, n_kv: 40, mask: 'causal', n_q_heads: 4, n_kv_heads: 2},
                    {n_q: 2, n_kv: 90, mask: 'window', window: 9, n_q_heads: 4, n_kv_heads: 1, softcap: 2.5, split_len: 32},
                    {n_q: 24, n_kv: 24, mask: 'tree'}, {n_q: 37, n_kv: 53, mask: 'none'}, {n_q: 33, n_kv: 70, mask: 'window', window: 9, softcap: 2.5}];
    for (const [label, dev] of [['subgroups', g.subgroups ? g : null], ['no subgroups', g.subgroups ? gpuPlain : g]]) {
      if (!dev) continue;
      for (const [i, name] of Object.keys(dev.kernels).entries()) {
        /* a kernel with no subgroup form is the same code on both devices: checked once */
        if (label === 'no subgroups' && g.subgroups && !g.kernels[name].subgroups) continue;
        if (label === 'no subgroups' && part && i % part[1] !== part[0]) {
          lines.push(`..   ${name.padEnd(w)} ${label.padEnd(13)} not this run (part ${part[0] + 1} of ${part[1]})`);
          continue;
        }
        let n = 0, worst = 0, fail = null, same = 0;
        /* the head sizes asked for; a kernel that takes none of them (prefill versions 3-5 want 64
           or more, decode version 3 on four-lane subgroups 32 or less) gets the first of the
           usual sizes it takes, so that every kernel runs */
        for (const ds of [dims].concat([32, 64, 128, 256].filter((d) => !dims.includes(d)).map((d) => [d]))) {
          for (let c = 0; c < count; c++) {
            const shape = shapes[c % shapes.length];
            for (const d of ds) {
              const p = FSGPU.randomProblem(seed + 97 * c + d, Object.assign({d}, shape));
              if (shape.split_len) p.split_len = shape.split_len;   // several splits at a small size
              if (dev.kernels[name].ok(p)) continue;
              /* nor is one whose subgroup form this adapter cannot take for p (prefill versions 3-5 want
                 16 lanes or more): it ran its plain form above, the same code (and on SwiftShader
                 each pipeline costs seconds to make) */
              if (label === 'no subgroups' && g.subgroups && !g.kernels[name].subgroups(p)) { same++; continue; }
              const r = await dev.check(name, p);
              n++;
              worst = Math.max(worst, r.worst);
              if (!r.ok && !fail) fail = `case ${c}, d = ${d}: ${JSON.stringify(r.where)}`;
            }
          }
          if (n || same) break;
        }
        ran += n;
        if (fail) bad++;
        lines.push(`${fail ? 'FAIL' : n ? 'ok  ' : '--  '} ${name.padEnd(w)} ${label.padEnd(13)} ${n} runs, worst error ${worst.toExponential(1)}${fail ? ' · ' + fail : ''}` +
                   (same ? ` (${same} the same as with subgroups: this adapter's subgroups are too narrow for its subgroup form)` : ''));
        gpuMsg(lines.join('\n'), !bad);
      }
    }
    const sm = await g.checkSoftmax(seed);   /* 003's softmax kernel: rows of scores, not attention */
    ran++;
    if (!sm.ok) bad++;
    lines.push(`${sm.ok ? 'ok  ' : 'FAIL'} ${'akunu-softmax'.padEnd(w)} ${'rows'.padEnd(13)} 7 rows × 300, worst error ${sm.worst.toExponential(1)}`);
    lines.push(bad ? `${bad} kernels failed (seed ${seed})` : `every kernel matches float64 within 1e-4 (seed ${seed})`);
    gpuMsg(lines.join('\n'), !bad);
    return {ran, bad, seed, lines};
  }

  /* three significant digits, whatever the size (a laptop's GB/s, SwiftShader's TFLOP/s) */
  const num = (x) => (x >= 100 ? x.toFixed(0) : x.toPrecision(3));

  /* w: the width of the kernel column (the longest name in the table) */
  function fmtRow(r, w) {
    const heads = r.heads === r.kv_heads ? `${r.heads}` : `${r.heads}/${r.kv_heads}`;
    const head = `${r.kernel.padEnd(w)} ${String(r.n_q).padStart(6)} ${String(r.n_kv).padStart(7)} ${String(r.d).padStart(4)} ${heads.padStart(5)} ${r.causal ? 'causal' : '      '}`;
    if (r.error) return `${head}  ${r.error}`;
    const of = r.kind === 'prefill' ? `${(100 * (r.of_fma || 0)).toFixed(0)} % of FMA` : `${(100 * (r.of_copy || 0)).toFixed(0)} % of copy`;
    return `${head} ${num(r.ms).padStart(8)} ms ${num(r.tflops).padStart(10)} TFLOP/s ${num(r.gbps).padStart(8)} GB/s  ${of}`;
  }

  /* Bars: each prefill row's TFLOP/s against the FMA probe, each decode row's GB/s against the copy probe. */
  function drawChart(res) {
    const c = $('gpu-chart'), x = c.getContext('2d');
    c.hidden = false;
    const rows = res.rows.filter((r) => !r.error);
    const groups = [['prefill', 'TFLOP/s', (r) => r.tflops, res.probe.fma_tflops, 'FMA'], ['decode', 'GB/s', (r) => r.gbps, res.probe.copy_gbps, 'copy']];
    /* one colour a kernel, in the order the kernels first appear in their group; the legend two
     names a line (three overlapped: 'decode-v2-paged-f16' is wider than a third) */
    /* 24 hues, one a kernel (the full plan's decode rows have 21 kernels) */
    const palette = ['#6cb6ff', '#f0b72f', '#57ab5a', '#e5534b', '#d2a8ff', '#9aa0ab', '#39c5cf', '#ff9bce', '#c69026', '#8ddb8c',
                     '#ff7b38', '#316dca', '#986ee2', '#bf4b8a', '#1b7c83', '#b4d353', '#ffffff', '#a0522d', '#7fffd4', '#ffd700',
                     '#4169e1', '#dc143c', '#00ced1', '#9acd32'];
    const namesOf = (kind) => [...new Set(rows.filter((r) => r.kind === kind).map((r) => r.kernel))];
    const legendRows = Math.max(1, ...groups.map(([kind]) => Math.ceil(namesOf(kind).length / 2)));
    /* the bars keep their 160 pixels; the canvas grows with the legend under them */
    const top = 20, h = 160;
    c.height = top + h + 14 * legendRows + 10;
    x.fillStyle = '#111318';
    x.fillRect(0, 0, c.width, c.height);
    const half = c.width / 2;
    groups.forEach(([kind, unit, val, limit, limitName], gi) => {
      const rs = rows.filter((r) => r.kind === kind);
      const names = namesOf(kind), color = (n) => palette[names.indexOf(n) % palette.length];
      const x0 = gi * half + 40, w = half - 60;
      const max = Math.max(limit || 0, ...rs.map(val), 1e-9);
      x.fillStyle = '#e6e6e6';
      x.font = '12px "DejaVu Sans", sans-serif';
      x.fillText(`${kind}: ${unit} (line: this GPU's ${limitName}, ${num(limit)})`, x0 - 30, 14);
      const bw = rs.length ? w / rs.length : w;
      rs.forEach((r, k) => {
        const bh = (val(r) / max) * h;
        x.fillStyle = color(r.kernel);
        x.fillRect(x0 + k * bw + 1, top + h - bh, Math.max(1, bw - 2), bh);
      });
      if (limit) {
        x.strokeStyle = '#ff7b72';
        x.beginPath();
        x.moveTo(x0, top + h - (limit / max) * h);
        x.lineTo(x0 + w, top + h - (limit / max) * h);
        x.stroke();
      }
      names.forEach((n, k) => { x.fillStyle = color(n); x.fillText(n, x0 + (k % 2) * (w / 2), top + h + 14 + 14 * Math.floor(k / 2)); });
    });
  }

  async function gpuBench(plan, seed, d) {
    const g = await openGpu();
    gpuStop = false;
    $('gpu-stop').hidden = false;
    const bar = $('gpu-progress');
    bar.hidden = false;
    seed = seed === undefined ? Math.floor(Math.random() * 1e6) : seed;
    gpuMsg(`measuring this GPU's copy and FMA rates… (plan ${plan}, seed ${seed})`, true);
    const res = await FSGPU.benchmark(g, {plan, seed, d, stop: () => gpuStop, progress: (k, n, r) => {
      bar.max = n;
      bar.value = k;
      gpuMsg(`[${k + 1}/${n}] ${r.kernel} n_q = ${r.n_q}, n_kv = ${r.n_kv}, d = ${r.d}${r.causal ? ', causal' : ''}`, true);
    }});
    res.page = {userAgent: navigator.userAgent, url: location.href.split('#')[0]};
    gpuResults = res;
    $('gpu-json').disabled = false;
    const bad = res.rows.filter((r) => r.check && !r.check.ok).length;
    const w = Math.max('kernel'.length, ...res.rows.map((r) => r.kernel.length));
    $('gpu-table').textContent = `probe: copy ${num(res.probe.copy_gbps)} GB/s (read + write), float32 FMA ${num(res.probe.fma_tflops)} TFLOP/s (${res.probe.clock})\n` +
      `${'kernel'.padEnd(w)}    n_q    n_kv    d heads\n` + res.rows.map((r) => fmtRow(r, w)).join('\n');
    drawChart(res);
    gpuMsg(gpuStop ? `stopped after ${res.rows.length} rows` : bad ? `${bad} rows gave a wrong result (seed ${seed}): see the table` :
           `done: ${res.rows.length} rows, each checked against float64 before it was timed (seed ${seed})`, !bad);
    return res;
  }

  button('b-gpu', () => { toggle('p-gpu'); if (!$('p-gpu').hidden) showGpu(); }, true);
  button('gpu-trace', () => gpuTask(gpuTrace));
  button('gpu-check', () => gpuTask(() => gpuCheck()));
  button('gpu-bench', () => gpuTask(() => gpuBench($('gpu-plan').value)));
  button('gpu-stop', () => { gpuStop = true; });
  button('gpu-trace-dl', () => {
    const r = capture(() => call('web_gpu_save_trace', 'number', ['number', 'string'], [W, '/output/gpu-trace.jsonl']));
    if (r.rc !== 0) { gpuMsg(r.err); return; }
    download(Module.FS.readFile('/output/gpu-trace.jsonl'), `${state ? state.name : 'flashstep'}-gpu.jsonl`, 'application/x-ndjson');
  });
  button('gpu-json', () => {
    if (gpuResults) download(JSON.stringify(gpuResults, null, 1), 'flashstep-webgpu-bench.json', 'application/json');
  });
  for (const b of document.querySelectorAll('.panel .close')) b.addEventListener('click', () => toggle(b.dataset.close, false));
  /* The keyboard. Before SDL's listeners (page.js runs first, and this listens in the capture
   * phase): on the scene, Tab and Shift+Tab are the browser's (SDL would keep them, a trap), and
   * Esc, when nothing is drawn over the scene, leaves it for the Describe button. Anywhere: Esc
   * closes the menu or the open panel; D (outside a text field) opens or closes the description. */
  window.addEventListener('keydown', (e) => {
    const onCanvas = e.target === canvas;
    if (onCanvas && e.key === 'Tab') { e.stopPropagation(); return; }
    if (e.key === 'Escape') {
      if (onCanvas && state && (state.help || state.intro || state.menu || state.predict >= 2)) return;   /* the scene's own */
      e.stopPropagation();
      if ($('bar').classList.contains('open')) { menu(false); $('b-menu').focus(); return; }
      const p = [...document.querySelectorAll('.panel')].find((x) => !x.hidden);
      if (p) toggle(p.id, false);
      else if (onCanvas) { e.preventDefault(); $('b-desc').focus(); }
      return;
    }
    const typing = e.target.closest && e.target.closest('input, textarea, select, [contenteditable]');
    if ((e.key === 'd' || e.key === 'D') && !typing && !e.ctrlKey && !e.metaKey && !e.altKey && !(state && state.predict === 2)) {
      e.stopPropagation();
      e.preventDefault();
      toggle('p-desc');
    }
  }, true);
  /* A panel opens with the focus on its heading: there the arrow keys, Home and End step the scene
   * as they do on the scene itself (a panel's controls keep their own keys). */
  const HEAD_KEYS = { ArrowRight: 'Right', ArrowLeft: 'Left', Home: 'Home', End: 'End' };
  document.addEventListener('keydown', (e) => {
    if (!HEAD_KEYS[e.key] || !e.target.matches || !e.target.matches('.panel h2') || e.ctrlKey || e.altKey || e.metaKey) return;
    e.preventDefault();
    key(HEAD_KEYS[e.key], e.shiftKey);
  });

  /* A horizontal swipe steps (left: on, right: back); a tap reaches the scene as the browser's
   * own click (its mouse events after a tap). The touches stop here, before SDL's listeners on
   * the canvas (registered later, by web_start): SDL would cancel them, which would keep an
   * upright page from scrolling and pinch-zooming where page.css allows it. */
  let touch = null;
  canvas.addEventListener('touchstart', (e) => {
    e.stopImmediatePropagation();
    touch = e.touches.length === 1 ? { x: e.touches[0].clientX, y: e.touches[0].clientY } : null;
  }, { passive: true });
  canvas.addEventListener('touchmove', (e) => e.stopImmediatePropagation(), { passive: true });
  canvas.addEventListener('touchcancel', (e) => { e.stopImmediatePropagation(); touch = null; }, { passive: true });
  canvas.addEventListener('touchend', (e) => {
    e.stopImmediatePropagation();
    if (!touch || e.changedTouches.length !== 1) return;
    const dx = e.changedTouches[0].clientX - touch.x, dy = e.changedTouches[0].clientY - touch.y;
    touch = null;
    if (Math.abs(dx) > 40 && Math.abs(dx) > 2 * Math.abs(dy)) key(dx < 0 ? 'Right' : 'Left');
  }, { passive: true });
  canvas.addEventListener('mousedown', () => canvas.focus());

  /* ---- start ---- */
  function start() {
    const want = parseHash(location.hash);
    const r = canvas.getBoundingClientRect();
    const res = capture(() => call('web_start', 'number', ['string', 'number', 'number', 'number', 'number', 'number'],
      [want.name, want.step, Math.round(r.width), Math.round(r.height), 0, questionsAtStart() ? 1 : 0]));
    W = res.rc;
    $('loading').remove();
    if (!W) {
      document.body.insertAdjacentHTML('beforeend', '<pre class="msg" id="fatal"></pre>');
      $('fatal').textContent = 'flashstep could not start: ' + res.err;
      return;
    }
    notice(res.err);   /* a link to a lesson that does not exist */
    /* reduced motion: nothing moves by itself (a link that starts playing is paused) */
    const still = () => { if (reduceMotion.matches && state && state.playing) key('Space'); };
    if (reduceMotion.addEventListener) reduceMotion.addEventListener('change', still);
    setTimeout(() => { readState(); still(); }, 0);
    window.addEventListener('popstate', followHash);
    window.addEventListener('hashchange', followHash);
    /* input wakes the loop before SDL's listeners see it (capture, on the window) */
    for (const t of ['keydown', 'keyup', 'pointerdown', 'pointerup', 'pointermove', 'wheel', 'touchstart', 'touchend', 'resize', 'focus', 'blur'])
      window.addEventListener(t, wake, { capture: true, passive: true });
    for (const t of ['visibilitychange', 'fullscreenchange'])
      document.addEventListener(t, wake, { passive: true });
    canvas.focus();
  }

  window.Module = {
    canvas,
    print: (s) => { if (captured) captured.out.push(s); else console.log(s); },
    printErr: (s) => { if (captured) captured.err.push(s); else console.warn(s); },
    preRun: [() => { Module.FS.mkdir('/input'); Module.FS.mkdir('/output'); }],
    onRuntimeInitialized: () => setTimeout(start, 0),
    onFrame: frameDone,
    openQuiz: (section) => openQuiz(section),   /* the canvas's L list or Enter at a section's end */
    offerFile: (path) => download(Module.FS.readFile(path), path.split('/').pop(), 'image/png'),
    /* for tests and the curious: what the page shows */
    flashstep: { state: () => W && readState(), key, describe: () => W && JSON.parse(Module.UTF8ToString(call('web_describe', 'number', ['number'], [W]))), open: (n, s) => call('web_open', 'number', ['number', 'string', 'number'], [W, n, s]),
                 problem: (args) => capture(() => call('web_problem', 'number', ['number', 'string'], [W, args])).rc,
                 quizScores: () => quizScores(), quiz: () => quiz && { section: quiz.section, title: quiz.title, seed: quiz.seed, at: quiz.at, right: quiz.right },
                 /* a quiz made for a test (it replaces the one the panel judges) */
                 quizOf: (section, seed) => JSON.parse(Module.UTF8ToString(call('web_quiz', 'number', ['number', 'number', 'number'], [W, section, seed]))),
                 gpu: { open: (load) => openGpu(load).then((g) => g.info), lose: () => gpu && gpu.device.destroy(), device: () => gpu, wgsl, trace: (kernels) => gpuTask(() => gpuTrace(kernels !== false)), check: (seed, count, dims, part) => gpuTask(() => gpuCheck(seed, count, dims, part)),
                        bench: (plan, seed, d) => gpuTask(() => gpuBench(plan, seed, d)), results: () => gpuResults } },
  };
})();
