// The Rewards desk: prize letters awaiting collection, overdue (past their collect-by:
// forfeit) and collected; handing a prize over to the winner (document type, last
// digits, a signature drawn on the screen or a typed confirmation); and the proxy
// forms of the ticket draws.
//
// Commands are retry-safe like the stage host's: the command id is made once per tap,
// kept in localStorage with its body until the server answers, and re-sent unchanged
// after a lost connection or a 503.  A refusal (409) shows its detail.
"use strict";
(() => {
  const { el } = RAPS;
  const $ = (id) => document.getElementById(id);
  const DOC_NAME = { sa_id: "SA ID", driving_licence: "driving licence", passport: "passport" };
  const KIND_NAME = { cash: "cash", plus_play: "+Play", voucher: "voucher", item: "item" };
  const POLL_MS = 5000;
  const DAY_MS = 86400000;

  let me = null;
  let tab = "awaiting";
  let prizes = [];
  let updated = null;
  let busy = false;
  let retryNow = null;
  let draws = [];
  let selected = null; // the letter being handed over
  const collect = { document: null, kind: "drawn", strokes: 0 };
  const proxy = { document: null };

  // ------------------------------------------------------------------ helpers

  const money = RAPS.letterMoney;

  const toast = (text, bad) => RAPS.toast(text, bad);

  const sleep = (ms) => new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    retryNow = () => { clearTimeout(timer); resolve(); };
  });

  function localTime(iso) {
    return new Date(iso).toLocaleString("en-GB", {
      timeZone: me.site.timezone, weekday: "short", day: "numeric", month: "short", year: "numeric",
      hour: "2-digit", minute: "2-digit",
    });
  }

  function mask(card) {
    const s = String(card || "");
    if (s.includes("*")) return s;
    return s.length <= 4 ? "*".repeat(s.length) : "*".repeat(s.length - 4) + s.slice(-4);
  }

  function detailOf(data, status) {
    const d = data && data.detail;
    if (typeof d === "string" && d) return d;
    if (Array.isArray(d)) {
      return d.map((x) => `${(x.loc || []).filter((p) => p !== "body").join(".")}: ${x.msg}`).join("; ");
    }
    return `refused (${status})`;
  }

  function setBusy(value) {
    busy = value;
    for (const b of document.querySelectorAll("button[data-cmd]")) b.disabled = busy;
  }

  function segmented(box, onPick) {
    for (const b of box.querySelectorAll("button")) {
      b.addEventListener("click", () => {
        for (const x of box.querySelectorAll("button")) x.setAttribute("aria-pressed", String(x === b));
        onPick(b.dataset.value);
      });
    }
  }

  function resetSegmented(box, value) {
    for (const x of box.querySelectorAll("button")) x.setAttribute("aria-pressed", String(x.dataset.value === value));
  }

  function digitsOnly(input) {
    input.addEventListener("input", () => { input.value = input.value.replace(/\D/g, "").slice(0, 4); });
  }

  function prizeLines(p) {
    const lines = (p.prizes || []).map((x) => `${money(x.amount)} ${KIND_NAME[x.kind] || x.kind}`);
    for (const a of p.add_ons || []) {
      for (const x of a.prizes || []) lines.push(`${a.name}: ${money(x.amount)} ${KIND_NAME[x.kind] || x.kind}`);
    }
    return lines;
  }

  // ----------------------------------------------------------------- commands

  const pendingKey = () => `raps.rewards.pending.${me.user}`;

  function readPending() {
    try { return JSON.parse(localStorage.getItem(pendingKey()) || "null"); } catch (_) { return null; }
  }

  function command(url, body, label) {
    if (busy) return Promise.resolve(null);
    const cmd = { url, label, body: { ...body, command_id: RAPS.uuid() } };
    try {
      localStorage.setItem(pendingKey(), JSON.stringify(cmd));
    } catch (_) { /* storage full: the retry loop below still reuses the id */ }
    return send(cmd);
  }

  // Resolves with { ok, status, data } once the server answered (a 4xx included).
  async function send(cmd) {
    setBusy(true);
    try {
      const got = await RAPS.deliver(cmd.url, cmd.body, (why) => {
        $("net-text").textContent = `${why}: retrying "${cmd.label}" (it will not be done twice)`;
        $("net-banner").hidden = false;
      }, sleep);
      if (got === null) return null; // signed out: the command stays stored
      localStorage.removeItem(pendingKey());
      $("net-banner").hidden = true;
      if (got.ok && $("toast").classList.contains("bad")) $("toast").hidden = true; // refusal fixed
      if (!got.ok) toast(detailOf(got.data, got.status), true);
      return got;
    } finally {
      setBusy(false);
    }
  }

  // -------------------------------------------------------------------- prizes

  async function loadPrizes() {
    try {
      const got = await RAPS.getJSON("/api/prizes?state=all");
      RAPS.syncClock(got.server_time);
      prizes = got.prizes;
      updated = RAPS.now();
      $("updated").classList.remove("stale");
    } catch (e) {
      $("updated").classList.add("stale");
      $("updated").textContent = `Not updated (${e.message}) · retrying`;
      return;
    }
    renderPrizes();
  }

  function matches(p, q) {
    if (!q) return true;
    const s = q.trim().toLowerCase();
    return [p.letter_no, p.winner_name, p.winner_card, p.verification_code, p.draw_name]
      .some((x) => String(x || "").toLowerCase().includes(s));
  }

  function renderPrizes() {
    const counts = { awaiting: 0, overdue: 0, collected: 0, forfeited: 0 };
    for (const p of prizes) counts[p.state] = (counts[p.state] || 0) + 1;
    for (const k of ["awaiting", "overdue", "collected"]) $(`n-${k}`).textContent = String(counts[k]);
    $("tab-overdue").classList.toggle("alert", counts.overdue > 0);
    if (tab === "proxies") return;
    const q = $("find").value;
    const order = tab === "collected"
      ? (a, b) => String(b.collected_at).localeCompare(String(a.collected_at))
      : (a, b) => a.collect_by.localeCompare(b.collect_by);
    const list = prizes.filter((p) => p.state === tab && matches(p, q)).sort(order);
    $("prize-list").replaceChildren(...list.map(prizeCard));
    const none = { awaiting: "No prize is awaiting collection.", overdue: "No prize is overdue.", collected: "No prize collected yet." };
    $("list-note").textContent = list.length ? "" : (q ? "No letter matches." : none[tab]);
    $("updated").textContent = updated
      ? `Updated ${new Date(updated).toLocaleTimeString("en-GB", { timeZone: me.site.timezone, hour12: false })} · every ${POLL_MS / 1000} s`
      : "Loading…";
  }

  function prizeCard(p) {
    const left = Date.parse(p.collect_by) - RAPS.now();
    const base = `/prizes/${encodeURIComponent(p.letter_no)}`;
    let when;
    if (p.state === "collected") {
      const c = p.collection || {};
      when = `Collected ${localTime(p.collected_at)}` + (c.document ? ` · ${DOC_NAME[c.document] || c.document} ending ${c.last_digits}` : "")
        + (c.signature ? ` · ${c.signature.kind === "typed" ? "typed confirmation" : "signed on screen"}` : "")
        + (c.by ? ` · handed over by ${c.by}` : "");
    } else if (p.state === "overdue") {
      when = `FORFEIT: not collected by ${localTime(p.collect_by)} (${Math.floor(-left / DAY_MS)} days over)`;
    } else {
      const days = Math.ceil(left / DAY_MS);
      when = `Collect by ${localTime(p.collect_by)} · ${days} day${days === 1 ? "" : "s"} left`;
    }
    return el("article", { class: `prize ${p.state}`, dataset: { letter: p.letter_no, state: p.state } },
      el("div", { class: "pz-top" },
        el("span", { class: "pz-no" }, p.letter_no),
        el("span", { class: `pz-tag ${p.state}` }, p.state.toUpperCase())),
      el("div", { class: "pz-who" }, p.winner_name, el("span", { class: "pz-card" }, p.winner_card)),
      el("div", { class: "pz-draw" }, `${p.draw_name} · pick ${p.pick} · code ${p.verification_code}`),
      el("ul", { class: "pz-prizes" }, prizeLines(p).map((x) => el("li", {}, x))),
      el("div", { class: "pz-total" }, `Total ${money(p.total)}`),
      el("div", { class: "pz-when" }, when),
      el("div", { class: "pz-actions" },
        el("a", { class: "button secondary", href: p.letter_url || `${base}/letter`, target: "_blank", rel: "noopener", dataset: { link: "letter" } }, "Letter"),
        el("a", { class: "button secondary", href: p.pdf_url || `${base}/letter.pdf`, target: "_blank", rel: "noopener", dataset: { link: "pdf" } }, "PDF"),
        p.state === "awaiting"
          ? el("button", { type: "button", class: "primary", dataset: { action: "collect" }, onclick: () => openSheet(p) }, "Hand over…")
          : null,
        p.state === "overdue"
          ? el("button", { type: "button", class: "secondary", dataset: { action: "forfeit" }, onclick: () => forfeit(p) }, "Close as forfeit…")
          : null));
  }

  // An overdue prize is closed with a reason (management's decision), so it stops being
  // listed and alerted as overdue; the journal keeps the letter, its award and the reason.
  async function forfeit(p) {
    const reason = window.prompt(`Close ${p.letter_no} as forfeit: the reason (e.g. "winner not reachable, management decision of 20 Oct")`);
    if (!reason || !reason.trim()) return;
    const got = await command(`/api/prizes/${encodeURIComponent(p.letter_no)}/forfeit`, { reason: reason.trim() }, `forfeit ${p.letter_no}`);
    if (got && got.ok) toast(`${p.letter_no} closed as forfeit`);
    await loadPrizes();
  }

  function showTab(name) {
    tab = name;
    for (const b of document.querySelectorAll(".rw-tabs button")) b.setAttribute("aria-pressed", String(b.dataset.tab === name));
    $("prizes-view").hidden = name === "proxies";
    $("proxies-view").hidden = name !== "proxies";
    if (name === "proxies") loadProxies();
    else renderPrizes();
  }

  // ---------------------------------------------------------------- collection

  const pad = { ctx: null, drawing: false, last: null };

  function sizeCanvas() {
    const c = $("c-canvas");
    const ratio = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(c.clientWidth * ratio));
    const h = Math.max(1, Math.round(c.clientHeight * ratio));
    c.width = w;
    c.height = h;
    const ctx = c.getContext("2d");
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, w, h);
    ctx.strokeStyle = "#000";
    ctx.lineWidth = 2.5 * ratio;
    ctx.lineCap = "round";
    ctx.lineJoin = "round";
    pad.ctx = ctx;
    collect.strokes = 0;
    checkCollect();
  }

  function point(ev) {
    const c = $("c-canvas");
    const r = c.getBoundingClientRect();
    return [(ev.clientX - r.left) * (c.width / r.width), (ev.clientY - r.top) * (c.height / r.height)];
  }

  function wirePad() {
    const c = $("c-canvas");
    c.addEventListener("pointerdown", (ev) => {
      ev.preventDefault();
      c.setPointerCapture(ev.pointerId);
      pad.drawing = true;
      pad.last = point(ev);
      pad.ctx.beginPath();
      pad.ctx.arc(pad.last[0], pad.last[1], pad.ctx.lineWidth / 2, 0, Math.PI * 2);
      pad.ctx.fillStyle = "#000";
      pad.ctx.fill();
    });
    c.addEventListener("pointermove", (ev) => {
      if (!pad.drawing) return;
      const p = point(ev);
      pad.ctx.beginPath();
      pad.ctx.moveTo(pad.last[0], pad.last[1]);
      pad.ctx.lineTo(p[0], p[1]);
      pad.ctx.stroke();
      pad.last = p;
    });
    const end = () => {
      if (!pad.drawing) return;
      pad.drawing = false;
      collect.strokes++;
      checkCollect();
    };
    c.addEventListener("pointerup", end);
    c.addEventListener("pointercancel", end);
    $("c-clear").addEventListener("click", sizeCanvas);
  }

  function openSheet(p) {
    selected = p;
    collect.document = null;
    collect.kind = "drawn";
    resetSegmented($("c-document"), null);
    resetSegmented($("c-sig-kind"), "drawn");
    $("c-digits").value = "";
    $("c-text").value = "";
    $("c-drawn").hidden = false;
    $("c-typed").hidden = true;
    $("c-summary").replaceChildren(
      el("div", { class: "c-no" }, p.letter_no, " · ", p.winner_name, " · ", p.winner_card),
      el("div", {}, `${p.draw_name} · ${prizeLines(p).join(", ")} · total ${money(p.total)}`));
    $("collect").hidden = false;
    document.body.classList.add("sheet-open");
    sizeCanvas();
    checkCollect();
  }

  function closeSheet() {
    selected = null;
    $("collect").hidden = true;
    document.body.classList.remove("sheet-open");
  }

  function collectReady() {
    if (!selected || !collect.document || !/^[0-9]{2,4}$/.test($("c-digits").value)) return false;
    return collect.kind === "typed" ? Boolean($("c-text").value.trim()) : collect.strokes > 0;
  }

  function checkCollect() {
    $("c-submit").dataset.ready = collectReady() ? "1" : "0";
  }

  async function submitCollect() {
    if (!collectReady()) {
      if (!collect.document) toast("Choose the winner's document type", true);
      else if (!/^[0-9]{2,4}$/.test($("c-digits").value)) toast("Type the last 2 to 4 digits of the document", true);
      else toast(collect.kind === "typed" ? "The winner types their name to confirm" : "The winner signs in the box", true);
      return;
    }
    const p = selected;
    const signature = collect.kind === "typed"
      ? { kind: "typed", text: $("c-text").value.trim() }
      : { kind: "drawn", png: $("c-canvas").toDataURL("image/png") };
    const got = await command(`/api/prizes/${encodeURIComponent(p.letter_no)}/collect`, {
      document: collect.document, last_digits: $("c-digits").value, signature,
    }, `hand over ${p.letter_no}`);
    if (got && got.ok) {
      closeSheet();
      toast(`${p.letter_no} collected by ${p.winner_name}`);
    }
    await loadPrizes();
  }

  // ------------------------------------------------------------------ proxies

  async function loadDraws() {
    const got = await RAPS.getJSON("/api/stage/draws");
    draws = got.draws;
    const sel = $("px-draw");
    const keep = sel.value;
    const order = { scheduled: 0, open: 1, closed: 2 };
    const list = [...draws].sort((a, b) => (order[a.state] ?? 3) - (order[b.state] ?? 3) || a.at.localeCompare(b.at));
    sel.replaceChildren(...list.map((d) => el("option", { value: d.draw_id },
      `${d.name} · ${localTime(d.at)} · ${d.state}`)));
    if (keep && draws.some((d) => d.draw_id === keep)) sel.value = keep;
  }

  async function loadProxies() {
    if (!draws.length) {
      try { await loadDraws(); } catch (e) { toast(e.message, true); return; }
    }
    const id = $("px-draw").value;
    if (!id) {
      $("px-list").replaceChildren(el("li", {}, "No ticket draw is configured."));
      return;
    }
    try {
      const got = await RAPS.getJSON(`/api/stage/draws/${encodeURIComponent(id)}/proxies`);
      if (got.draw_id !== $("px-draw").value) return;
      const late = Date.parse(got.deadline) < RAPS.now();
      $("px-deadline").textContent = `${late ? "Proxy forms closed" : "Proxy forms until"} ${localTime(got.deadline)}`;
      $("px-deadline").classList.toggle("late", late);
      $("px-count").textContent = `(${got.proxies.length})`;
      $("px-list").replaceChildren(...got.proxies.map((x) => el("li", { dataset: { member: mask(x.member) } },
        el("strong", {}, x.name), ` for member ${mask(x.member)}`,
        el("div", { class: "px-meta" },
          `${DOC_NAME[x.document] || x.document}` + (x.last_digits ? ` ending ${x.last_digits}` : "")
          + (x.proxy_card ? ` · proxy's card ${mask(x.proxy_card)}` : "")
          + (x.at ? ` · ${localTime(x.at)}` : "")))));
      if (!got.proxies.length) $("px-list").append(el("li", { class: "none" }, "No proxy on file for this draw."));
    } catch (e) {
      $("px-list").replaceChildren(el("li", { class: "none" }, `Could not load the proxies: ${e.message}`));
    }
  }

  async function submitProxy(ev) {
    ev.preventDefault();
    const id = $("px-draw").value;
    const member = $("px-member").value.trim();
    const name = $("px-name").value.trim();
    const digits = $("px-digits").value;
    const card = $("px-card").value.trim();
    if (!id || !member || !name) { toast("Fill in the member's card and the proxy's name", true); return; }
    if (!proxy.document) { toast("Choose the proxy's document type", true); return; }
    if (!/^[0-9]{2,4}$/.test(digits)) { toast("Type the last 2 to 4 digits of the proxy's document", true); return; }
    const got = await command(`/api/stage/draws/${encodeURIComponent(id)}/proxies`, {
      member, name, document: proxy.document, last_digits: digits, proxy_card: card || null,
    }, `proxy for ${mask(member)}`);
    if (got && got.ok) {
      toast(`${name} is on file as the proxy for ${mask(member)}`);
      for (const f of ["px-member", "px-name", "px-digits", "px-card"]) $(f).value = "";
      proxy.document = null;
      resetSegmented($("px-document"), null);
    }
    await loadProxies();
  }

  // -------------------------------------------------------------------- start

  async function start() {
    me = await RAPS.loadMe();
    $("site").textContent = me.site.name;
    $("who").textContent = `${me.user} · ${me.role}`;
    $("sign-out").addEventListener("click", RAPS.signOut);
    $("net-retry").addEventListener("click", () => { if (retryNow) retryNow(); });
    for (const b of document.querySelectorAll(".rw-tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));
    $("find").addEventListener("input", renderPrizes);
    segmented($("c-document"), (v) => { collect.document = v; checkCollect(); });
    segmented($("c-sig-kind"), (v) => {
      collect.kind = v;
      $("c-drawn").hidden = v !== "drawn";
      $("c-typed").hidden = v !== "typed";
      if (v === "drawn") sizeCanvas();
      checkCollect();
    });
    digitsOnly($("c-digits"));
    $("c-digits").addEventListener("input", checkCollect);
    $("c-text").addEventListener("input", checkCollect);
    $("c-cancel").addEventListener("click", closeSheet);
    $("c-submit").addEventListener("click", submitCollect);
    document.addEventListener("keydown", (ev) => { if (ev.key === "Escape" && !$("collect").hidden && !busy) closeSheet(); });
    wirePad();
    segmented($("px-document"), (v) => { proxy.document = v; });
    digitsOnly($("px-digits"));
    $("px-form").addEventListener("submit", submitProxy);
    $("px-draw").addEventListener("change", loadProxies);

    const pending = readPending();
    if (pending) await send(pending); // finish what a lost connection cut off
    await loadPrizes();
    setInterval(() => { if (!document.hidden) loadPrizes(); }, POLL_MS);
    loadDraws().catch(() => {});
  }

  start().catch((e) => toast(e.message || String(e), true));
})();
