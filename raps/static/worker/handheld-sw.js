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
const OWN_CACHES = /^raps-(shell|data)-v\d+$/;
// the listeners, shell() and data(): offline-shell.js, appended when served (raps.pages)

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
