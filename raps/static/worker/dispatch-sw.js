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
const isData = (path) => READS.includes(path);
const OWN_CACHES = /^raps-(dispatch-shell|data-dispatch)-v\d+$/;
// the listeners, shell() and data(): offline-shell.js, appended when served (raps.pages)

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
