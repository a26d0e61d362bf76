// The handheld's commands.  Every command gets an id once, when the person taps; the
// id is kept in localStorage until the server has answered.  A lost, refused (5xx) or
// stalled answer (no reply within TIMEOUT_MS) re-sends the *same* id, and the server
// answers a repeated id with the first outcome, so a retry never draws twice.  Within
// SLOW_MS of a tap without an answer the tapped button and the banner say "No answer
// yet · retrying".  Only the button of a command in flight is off: a stalled draw never
// holds up "ID seen" for another winner.  And the two-tap confirmation for what cannot
// be undone, which a fast double tap does not pass.
"use strict";
const HHCommands = (() => {
  const { el } = RAPS;
  const $ = (id) => document.getElementById(id);
  const TIMEOUT_MS = 5000; // an attempt with no full answer by then is sent again
  const SLOW_MS = 1500; // "no answer yet" shows by then (the spec: within 2 s)
  const CONFIRM_GAP_MS = 400; // a second tap sooner than this is no confirmation
  const CONFIRM_FOR_MS = 4000; // an armed button disarms after this

  const sameId = (a, b) => a.body.command_id === b.body.command_id;

  // host: { me, buttons: RAPS.commandButtons(), onAnswer(cmd, data),
  //         onRefused(cmd, status, data), after(cmd) }
  function create(host) {
    const key = `raps.pending.${host.me.user}`;
    const out = new Map(); // command id -> { cmd, button, why }
    const wakers = new Set();

    function stored() {
      let v = null;
      try { v = JSON.parse(localStorage.getItem(key) || "null"); } catch (_) { v = null; }
      if (!v) return [];
      return Array.isArray(v) ? v : [v]; // an older page kept a single command
    }

    function store(list) {
      if (list.length) localStorage.setItem(key, JSON.stringify(list));
      else localStorage.removeItem(key);
    }

    const remember = (cmd) => store([...stored().filter((c) => !sameId(c, cmd)), cmd]);
    const forget = (cmd) => store(stored().filter((c) => !sameId(c, cmd)));

    // the pause between attempts; "Retry now" cuts every one short
    const sleep = (ms) => new Promise((resolve) => {
      const wake = () => { clearTimeout(timer); wakers.delete(wake); resolve(); };
      const timer = setTimeout(wake, ms);
      wakers.add(wake);
    });

    function retryNow() {
      for (const wake of [...wakers]) wake();
    }

    function banner() {
      const waiting = [...out.values()].filter((o) => o.why);
      $("net-banner").hidden = waiting.length === 0;
      if (!waiting.length) return;
      const why = waiting[0].why;
      const labels = waiting.map((o) => `"${o.cmd.label}"`).join(", ");
      $("net-text").textContent = `${why[0].toUpperCase()}${why.slice(1)}: retrying ${labels} (it will not be done twice)`;
    }

    function mark(o, why) {
      o.why = why;
      const b = o.button;
      if (b && b.isConnected) {
        b.classList.add("waiting");
        let note = b.querySelector(".cmd-wait");
        if (!note) {
          note = el("span", { class: "cmd-wait" });
          b.append(note);
        }
        note.textContent = "No answer yet · retrying";
      }
      banner();
    }

    function unmark(o) {
      const b = o.button;
      if (!b) return;
      b.classList.remove("waiting");
      const note = b.querySelector(".cmd-wait");
      if (note) note.remove();
      host.buttons.inFlight(b, false);
    }

    async function send(cmd, button) {
      const id = cmd.body.command_id;
      if (out.has(id)) return null; // already on its way
      const o = { cmd, button: button || null, why: "" };
      out.set(id, o);
      if (o.button) host.buttons.inFlight(o.button, true);
      try {
        const url = `/api/sessions/${encodeURIComponent(cmd.sid)}/${cmd.path}`;
        const got = await RAPS.deliver(url, cmd.body, (why) => mark(o, why), sleep, {
          timeoutMs: TIMEOUT_MS, slowMs: SLOW_MS, onSlow: () => mark(o, "no answer yet"),
        });
        if (got === null) return null; // signed out: the command stays stored
        forget(cmd);
        out.delete(id);
        unmark(o);
        banner();
        if (!got.ok) host.onRefused(cmd, got.status, got.data);
        else host.onAnswer(cmd, got.data);
        await host.after(cmd);
        return got.data;
      } finally {
        if (out.get(id) === o) out.delete(id);
        unmark(o);
        banner();
      }
    }

    // A tap: a new command for session `sid`, with `button` off until it is answered.
    function command(sid, path, body, label, button) {
      if (!sid || (button && button.dataset.flight === "1")) return Promise.resolve(null);
      const cmd = { sid, path, label, body: { ...body, command_id: RAPS.uuid() } };
      remember(cmd);
      return send(cmd, button);
    }

    // The same command again, changed (an admin's override reason): a stored one.
    function resend(cmd) {
      remember(cmd);
      return send(cmd, null);
    }

    // What a lost connection, a reload or a sign-in cut off, for session `sid`.
    function resume(sid) {
      for (const cmd of stored()) if (cmd.sid === sid) send(cmd, null);
    }

    return {
      command, resend, resume, retryNow, stored,
      inFlight: (path) => [...out.values()].some((o) => o.cmd.path === path),
    };
  }

  // Two taps for what cannot be undone.  The first arms the button: it turns amber and
  // says "Confirm in a moment…"; only a tap CONFIRM_GAP_MS or more later, once it says
  // `armedText`, confirms.  A fast double tap (120-150 ms) is one tap.  Disarms by itself.
  function confirmTap(button, armedText, action) {
    const idle = button.textContent;
    let timers = [];
    const set = (state, text) => {
      button.dataset.armed = state;
      button.textContent = text;
      button.classList.toggle("armed", state !== "0");
      button.classList.toggle("arming", state === "wait");
    };
    const disarm = () => {
      timers.forEach(clearTimeout);
      timers = [];
      set("0", idle);
    };
    button.addEventListener("click", () => {
      const state = button.dataset.armed || "0";
      if (state === "1") {
        disarm();
        action();
        return;
      }
      if (state === "wait") return; // too soon after the first tap: no confirmation
      set("wait", "Confirm in a moment…");
      timers = [setTimeout(() => set("1", armedText), CONFIRM_GAP_MS), setTimeout(disarm, CONFIRM_FOR_MS)];
    });
  }

  return { create, confirmTap, TIMEOUT_MS, SLOW_MS, CONFIRM_GAP_MS };
})();
