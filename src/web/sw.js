/* sw.js: the page's service worker, so that a second visit needs no network (docs/web.md,
 * "Offline and on a phone's home screen").
 *
 * This file is a template: make web runs src/web/stamp.py, which writes build/web/sw.js with the
 * two lines below filled in, VERSION (a hash of every file of the build and of this file) and
 * FILES (every file of the build, each with the SHA-256 of its contents). Its life:
 *
 *   install   fetch every file of FILES (revalidated with the server, not taken from the HTTP
 *             cache unchecked; a file whose revalidated copy fails its SHA-256 is fetched once
 *             more bypassing the HTTP cache), each checked against its SHA-256 (a server or proxy
 *             still giving an older file fails the install, and the worker that was there stays),
 *             into one cache named for this version. Nothing is served from it until all are in.
 *   waiting   an update (a worker was already active) waits until no page of the old version is
 *             open, or until a page asks it to take over (offline.js: when that page is the only
 *             one and the reader has not touched it yet, or when the reader clicks the notice).
 *   activate  delete the caches of every other version of this page (same scope).
 *   fetch     a file of the build is served from this version's cache only, so flashstep.js,
 *             flashstep.wasm and flashstep.data always come from the same build; a page load
 *             of the scope's folder gets index.html. Anything else goes to the network as if
 *             there were no worker.
 */
'use strict';
const VERSION = 'dev';
const FILES = {};

const SCOPE = new URL('./', self.location.href);            /* e.g. https://host/flashstep/ */
const PREFIX = `flashstep ${SCOPE.pathname} `;               /* one page's caches, whatever the version */
const CACHE = PREFIX + VERSION;

self.addEventListener('install', (e) => e.waitUntil(precache()));

async function precache() {
  const cache = await caches.open(CACHE);
  try {
    await Promise.all(Object.entries(FILES).map(async ([path, integrity]) => {
      const url = new URL(path, SCOPE).href;
      let r;
      try {
        r = await fetch(url, { cache: 'no-cache', integrity });
      } catch (err) {
        /* The HTTP cache's copy, revalidated, did not match: a validator that looked current (a
         * Last-Modified that went back in time with a deploy, say). Once more from the server. */
        r = await fetch(url, { cache: 'reload', integrity });
      }
      if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
      await cache.put(url, r);
    }));
  } catch (err) {
    await caches.delete(CACHE);   /* no half-filled cache stays behind; the install fails */
    throw err;
  }
}

self.addEventListener('activate', (e) => e.waitUntil((async () => {
  for (const name of await caches.keys())
    if (name.startsWith(PREFIX) && name !== CACHE) await caches.delete(name);
})()));

self.addEventListener('fetch', (e) => {
  const req = e.request;
  if (req.method !== 'GET') return;
  const url = new URL(req.url);
  if (url.origin !== SCOPE.origin || !url.pathname.startsWith(SCOPE.pathname)) return;
  let path;
  try { path = decodeURIComponent(url.pathname.slice(SCOPE.pathname.length)); } catch { return; }
  if (path === '' && req.mode === 'navigate') path = 'index.html';
  if (!Object.prototype.hasOwnProperty.call(FILES, path)) return;
  e.respondWith((async () => {
    const hit = await (await caches.open(CACHE)).match(new URL(path, SCOPE).href);
    return hit || fetch(req);   /* only if the browser dropped part of the cache */
  })());
});

/* The pages' questions (offline.js). */
self.addEventListener('message', (e) => {
  if (e.data === 'version') {
    e.source.postMessage({ version: VERSION });
  } else if (e.data === 'take-over') {
    e.waitUntil(self.skipWaiting());
  } else if (e.data === 'take-over-if-alone') {
    e.waitUntil(self.clients.matchAll({ type: 'window', includeUncontrolled: true }).then((pages) => {
      if (pages.filter((c) => c.url.startsWith(SCOPE.href)).length <= 1) return self.skipWaiting();
    }));
  }
});
