// The audience's stage screen: read-only, big type, dark, for the back of a room.
//
// Opened as /stage/screen#draw=<draw id>&token=<display token>.  The fragment never
// leaves the browser (no request carries it, no server log sees it); the token goes
// only in the Authorization header of GET /api/stage/screen/{draw}.  That call
// long-polls: with ?after=<version> it answers as soon as anything newer commits (or
// after 20 s), so a winner is on the screen within a fraction of a second.  On an
// error the screen keeps what it shows, marks "reconnecting" discreetly and tries
// again with a growing pause: never a blank screen.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const TIER_GROUPS = [
    { id: "ten-jack", label: "Ten & Jack", tiers: ["ten", "jack"] },
    { id: "queen", label: "Queen", tiers: ["queen"] },
    { id: "king-ace", label: "King & Ace", tiers: ["king", "ace"] },
  ];
  const STATE_LABEL = { scheduled: "Starting soon", open: "Live draw", closed: "Draw closed" };
  const PICK_LABEL = {
    verified: "Presented",
    awarded: "Winner",
    no_show: "No-show · redraw",
    void: "Void · redraw",
  };
  const BACKOFF_MS = [500, 1000, 2000, 4000, 8000, 10000];
  const REQUEST_TIMEOUT_MS = 35000; // the long poll answers within 20 s

  const params = new URLSearchParams(location.hash.slice(1));
  const drawId = params.get("draw") || "";
  const token = params.get("token") || "";
  let version = null;
  let offsetMs = 0;
  let failures = 0;
  let first = true;
  const seen = new Set(); // pick numbers already on the screen (revealed once)
  const shownAt = new Map(); // pick number -> when it first appeared (ms since the epoch)
  const revealed = new Set(); // picks that get the reveal animation (new since the first view)
  const REVEAL_MS = 2400;

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function now() {
    return Date.now() + offsetMs;
  }

  function problem(text) {
    const p = $("problem");
    p.hidden = !text;
    p.textContent = text || "";
  }

  function connection(up) {
    $("conn").hidden = up;
  }

  // ---------------------------------------------------------------- rendering

  function render(v) {
    const t = Date.parse(v.server_time);
    if (!Number.isNaN(t)) offsetMs = t - Date.now();
    document.title = `${v.name} - stage screen`;
    $("name").textContent = v.name;
    const state = $("state");
    state.textContent = STATE_LABEL[v.state] || v.state;
    state.className = `sc-state ${v.state}`;
    document.body.dataset.state = v.state;

    const e = v.entries || { players: 0, tickets: 0, by_tier: {} };
    $("players").textContent = e.players.toLocaleString("en-ZA");
    $("tickets").textContent = e.tickets.toLocaleString("en-ZA");
    const known = new Set(TIER_GROUPS.flatMap((g) => g.tiers));
    const groups = [...TIER_GROUPS];
    const other = Object.keys(e.by_tier || {}).filter((x) => !known.has(x));
    if (other.length) groups.push({ id: "other", label: "Other", tiers: other });
    $("tiers").replaceChildren(...groups.map((g) => {
      let players = 0;
      let tickets = 0;
      for (const tier of g.tiers) {
        const r = (e.by_tier || {})[tier];
        if (r) { players += r.players; tickets += r.tickets; }
      }
      const tr = el("tr");
      tr.dataset.group = g.id;
      tr.append(el("th", null, g.label), el("td", "players", players.toLocaleString("en-ZA")),
        el("td", "tickets", tickets.toLocaleString("en-ZA")));
      return tr;
    }));

    renderWinners(v);
    ScreenGames.render($("game"), v);

    $("proof-open").hidden = !(v.commitment && !v.seed);
    $("commitment").textContent = v.commitment || "";
    $("proof-closed").hidden = !v.seed;
    $("seed").textContent = v.seed || "";
    $("verification").textContent = v.verification || "";
    version = v.version;
    document.body.dataset.version = String(v.version);
    first = false;
    tick();
  }

  function renderWinners(v) {
    const byPosition = new Map();
    for (const p of v.picks) {
      if (!byPosition.has(p.position)) byPosition.set(p.position, []);
      byPosition.get(p.position).push(p);
    }
    const list = $("winners");
    const rows = [];
    const count = Math.max(v.winners, ...byPosition.keys(), 0);
    for (let pos = 1; pos <= count; pos++) {
      const picks = byPosition.get(pos) || [];
      const li = el("li", "sc-row");
      li.dataset.position = String(pos);
      li.append(el("span", "sc-pos", pos));
      const body = el("div", "sc-body");
      const current = picks[picks.length - 1];
      if (!current) {
        li.classList.add("empty");
        body.append(el("div", "sc-name dim", "—"));
      } else {
        body.append(pickLine(current, true));
        for (const old of picks.slice(0, -1).reverse()) body.append(pickLine(old, false));
      }
      li.append(body);
      rows.push(li);
    }
    list.dataset.rows = String(count);
    list.replaceChildren(...rows);
  }

  function pickLine(p, main) {
    const line = el("div", main ? `sc-pick main ${p.state}` : `sc-pick earlier ${p.state}`);
    line.dataset.pick = String(p.number);
    line.dataset.state = p.state;
    if (!seen.has(p.number)) {
      seen.add(p.number);
      shownAt.set(p.number, performance.timeOrigin + performance.now());
      if (!first) revealed.add(p.number);
    }
    const at = shownAt.get(p.number);
    line.dataset.shownAt = String(Math.round(at));
    const age = performance.timeOrigin + performance.now() - at;
    if (revealed.has(p.number) && age < REVEAL_MS) {
      line.classList.add("reveal"); // a re-render carries on the animation where it was
      line.style.animationDelay = `-${Math.round(age)}ms`;
    }
    const who = el("div", "sc-who");
    who.append(el("span", "sc-name", p.name), el("span", "sc-tier", p.tier));
    const card = el("div", "sc-card", p.card);
    const status = el("div", "sc-status");
    if (p.state === "pending") {
      const c = el("span", "sc-count");
      c.dataset.deadline = p.deadline || "";
      status.append(c, el("small", null, "to come to the stage"));
    } else {
      status.textContent = PICK_LABEL[p.state] || p.state;
    }
    line.append(who, card, status);
    return line;
  }

  function tick() {
    for (const c of document.querySelectorAll(".sc-count[data-deadline]")) {
      const left = Math.max(0, (Date.parse(c.dataset.deadline) - now()) / 1000);
      c.textContent = `${Math.ceil(left)} s`;
      c.classList.toggle("low", left <= 15);
    }
  }

  // ------------------------------------------------------------------ polling

  function wait(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  async function once() {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), REQUEST_TIMEOUT_MS);
    const query = version === null ? "" : `?after=${version}`;
    try {
      return await fetch(`/api/stage/screen/${encodeURIComponent(drawId)}${query}`, {
        headers: { Authorization: `Bearer ${token}`, Accept: "application/json" },
        credentials: "omit",
        cache: "no-store",
        signal: ctl.signal,
      });
    } finally {
      clearTimeout(timer);
    }
  }

  async function run() {
    if (!drawId || !token) {
      problem("This screen opens with its link: /stage/screen#draw=<draw>&token=<display token>");
      return;
    }
    for (;;) {
      let pause = 0;
      try {
        const r = await once();
        if (r.ok) {
          render(await r.json());
          failures = 0;
          connection(true);
          problem("");
          continue;
        }
        if (r.status === 401 || r.status === 403) {
          problem("This screen's display token was refused");
          pause = 15000;
        } else if (r.status === 404) {
          problem(`No draw ${drawId}`);
          pause = 15000;
        } else if (r.status === 429) {
          pause = 1000 * (Number(r.headers.get("Retry-After")) || 10);
        }
      } catch (_) {
        // no answer (network down, daemon restarting, request timed out): try again
      }
      connection(false);
      if (!pause) pause = BACKOFF_MS[Math.min(failures, BACKOFF_MS.length - 1)];
      failures++;
      await wait(pause);
    }
  }

  setInterval(tick, 250);
  window.addEventListener("hashchange", () => location.reload()); // another draw or token
  run();
})();
