// The security dispatch screen: pending winners, where they are, how long they have.
// Updates arrive over server-sent events the moment the journal grows, with a heartbeat
// every second: when one is missed the screen says STALE (how old it is) and reconnects.
// Every pending winner stays on the screen: the cards get denser, then go into columns,
// and only past that does the list end in "+N more" (soonest deadlines always shown).
"use strict";
(() => {
  const { el } = RAPS;
  const $ = (id) => document.getElementById(id);
  const sessions = new Map(); // session id -> view
  let me = null;
  let up = false;
  let stream = null;
  const DENSITIES = 5; // dens-0 (large cards) .. dens-4 (three columns)

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
    DMap.render(pendingPicks().map(({ s, p }) => ({ s, p, critical: level(p, s.claim_seconds || 90) === "critical" })));
  }

  // ---------------------------------------------------------------- rendering

  function card(s, p) {
    const [area, spot] = RAPS.where(p.location);
    // data-deadline only once the countdown runs (claim_starts "absent": from absent)
    const data = { pick: p.pick, session: s.session_id, claim: s.claim_seconds || 90, claimKey: DClaim.key(p) };
    if (p.deadline) data.deadline = p.deadline;
    return el("article", { class: "d-card", dataset: data },
      el("div", { class: "d-num" }, `#${p.pick} · ${RAPS.KIND[p.kind]} winner ${p.slot}` + (p.attempt ? ` · redraw ${p.attempt}` : ""),
        // the session too: pick numbers repeat when several sessions are open
        el("span", { class: "d-tag " + (s.rehearsal ? "rehearsal" : "live") }, `${s.session_id} · ${s.rehearsal ? "REHEARSAL" : "LIVE"}`)),
      el("div", { class: "d-area" }, area),
      el("div", { class: "d-spot" }, spot),
      el("div", { class: "d-who" }, `${p.display_name} · ${String(p.tier).toUpperCase()} · ${p.card}`),
      el("div", { class: "d-count" }, el("span", { class: "secs" }, p.deadline ? "" : "—"),
        el("small", {}, p.deadline ? "seconds" : "not started")),
      DClaim.panel(s, p, me));
  }

  function render() {
    const open = activeSessions();
    $("d-sessions").replaceChildren(...(open.length
      ? open.map((s) => el("span", { class: "d-tag " + (s.rehearsal ? "rehearsal" : "live") },
        `${s.session_id} · ${s.rehearsal ? "REHEARSAL" : "LIVE"}`))
      : [el("span", { class: "d-tag idle" }, "No session open")]));

    fitSessions();

    const pending = pendingPicks();
    const list = $("pending");
    const existing = new Map([...list.children].map((n) => [`${n.dataset.session}:${n.dataset.pick}`, n]));
    const reuse = (s, p) => {
      const node = existing.get(`${s.session_id}:${p.pick}`);
      return node && node.dataset.claimKey === DClaim.key(p) ? node : null;
    };
    const nodes = pending.map(({ s, p }) => reuse(s, p) || card(s, p));
    DClaim.renderExcluded($("excluded"), open);
    list.replaceChildren(...nodes);
    $("none").hidden = pending.length > 0;
    $("pending-count").textContent = pending.length ? `(${pending.length})` : "";
    fitPending();

    const shown = historySession();
    $("history-session").textContent = shown.map((s) => s.session_id + (s.rehearsal ? " (rehearsal)" : "")).join(", ");
    const resolved = [];
    for (const s of shown) for (const p of s.picks) if (p.state !== "pending") resolved.push({ s, p });
    // the latest resolution first
    const when = (x) => x.p.resolved_at || x.p.drawn_at;
    resolved.sort((a, b) => when(b).localeCompare(when(a)));
    const many = shown.length > 1; // pick numbers repeat across sessions: name the session
    $("history").replaceChildren(...resolved.slice(0, 12).map(({ s, p }) => {
      const [area, spot] = RAPS.where(p.location);
      return el("tr", { dataset: { pick: p.pick, state: p.state, session: s.session_id } },
        el("td", {}, many ? `${s.session_id} #${p.pick}` : `#${p.pick}`),
        el("td", {}, `${RAPS.KIND[p.kind]} ${p.slot}`),
        el("td", {}, `${area} · ${spot}`),
        el("td", {}, p.display_name),
        el("td", { class: "o-" + p.state }, RAPS.outcome(p)),
        el("td", {}, hhmmss(p.drawn_at)),
        // when it was resolved and who did it (from the journal's actors)
        el("td", { class: "h-resolved" }, p.resolved_at ? hhmmss(p.resolved_at) : ""),
        el("td", { class: "h-by" }, p.resolved_by || ""));
    }));
    fitHistory(resolved.length);
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
      if (over) urgent.push(`#${p.pick} · ${DClaim.escalation(s, p)} · ${RAPS.where(p.location).join(" · ")}`);
    }
    for (const c of document.querySelectorAll(".d-card[data-deadline]")) {
      const left = RAPS.secondsLeft(c.dataset.deadline);
      const t = thresholds(Number(c.dataset.claim) || 90);
      c.querySelector(".secs").textContent = String(Math.ceil(left));
      const lv = left <= t.critical ? "critical" : left <= t.warn ? "warn" : "";
      c.classList.toggle("warn", lv === "warn");
      c.classList.toggle("critical", lv === "critical");
      if (lv === "critical") {
        urgent.push(`#${c.dataset.pick} · ${Math.ceil(left)} s · ${c.querySelector(".d-area").textContent} · ${c.querySelector(".d-spot").textContent}`);
      }
    }
    const esc = $("escalation");
    esc.classList.toggle("on", urgent.length > 0);
    // one piece per winner, each kept whole: a second place wraps, it is never cut off
    esc.replaceChildren(...(urgent.length ? [el("strong", {}, "ESCALATE"), ...urgent.map((u) => el("span", { class: "esc-item" }, u))] : []));
    DMap.setCritical((session, pick) => {
      const c = document.querySelector(`.d-card[data-pick="${pick}"][data-session="${CSS.escape(session)}"]`);
      return !!c && c.classList.contains("critical");
    });
    if (!up && stream) {
      const age = Math.round((Date.now() - stream.lastSeen) / 1000);
      $("stale-age").textContent = `last update ${age} s ago`;
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

  // ------------------------------------------------------------------ fitting
  //
  // The wall screen never scrolls: what does not fit is made to fit.

  // a phone or a tablet (narrower than a wall screen): one column that scrolls, nothing
  // hidden or squeezed; the densities are for the wall
  const narrow = () => window.matchMedia("(max-width: 1199px)").matches;

  const overflows = (box) => box.scrollHeight > box.clientHeight + 1 || box.scrollWidth > box.clientWidth + 1;

  function setDensity(level) {
    for (let i = 0; i < DENSITIES; i++) document.body.classList.toggle(`dens-${i}`, i === level);
    document.body.dataset.density = String(level);
  }

  function fitPending() {
    const box = document.querySelector(".d-pending");
    const cards = [...$("pending").children];
    for (const c of cards) c.hidden = false;
    const more = $("more");
    more.hidden = true;
    if (narrow()) { setDensity(0); return; }
    for (let level = 0; level < DENSITIES; level++) {
      setDensity(level);
      if (!overflows(box)) return;
    }
    // denser than three columns is unreadable across a room: the latest deadlines
    // give way, and the list says how many are not shown
    more.hidden = false;
    let hidden = 0;
    for (let i = cards.length - 1; i > 0 && overflows(box); i--) {
      cards[i].hidden = true;
      hidden += 1;
      more.textContent = `+${hidden} more pending (later deadlines)`;
    }
  }

  function fitSessions() {
    const box = $("d-sessions");
    box.classList.remove("compact");
    if (narrow() || !overflows(box)) return;
    box.classList.add("compact");
    if (!overflows(box)) return;
    const open = activeSessions();
    const live = open.filter((s) => !s.rehearsal).length;
    box.replaceChildren(
      el("span", { class: "d-tag idle" }, `${open.length} sessions open`),
      live ? el("span", { class: "d-tag live" }, `${live} LIVE`) : null,
      open.length - live ? el("span", { class: "d-tag rehearsal" }, `${open.length - live} REHEARSAL`) : null);
  }

  function fitHistory(total) {
    const box = document.querySelector(".d-history");
    const rows = [...$("history").children];
    let shown = rows.length;
    while (!narrow() && shown > 1 && overflows(box)) rows[--shown].remove();
    $("history-more").textContent = total > shown ? `(latest ${shown} of ${total})` : "";
  }

  async function start() {
    me = await RAPS.loadMe();
    $("site").textContent = me.site.name;
    DMap.load($("map")).then(() => renderMarks()).catch(() => {});
    window.addEventListener("resize", () => render());
    stream = RAPS.liveStream("/api/stream", {
      summary(view) {
        sessions.set(view.session_id, view);
        render();
      },
      status: setStatus,
    });
    setInterval(tick, 250);
    render();
  }

  start().catch((e) => { $("none").textContent = e.message || String(e); });
})();
