// The marketing handheld: pick a session, open it, draw, resolve, award, close; and,
// on its own tab, the ticket draws with the entries in each bin, polled while shown.
//
// Every command gets an id here, once, when the person taps; the id is kept in
// localStorage until the server has answered.  A lost connection (or a reload, or a
// sign-in in between) re-sends the *same* id, and the server answers a repeated id with
// the first outcome, so a retry never draws twice.
"use strict";
(() => {
  const { el } = RAPS;
  const $ = (id) => document.getElementById(id);
  const FILLED = ["pending", "verified", "awarded"];
  const REASONS = [
    "Not at the machine / seat",
    "Card played by someone else",
    "ID does not match the card",
    "Not eligible (excluded, under age)",
  ];

  let me = null;
  let sessions = [];
  let sid = null;
  let summary = null;
  let pools = [];
  let stream = null;
  let poolTimer = null;
  let retryNow = null;
  let verification = null;
  let view = "sessions"; // or "tickets"
  const cards = new Map(); // pick number -> { state, node }

  // ------------------------------------------------------------------ helpers

  const toast = (text, bad) => RAPS.toast(text, bad, 6000);

  const sleep = (ms) => new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    retryNow = () => { clearTimeout(timer); resolve(); };
  });

  function localDay(iso) {
    return new Intl.DateTimeFormat("en-CA", { timeZone: me.site.timezone }).format(new Date(iso));
  }

  function localTime(iso) {
    return new Date(iso).toLocaleString("en-GB", {
      timeZone: me.site.timezone, weekday: "short", day: "numeric", month: "short",
      hour: "2-digit", minute: "2-digit",
    });
  }

  // Buttons that send a command carry data-cmd; they are all off while one is in flight.
  const commands = RAPS.commandButtons();
  const { button: cmdButton, setBlocked, setBusy } = commands;

  // Two taps for what cannot be undone: the first arms the button for 4 s.
  function confirmTap(button, armedText, action) {
    const idle = button.textContent;
    button.addEventListener("click", () => {
      if (button.dataset.armed === "1") {
        button.dataset.armed = "0";
        button.textContent = idle;
        action();
        return;
      }
      button.dataset.armed = "1";
      button.textContent = armedText;
      setTimeout(() => {
        if (button.dataset.armed === "1") {
          button.dataset.armed = "0";
          button.textContent = idle;
        }
      }, 4000);
    });
  }

  // ----------------------------------------------------------------- commands

  const pendingKey = () => `raps.pending.${me.user}`;

  function readPending() {
    try { return JSON.parse(localStorage.getItem(pendingKey()) || "null"); } catch (_) { return null; }
  }

  function command(path, body, label) {
    if (commands.busy || !sid) return Promise.resolve(null);
    const cmd = { sid, path, label, body: { ...body, command_id: RAPS.uuid() } };
    localStorage.setItem(pendingKey(), JSON.stringify(cmd));
    return send(cmd);
  }

  async function send(cmd) {
    setBusy(true);
    try {
      const url = `/api/sessions/${encodeURIComponent(cmd.sid)}/${cmd.path}`;
      const got = await RAPS.deliver(url, cmd.body, (why) => retrying(cmd, why), sleep);
      if (got === null) return null; // signed out: the command stays stored
      localStorage.removeItem(pendingKey());
      $("net-banner").hidden = true;
      if (!got.ok) onRefused(cmd, got.status, got.data);
      else onAnswer(cmd, got.data);
      await refresh();
      return got.data;
    } finally {
      setBusy(false);
    }
  }

  function retrying(cmd, why) {
    $("net-text").textContent = `${why}: retrying "${cmd.label}" (it will not be done twice)`;
    $("net-banner").hidden = false;
  }

  function onAnswer(cmd, data) {
    if (data.no_eligible) {
      toast(`No eligible ${cmd.body.kind === "tables" ? "table" : "slot"} player right now`, true);
    } else if (data.replayed) {
      toast(`"${cmd.label}" was already done: nothing was done twice`);
    } else if (data.pick && cmd.path === "draw") {
      toast(`Winner #${data.pick.pick} drawn`);
    }
    if (cmd.path === "open") $("live-confirm").value = "";
  }

  function onRefused(cmd, status, data) {
    const detail = typeof data.detail === "string" ? data.detail : `refused (${status})`;
    toast(detail, true);
    if (cmd.path === "close" && /pending/.test(detail)) $("force-close-btn").hidden = false;
    // outside a live session's window only an admin goes on, with a reason the journal
    // keeps and raps verify shows (003 rule 20); the same command, with the reason added
    if (status === 409 && /an admin may override/.test(detail) && me.role === "admin") {
      setTimeout(() => overrideWindow(cmd, detail), 0);
    }
  }

  function overrideWindow(cmd, detail) {
    const reason = window.prompt(`${detail}\n\nOverride as admin: type the reason (journaled, shown to the inspector)`);
    if (!reason || reason.trim().length < 3) return;
    const again = { ...cmd, label: `${cmd.label} (override)`, body: { ...cmd.body, override_reason: reason.trim() } };
    localStorage.setItem(pendingKey(), JSON.stringify(again));
    send(again);
  }

  // ------------------------------------------------------------------ loading

  async function loadSessions() {
    sessions = await RAPS.getJSON("/api/sessions");
    const today = localDay(new Date(RAPS.now()).toISOString());
    const rank = (s) => (localDay(s.starts) === today ? 0 : 2) + (s.state === "closed" ? 1 : 0);
    sessions.sort((a, b) => rank(a) - rank(b) || a.starts.localeCompare(b.starts));
    const list = $("session-list");
    list.replaceChildren(...sessions.map((s) => {
      const isToday = localDay(s.starts) === today;
      return el("button", {
        type: "button",
        class: "session-item" + (isToday ? " today" : ""),
        dataset: { session: s.session_id },
        onclick: () => enter(s.session_id),
      },
      el("span", { class: "s-id" }, s.session_id),
      el("span", { class: "s-meta" },
        isToday ? el("span", { class: "tag today" }, "TODAY") : null,
        el("span", { class: "tag " + (s.rehearsal ? "rehearsal" : "live") }, s.rehearsal ? "REHEARSAL" : "LIVE"),
        `${s.state} · ${localTime(s.starts)} · ${s.picks} picks`));
    }));
    if (!sessions.length) list.append(el("p", {}, "No session is configured."));
  }

  async function refresh() {
    if (!sid) return;
    try {
      summary = await RAPS.getJSON(`/api/sessions/${encodeURIComponent(sid)}`);
      render();
    } catch (_) { /* the stream will bring it */ }
  }

  async function loadPools() {
    try {
      pools = await RAPS.getJSON("/api/pools");
      renderCounts();
    } catch (_) { /* keep the last counts */ }
  }

  function showChoose() {
    if (stream) stream.close();
    stream = null;
    clearInterval(poolTimer);
    sid = null;
    summary = null;
    verification = null;
    cards.clear();
    $("active").replaceChildren();
    $("session").hidden = true;
    $("choose").hidden = false;
    $("mode-banner").hidden = true;
    $("live-banner").hidden = true;
    renderPendingBadge();
    if (location.hash) history.replaceState(null, "", location.pathname);
    loadSessions().catch((e) => toast(e.message, true));
  }

  async function enter(id) {
    sid = id;
    cards.clear();
    verification = null;
    $("active").replaceChildren();
    $("force-close-btn").hidden = true;
    history.replaceState(null, "", "#" + encodeURIComponent(id));
    $("choose").hidden = true;
    $("session").hidden = false;
    summary = await RAPS.getJSON(`/api/sessions/${encodeURIComponent(id)}`);
    render();
    if (stream) stream.close();
    stream = RAPS.liveStream(`/api/stream?session=${encodeURIComponent(id)}`, {
      summary(view) {
        if (view.session_id !== sid) return;
        summary = view;
        render();
      },
      status(up) { $("live-banner").hidden = up; },
    });
    clearInterval(poolTimer);
    loadPools();
    poolTimer = setInterval(loadPools, 5000);
  }

  // ---------------------------------------------------------------- rendering

  function render() {
    if (!summary) return;
    const s = summary;
    const banner = $("mode-banner");
    banner.hidden = view !== "sessions";
    banner.className = "mode-banner " + (s.rehearsal ? "rehearsal" : "live");
    banner.textContent = s.rehearsal
      ? "REHEARSAL · practice draws, kept apart from live"
      : "LIVE SESSION · real winners";
    document.body.classList.toggle("is-rehearsal", s.rehearsal);
    $("sess-title").textContent = s.session_id;
    const listed = sessions.find((x) => x.session_id === s.session_id);
    $("sess-state").textContent = `${s.state.toUpperCase()}` + (listed ? ` · ${localTime(listed.starts)}` : "") + ` · ${s.promotion_id}`;

    $("open-box").hidden = s.state !== "scheduled";
    $("open-rehearsal").hidden = !s.rehearsal;
    $("open-live").hidden = s.rehearsal;
    setBlocked($("open-live-btn"), $("live-confirm").value.trim().toUpperCase() !== "LIVE");

    $("draw-box").hidden = s.state !== "open";
    for (const kind of ["slots", "tables"]) renderDraw(kind);

    renderActive();
    renderList();
    renderCounts();

    $("close-box").hidden = s.state !== "open";
    if (s.state !== "open") $("force-close-btn").hidden = true;
    renderPendingBadge();
  }

  function renderDraw(kind) {
    const s = summary;
    const button = $("draw-" + kind);
    const quota = s.quotas[kind] || 0;
    button.hidden = quota === 0;
    const picks = s.picks.filter((p) => p.kind === kind);
    const filled = new Set(picks.filter((p) => FILLED.includes(p.state)).map((p) => p.slot));
    let free = 0;
    for (let slot = 1; slot <= quota; slot++) {
      if (!filled.has(slot)) { free = slot; break; }
    }
    const redraw = free > 0 && picks.some((p) => p.slot === free);
    const name = kind === "slots" ? "SLOT" : "TABLE";
    button.querySelector(".draw-label").textContent = free
      ? `${redraw ? "Redraw" : "Draw"} ${name} winner`
      : `All ${name.toLowerCase()} winners drawn (${quota} of ${quota})`;
    $(`draw-${kind}-sub`).textContent = free ? `slot ${free} of ${quota} · ${filled.size} filled` : "";
    button.classList.toggle("redraw", redraw);
    setBlocked(button, !free);
  }

  function counter(p) {
    return el("span", { class: "w-count", dataset: { deadline: p.deadline, claim: summary.claim_seconds || "" } });
  }

  function winnerCard(p) {
    const [area, spot] = RAPS.where(p.location);
    const card = el("article", {
      class: `winner ${p.state}` + (summary.rehearsal ? " rehearsal" : ""),
      dataset: { pick: p.pick },
    },
    el("div", { class: "w-top" },
      el("span", { class: "w-num" }, `#${p.pick} · ${RAPS.KIND[p.kind]} ${p.slot}` + (p.attempt ? ` · redraw ${p.attempt}` : "")),
      p.state === "pending" ? counter(p) : el("span", { class: "w-state" }, "✓ ID seen")),
    el("div", { class: "w-area" }, area),
    el("div", { class: "w-spot" }, spot),
    el("div", { class: "w-who" }, el("span", { class: "w-name" }, p.display_name), el("span", { class: "tier" }, p.tier)),
    el("div", { class: "w-card" }, `Card ${p.card}`));
    const actions = el("div", { class: "w-actions" });
    const voidForm = voidPanel(p);
    const voidButton = cmdButton({ class: "secondary" }, "Void…");
    voidButton.addEventListener("click", () => { voidForm.hidden = !voidForm.hidden; });
    if (p.state === "pending") {
      const verify = cmdButton({ class: "ok", dataset: { action: "verify" } }, "✓ ID seen · Verified");
      verify.addEventListener("click", () => command(`picks/${p.pick}/verify`, {}, `verify #${p.pick}`));
      const noShow = cmdButton({ class: "secondary", dataset: { action: "no-show" } }, "No-show");
      confirmTap(noShow, "Tap again: no-show", () => command(`picks/${p.pick}/no-show`, {}, `no-show #${p.pick}`));
      actions.append(verify, el("div", { class: "row" }, noShow, voidButton));
    } else {
      actions.append(prizePanel(p), voidButton);
    }
    actions.append(voidForm);
    card.append(actions);
    return card;
  }

  function prizePanel(p) {
    let kind = "cash";
    const envelope = el("input", { id: `envelope-${p.pick}`, inputmode: "numeric", autocomplete: "off", maxlength: "32" });
    const amount = el("input", { id: `amount-${p.pick}`, inputmode: "decimal", autocomplete: "off", placeholder: "0" });
    const kinds = el("div", { class: "segmented", role: "group", "aria-label": "Prize kind" });
    for (const [value, label] of [["cash", "Cash"], ["plus_play", "+Play"], ["voucher", "Voucher"]]) {
      const b = el("button", { type: "button", class: "secondary", "aria-pressed": String(value === kind), dataset: { prize: value } }, label);
      b.addEventListener("click", () => {
        kind = value;
        for (const x of kinds.children) x.setAttribute("aria-pressed", String(x === b));
      });
      kinds.append(b);
    }
    const record = cmdButton({ class: "primary big", dataset: { action: "award" } }, "Record prize");
    record.addEventListener("click", () => {
      const env = envelope.value.trim();
      const value = Number(amount.value.trim().replace(/\s/g, "").replace(",", "."));
      if (!env) { toast("Enter the envelope number", true); envelope.focus(); return; }
      if (!amount.value.trim() || !Number.isFinite(value) || value < 0) {
        toast("Enter the amount in rand", true);
        amount.focus();
        return;
      }
      command(`picks/${p.pick}/award`, { envelope: env, amount: Math.round(value * 100), kind }, `record the prize of #${p.pick}`);
    });
    return el("div", { class: "form-grid" },
      el("label", { for: envelope.id }, "Envelope number"), envelope,
      el("label", { for: amount.id }, "Amount (R)"), amount,
      el("label", {}, "Paid as"), kinds,
      record);
  }

  function voidPanel(p) {
    let reason = "";
    const other = el("input", { id: `void-other-${p.pick}`, maxlength: "200", placeholder: "Other reason", autocomplete: "off" });
    const go = cmdButton({ class: "danger big", dataset: { action: "void", blocked: "1" } }, "Void this pick");
    const pickReason = (text, button) => {
      reason = text;
      for (const x of list.children) x.setAttribute("aria-pressed", String(x === button));
      setBlocked(go, !reason.trim());
    };
    const list = el("div", { class: "reasons" }, REASONS.map((text) => {
      const b = el("button", { type: "button", class: "secondary", "aria-pressed": "false" }, text);
      b.addEventListener("click", () => { other.value = ""; pickReason(text, b); });
      return b;
    }));
    other.addEventListener("input", () => pickReason(other.value, null));
    go.addEventListener("click", () => {
      if (!reason.trim()) return;
      command(`picks/${p.pick}/void`, { reason: reason.trim() }, `void #${p.pick}`);
    });
    return el("div", { class: "form-grid void-form", hidden: true },
      el("label", {}, "Why void this pick?"), list, other, go);
  }

  function renderActive() {
    const box = $("active");
    const active = summary.state === "closed" ? [] : summary.picks.filter((p) => p.state === "pending" || p.state === "verified");
    const keep = new Set(active.map((p) => p.pick));
    for (const [n, c] of cards) {
      if (!keep.has(n)) { c.node.remove(); cards.delete(n); }
    }
    let before = null;
    for (const p of [...active].reverse()) { // newest first
      let c = cards.get(p.pick);
      if (!c || c.state !== p.state) {
        const node = winnerCard(p);
        if (c) c.node.replaceWith(node);
        c = { state: p.state, node };
        cards.set(p.pick, c);
      }
      if (before === null) {
        if (box.firstChild !== c.node) box.prepend(c.node);
      } else if (before.nextSibling !== c.node) {
        before.after(c.node);
      }
      before = c.node;
    }
    tick();
  }

  function renderList() {
    const s = summary;
    $("pick-list").replaceChildren(...s.picks.map((p) => {
      const [area, spot] = RAPS.where(p.location);
      return el("li", { dataset: { pick: p.pick, state: p.state } },
        el("div", { class: "p-head" }, `#${p.pick} ${RAPS.KIND[p.kind]} ${p.slot}` + (p.attempt ? ` (redraw ${p.attempt})` : "") + ` · ${p.display_name} · ${p.tier}`),
        el("div", {}, `${area} · ${spot} · ${p.card}`),
        el("div", { class: `p-out ${p.state}` }, RAPS.outcome(p)));
    }));
    if (!s.picks.length) $("pick-list").append(el("li", {}, "No picks yet."));
    $("commitment").textContent = s.commitment || "published when the session opens";
    $("seed").textContent = s.seed || "revealed when the session closes";
    $("journal-head").textContent = s.journal_head ? `${s.journal_head.seq}:${s.journal_head.hash}` : "—";
    const closed = s.state === "closed";
    $("verify-box").hidden = !closed;
    if (closed) {
      const base = `/api/sessions/${encodeURIComponent(s.session_id)}`;
      $("verify-link").href = `${base}/verification`;
      $("export-link").href = `${base}/export`;
      $("export-link").hidden = !["admin", "auditor"].includes(me.role);
      if (!verification) {
        verification = "loading";
        RAPS.getJSON(`${base}/verification`).then((v) => {
          verification = v;
          $("seed-check").textContent = v.seed_matches_commitment
            ? "✓ The revealed seed matches the commitment"
            : "✗ The revealed seed does NOT match the commitment";
        }).catch(() => { verification = null; });
      }
    }
  }

  function renderCounts() {
    const box = $("counts");
    if (!summary) return;
    box.hidden = summary.state === "closed";
    const mine = pools.filter((r) => r.promotion_id === summary.promotion_id);
    const parts = [];
    for (const kind of ["slots", "tables"]) {
      if (!(summary.quotas[kind] > 0)) continue;
      const rows = mine.filter((r) => r.pool === kind);
      const total = rows.reduce((n, r) => n + r.eligible, 0);
      const byArea = new Map();
      for (const r of rows) byArea.set(r.area, (byArea.get(r.area) || 0) + r.eligible);
      parts.push(el("div", { class: "count-box", dataset: { pool: kind } },
        el("div", { class: "label" }, kind === "slots" ? "Slots eligible" : "Tables eligible"),
        el("div", { class: "n" }, String(total)),
        el("ul", {}, [...byArea].sort().map(([a, n]) => el("li", {}, el("span", {}, a), el("strong", {}, String(n)))))));
    }
    box.replaceChildren(...parts);
  }

  function tick() {
    for (const c of document.querySelectorAll(".w-count[data-deadline]")) {
      const left = RAPS.secondsLeft(c.dataset.deadline);
      const claim = Number(c.dataset.claim) || 90;
      c.textContent = left > 0 ? String(Math.ceil(left)) : "0";
      c.classList.toggle("warn", left <= Math.min(30, claim / 3) && left > Math.min(10, claim / 6));
      c.classList.toggle("critical", left <= Math.min(10, claim / 6));
    }
  }


  // ------------------------------------------------------------ ticket draws
  //
  // Read-only: every ticket draw (GET /api/tickets/draws) and the selected draw's bin
  // (GET /api/tickets/bins/{bin}), polled every few seconds while the tab is shown.  It
  // shares nothing with the commands: no busy flag, no toast, so it never holds up a draw.

  const TICKET_POLL_MS = 3000;
  const TICKET_TIMEOUT_MS = 8000;
  const TIER_GROUPS = [
    { id: "ten-jack", label: "Ten & Jack", tiers: ["ten", "jack"] },
    { id: "queen", label: "Queen", tiers: ["queen"] },
    { id: "king-ace", label: "King & Ace", tiers: ["king", "ace"] },
  ];
  const TIER_NAMES = { ten: "Ten", jack: "Jack", queen: "Queen", king: "King", ace: "Ace" };
  const tk = {
    draws: [], // as the server lists them
    selected: null, // draw id
    bin: null, // the selected draw's bin summary, once loaded
    updated: null, // server-clock ms of the last good answer
    failed: null, // why the last poll failed
    timer: null,
    polling: false,
    again: false, // the selection changed while a poll was out
  };

  function within(promise, ms) {
    let timer = null;
    const late = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error("no answer")), ms);
    });
    return Promise.race([promise, late]).finally(() => clearTimeout(timer));
  }

  async function initTickets() {
    try {
      tk.draws = await RAPS.getJSON("/api/tickets/draws");
    } catch (_) {
      setTimeout(initTickets, 15000); // the session tab works meanwhile
      return;
    }
    $("views").hidden = tk.draws.length === 0;
    if (!tk.draws.length && view === "tickets") showView("sessions");
  }

  function entryState(d, now) {
    const opens = Date.parse(d.entry_window.opens);
    const closes = Date.parse(d.entry_window.closes);
    if (now < opens) return "soon";
    return now < closes ? "open" : "closed";
  }

  // today's times as 14:55, tomorrow's as "tomorrow 00:30", other days' with the date
  function when(iso) {
    const day = localDay(iso);
    const hhmm = new Date(iso).toLocaleTimeString("en-GB", { timeZone: me.site.timezone, hour: "2-digit", minute: "2-digit" });
    if (day === localDay(new Date(RAPS.now()).toISOString())) return hhmm;
    if (day === localDay(new Date(RAPS.now() + 86400000).toISOString())) return `tomorrow ${hhmm}`;
    return localTime(iso);
  }

  const ENTRY_TAG = { open: "ENTRY OPEN", soon: "NOT OPEN YET", closed: "ENTRY CLOSED" };

  function windowText(d, now) {
    const state = entryState(d, now);
    if (state === "open") return `closes ${when(d.entry_window.closes)}`;
    if (state === "soon") return `opens ${when(d.entry_window.opens)}`;
    return `closed ${when(d.entry_window.closes)}`;
  }

  // the entry window as a tag and its next change: "ENTRY OPEN closes 19:55"
  function windowLine(cls, d, now) {
    const state = entryState(d, now);
    return el("span", { class: cls },
      el("span", { class: `tag entry-${state}` }, ENTRY_TAG[state]), windowText(d, now));
  }

  function drawLine(d, now) {
    const past = Date.parse(d.at) < now; // the draw's time: whether it was held is not known here
    return `Draw ${when(d.at)}${past ? " (past)" : ""} · ${d.winners} winner${d.winners === 1 ? "" : "s"}`;
  }

  // upcoming draws soonest first, then those whose time has passed, latest first
  function sortedDraws(now) {
    const at = (d) => Date.parse(d.at);
    const upcoming = tk.draws.filter((d) => at(d) >= now).sort((a, b) => at(a) - at(b));
    const past = tk.draws.filter((d) => at(d) < now).sort((a, b) => at(b) - at(a));
    return [...upcoming, ...past];
  }

  function defaultDraw(now) {
    const list = sortedDraws(now);
    const pick = list.find((d) => entryState(d, now) === "open") || list[0];
    return pick ? pick.draw_id : null;
  }

  function selectedDraw() {
    return tk.draws.find((d) => d.draw_id === tk.selected) || null;
  }

  function renderDraws() {
    const now = RAPS.now();
    $("tk-draws").replaceChildren(...sortedDraws(now).map((d) => {
      const state = entryState(d, now);
      const past = Date.parse(d.at) < now;
      return el("button", {
        type: "button",
        class: "tk-draw" + (past ? " past" : ""),
        "aria-pressed": String(d.draw_id === tk.selected),
        dataset: { draw: d.draw_id, bin: d.bin_id, entry: state },
        onclick: () => selectDraw(d.draw_id, true),
      },
      el("span", { class: "tk-name" }, d.name),
      el("span", { class: "tk-meta" }, drawLine(d, now)),
      windowLine("tk-entry", d, now));
    }));
    if (!tk.draws.length) $("tk-draws").append(el("p", {}, "No ticket draw is configured."));
  }

  function renderBin() {
    const d = selectedDraw();
    const now = RAPS.now();
    $("tk-title").textContent = d ? d.name : "Ticket draws";
    $("tk-when").textContent = d ? drawLine(d, now) : "";
    $("tk-window").replaceChildren(...(d ? [windowLine("", d, now)] : []));
    $("tk-window").dataset.entry = d ? entryState(d, now) : "";
    const b = tk.bin && d && tk.bin.bin_id === d.bin_id ? tk.bin : null;
    const others = b ? b.draws.filter((x) => x.draw_id !== d.draw_id) : [];
    $("tk-shared").hidden = !others.length;
    $("tk-shared").textContent = others.length
      ? `Same tickets as ${others.map((x) => `${x.name} (${when(x.at)})`).join(", ")}`
      : "";
    $("tk-players").textContent = b ? String(b.players) : "—";
    $("tk-tickets").textContent = b ? String(b.tickets) : "—";
    const rows = TIER_GROUPS.map((g) => tierRow(g.id, g.label, g.tiers, b));
    const known = new Set(TIER_GROUPS.flatMap((g) => g.tiers));
    const other = b ? Object.keys(b.by_tier).filter((t) => !known.has(t)) : [];
    if (other.length) rows.push(tierRow("other", "Other", other, b));
    $("tk-tier-rows").replaceChildren(...rows);
    renderUpdated();
  }

  function tierRow(id, label, tiers, b) {
    let players = 0;
    let tickets = 0;
    const parts = [];
    for (const t of tiers) {
      const r = b && b.by_tier[t];
      if (!r) continue;
      players += r.players;
      tickets += r.tickets;
      if (tiers.length > 1) parts.push(`${TIER_NAMES[t] || t} ${r.players}`);
    }
    return el("tr", { dataset: { group: id } },
      el("th", { scope: "row" }, label, parts.length ? el("small", {}, parts.join(" · ")) : null),
      el("td", { class: "players" }, b ? String(players) : "—"),
      el("td", { class: "tickets" }, b ? String(tickets) : "—"));
  }

  function clockAt(ms) {
    return new Date(ms).toLocaleTimeString("en-GB", { timeZone: me.site.timezone, hour12: false });
  }

  function renderUpdated() {
    const p = $("tk-updated");
    const at = tk.updated === null ? null : clockAt(tk.updated);
    p.classList.toggle("stale", Boolean(tk.failed));
    if (tk.failed) {
      p.textContent = (at ? `Not updated since ${at}` : "Not loaded") + ` (${tk.failed}) · retrying`;
    } else {
      p.textContent = at ? `Updated ${at} · every ${TICKET_POLL_MS / 1000} s` : "Loading…";
    }
  }

  function scheduleTickets(ms) {
    clearTimeout(tk.timer);
    tk.timer = view === "tickets" ? setTimeout(pollTickets, ms) : null;
  }

  async function pollTickets() {
    if (view !== "tickets") return;
    if (tk.polling) { tk.again = true; return; }
    tk.again = false;
    if (document.hidden) { scheduleTickets(TICKET_POLL_MS); return; }
    const d = selectedDraw();
    if (!d) { renderDraws(); renderBin(); return; }
    tk.polling = true;
    try {
      const bin = await within(RAPS.getJSON(`/api/tickets/bins/${encodeURIComponent(d.bin_id)}`), TICKET_TIMEOUT_MS);
      const now = selectedDraw();
      if (now && now.bin_id === bin.bin_id) {
        tk.bin = bin;
        tk.updated = RAPS.now();
        tk.failed = null;
      }
    } catch (e) {
      tk.failed = e.message || "no answer";
    } finally {
      tk.polling = false;
    }
    if (view !== "tickets") return;
    renderDraws(); // the entry windows open and close by the clock
    renderBin();
    scheduleTickets(tk.again ? 0 : TICKET_POLL_MS);
  }

  function selectDraw(id, scroll) {
    const before = selectedDraw();
    tk.selected = id;
    const d = selectedDraw();
    if (!before || !d || before.bin_id !== d.bin_id) {
      tk.bin = null;
      tk.updated = null;
      tk.failed = null;
    }
    renderDraws();
    renderBin();
    if (scroll) window.scrollTo(0, 0); // the counts of what was tapped, at once
    clearTimeout(tk.timer);
    pollTickets();
  }

  function showView(name) {
    view = name;
    const tickets = name === "tickets";
    $("tab-sessions").setAttribute("aria-pressed", String(!tickets));
    $("tab-tickets").setAttribute("aria-pressed", String(tickets));
    $("sessions-view").hidden = tickets;
    $("tickets").hidden = !tickets;
    $("mode-banner").hidden = tickets || !summary;
    renderPendingBadge();
    if (!tickets) { scheduleTickets(0); return; }
    if (!selectedDraw()) tk.selected = defaultDraw(RAPS.now());
    renderDraws();
    renderBin();
    window.scrollTo(0, 0);
    clearTimeout(tk.timer);
    pollTickets();
  }

  // On the ticket tab, the session tab says how many winners wait for a verdict.
  function renderPendingBadge() {
    const badge = $("tab-pending");
    const n = summary && sid ? summary.picks.filter((p) => p.state === "pending").length : 0;
    badge.hidden = view !== "tickets" || n === 0;
    badge.textContent = String(n);
    badge.setAttribute("aria-label", `${n} winner${n === 1 ? "" : "s"} pending`);
    $("tab-sessions").classList.toggle("attention", !badge.hidden);
  }

  // -------------------------------------------------------------------- start

  async function start() {
    me = await RAPS.loadMe();
    $("site").textContent = me.site.name;
    $("who").textContent = `${me.user} · ${me.role}`;
    $("sign-out").addEventListener("click", RAPS.signOut);
    $("back").addEventListener("click", showChoose);
    $("net-retry").addEventListener("click", () => { if (retryNow) retryNow(); });
    $("live-confirm").addEventListener("input", () => {
      setBlocked($("open-live-btn"), $("live-confirm").value.trim().toUpperCase() !== "LIVE");
    });
    for (const id of ["open-rehearsal-btn", "open-live-btn", "draw-slots", "draw-tables", "close-btn", "force-close-btn"]) {
      $(id).dataset.cmd = "1";
    }
    $("open-rehearsal-btn").addEventListener("click", () => command("open", {}, "open the rehearsal"));
    $("open-live-btn").addEventListener("click", () => command("open", { confirm: $("live-confirm").value.trim() }, "open the live session"));
    $("draw-slots").addEventListener("click", () => command("draw", { kind: "slots" }, "draw a slot winner"));
    $("draw-tables").addEventListener("click", () => command("draw", { kind: "tables" }, "draw a table winner"));
    confirmTap($("close-btn"), "Tap again to close the session", () => command("close", {}, "close the session"));
    confirmTap($("force-close-btn"), "Tap again: void pending and close", () => command("close", { force: true }, "force-close the session"));
    setInterval(tick, 250);
    $("tab-sessions").addEventListener("click", () => showView("sessions"));
    $("tab-tickets").addEventListener("click", () => showView("tickets"));
    document.addEventListener("visibilitychange", () => {
      if (!document.hidden && view === "tickets") pollTickets();
    });
    initTickets();

    await loadSessions();
    const pending = readPending();
    const wanted = pending ? pending.sid : decodeURIComponent(location.hash.slice(1));
    if (wanted && sessions.some((s) => s.session_id === wanted)) await enter(wanted);
    else showChoose();
    if (pending && pending.sid === sid) send(pending); // finish what a lost connection cut off
  }

  start().catch((e) => toast(e.message || String(e), true));
})();
