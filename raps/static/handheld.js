// The marketing handheld: pick a session, open it, draw, resolve, award, close; and,
// on its own tab (handheld-tickets.js), the ticket draws with the entries in each bin.
//
// Commands (handheld-commands.js) keep one id per tap until the server has answered and
// re-send the *same* id after a lost or stalled answer, so a retry never draws twice;
// only the tapped button is off meanwhile.  Pending winners are listed most urgent
// first; a winner the claim timer makes a no-show is announced (toast, vibration).
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
  let verification = null;
  let tickets = null; // HHTickets
  let commands = null; // HHCommands
  const cards = new Map(); // pick number -> { key (HHClaim.key), node }
  const excludedSeen = new Set(); // "session:pick" of excluded winners already alerted
  const states = new Map(); // pick number -> state last shown (to see no-shows happen)
  const mine = new Set(); // picks this device marked no-show itself
  let primed = false; // the session's picks seen once: later ones are new winners (a cue)
  let loads = new AbortController(); // the session's loads; aborted on leaving it
  let refreshing = null; // the refresh in flight (one at a time)
  let entering = null; // the first load of a session, until it or the stream answers

  // ------------------------------------------------------------------ helpers

  const toast = (text, bad) => RAPS.toast(text, bad, 6000);
  // the promotion's name ([[promotions]] name, from /api/me), never its raw id
  const promoName = (id) => (me.promotions && me.promotions[id]) || id;

  function localDay(iso) {
    return new Intl.DateTimeFormat("en-CA", { timeZone: me.site.timezone }).format(new Date(iso));
  }

  function clock(iso) {
    return iso ? new Date(iso).toLocaleTimeString("en-GB", { timeZone: me.site.timezone, hour12: false }) : "";
  }

  function localTime(iso) {
    return new Date(iso).toLocaleString("en-GB", {
      timeZone: me.site.timezone, weekday: "short", day: "numeric", month: "short",
      hour: "2-digit", minute: "2-digit",
    });
  }

  // Buttons that send a command carry data-cmd; only the one whose command is out is off.
  const buttons = RAPS.commandButtons();
  const { button: cmdButton, setBlocked } = buttons;
  const confirmTap = HHCommands.confirmTap;

  // ----------------------------------------------------------------- commands

  function command(path, body, label, button) {
    return commands.command(sid, path, body, label, button);
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
    commands.resend(again);
  }

  // ------------------------------------------------------------------ loading
  //
  // Loads never hang on a stalled connection: an attempt with no answer within the
  // commands' timeout is sent again, and within 1.5 s the load banner says what is
  // waiting ("Loading the session: no answer yet · retrying"); nothing is greyed.

  const waiting = new Map(); // what is loading -> why it waits (in the order noted)

  function showLoads() {
    const b = $("load-banner");
    const [what, why] = [...waiting].at(-1) || []; // the latest to wait: the last tap's
    b.hidden = !what;
    if (what) b.textContent = `${what}: ${why} · retrying`;
  }

  function load(path, what, signal, opts = {}) {
    const note = (why) => { waiting.set(what, why); showLoads(); };
    return RAPS.getJSON(path, {
      timeoutMs: HHCommands.TIMEOUT_MS, slowMs: HHCommands.SLOW_MS, retry: true,
      onSlow: note, onRetry: note, signal, ...opts,
    }).finally(() => { waiting.delete(what); showLoads(); });
  }

  const cancelled = (e) => e && e.name === "AbortError";

  async function loadSessions() {
    sessions = await load("/api/sessions", "Loading the sessions");
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
      el("span", { class: "s-id" }, promoName(s.promotion_id)),
      el("span", { class: "s-meta" }, `session ${s.session_id} · `,
        isToday ? el("span", { class: "tag today" }, "TODAY") : null,
        el("span", { class: "tag " + (s.rehearsal ? "rehearsal" : "live") }, s.rehearsal ? "REHEARSAL" : "LIVE"),
        `${s.state} · ${localTime(s.starts)} · ${s.picks ?? "…"} picks`));
    }));
    if (!sessions.length) list.append(el("p", {}, "No session is configured."));
  }

  // The session again after a command (the stream brings it too: whichever is first).
  // One at a time; one asked for meanwhile runs after it (it may have started before
  // the command was done).
  let refreshAgain = false;
  async function refresh() {
    if (!sid) return;
    if (refreshing) { refreshAgain = true; return; }
    refreshAgain = false;
    const id = sid;
    refreshing = new AbortController();
    const stop = () => refreshing.abort();
    loads.signal.addEventListener("abort", stop, { once: true });
    try {
      const view = await load(`/api/sessions/${encodeURIComponent(id)}`, "Updating the session", refreshing.signal);
      if (sid === id) {
        summary = view;
        render();
      }
    } catch (_) { /* cancelled, or refused: the stream brings it */ } finally {
      loads.signal.removeEventListener("abort", stop);
      refreshing = null;
    }
    if (refreshAgain && sid === id) await refresh();
  }

  async function loadPools() {
    try { // one attempt each 5 s, never longer than that
      pools = await RAPS.getJSON("/api/pools", { timeoutMs: HHCommands.TIMEOUT_MS });
      renderCounts();
    } catch (_) { /* keep the last counts */ }
  }

  function showChoose() {
    if (stream) stream.close();
    stream = null;
    loads.abort();
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
    states.clear();
    primed = false;
    tickets.renderPendingBadge();
    if (location.hash) history.replaceState(null, "", location.pathname);
    loadSessions().catch((e) => { if (!cancelled(e)) toast(e.message, true); });
  }

  async function enter(id) {
    sid = id;
    cards.clear();
    states.clear();
    primed = false;
    verification = null;
    $("active").replaceChildren();
    $("force-close-btn").hidden = true;
    history.replaceState(null, "", "#" + encodeURIComponent(id));
    $("choose").hidden = true;
    $("session").hidden = false;
    loads.abort();
    loads = new AbortController();
    entering = new AbortController();
    const first = entering;
    loads.signal.addEventListener("abort", () => first.abort(), { once: true });
    summary = null;
    blank(id);
    // the stream and the GET both bring the summary: whichever answers first is shown
    if (stream) stream.close();
    stream = RAPS.liveStream(`/api/stream?session=${encodeURIComponent(id)}`, {
      summary(view) {
        if (view.session_id !== sid) return;
        if (refreshing) { refreshAgain = false; refreshing.abort(); } // this one is newer
        if (entering) entering.abort();
        summary = view;
        render();
      },
      status(up) { $("live-banner").hidden = up; },
    });
    clearInterval(poolTimer);
    loadPools();
    poolTimer = setInterval(loadPools, 5000);
    try {
      const view = await load(`/api/sessions/${encodeURIComponent(id)}`, "Loading the session", first.signal);
      if (sid === id && !summary) {
        summary = view;
        render();
      }
    } catch (e) {
      if (!cancelled(e)) toast(e.message || String(e), true);
    } finally {
      if (entering === first) entering = null;
    }
  }

  // A session being loaded: its name and "Loading…", nothing of the one shown before.
  function blank(id) {
    const listed = sessions.find((x) => x.session_id === id);
    $("sess-title").textContent = listed ? promoName(listed.promotion_id) : "";
    $("sess-id").textContent = `session ${id}`;
    $("sess-state").textContent = "Loading…";
    for (const box of ["open-box", "draw-box", "close-box", "counts"]) $(box).hidden = true;
    $("pick-list").replaceChildren();
    $("verify-box").hidden = true;
  }

  // ---------------------------------------------------------------- rendering

  function render() {
    if (!summary) return;
    const s = summary;
    const banner = $("mode-banner");
    banner.hidden = tickets.view !== "sessions";
    banner.className = "mode-banner " + (s.rehearsal ? "rehearsal" : "live");
    banner.textContent = s.rehearsal
      ? "REHEARSAL · practice draws, kept apart from live"
      : "LIVE SESSION · real winners";
    document.body.classList.toggle("is-rehearsal", s.rehearsal);
    $("session").dataset.session = s.session_id;
    $("sess-title").textContent = promoName(s.promotion_id);
    $("sess-id").textContent = `session ${s.session_id}`;
    const listed = sessions.find((x) => x.session_id === s.session_id);
    $("sess-state").textContent = `${s.state.toUpperCase()}` + (listed ? ` · ${localTime(listed.starts)}` : "");

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
    tickets.renderPendingBadge();
    announce();
  }

  // A winner the claim timer made a no-show: said out loud, not just a card that leaves.
  function announce() {
    const gone = [];
    let fresh = false;
    for (const p of summary.picks) {
      const was = states.get(p.pick);
      if (primed && was === undefined && p.state === "pending") fresh = true;
      const timer = Boolean(p.deadline) && RAPS.secondsLeft(p.deadline) < 2; // the claim time ran out
      if (was === "pending" && p.state === "no_show" && timer && !mine.has(`${summary.session_id}:${p.pick}`)) gone.push(p);
      states.set(p.pick, p.state);
    }
    // a winner excluded while waiting: a red alert that stays until the slot is redrawn
    if (HHClaim.renderExcluded($("excluded-alerts"), summary, excludedSeen, primed)) HHCues.cue("excluded");
    primed = true;
    if (fresh) HHCues.cue("winner");
    if (!gone.length) return;
    const what = gone.map((p) => `#${p.pick} ${RAPS.KIND[p.kind]} ${p.slot}`).join(", ");
    toast(`No-show: ${what} did not claim in time — redraw when ready`, true);
    HHCues.cue("no_show"); // a sound and a vibration, unless muted
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

  function claimSeconds() {
    const listed = sessions.find((x) => x.session_id === summary.session_id);
    return summary.claim_seconds || (listed && listed.claim_seconds) || 0;
  }

  // The countdown: a timer (role="timer", named "42 seconds left to claim" for screen
  // readers, kept in step by HHCues.tick()), the seconds large and a small visible unit.
  function counter(p) {
    return el("span", { class: "w-count", role: "timer", dataset: { deadline: p.deadline, claim: summary.claim_seconds || "" } },
      el("span", { class: "w-secs" }), el("span", { class: "w-unit", "aria-hidden": "true" }, "s"));
  }

  function winnerCard(p) {
    const [area, spot] = RAPS.where(p.location);
    const card = el("article", {
      class: `winner ${p.state}` + (summary.rehearsal ? " rehearsal" : ""),
      dataset: { pick: p.pick },
    },
    el("div", { class: "w-top" },
      el("span", { class: "w-num" }, `#${p.pick} · ${RAPS.KIND[p.kind]} ${p.slot}` + (p.attempt ? ` · redraw ${p.attempt}` : ""),
        summary.rehearsal ? el("span", { class: "w-tag" }, "REHEARSAL") : null),
      p.state !== "pending" ? el("span", { class: "w-state" }, "✓ ID seen")
        : HHClaim.running(p) ? counter(p) : HHClaim.notStarted()),
    el("div", { class: "w-area" }, area),
    el("div", { class: "w-spot" }, spot),
    el("div", { class: "w-who" }, el("span", { class: "w-name" }, p.display_name), el("span", { class: "tier" }, p.tier)),
    el("div", { class: "w-card" }, `Card ${p.card}`),
    p.state === "pending" ? HHClaim.status(p, clock) : null);
    const actions = el("div", { class: "w-actions" });
    const voidForm = voidPanel(p);
    const voidButton = cmdButton({ class: "secondary" }, "Void…");
    voidButton.addEventListener("click", () => { voidForm.hidden = !voidForm.hidden; });
    if (p.state === "pending") {
      const verify = cmdButton({ class: "ok", dataset: { action: "verify" } }, "✓ ID seen · Verified");
      verify.addEventListener("click", () => command(`picks/${p.pick}/verify`, {}, `verify #${p.pick}`, verify));
      const noShow = cmdButton({ class: "secondary", dataset: { action: "no-show" } }, "No-show");
      confirmTap(noShow, "Tap again: no-show", () => {
        mine.add(`${summary.session_id}:${p.pick}`);
        command(`picks/${p.pick}/no-show`, {}, `no-show #${p.pick}`, noShow);
      });
      const absent = HHClaim.absentButton(p, summary, cmdButton, command);
      actions.append(verify, ...(absent ? [absent] : []), el("div", { class: "row" }, noShow, voidButton));
      const extend = HHClaim.extendPanel(p, me.role, buttons, command);
      if (extend) actions.append(extend);
      // the PA line once the countdown runs (claim_starts "absent": once found absent),
      // naming the winner as the promotion's announce_name says
      const style = (me.announce && me.announce[summary.promotion_id]) || "first_initial";
      if (HHClaim.running(p)) {
        card.append(HHExtras.paLine(p, promoName(summary.promotion_id), claimSeconds(), toast, summary.session_id, style));
      }
      card.append(HHExtras.idCheck(summary.session_id, p));
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
      command(`picks/${p.pick}/award`, { envelope: env, amount: Math.round(value * 100), kind }, `record the prize of #${p.pick}`, record);
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
      command(`picks/${p.pick}/void`, { reason: reason.trim() }, `void #${p.pick}`, go);
    });
    list.id = `void-reasons-${p.pick}`;
    list.setAttribute("role", "group");
    list.setAttribute("aria-labelledby", `void-why-${p.pick}`);
    return el("div", { class: "form-grid void-form", hidden: true },
      el("div", { id: `void-why-${p.pick}`, class: "label" }, "Why void this pick?"), list,
      el("label", { for: other.id }, "Other reason"), other, go);
  }

  function renderActive() {
    const box = $("active");
    const active = summary.state === "closed" ? [] : summary.picks.filter((p) => p.state === "pending" || p.state === "verified");
    const keep = new Set(active.map((p) => p.pick));
    for (const [n, c] of cards) {
      if (!keep.has(n)) { c.node.remove(); cards.delete(n); }
    }
    let before = null;
    for (const p of byUrgency(active)) {
      let c = cards.get(p.pick);
      if (!c || c.key !== HHClaim.key(p)) {
        const node = winnerCard(p);
        if (c) c.node.replaceWith(node);
        c = { key: HHClaim.key(p), node };
        cards.set(p.pick, c);
      }
      if (before === null) {
        if (box.firstChild !== c.node) box.prepend(c.node);
      } else if (before.nextSibling !== c.node) {
        before.after(c.node);
      }
      before = c.node;
    }
    HHCues.tick();
  }

  // pending winners soonest deadline first, then the verified ones awaiting their prize
  function byUrgency(active) {
    const pending = active.filter((p) => p.state === "pending").sort((a, b) => HHClaim.urgency(a) - HHClaim.urgency(b));
    return [...pending, ...active.filter((p) => p.state !== "pending").sort((a, b) => a.pick - b.pick)];
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
      $("report-link").href = `/report#${encodeURIComponent(s.session_id)}`;
      $("report-link").hidden = !["marketing", "admin", "auditor"].includes(me.role);
      if (!verification) {
        verification = "loading";
        // like every other read: a stalled answer is abandoned and asked for again, until
        // the session is left
        RAPS.getJSON(`${base}/verification`, {
          timeoutMs: HHCommands.TIMEOUT_MS, slowMs: HHCommands.SLOW_MS, retry: true, signal: loads.signal,
        }).then((v) => {
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

  // -------------------------------------------------------------------- start

  async function start() {
    const note = (why) => { $("load-banner").hidden = false; $("load-banner").textContent = `Signing in: ${why} · retrying`; };
    me = await RAPS.loadMe({ timeoutMs: HHCommands.TIMEOUT_MS, retry: true, onSlow: note, onRetry: note });
    $("load-banner").hidden = true;
    commands = HHCommands.create({ me, buttons, onAnswer, onRefused, after: refresh });
    tickets = HHTickets.create({
      me, localDay, localTime,
      hasSession: () => Boolean(summary),
      pendingCount: () => (summary && sid ? summary.picks.filter((p) => p.state === "pending").length : 0),
    });
    $("site").textContent = me.site.name;
    HHExtras.offlineShell(refresh);
    $("who").textContent = `· ${me.user} · ${me.role}`;
    $("sign-out").addEventListener("click", RAPS.signOut);
    HHCues.bind($("mute"));
    $("back").addEventListener("click", showChoose);
    $("net-retry").addEventListener("click", () => commands.retryNow());
    $("live-confirm").addEventListener("input", () => {
      setBlocked($("open-live-btn"), $("live-confirm").value.trim().toUpperCase() !== "LIVE");
    });
    for (const id of ["open-rehearsal-btn", "open-live-btn", "draw-slots", "draw-tables", "close-btn", "force-close-btn"]) {
      $(id).dataset.cmd = "1";
    }
    const tap = (id, path, body, label) => $(id).addEventListener("click", () => command(path, body(), label, $(id)));
    tap("open-rehearsal-btn", "open", () => ({}), "open the rehearsal");
    tap("open-live-btn", "open", () => ({ confirm: $("live-confirm").value.trim() }), "open the live session");
    tap("draw-slots", "draw", () => ({ kind: "slots" }), "draw a slot winner");
    tap("draw-tables", "draw", () => ({ kind: "tables" }), "draw a table winner");
    confirmTap($("close-btn"), "Tap again to close the session", () => command("close", {}, "close the session", $("close-btn")));
    confirmTap($("force-close-btn"), "Tap again: void pending and close",
      () => command("close", { force: true }, "force-close the session", $("force-close-btn")));
    setInterval(HHCues.tick, 250);
    $("tab-sessions").addEventListener("click", () => tickets.showView("sessions"));
    $("tab-tickets").addEventListener("click", () => tickets.showView("tickets"));
    document.addEventListener("visibilitychange", () => {
      if (!document.hidden && tickets.view === "tickets") tickets.poll();
    });
    tickets.init();

    await loadSessions();
    const pending = commands.stored()[0];
    const wanted = pending ? pending.sid : decodeURIComponent(location.hash.slice(1));
    if (wanted && sessions.some((s) => s.session_id === wanted)) await enter(wanted);
    else showChoose();
    if (sid) commands.resume(sid); // finish what a lost connection cut off
  }

  start().catch((e) => toast(e.message || String(e), true));
})();
