// The handheld's offline shell: a service worker served by the daemon at /handheld-sw.js
// for the scope /handheld (raps.pages).  A reload with no network shows the page with the
// last state it fetched, an "Offline" banner and the commands still waiting.
//
// What it touches, and what it never does:
// - the page and its files (SHELL_FILES): network first; a saved copy when the network
//   fails or has not answered within SHELL_WAIT_MS;
// - three reads (/api/me without its CSRF token, /api/sessions, the last session summary
//   GET /api/sessions/{id}): network first, always; only when the network fails is the
//   saved copy answered, marked `X-RAPS-Offline: <when it was saved>` (common.js shows
//   the banner);
// - nothing else: commands (every POST), the live stream, the pools, the ID check and
//   everything else are never answered from here.  Where the browser has static routing
//   (InstallEvent.addRoutes) they do not even reach this worker; elsewhere the fetch
//   handler returns without answering, which leaves them to the network as if there
//   were no worker.  So a command's timeout, retry and command id behave exactly as
//   without it.
"use strict";

const SHELL = "raps-shell-v1";
const DATA = "raps-data-v1";
const SHELL_WAIT_MS = 3000;
const SHELL_FILES = [
  "/handheld",
  "/static/public/app.css",
  "/static/handheld.css",
  "/static/common.js",
  "/static/handheld-commands.js",
  "/static/handheld-tickets.js",
  "/static/handheld-cues.js",
  "/static/handheld-extras.js",
  "/static/handheld-claim.js",
  "/static/handheld.js",
];
const SUMMARY = /^\/api\/sessions\/[^/]+$/;
const isData = (path) => path === "/api/me" || path === "/api/sessions" || SUMMARY.test(path);

self.addEventListener("install", (ev) => {
  ev.waitUntil((async () => {
    if (ev.addRoutes) {
      // commands and the stream go straight to the network, without this worker
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
    // this worker's older versions only: the dispatch screen's worker keeps its own
    for (const name of await caches.keys()) {
      if (/^raps-(shell|data)-v\d+$/.test(name) && name !== SHELL && name !== DATA) await caches.delete(name);
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
  else if (isData(url.pathname)) ev.respondWith(data(req, url.pathname));
  // anything else: not answered here
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
    return new Response(await saved.text(), { status: 200, headers });
  }
  if (r.ok && r.type === "basic" && !r.redirected) await save(path, r.clone());
  return r;
}

async function save(path, r) {
  let body;
  try { body = await r.json(); } catch (_) { return; }
  if (path === "/api/me") delete body.csrf_token; // a fresh one comes with the network
  const cache = await caches.open(DATA);
  if (SUMMARY.test(path)) { // only the last session summary is kept
    for (const k of await cache.keys()) {
      const other = new URL(k.url).pathname;
      if (SUMMARY.test(other) && other !== path) await cache.delete(k);
    }
  }
  const headers = { "Content-Type": "application/json", "X-RAPS-Saved-At": new Date().toISOString() };
  await cache.put(path, new Response(JSON.stringify(body), { headers }));
}
