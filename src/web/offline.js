/* offline.js: registers the page's service worker (sw.js) and tells the reader, in the bar's
 * #notice, when the page is saved for offline use and when a new version is ready.
 *
 * It waits for the page's first frame before registering, so that on a first visit the worker's
 * copies of flashstep.wasm and flashstep.data are revalidated against the browser's HTTP cache
 * (which the page has just filled) instead of downloaded a second time. A new version installs in
 * the background while the old one keeps serving; it takes over
 *   - at once, if this is the only tab of the page and the reader has not touched it yet: the
 *     page was only just opened (a reload, or a tap on the home-screen icon), and the link holds
 *     the lesson and the step, so reloading loses nothing;
 *   - when the reader clicks the notice;
 *   - otherwise when every tab of the old version is closed.
 * When the version under a page changes, the page reloads, so that no page runs files of two
 * builds. Where service workers do not run (file://, a browser without them) this does nothing.
 * docs/web.md, "Offline and on a phone's home screen", says why it is built this way.
 */
'use strict';
(function () {
  if (!('serviceWorker' in navigator) || !window.isSecureContext || !/^https?:$/.test(location.protocol)) return;
  const sw = navigator.serviceWorker;
  const hadController = !!sw.controller;   /* this page came from a worker's cache */
  let touched = false, reloading = false;
  for (const t of ['keydown', 'pointerdown', 'touchstart', 'wheel'])
    addEventListener(t, () => { touched = true; }, { capture: true, passive: true });

  sw.addEventListener('controllerchange', () => {
    if (!hadController || reloading) return;
    reloading = true;
    location.reload();
  });

  /* Our words after whatever the bar already says (page.js writes #notice's text itself). */
  function say(text, colour, click, title) {
    const n = document.getElementById('notice');
    if (!n) return;
    const old = n.querySelector('.fs-offline');
    if (old) old.remove();
    const s = document.createElement('span');
    s.className = 'fs-offline';
    s.textContent = text;
    s.style.color = colour;
    if (click) {
      s.style.cursor = 'pointer';
      s.style.textDecoration = 'underline dotted';
      s.addEventListener('click', click);
    }
    if (n.textContent) n.append(' · ');
    n.append(s);
    n.title = title || n.textContent;
    if (!click) setTimeout(() => { if (s.isConnected) s.remove(); }, 6000);
  }

  function firstFrame() {
    const t0 = Date.now();
    return new Promise((resolve) => (function poll() {
      if ((window.Module && Module.firstFrameMs) || Date.now() - t0 > 60000) resolve();
      else setTimeout(poll, 100);
    })());
  }

  firstFrame().then(() => sw.register('sw.js', { updateViaCache: 'none' })).then((reg) => {
    function installed() {
      const w = reg.waiting;
      if (!w || !reg.active) return;   /* nothing waiting, or the first install (it activates at once) */
      if (!touched) w.postMessage('take-over-if-alone');
      say('new version: reload', 'var(--accent)', () => {
        if (reg.waiting) reg.waiting.postMessage('take-over');
      }, 'A new version of flashstep is installed: reload, or click here, to use it ' +
         '(every open tab of the page reloads)');
    }
    function follow(w) {
      if (!w) return;
      w.addEventListener('statechange', () => {
        if (w.state === 'installed') installed();
        else if (w.state === 'activated' && !hadController) say('saved for offline use', 'var(--dim)');
      });
    }
    follow(reg.installing);
    reg.addEventListener('updatefound', () => follow(reg.installing));
    installed();
    /* Ask the server for a new sw.js on every load (a few kilobytes) rather than whenever the
     * browser's own check after a navigation runs; offline, the question just fails. */
    if (hadController) reg.update().catch(() => {});
  }).catch((err) => console.warn(`flashstep: no offline copy (${err.message})`));
})();
