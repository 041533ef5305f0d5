/* page.js: the page around the window's C code (src/web/web.c, compiled to flashstep.wasm).
 *
 * The C side draws every scene into the canvas and keeps every piece of state; this file only
 * connects the browser to it: the address bar (#LESSON/STEP, Back and Forward), the buttons,
 * swipes, the lesson list, the claims panel (flashstep verify's own output), one's own problem
 * (files written into the program's file system, then the command line's option parser), and
 * downloads (the JSONL trace, a PNG of the frame). Nothing here computes attention.
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

  const call = (name, ret, types, args) => Module.ccall(name, ret, types, args);

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
    $('where').textContent = s.n > 0 ? `${s.name} · step ${s.step} / ${s.n - 1}` : s.name;
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
    if (!$('p-claims').hidden) showClaims();
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
  function toggle(id, open) {
    const p = $(id);
    const show = open === undefined ? p.hidden : open;
    for (const other of document.querySelectorAll('.panel')) if (other.id !== id) other.hidden = true;
    p.hidden = !show;
    if (show && id === 'p-claims') showClaims(true);
    if (show && id === 'p-lessons') loadLessons();
    if (!show) canvas.focus();
  }

  let claimsFor = null;
  function showClaims(force) {
    if (!state) return;
    const key = state.lesson >= 0 ? state.name : state.link ? '(demo)' : '';
    if (!force && key === claimsFor) return;
    claimsFor = key;
    if (state.lesson < 0) {
      $('claims-text').textContent = state.link ? `The built-in demo ${state.name}: it comes from no document, so no printed numbers to check.`
        : 'Your own problem or a saved trace: no printed numbers to check.';
      return;
    }
    const r = capture(() => call('web_cli', 'number', ['string'], ['verify\n' + key]));
    $('claims-text').textContent = r.out + (r.err ? '\n' + r.err : '');
  }

  function loadLessons() {
    if (lessons.length || !W) return;
    lessons = JSON.parse(Module.UTF8ToString(call('web_lessons', 'number', ['number'], [W])));
    const ol = $('lesson-list');
    ol.textContent = '';
    lessons.forEach((l, i) => {
      const li = document.createElement('li');
      li.dataset.name = l.name;
      const n = document.createElement('div'); n.className = 'name'; n.textContent = `${i + 1}. ${l.name}`;
      const t = document.createElement('div'); t.textContent = l.title;
      const s = document.createElement('div'); s.className = 'src'; s.textContent = l.source;
      li.append(n, t, s);
      li.addEventListener('click', () => {
        const r = capture(() => call('web_open', 'number', ['number', 'string', 'number'], [W, l.name, 0]));
        notice(r.rc !== 0 ? r.err : '');
        toggle('p-lessons', false);
      });
      ol.appendChild(li);
    });
    markLesson();
  }

  function markLesson() {
    if (!state) return;
    for (const li of document.querySelectorAll('#lesson-list li'))
      li.classList.toggle('current', li.dataset.name === state.name);
  }

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
      else if ($('m-' + k).value.trim() !== '') { name = def; bytes = $('m-' + k).value; }
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
    toggle('p-mine', false);
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
    toggle('p-mine', false);
  });

  /* ---- buttons, swipes ---- */
  const button = (id, fn) => $(id).addEventListener('click', (e) => { fn(e); if (!e.target.closest('.panel')) canvas.focus(); });
  button('b-home', () => key('Home'));
  button('b-prev', (e) => key('Left', e.shiftKey));
  button('b-next', (e) => key('Right', e.shiftKey));
  button('b-play', () => key('Space'));
  button('b-slower', () => key('Down'));
  button('b-faster', () => key('Up'));
  button('b-theme', () => key('T'));
  button('b-help', () => key('Question'));
  button('b-lessons', () => toggle('p-lessons'));
  button('b-claims', () => toggle('p-claims'));
  button('b-mine', () => toggle('p-mine'));
  button('b-png', () => call('web_save_png', null, ['number'], [W]));
  button('b-download', () => {
    const r = capture(() => call('web_save_trace', 'number', ['number', 'string'], [W, '/output/trace.jsonl']));
    if (r.rc !== 0) { notice(r.err); return; }
    download(Module.FS.readFile('/output/trace.jsonl'), `${state ? state.name : 'flashstep'}.jsonl`, 'application/x-ndjson');
  });
  for (const b of document.querySelectorAll('.panel .close')) b.addEventListener('click', () => toggle(b.dataset.close, false));
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape') for (const p of document.querySelectorAll('.panel')) if (!p.hidden) toggle(p.id, false); });

  /* A horizontal swipe steps (left: on, right: back); a tap reaches the scene as a click. */
  let touch = null;
  canvas.addEventListener('touchstart', (e) => {
    touch = e.touches.length === 1 ? { x: e.touches[0].clientX, y: e.touches[0].clientY } : null;
  }, { passive: true });
  canvas.addEventListener('touchend', (e) => {
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
    const res = capture(() => call('web_start', 'number', ['string', 'number', 'number', 'number', 'number'],
      [want.name, want.step, Math.round(r.width), Math.round(r.height), 0]));
    W = res.rc;
    $('loading').remove();
    if (!W) {
      document.body.insertAdjacentHTML('beforeend', '<pre class="msg" id="fatal"></pre>');
      $('fatal').textContent = 'flashstep could not start: ' + res.err;
      return;
    }
    notice(res.err);   /* a link to a lesson that does not exist */
    window.addEventListener('popstate', followHash);
    window.addEventListener('hashchange', followHash);
    canvas.focus();
  }

  window.Module = {
    canvas,
    print: (s) => { if (captured) captured.out.push(s); else console.log(s); },
    printErr: (s) => { if (captured) captured.err.push(s); else console.warn(s); },
    preRun: [() => { Module.FS.mkdir('/input'); Module.FS.mkdir('/output'); }],
    onRuntimeInitialized: () => setTimeout(start, 0),
    onFrame: frameDone,
    offerFile: (path) => download(Module.FS.readFile(path), path.split('/').pop(), 'image/png'),
    /* for tests and the curious: what the page shows */
    flashstep: { state: () => W && readState(), key, open: (n, s) => call('web_open', 'number', ['number', 'string', 'number'], [W, n, s]) },
  };
})();
