// The security dispatch screen: pending winners, where they are, how long they have.
// Updates arrive over server-sent events the moment the journal grows, with a heartbeat
// every second: when one is missed the screen says STALE (how old it is) and reconnects.
// Every pending winner stays on the screen: the cards get denser, then go into columns,
// and only past that does the list end in "+N more" (soonest deadlines always shown).
"use strict";
(() => {
  const { el } = RAPS;
  const $ = (id) => document.getElementById(id);
  const SVG = "http://www.w3.org/2000/svg";
  const sessions = new Map(); // session id -> view
  let me = null;
  let svg = null;
  const spots = new Map(); // "m:<machine>" or "s:<table>:<seat>" -> element
  let up = false;
  let stream = null;
  const DENSITIES = 5; // dens-0 (large cards) .. dens-4 (three columns)

  function thresholds(claim) {
    return { warn: Math.min(30, claim / 3), critical: Math.min(10, claim / 6) };
  }

  function level(p, claim) {
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
    out.sort((a, b) => a.p.deadline.localeCompare(b.p.deadline));
    return out;
  }

  // ------------------------------------------------------------------ the map

  async function loadMap() {
    const r = await fetch("/api/floor.svg", { credentials: "same-origin" });
    if (r.status === 401) { RAPS.toLogin(); return; }
    if (!r.ok) return;
    const text = await r.text();
    const doc = new DOMParser().parseFromString(text, "image/svg+xml");
    svg = document.importNode(doc.documentElement, true);
    $("map").replaceChildren(svg);
    for (const m of svg.querySelectorAll("[data-machine]")) spots.set("m:" + m.dataset.machine, m);
    for (const s of svg.querySelectorAll(".seat[data-seat]")) spots.set(`s:${s.dataset.table}:${s.dataset.seat}`, s);
    renderMarks();
  }

  function spotOf(p) {
    const loc = p.location || {};
    return loc.kind === "slots" ? spots.get("m:" + loc.machine) : spots.get(`s:${loc.table}:${loc.seat}`);
  }

  function renderMarks() {
    if (!svg) return;
    const marks = svg.querySelector(".marks");
    for (const hit of svg.querySelectorAll(".hit")) hit.classList.remove("hit");
    const vb = svg.viewBox.baseVal;
    const r = Math.max(1.5, Math.min(vb.width, vb.height) / 18);
    const nodes = [];
    for (const { s, p } of pendingPicks()) {
      const spot = spotOf(p);
      if (!spot) continue;
      spot.classList.add("hit");
      const box = spot.getBBox();
      const cx = box.x + box.width / 2;
      const cy = box.y + box.height / 2;
      const lv = level(p, s.claim_seconds || 90);
      const g = document.createElementNS(SVG, "g");
      g.setAttribute("class", "mark");
      g.dataset.pick = String(p.pick);
      g.dataset.session = s.session_id;
      const ring = document.createElementNS(SVG, "circle");
      ring.setAttribute("class", "ring" + (lv === "critical" ? " critical" : ""));
      ring.setAttribute("cx", cx);
      ring.setAttribute("cy", cy);
      ring.setAttribute("r", r);
      const badge = document.createElementNS(SVG, "circle");
      badge.setAttribute("class", "mark-badge" + (lv === "critical" ? " critical" : ""));
      badge.setAttribute("cx", cx + r * 0.9);
      badge.setAttribute("cy", cy - r * 0.9);
      badge.setAttribute("r", r * 0.55);
      const label = document.createElementNS(SVG, "text");
      label.setAttribute("class", "mark-label");
      label.setAttribute("x", cx + r * 0.9);
      label.setAttribute("y", cy - r * 0.9);
      label.setAttribute("font-size", r * 0.7);
      label.textContent = String(p.pick);
      g.append(ring, badge, label);
      nodes.push(g);
    }
    marks.replaceChildren(...nodes);
  }

  // ---------------------------------------------------------------- rendering

  function card(s, p) {
    const [area, spot] = RAPS.where(p.location);
    return el("article", { class: "d-card", dataset: { pick: p.pick, session: s.session_id, deadline: p.deadline, claim: s.claim_seconds || 90 } },
      el("div", { class: "d-num" }, `#${p.pick} · ${RAPS.KIND[p.kind]} winner ${p.slot}` + (p.attempt ? ` · redraw ${p.attempt}` : ""),
        // the session too: pick numbers repeat when several sessions are open
        el("span", { class: "d-tag " + (s.rehearsal ? "rehearsal" : "live") }, `${s.session_id} · ${s.rehearsal ? "REHEARSAL" : "LIVE"}`)),
      el("div", { class: "d-area" }, area),
      el("div", { class: "d-spot" }, spot),
      el("div", { class: "d-who" }, `${p.display_name} · ${String(p.tier).toUpperCase()} · ${p.card}`),
      el("div", { class: "d-count" }, el("span", { class: "secs" }, ""), el("small", {}, "seconds")));
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
    const nodes = pending.map(({ s, p }) => existing.get(`${s.session_id}:${p.pick}`) || card(s, p));
    list.replaceChildren(...nodes);
    $("none").hidden = pending.length > 0;
    $("pending-count").textContent = pending.length ? `(${pending.length})` : "";
    fitPending();

    const shown = historySession();
    $("history-session").textContent = shown.map((s) => s.session_id + (s.rehearsal ? " (rehearsal)" : "")).join(", ");
    const resolved = [];
    for (const s of shown) for (const p of s.picks) if (p.state !== "pending") resolved.push({ s, p });
    resolved.sort((a, b) => b.p.drawn_at.localeCompare(a.p.drawn_at));
    const many = shown.length > 1; // pick numbers repeat across sessions: name the session
    $("history").replaceChildren(...resolved.slice(0, 12).map(({ s, p }) => {
      const [area, spot] = RAPS.where(p.location);
      return el("tr", { dataset: { pick: p.pick, state: p.state, session: s.session_id } },
        el("td", {}, many ? `${s.session_id} #${p.pick}` : `#${p.pick}`),
        el("td", {}, `${RAPS.KIND[p.kind]} ${p.slot}`),
        el("td", {}, `${area} · ${spot}`),
        el("td", {}, p.display_name),
        el("td", { class: "o-" + p.state }, RAPS.outcome(p)),
        el("td", {}, new Date(p.drawn_at).toLocaleTimeString("en-GB", { timeZone: me.site.timezone, hour12: false })));
    }));
    fitHistory(resolved.length);
    renderMarks();
    tick();
  }

  function tick() {
    $("d-clock").textContent = RAPS.clockText(me ? me.site.timezone : undefined);
    const urgent = [];
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
    if (svg) {
      for (const ring of svg.querySelectorAll(".mark")) {
        const c = document.querySelector(`.d-card[data-pick="${ring.dataset.pick}"][data-session="${CSS.escape(ring.dataset.session)}"]`);
        const critical = !!c && c.classList.contains("critical");
        for (const x of ring.querySelectorAll(".ring, .mark-badge")) x.classList.toggle("critical", critical);
      }
    }
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
    if (!overflows(box)) return;
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
    while (shown > 1 && overflows(box)) rows[--shown].remove();
    $("history-more").textContent = total > shown ? `(latest ${shown} of ${total})` : "";
  }

  async function start() {
    me = await RAPS.loadMe();
    $("site").textContent = me.site.name;
    loadMap().catch(() => {});
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
