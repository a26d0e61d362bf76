// The dispatch screen's offline shell, the page's side (the worker is
// raps/static/worker/dispatch-sw.js, served at /dispatch-sw.js for the scope /dispatch).
// The screen's winners come only from the live stream, which no worker touches: so the
// page itself keeps the last sessions it showed (in the cache DATA, at most one write
// per SAVE_MS, and every REFRESH_MS while live so the saved time stays true), and a
// reload with no network shows them under the STALE banner with the time they were
// saved.  Sign-in and sign-out delete them with every saved answer (RAPS.forgetSaved).
"use strict";
const DOffline = (() => {
  const DATA = "raps-data-dispatch-v1";
  const STATE = "/dispatch/last-state";
  const SAVE_MS = 500;
  const REFRESH_MS = 5000;
  let timer = null;
  let written = 0;

  // Keep `sessions` (session id -> summary) soon; `wait` ms after the last write at most.
  function keep(sessions, wait = SAVE_MS) {
    if (!window.caches || timer || Date.now() - written < wait - SAVE_MS) return;
    timer = setTimeout(async () => {
      timer = null;
      written = Date.now();
      const body = JSON.stringify({ at: written, sessions: [...sessions.values()] });
      try {
        const cache = await caches.open(DATA);
        await cache.put(STATE, new Response(body, { headers: { "Content-Type": "application/json" } }));
      } catch (_) { /* no cache storage: no offline state */ }
    }, SAVE_MS);
  }

  // The last state kept: { at (ms), sessions: [summary] }, or null.
  async function saved() {
    try {
      const r = await (await caches.open(DATA)).match(STATE);
      return r ? await r.json() : null;
    } catch (_) {
      return null;
    }
  }

  // The worker, once signed in.  When it first takes control the page reads its two
  // reads once more through it, so that a reload with no network has them.  Without
  // service workers (plain HTTP away from this machine) the page works as before.
  function register() {
    const sw = navigator.serviceWorker;
    if (!sw) return;
    sw.addEventListener("controllerchange", () => {
      RAPS.getJSON("/api/me").catch(() => {});
      fetch("/api/floor.svg", { credentials: "same-origin" }).catch(() => {});
    });
    sw.register("/dispatch-sw.js", { scope: "/dispatch", updateViaCache: "none" }).catch(() => {});
  }

  return { keep, saved, register, REFRESH_MS };
})();
