// RAPS pages: shared helpers (no framework, no build step, nothing from a CDN).
// Data is put into the page with textContent only, never as HTML.
"use strict";

const RAPS = (() => {
  let me = null;
  let offsetMs = 0; // server clock minus this device's clock

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (k === "dataset") Object.assign(node.dataset, v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  let leaving = false; // signing out: the sign-in page, without a way back

  function toLogin() {
    if (leaving) return; // a 401 of a read in flight must not turn a sign-out into "next"
    const next = location.pathname + location.hash;
    location.assign("/login?next=" + encodeURIComponent(next));
  }

  // An answer that is a refusal: its HTTP status and the server's `detail`.
  class HttpError extends Error {
    constructor(status, detail) {
      super(detail);
      this.status = status;
    }
  }

  async function fetchJSON(path, signal) {
    const r = await fetch(path, { credentials: "same-origin", signal, headers: { Accept: "application/json" } });
    noteAnswer(r);
    if (r.status === 401) {
      toLogin();
      throw new HttpError(401, "signed out");
    }
    if (!r.ok) {
      let detail = r.statusText;
      try { detail = (await r.json()).detail || detail; } catch (_) { /* not JSON */ }
      throw new HttpError(r.status, detail);
    }
    return r.json();
  }

  // A pause that `signal` cuts short.
  function pause(ms, signal) {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      if (signal) signal.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
    });
  }

  // A GET of JSON.  Without options: one attempt, as fetch does.  With `timeoutMs` an
  // attempt with no full answer by then is abandoned (a stalled connection never errors
  // by itself); with `retry` a lost, stalled or 5xx answer is asked for again after a
  // growing pause (0.5 s up to 5 s) until one comes: `onSlow(why)` is called once an
  // attempt has had no answer for `slowMs` (default 1.5 s), `onRetry(why)` before each
  // new attempt. A refusal (4xx) rejects with its detail; `signal` cancels (rejects
  // with an error named "AbortError").
  async function getJSON(path, opts = {}) {
    const { timeoutMs = 0, slowMs = 1500, retry = false, onSlow = null, onRetry = null, signal = null } = opts;
    let delay = 500;
    for (;;) {
      if (signal && signal.aborted) throw new DOMException("cancelled", "AbortError");
      const ctl = new AbortController();
      const cancel = () => ctl.abort();
      if (signal) signal.addEventListener("abort", cancel, { once: true });
      const limit = timeoutMs ? setTimeout(cancel, timeoutMs) : null;
      const slow = onSlow ? setTimeout(() => onSlow("no answer yet"), slowMs) : null;
      let why = "no connection";
      try {
        return await fetchJSON(path, ctl.signal);
      } catch (e) {
        if (signal && signal.aborted) throw new DOMException("cancelled", "AbortError");
        const refused = e instanceof HttpError;
        if (refused && e.status < 500) throw e;
        if (refused) why = e.message || `server error ${e.status}`;
        else if (ctl.signal.aborted) why = "no answer yet";
        if (!retry) throw refused || !ctl.signal.aborted ? e : new Error(`no answer within ${timeoutMs / 1000} s`);
      } finally {
        clearTimeout(limit);
        clearTimeout(slow);
        if (signal) signal.removeEventListener("abort", cancel);
      }
      if (onRetry) onRetry(why);
      await pause(delay, signal);
      delay = Math.min(delay * 2, 5000);
    }
  }

  // A POST with the CSRF token. Network failures reject; HTTP answers resolve.
  function post(path, body, signal) {
    return fetch(path, {
      method: "POST",
      credentials: "same-origin",
      signal,
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json",
        "X-CSRF-Token": me ? me.csrf_token || "" : "",
      },
      body: JSON.stringify(body || {}),
    });
  }

  async function loadMe(opts) {
    me = await getJSON("/api/me", opts);
    if (offlineSince === null) syncClock(me.now); // a saved answer's clock is an old one
    else showOffline(offlineSince); // in the site's time zone, now that it is known
    return me;
  }

  // An answer marked X-RAPS-Offline is the handheld's service worker's saved copy (the
  // network failed): the header says when it was saved, and the page's #offline-banner
  // says so until a fresh answer (or the live stream) arrives.
  let offlineSince = null;

  function noteAnswer(r) {
    const saved = r.headers.get("X-RAPS-Offline");
    offlineSince = saved;
    showOffline(saved);
  }

  function showOffline(saved) {
    const b = document.getElementById("offline-banner");
    if (!b) return;
    b.hidden = saved === null;
    if (saved === null) return;
    const tz = me ? me.site.timezone : undefined; // the site's time, once known
    const at = saved ? new Date(saved).toLocaleTimeString("en-GB", { hour12: false, timeZone: tz }) : "";
    b.textContent = "Offline · " + (at ? `the last state, saved at ${at}` : "no network")
      + " · commands wait for the network";
  }

  function syncClock(serverIso) {
    const t = Date.parse(serverIso);
    if (!Number.isNaN(t)) offsetMs = t - Date.now();
  }

  function now() {
    return Date.now() + offsetMs;
  }

  function secondsLeft(deadlineIso) {
    return Math.max(0, (Date.parse(deadlineIso) - now()) / 1000);
  }

  // Nothing of a sign-in stays on the device: the offline shell's saved answers go.
  async function forgetSaved() {
    try {
      if (window.caches) for (const k of await caches.keys()) if (k.startsWith("raps-data")) await caches.delete(k);
    } catch (_) { /* no cache storage */ }
  }

  async function signOut() {
    leaving = true;
    await forgetSaved();
    try { await post("/logout", {}); } catch (_) { /* leaving anyway */ }
    location.assign("/login");
  }

  function uuid() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    const b = crypto.getRandomValues(new Uint8Array(16));
    return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  }

  function where(loc) {
    if (!loc) return ["", ""];
    if (loc.kind === "slots") return [loc.area, `Bank ${loc.bank} · Machine ${loc.number}`];
    return [loc.area, `Table ${loc.table} · Seat ${loc.seat}`];
  }

  const KIND = { slots: "Slot", tables: "Table" };
  const PRIZE = { cash: "cash", plus_play: "+Play", voucher: "voucher" };

  function money(minor) {
    const rands = minor / 100;
    return "R" + rands.toLocaleString("en-ZA", { minimumFractionDigits: rands % 1 ? 2 : 0, maximumFractionDigits: 2 });
  }

  // Minor units as the prize letters print them (the server's money()): 250000 ->
  // "R2,500.00", always with cents (the handheld's envelopes use money() above).
  function letterMoney(minor) {
    const whole = Math.floor(Math.abs(minor) / 100);
    const cents = String(Math.abs(minor) % 100).padStart(2, "0");
    return `${minor < 0 ? "-" : ""}R${whole.toLocaleString("en-US")}.${cents}`;
  }

  // The page's #toast: a short line, a refusal ("bad") stays up longer.
  function toast(text, bad, badMs = 7000) {
    const t = document.getElementById("toast");
    t.textContent = text;
    t.className = "toast" + (bad ? " bad" : "");
    t.hidden = false;
    clearTimeout(toast.timer);
    toast.timer = setTimeout(() => { t.hidden = true; }, bad ? badMs : 3500);
  }

  function outcome(p) {
    switch (p.state) {
      case "pending": return "pending";
      case "verified": return "verified (ID seen)";
      case "awarded": return `awarded ${money(p.prize.amount)} ${PRIZE[p.prize.kind] || p.prize.kind}, envelope ${p.prize.envelope}`;
      case "no_show": return "no-show";
      case "void": return `void: ${p.void_reason || ""}`;
      default: return p.state;
    }
  }

  function clockText(tz) {
    try {
      return new Date(now()).toLocaleTimeString("en-GB", { timeZone: tz, hour12: false });
    } catch (_) {
      return new Date(now()).toLocaleTimeString("en-GB", { hour12: false });
    }
  }

  // A server-sent event stream that reconnects by itself, also after the server
  // refused it (EventSource alone gives up then) or went quiet.  The server sends a
  // `ping` every second: after `staleMs` without any event the stream is out of date
  // (a stalled connection sends nothing and raises no error), so `status(false)` is
  // called and a fresh connection is opened; `status(true)` once data flows again.
  function liveStream(url, handlers, staleMs = 2500) {
    let es = null;
    let lastSeen = Date.now();
    let stopped = false;
    let retry = null;
    let up = false;
    const status = (value) => { if (value !== up) { up = value; handlers.status(value); } };
    const seen = () => { lastSeen = Date.now(); status(true); };
    function open() {
      if (stopped) return;
      lastSeen = Date.now();
      es = new EventSource(url);
      es.addEventListener("summary", (ev) => {
        seen();
        if (offlineSince !== null) { offlineSince = null; showOffline(null); } // fresh again
        const data = JSON.parse(ev.data);
        syncClock(data.now);
        handlers.summary(data.session);
      });
      es.addEventListener("ping", (ev) => {
        seen();
        try { syncClock(JSON.parse(ev.data).now); } catch (_) { /* keep the old offset */ }
      });
      es.addEventListener("error", () => {
        status(false);
        if (es && es.readyState === EventSource.CLOSED) {
          es = null;
          // refused (signed out?) or gone: check who we are, then try again
          fetch("/api/me", { credentials: "same-origin" })
            .then((r) => { if (r.status === 401) toLogin(); })
            .catch(() => {});
          clearTimeout(retry);
          retry = setTimeout(open, 1500);
        }
      });
    }
    const watchdog = setInterval(() => {
      if (es && Date.now() - lastSeen > staleMs) { // a heartbeat missed: out of date
        es.close();
        es = null;
        status(false);
        open();
      }
    }, 250);
    open();
    return {
      close() {
        stopped = true;
        clearInterval(watchdog);
        clearTimeout(retry);
        if (es) es.close();
      },
      get lastSeen() { return lastSeen; },
    };
  }

  // One command delivered once: after a lost reply or a 5xx the same body (the same
  // command id) is sent again, and the server answers a retry with its first result; a
  // 401 goes to the sign-in page (the page keeps the command and sends it after), a CSRF
  // 403 takes the new token and sends again. Resolves with { ok, status, data } once the
  // server answered (a refusal included), or null when signed out. `onRetry(why)` shows
  // why it is waiting; `wait(ms)` is the page's sleep (a "retry now" button may cut it).
  // With `opts.timeoutMs` an attempt with no full answer by then is abandoned and sent
  // again (a stalled connection never errors by itself); `opts.onSlow()` is called when
  // an attempt has had no answer for `opts.slowMs` (default 1.5 s).
  async function deliver(url, body, onRetry, wait, opts = {}) {
    const timeoutMs = opts.timeoutMs || 0;
    let delay = 500;
    for (;;) {
      let r = null;
      let data = {};
      let why = "no connection";
      const ctl = timeoutMs ? new AbortController() : null;
      const limit = ctl ? setTimeout(() => ctl.abort(), timeoutMs) : null;
      const slow = opts.onSlow ? setTimeout(opts.onSlow, opts.slowMs || 1500) : null;
      try {
        r = await post(url, body, ctl ? ctl.signal : undefined);
        try { data = await r.json(); } catch (_) {
          data = {};
          if (ctl && ctl.signal.aborted) throw new Error("no answer"); // the body stalled
        }
      } catch (_) {
        r = null; // no answer: the command may or may not have arrived
        if (ctl && ctl.signal.aborted) why = "no answer yet";
      } finally {
        clearTimeout(limit);
        clearTimeout(slow);
      }
      if (r && r.status === 401) {
        toLogin();
        return null;
      }
      if (r && r.status === 403 && String(data.detail || "").includes("CSRF")) {
        await loadMe(); // signed in again elsewhere: the new token, the same command
        continue;
      }
      if (r && r.status < 500) return { ok: r.ok, status: r.status, data };
      onRetry(r ? (typeof data.detail === "string" ? data.detail : `server error ${r.status}`) : why);
      await wait(delay);
      delay = Math.min(delay * 2, 5000);
    }
  }

  // The command buttons of a page (data-cmd): all off while one command is in flight,
  // and each may also be blocked on its own (a draw whose pool is empty, say).
  // `inFlight(button, on)` turns off only the button whose command is out (the page
  // may then run other commands beside it).
  function commandButtons() {
    let busy = false;
    const refresh = (b) => { b.disabled = busy || b.dataset.blocked === "1" || b.dataset.flight === "1"; };
    return {
      button(attrs, ...children) {
        const b = el("button", { type: "button", ...attrs, dataset: { cmd: "1", ...(attrs.dataset || {}) } }, ...children);
        refresh(b);
        return b;
      },
      setBlocked(button, blocked) {
        button.dataset.blocked = blocked ? "1" : "0";
        refresh(button);
      },
      inFlight(button, on) {
        button.dataset.flight = on ? "1" : "0";
        button.setAttribute("aria-busy", on ? "true" : "false");
        refresh(button);
      },
      setBusy(value) {
        busy = value;
        for (const b of document.querySelectorAll("button[data-cmd]")) refresh(b);
      },
      get busy() { return busy; },
    };
  }

  return {
    el, getJSON, post, loadMe, syncClock, now, secondsLeft, signOut, uuid, where, KIND,
    PRIZE, money, outcome, clockText, liveStream, toLogin, commandButtons, deliver,
    letterMoney, toast, HttpError, forgetSaved,
    get me() { return me; },
    get offline() { return offlineSince !== null; },
  };
})();
