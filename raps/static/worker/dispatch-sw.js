// The dispatch screen's offline shell: a service worker served by the daemon at
// /dispatch-sw.js for the scope /dispatch (raps.pages).  A reload with no network shows
// the page with the last state it had, under its STALE banner, and the page keeps
// trying the live stream until the network is back.
//
// What it touches, and what it never does (as the handheld's worker, handheld-sw.js):
// - the page and its files (SHELL_FILES): network first; a saved copy when the network
//   fails or has not answered within SHELL_WAIT_MS;
// - two reads, /api/me (without its CSRF token) and the floor map /api/floor.svg:
//   network first, always; only when the network fails is the saved copy answered,
//   marked `X-RAPS-Offline: <when it was saved>`;
// - nothing else: the live stream (the screen's only source of winners) and every POST
//   (En route) go to the network, through static routing where the browser has it, and
//   the fetch handler leaves them unanswered otherwise.
// The last state itself is the page's: dispatch.js keeps the last sessions it showed in
// the cache DATA under STATE (deleted with the other saved answers at sign-in and
// sign-out, common.js forgetSaved).
"use strict";

const SHELL = "raps-dispatch-shell-v1";
const DATA = "raps-data-dispatch-v1";
const SHELL_WAIT_MS = 3000;
const SHELL_FILES = [
  "/dispatch",
  "/static/public/app.css",
  "/static/dispatch.css",
  "/static/common.js",
  "/static/dispatch-map.js",
  "/static/dispatch-claim.js",
  "/static/dispatch-fit.js",
  "/static/dispatch-offline.js",
  "/static/dispatch.js",
];
const READS = ["/api/me", "/api/floor.svg"];

self.addEventListener("install", (ev) => {
  ev.waitUntil((async () => {
    if (ev.addRoutes) {
      await ev.addRoutes([
        { condition: { requestMethod: "POST" }, source: "network" },
        { condition: { urlPattern: { pathname: "/api/stream" } }, source: "network" },
      ]).catch(() => { /* the fetch handler leaves them alone too */ });
    }
    const cache = await caches.open(SHELL);
    await cache.addAll(SHELL_FILES.map((path) => new Request(path, { cache: "no-store" })));
    await self.skipWaiting();
  })());
});

self.addEventListener("activate", (ev) => {
  ev.waitUntil((async () => {
    // this worker's older versions only: the handheld's worker keeps its own
    for (const name of await caches.keys()) {
      if (/^raps-(dispatch-shell|data-dispatch)-v\d+$/.test(name) && name !== SHELL && name !== DATA) await caches.delete(name);
    }
    await self.clients.claim();
  })());
});

self.addEventListener("fetch", (ev) => {
  const req = ev.request;
  if (req.method !== "GET") return; // a command: the network's alone
  const url = new URL(req.url);
  if (url.origin !== self.location.origin) return;
  if (SHELL_FILES.includes(url.pathname)) ev.respondWith(shell(req, url.pathname));
  else if (READS.includes(url.pathname)) ev.respondWith(data(req, url.pathname));
  // anything else (the stream above all): not answered here
});

// A page file: the network's answer (kept), or the saved copy when there is none in time.
async function shell(req, path) {
  const cache = await caches.open(SHELL);
  const network = fetch(req).then(async (r) => {
    if (r.ok && r.type === "basic" && !r.redirected) await cache.put(path, r.clone());
    return r;
  });
  const late = new Promise((resolve) => setTimeout(resolve, SHELL_WAIT_MS, null));
  const first = await Promise.race([network.catch(() => null), late]);
  if (first) return first;
  const saved = await cache.match(path);
  return saved || network; // nothing saved: wait for the network after all
}

// A read: always the network's answer when there is one; the saved copy only offline.
async function data(req, path) {
  let r;
  try {
    r = await fetch(req);
  } catch (e) {
    const saved = await (await caches.open(DATA)).match(path);
    if (!saved) throw e;
    const headers = new Headers(saved.headers);
    headers.set("X-RAPS-Offline", headers.get("X-RAPS-Saved-At") || "");
    return new Response(await saved.blob(), { status: 200, headers });
  }
  if (r.ok && r.type === "basic" && !r.redirected) await save(path, r.clone());
  return r;
}

async function save(path, r) {
  let body;
  const type = r.headers.get("Content-Type") || "application/octet-stream";
  if (path === "/api/me") {
    try { body = await r.json(); } catch (_) { return; }
    delete body.csrf_token; // a fresh one comes with the network
    body = JSON.stringify(body);
  } else {
    body = await r.blob();
  }
  const headers = { "Content-Type": type, "X-RAPS-Saved-At": new Date().toISOString() };
  await (await caches.open(DATA)).put(path, new Response(body, { headers }));
}
