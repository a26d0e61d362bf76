// The security dispatch screen: pending winners, where they are, how long they have.
// Updates arrive over server-sent events the moment the journal grows, with a heartbeat
// every second: when one is missed the screen says STALE (how old it is) and reconnects.
// Every pending winner stays on the screen: the cards get denser, then go into columns,
// and only past that does the list end in "+N more" (soonest deadlines always shown);
// the fitting is dispatch-fit.js's.  With several sessions open each has a letter (A, B,
// ...) and its picks are "#A1", "#B1" on the cards, the ESCALATE bar, the map and the
// history, so two sessions' pick 1 never look the same.
"use strict";
(() => {
  const { el } = RAPS;
  const $ = (id) => document.getElementById(id);
  const sessions = new Map(); // session id -> view
  let me = null;
  let up = false;
  let stream = null;
  let lastData = Date.now(); // when the screen last had fresh data (the STALE banner's age)
  let restored = false; // showing the saved last state (an offline reload)
  const letters = new Map(); // open session id -> its letter, kept while it stays open

  function thresholds(claim) {
    return { warn: Math.min(30, claim / 3), critical: Math.min(10, claim / 6) };
  }

  function level(p, claim) {
    if (!p.deadline) return ""; // the countdown waits for "absent"
    const left = RAPS.secondsLeft(p.deadline);
    const t = thresholds(claim);
    if (left <= t.critical) return "critical";
    if (left <= t.warn) return "warn";
    return "";
  }

  function activeSessions() {
    return [...sessions.values()].filter((s) => s.state === "open");
  }

  function historySession() {
    const open = activeSessions();
    if (open.length) return open;
    const closed = [...sessions.values()].filter((s) => s.state === "closed" && s.picks.length);
    closed.sort((a, b) => (a.starts || "").localeCompare(b.starts || ""));
    return closed.length ? [closed[closed.length - 1]] : [];
  }

  // Each open session's letter: given in start order when a session is first seen
  // open, kept while it stays open (a closing session frees its letter).
  function assignLetters() {
    const open = activeSessions().sort((a, b) => (a.starts || "").localeCompare(b.starts || "") || a.session_id.localeCompare(b.session_id));
    const ids = new Set(open.map((s) => s.session_id));
    for (const id of [...letters.keys()]) if (!ids.has(id)) letters.delete(id);
    for (const s of open) {
      if (letters.has(s.session_id)) continue;
      const used = new Set(letters.values());
      let i = 0;
      while (used.has(letterOf(i))) i++;
      letters.set(s.session_id, letterOf(i));
    }
  }

  const letterOf = (i) => (i < 26 ? String.fromCharCode(65 + i) : `${String.fromCharCode(65 + (i % 26))}${Math.floor(i / 26)}`);

  // "A" when several sessions are open, "" when one is
  const keyOf = (s) => (letters.size > 1 && letters.get(s.session_id)) || "";
  const label = (s, p) => `#${keyOf(s)}${p.pick}`;

  function pendingPicks() {
    const out = [];
    for (const s of activeSessions()) {
      for (const p of s.picks) {
        if (p.state === "pending") out.push({ s, p });
      }
    }
    out.sort((a, b) => DClaim.sortKey(a.p).localeCompare(DClaim.sortKey(b.p)));
    return out;
  }

  // ------------------------------------------------------------------ the map
  // (dispatch-map.js: labels sized in screen pixels, rings clear of the area names)

  function renderMarks() {
    DMap.render(pendingPicks().map(({ s, p }) => ({ s, p, label: label(s, p).slice(1), critical: level(p, s.claim_seconds || 90) === "critical" })));
  }

  // ---------------------------------------------------------------- rendering

  function card(s, p) {
    const [area, spot] = RAPS.where(p.location);
    // data-deadline only once the countdown runs (claim_starts "absent": from absent)
    const data = { pick: p.pick, session: s.session_id, label: label(s, p), claim: s.claim_seconds || 90, claimKey: DClaim.key(p) };
    if (p.deadline) data.deadline = p.deadline;
    return el("article", { class: "d-card", dataset: data },
      // the session too: pick numbers repeat when several sessions are open
      el("div", { class: "d-num" },
        el("span", { class: "d-pick" }, label(s, p)),
        el("span", { class: "d-what" }, `· ${RAPS.KIND[p.kind]} winner ${p.slot}` + (p.attempt ? ` · redraw ${p.attempt}` : "")),
        el("span", { class: "d-tag " + (s.rehearsal ? "rehearsal" : "live") }, sessionTag(s, true))),
      el("div", { class: "d-area" }, area),
      el("div", { class: "d-spot" }, spot),
      el("div", { class: "d-who" }, `${p.display_name} · ${String(p.tier).toUpperCase()} · ${p.card}`),
      el("div", { class: "d-count" }, el("span", { class: "secs" }, p.deadline ? "" : "—"),
        el("small", {}, p.deadline ? "seconds" : "not started")),
      DClaim.panel(s, p, me));
  }

  // "A · W1 · REHEARSAL": the session's letter (with several open), id and mode
  // (on a card the mode word gives way on compact cards: the tag's colour still says it)
  const sessionTag = (s, card) => {
    const text = `${keyOf(s) ? keyOf(s) + " · " : ""}${s.session_id}`;
    const mode = s.rehearsal ? "REHEARSAL" : "LIVE";
    return card ? [text, el("span", { class: "d-mode" }, ` · ${mode}`)] : `${text} · ${mode}`;
  };

  function render() {
    assignLetters();
    const open = activeSessions().sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
    $("d-sessions").replaceChildren(...(open.length
      ? open.map((s) => el("span", { class: "d-tag " + (s.rehearsal ? "rehearsal" : "live"), dataset: { session: s.session_id } }, sessionTag(s)))
      : [el("span", { class: "d-tag idle" }, "No session open")]));

    DFit.sessions(open);

    const pending = pendingPicks();
    const list = $("pending");
    // a card is kept while its session's letter and its claim are unchanged
    const existing = new Map([...list.children].map((n) => [`${n.dataset.session}:${n.dataset.label}`, n]));
    const reuse = (s, p) => {
      const node = existing.get(`${s.session_id}:${label(s, p)}`);
      return node && node.dataset.claimKey === DClaim.key(p) ? node : null;
    };
    const nodes = pending.map(({ s, p }) => reuse(s, p) || card(s, p));
    DClaim.renderExcluded($("excluded"), open);
    list.replaceChildren(...nodes);
    $("none").hidden = pending.length > 0;
    $("pending-count").textContent = pending.length ? `(${pending.length})` : "";
    DFit.pending();

    const shown = historySession();
    // one session: named here; several: each row names its own
    $("history-session").textContent = shown.length === 1 ? shown[0].session_id + (shown[0].rehearsal ? " (rehearsal)" : "") : "";
    const resolved = [];
    for (const s of shown) for (const p of s.picks) if (p.state !== "pending") resolved.push({ s, p });
    // the latest resolution first
    const when = (x) => x.p.resolved_at || x.p.drawn_at;
    resolved.sort((a, b) => when(b).localeCompare(when(a)));
    // pick numbers repeat across sessions: each row names its session's letter and id
    const many = shown.length > 1;
    $("history").replaceChildren(...resolved.map(({ s, p }) => {
      const [area, spot] = RAPS.where(p.location);
      return el("tr", { dataset: { pick: p.pick, state: p.state, session: s.session_id } },
        el("td", { class: "h-pick" }, many ? `${label(s, p)} · ${s.session_id}` : `#${p.pick}`),
        el("td", {}, `${RAPS.KIND[p.kind]} ${p.slot}`),
        el("td", {}, `${area} · ${spot}`),
        el("td", {}, p.display_name),
        el("td", { class: "o-" + p.state }, RAPS.outcome(p)),
        el("td", {}, hhmmss(p.drawn_at)),
        // when it was resolved and who did it (from the journal's actors)
        el("td", { class: "h-resolved" }, p.resolved_at ? hhmmss(p.resolved_at) : ""),
        el("td", { class: "h-by" }, p.resolved_by || ""));
    }));
    DFit.history();
    renderMarks();
    tick();
  }

  function hhmmss(iso) {
    return new Date(iso).toLocaleTimeString("en-GB", { timeZone: me.site.timezone, hour12: false });
  }

  function tick() {
    $("d-clock").textContent = RAPS.clockText(me ? me.site.timezone : undefined);
    const urgent = [];
    // a winner nobody reached in time: ESCALATE, whatever the countdown says
    for (const { s, p } of pendingPicks()) {
      const over = DClaim.overLimit(s, p);
      const c = document.querySelector(`.d-card[data-pick="${p.pick}"][data-session="${CSS.escape(s.session_id)}"]`);
      if (c) c.classList.toggle("escalated", over);
      if (over) urgent.push(`${label(s, p)} · ${DClaim.escalation(s, p)} · ${RAPS.where(p.location).join(" · ")}`);
    }
    for (const c of document.querySelectorAll(".d-card[data-deadline]")) {
      const left = RAPS.secondsLeft(c.dataset.deadline);
      const t = thresholds(Number(c.dataset.claim) || 90);
      c.querySelector(".secs").textContent = String(Math.ceil(left));
      const lv = left <= t.critical ? "critical" : left <= t.warn ? "warn" : "";
      c.classList.toggle("warn", lv === "warn");
      c.classList.toggle("critical", lv === "critical");
      if (lv === "critical") {
        urgent.push(`${c.dataset.label} · ${Math.ceil(left)} s · ${c.querySelector(".d-area").textContent} · ${c.querySelector(".d-spot").textContent}`);
      }
    }
    // one piece per winner, each kept whole: a second place wraps, it is never cut off,
    // and those past the bar's height are counted ("+N more critical")
    DFit.escalation(urgent);
    DMap.setCritical((session, pick) => {
      const c = document.querySelector(`.d-card[data-pick="${pick}"][data-session="${CSS.escape(session)}"]`);
      return !!c && c.classList.contains("critical");
    });
    if (up) {
      lastData = Date.now();
      DOffline.keep(sessions, DOffline.REFRESH_MS); // the saved state's time stays true
    }
    else {
      const age = Math.round((Date.now() - lastData) / 1000);
      $("stale-age").textContent = (restored ? `offline · the last state, saved at ${hhmmss(new Date(lastData).toISOString())} · ` : "")
        + `last update ${age} s ago`;
    }
  }

  // LIVE only while data (summaries, or the heartbeat every second) arrives; a missed
  // heartbeat makes the screen STALE at once (the stream then reconnects by itself).
  function setStatus(isUp) {
    up = isUp;
    const c = $("d-conn");
    c.className = "conn " + (isUp ? "up" : "down");
    c.textContent = isUp ? "LIVE" : "RECONNECTING";
    $("stale").hidden = isUp;
    document.body.classList.toggle("is-stale", !isUp);
    tick();
  }

  async function start() {
    me = await RAPS.loadMe();
    $("site").textContent = me.site.name;
    // a reload with no network (the offline shell answered /api/me): the last state
    // saved, STALE, until the stream is back
    const saved = RAPS.offline ? await DOffline.saved() : null;
    if (saved) {
      for (const view of saved.sessions) sessions.set(view.session_id, view);
      lastData = saved.at;
      restored = true;
    }
    DOffline.register();
    DMap.load($("map")).then(() => renderMarks()).catch(() => {});
    window.addEventListener("resize", () => render());
    DFit.watch();
    stream = RAPS.liveStream("/api/stream", {
      summary(view) {
        if (restored) { restored = false; sessions.clear(); } // the stream sends every session anew
        sessions.set(view.session_id, view);
        render();
        DOffline.keep(sessions);
      },
      status: setStatus,
    });
    setInterval(tick, 250);
    render();
    if (restored) setStatus(false);
  }

  start().catch((e) => { $("none").textContent = e.message || String(e); });
})();
