// The stage host: pick a ticket draw, open it, draw each winner, check who presents
// (winner or proxy, document type and last digits, the ticket receipt), the add-ons,
// award the prize (the position's, or a device's reveal), no-show, void, close; a draw
// with a stage game plays it (stage-games.js) and the game pays its winners.
//
// Every command gets its id here, once, when the host taps; the id is kept in
// localStorage until the server has answered.  A lost connection or a 503 (the journal
// could not commit) re-sends the *same* id, and the server answers a repeated id with
// the first outcome, so a retry never draws twice.  A refusal (409) shows its detail.
"use strict";
(() => {
  const { el } = RAPS;
  const $ = (id) => document.getElementById(id);
  const FILLED = ["pending", "verified", "awarded"];
  const DOCUMENTS = [["sa_id", "SA ID"], ["driving_licence", "Driving licence"], ["passport", "Passport"]];
  const DOC_NAME = Object.fromEntries(DOCUMENTS);
  const KINDS = [["cash", "Cash"], ["plus_play", "+Play"], ["voucher", "Voucher"], ["item", "Item"]];
  const KIND_NAME = { cash: "cash", plus_play: "+Play", voucher: "voucher", item: "item" };
  const TIER_GROUPS = [
    { id: "ten-jack", label: "Ten & Jack", tiers: ["ten", "jack"] },
    { id: "queen", label: "Queen", tiers: ["queen"] },
    { id: "king-ace", label: "King & Ace", tiers: ["king", "ace"] },
  ];
  const STATE_TEXT = {
    pending: "waiting to present",
    verified: "presented",
    awarded: "awarded",
    no_show: "no-show",
    void: "void",
  };
  const POLL_ERROR_MS = [1000, 2000, 4000, 8000];

  let me = null;
  let draws = [];
  let did = null; // the selected draw
  let view = null; // its host view
  let retryNow = null;
  let listTimer = null;
  let poll = { token: 0, failures: 0 };
  const forms = new Map(); // pick number -> what the host typed and chose
  const cards = new Map(); // pick number -> { sig, node }

  // ------------------------------------------------------------------ helpers

  const money = RAPS.letterMoney;

  const toast = (text, bad) => RAPS.toast(text, bad);

  const sleep = (ms) => new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    retryNow = () => { clearTimeout(timer); resolve(); };
  });

  function localTime(iso) {
    return new Date(iso).toLocaleString("en-GB", {
      timeZone: me.site.timezone, weekday: "short", day: "numeric", month: "short",
      hour: "2-digit", minute: "2-digit",
    });
  }

  function detailOf(data, status) {
    const d = data && data.detail;
    if (typeof d === "string" && d) return d;
    if (Array.isArray(d)) {
      return d.map((x) => `${(x.loc || []).filter((p) => p !== "body").join(".")}: ${x.msg}`).join("; ");
    }
    return `refused (${status})`;
  }

  function form(n) {
    if (!forms.has(n)) {
      forms.set(n, { presenter: "winner", document: null, digits: "", receipt: "", amount: "",
        kind: null, ref: "", voidOpen: false, reason: "" });
    }
    return forms.get(n);
  }

  // Buttons that send a command carry data-cmd; they are all off while one is in flight.
  const commands = RAPS.commandButtons();
  const { button: cmdButton, setBlocked, setBusy } = commands;

  // Two taps for what cannot be undone: the first arms the button for 4 s.
  function confirmTap(button, armedText, action) {
    button.addEventListener("click", () => {
      if (button.dataset.armed === "1") {
        button.dataset.armed = "0";
        button.textContent = button.dataset.idle;
        action();
        return;
      }
      button.dataset.idle = button.textContent;
      button.dataset.armed = "1";
      button.textContent = typeof armedText === "function" ? armedText() : armedText;
      setTimeout(() => {
        if (button.dataset.armed === "1") {
          button.dataset.armed = "0";
          button.textContent = button.dataset.idle;
        }
      }, 4000);
    });
  }

  function segmented(name, options, chosen, onPick) {
    return el("div", { class: "segmented", role: "group", dataset: { field: name } },
      options.map(([value, label, disabled]) => el("button", {
        type: "button",
        "aria-pressed": String(value === chosen),
        disabled: Boolean(disabled),
        dataset: { value },
        onclick: (ev) => {
          for (const b of ev.currentTarget.parentNode.children) b.setAttribute("aria-pressed", "false");
          ev.currentTarget.setAttribute("aria-pressed", "true");
          onPick(value);
        },
      }, label)));
  }

  async function copyText(text) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch (_) {
      const area = el("textarea", { class: "offscreen", readonly: true });
      area.value = text;
      document.body.append(area);
      area.select();
      let ok = false;
      try { ok = document.execCommand("copy"); } catch (_) { ok = false; }
      area.remove();
      return ok;
    }
  }

  // ----------------------------------------------------------------- commands

  const pendingKey = () => `raps.stage.pending.${me.user}`;

  function readPending() {
    try { return JSON.parse(localStorage.getItem(pendingKey()) || "null"); } catch (_) { return null; }
  }

  function command(path, body, label) {
    if (commands.busy || !did) return Promise.resolve(null);
    const cmd = { did, path, label, body: { ...body, command_id: RAPS.uuid() } };
    localStorage.setItem(pendingKey(), JSON.stringify(cmd));
    return send(cmd);
  }

  async function send(cmd) {
    setBusy(true);
    const before = view ? view.picks.length : 0;
    try {
      const url = `/api/stage/draws/${encodeURIComponent(cmd.did)}/${cmd.path}`;
      const got = await RAPS.deliver(url, cmd.body, (why) => retrying(cmd, why), sleep);
      if (got === null) return null; // signed out: the command stays stored
      localStorage.removeItem(pendingKey());
      $("net-banner").hidden = true;
      if (got.ok && $("toast").classList.contains("bad")) $("toast").hidden = true; // refusal fixed
      if (got.ok) {
        if (cmd.did === did) setView(got.data);
        onAnswer(cmd, got.data, before);
      } else {
        toast(detailOf(got.data, got.status), true);
        await refresh();
      }
      return got.data;
    } finally {
      setBusy(false);
    }
  }

  function retrying(cmd, why) {
    $("net-text").textContent = `${why}: retrying "${cmd.label}" (it will not be done twice)`;
    $("net-banner").hidden = false;
  }

  function onAnswer(cmd, data, before) {
    if (cmd.path === "draw") {
      const p = data.picks && data.picks[data.picks.length - 1];
      if (data.picks && data.picks.length === before) toast("No eligible ticket left in the bin", true);
      else if (p) toast(`Winner #${p.number} drawn: ${p.announced_as}`);
    } else if (cmd.path === "close") {
      toast("Draw closed: the seed is revealed");
    } else if (/\/award$/.test(cmd.path)) {
      const n = Number(cmd.path.split("/")[1]);
      const p = data.picks && data.picks.find((x) => x.number === n);
      if (p && p.letter_no) toast(`Prize letter ${p.letter_no} issued`);
    }
  }

  // ------------------------------------------------------------------ loading

  async function loadDraws() {
    const got = await RAPS.getJSON("/api/stage/draws");
    RAPS.syncClock(got.server_time);
    draws = got.draws;
    renderDraws();
  }

  function renderDraws() {
    const order = { open: 0, scheduled: 1, closed: 2 };
    const list = [...draws].sort((a, b) => (order[a.state] ?? 3) - (order[b.state] ?? 3) || a.at.localeCompare(b.at));
    $("draw-list").replaceChildren(...list.map((d) => el("button", {
      type: "button",
      class: `draw-item ${d.state}`,
      dataset: { draw: d.draw_id, state: d.state },
      onclick: () => enter(d.draw_id),
    },
    el("span", { class: "di-name" }, d.name),
    el("span", { class: "di-meta" },
      el("span", { class: `state-tag ${d.state}` }, d.state.toUpperCase()),
      `${localTime(d.at)} · ${d.winners_drawn} of ${d.winners} winners · ${d.players} players · ${d.tickets} tickets`))));
    if (!draws.length) $("draw-list").append(el("p", {}, "No ticket draw is configured."));
  }

  async function refresh() {
    if (!did) return;
    try {
      setView(await RAPS.getJSON(`/api/stage/draws/${encodeURIComponent(did)}`));
    } catch (e) {
      toast(e.message || String(e), true);
    }
  }

  function setView(v) {
    if (!v || v.draw_id !== did) return;
    if (view && v.version < view.version) return; // an older answer that arrived late
    view = v;
    RAPS.syncClock(v.server_time);
    render();
  }

  function showChoose() {
    did = null;
    view = null;
    poll.token++;
    cards.clear();
    forms.clear();
    $("current").replaceChildren();
    $("draw").hidden = true;
    $("choose").hidden = false;
    $("live-banner").hidden = true;
    if (location.hash) history.replaceState(null, "", location.pathname);
    loadDraws().catch((e) => toast(e.message, true));
    clearInterval(listTimer);
    listTimer = setInterval(() => { if (!did) loadDraws().catch(() => {}); }, 5000);
  }

  async function enter(id) {
    clearInterval(listTimer);
    did = id;
    view = null;
    cards.clear();
    forms.clear();
    $("current").replaceChildren();
    $("force-btn").hidden = true;
    history.replaceState(null, "", "#" + encodeURIComponent(id));
    $("choose").hidden = true;
    $("draw").hidden = false;
    window.scrollTo(0, 0);
    await refresh();
    follow();
  }

  // Live updates: the audience screen's long poll (it answers as soon as anything
  // newer commits: a late entry, the presentation timer's no-show, another host's tap),
  // then the host view again.
  async function follow() {
    const token = ++poll.token;
    poll.failures = 0;
    while (token === poll.token && did) {
      const id = did;
      const after = view ? view.version : 0;
      try {
        const r = await fetch(`/api/stage/screen/${encodeURIComponent(id)}?after=${after}`, {
          credentials: "same-origin", headers: { Accept: "application/json" },
        });
        if (token !== poll.token) return;
        if (r.status === 401) { RAPS.toLogin(); return; }
        if (!r.ok) throw new Error(String(r.status));
        const s = await r.json();
        poll.failures = 0;
        $("live-banner").hidden = true;
        if (!view || s.version > view.version) await refresh();
      } catch (_) {
        if (token !== poll.token) return;
        $("live-banner").hidden = false;
        const wait = POLL_ERROR_MS[Math.min(poll.failures, POLL_ERROR_MS.length - 1)];
        poll.failures++;
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  // ---------------------------------------------------------------- rendering

  function freePosition(v) {
    const last = new Map();
    for (const p of v.picks) last.set(p.position, p);
    for (let pos = 1; pos <= v.winners; pos++) {
      const p = last.get(pos);
      if (!p || !FILLED.includes(p.state)) return { position: pos, redraw: Boolean(p) };
    }
    return null;
  }

  function render() {
    const v = view;
    if (!v) return;
    $("d-name").textContent = v.name;
    $("d-meta").textContent = `${v.program} · ${localTime(v.at)} · ${v.winners} winner${v.winners === 1 ? "" : "s"} · ${v.present_seconds} s to present`;
    const tag = $("d-state");
    tag.textContent = v.state.toUpperCase();
    tag.className = `state-tag ${v.state}`;
    tag.dataset.state = v.state;
    document.body.dataset.state = v.state;
    document.body.dataset.version = String(v.version); // what the page shows, for tests

    $("open-box").hidden = v.state !== "scheduled";
    renderDrawButton();
    renderCurrent();
    renderClose();
    renderBin();
    renderPicks();
    renderProof();
    StageGames.render($("game"), v, { command, cmdButton, setBlocked, confirmTap });
  }

  function renderDrawButton() {
    const v = view;
    const box = $("draw-box");
    box.hidden = v.state !== "open";
    const button = $("draw-btn");
    const free = freePosition(v);
    const pending = v.pending !== null && v.pending !== undefined;
    if (!free) {
      $("draw-label").textContent = `All ${v.winners} winners drawn`;
      $("draw-sub").textContent = "";
    } else {
      $("draw-label").textContent = free.redraw ? `Redraw position ${free.position}` : `Draw winner ${free.position} of ${v.winners}`;
      const prize = v.prizes[free.position - 1];
      $("draw-sub").textContent = pending
        ? `winner #${v.pending} is still to present`
        : (v.game ? "the stage game decides the prize" : (prize ? `prize ${prize}` : "prize revealed by the device"));
    }
    button.classList.toggle("redraw", Boolean(free && free.redraw));
    setBlocked(button, !free || pending);
  }

  function renderClose() {
    const v = view;
    $("close-box").hidden = v.state !== "open";
    const pending = v.pending !== null && v.pending !== undefined;
    $("close-btn").hidden = pending;
    $("force-btn").hidden = !pending;
  }

  function renderBin() {
    const b = view.bin;
    $("b-players").textContent = b ? String(b.players) : "—";
    $("b-tickets").textContent = b ? String(b.tickets) : "—";
    const rows = TIER_GROUPS.map((g) => tierRow(g.id, g.label, g.tiers, b));
    const known = new Set(TIER_GROUPS.flatMap((g) => g.tiers));
    const other = b ? Object.keys(b.by_tier || {}).filter((t) => !known.has(t)) : [];
    if (other.length) rows.push(tierRow("other", "Other", other, b));
    $("b-tiers").replaceChildren(...rows);
    const proxies = view.proxies || [];
    $("proxies-box").hidden = !proxies.length;
    $("proxy-list").replaceChildren(...proxies.map((x) => el("li", {},
      el("strong", {}, x.name), ` for card ${x.member} · ${DOC_NAME[x.document] || x.document}`)));
  }

  function tierRow(id, label, tiers, b) {
    let players = 0;
    let tickets = 0;
    for (const t of tiers) {
      const r = b && b.by_tier && b.by_tier[t];
      if (!r) continue;
      players += r.players;
      tickets += r.tickets;
    }
    return el("tr", { dataset: { group: id } },
      el("th", { scope: "row" }, label),
      el("td", { class: "players" }, b ? String(players) : "—"),
      el("td", { class: "tickets" }, b ? String(tickets) : "—"));
  }

  function prizeOf(p) {
    if (p.prize && typeof p.prize === "object" && "amount" in p.prize) {
      return p.prize.text || `${money(p.prize.amount)} ${KIND_NAME[p.prize.kind] || p.prize.kind}`;
    }
    return p.position_prize || "";
  }

  function outcomeText(p) {
    let text = STATE_TEXT[p.state] || p.state;
    if (p.state === "awarded") {
      const prize = prizeOf(p);
      if (prize) text += ` ${prize}`;
    }
    if ((p.state === "no_show" || p.state === "void") && view.state === "open") text += " → redraw";
    return text;
  }

  function renderPicks() {
    const v = view;
    const won = v.picks.filter((p) => FILLED.includes(p.state) && p.state !== "pending").length;
    $("w-count").textContent = `(${won} of ${v.winners})`;
    $("pick-list").replaceChildren(...v.picks.map((p) => el("li", { dataset: { pick: p.number, state: p.state } },
      el("div", { class: "p-head" }, `#${p.number} · position ${p.position}` + (p.attempt ? ` (redraw ${p.attempt})` : "")),
      el("div", { class: "p-who" }, `${p.name} · ${p.card_masked} · ${p.tier} · ${p.tickets} tickets`),
      el("div", { class: `p-out ${p.state}` }, outcomeText(p)),
      p.letter_no ? el("div", { class: "p-letter" },
        "Letter ", el("a", { href: `/prizes/${encodeURIComponent(p.letter_no)}/letter`, target: "_blank", rel: "noopener" }, p.letter_no)) : null)));
    if (!v.picks.length) $("pick-list").append(el("li", { class: "none" }, "No winner drawn yet."));
  }

  function renderProof() {
    const v = view;
    $("commitment").textContent = v.commitment || "published when the draw opens";
    $("seed").textContent = v.seed || "revealed when the draw closes";
    const line = $("verify-line");
    line.hidden = !v.seed;
    line.textContent = v.seed
      ? `SHA-256(seed) must equal the commitment ${v.commitment}; check the export with: raps verify`
      : "";
  }

  // The cards of the winners the host is dealing with: the pending one, the presented
  // ones awaiting their prize, and the last awarded one (its letter).
  function renderCurrent() {
    const v = view;
    const last = v.picks[v.picks.length - 1];
    // once a stage game has begun, its contestants are on the game's screen
    const playing = v.game && v.game.games.some((x) => x.state !== "not_open");
    const shown = v.state !== "open" || playing ? [] : v.picks.filter((p) => p.state === "pending"
      || p.state === "verified" || (p === last && ["awarded", "no_show", "void"].includes(p.state)));
    const box = $("current");
    const keep = new Set();
    let before = null;
    for (const p of shown) {
      const sig = JSON.stringify([p.state, p.add_ons, p.letter_no, p.proxy, p.presented, v.state, v.add_ons.length]);
      let c = cards.get(p.number);
      if (!c || c.sig !== sig) {
        const node = winnerCard(p);
        if (c) c.node.replaceWith(node);
        c = { sig, node };
        cards.set(p.number, c);
      }
      keep.add(p.number);
      if (before === null) {
        if (box.firstChild !== c.node) box.prepend(c.node);
      } else if (before.nextSibling !== c.node) {
        before.after(c.node);
      }
      before = c.node;
    }
    for (const [n, c] of cards) {
      if (!keep.has(n)) {
        c.node.remove();
        cards.delete(n);
      }
    }
    tick();
  }

  function winnerHead(p) {
    return [
      el("div", { class: "w-top" },
        el("span", { class: "w-num" }, `Winner #${p.number} · position ${p.position}` + (p.attempt ? ` · redraw ${p.attempt}` : "")),
        p.state === "pending"
          ? el("span", { class: "w-count", dataset: { deadline: p.deadline, seconds: view.present_seconds }, "aria-label": "seconds left to present" })
          : el("span", { class: `w-state ${p.state}` }, outcomeText(p).toUpperCase())),
      el("div", { class: "w-who" }, el("span", { class: "w-name" }, p.name), el("span", { class: "tier" }, p.tier)),
      el("div", { class: "w-card" }, `Card ${p.card_masked} · ${p.tickets} ticket${p.tickets === 1 ? "" : "s"}`),
    ];
  }

  function winnerCard(p) {
    const card = el("article", { class: `winner ${p.state}`, dataset: { pick: p.number, state: p.state } }, ...winnerHead(p));
    if (p.state === "pending") card.append(...pendingParts(p));
    else if (p.state === "verified") card.append(...verifiedParts(p));
    else if (p.state === "awarded") card.append(awardedPart(p));
    else card.append(el("p", { class: "w-gone" }, p.state === "void" ? "Voided: the position is drawn again." : "No-show: the position is drawn again."));
    return card;
  }

  function announcementPart(p) {
    const status = el("span", { class: "copied", role: "status" });
    return el("div", { class: "announce" },
      el("div", { class: "label" }, "For the PA"),
      el("p", { class: "announce-text" }, p.announcement),
      el("button", {
        type: "button", class: "secondary small", dataset: { action: "copy" },
        onclick: async () => {
          status.textContent = (await copyText(p.announcement)) ? "Copied" : "Select the text to copy";
          setTimeout(() => { status.textContent = ""; }, 3000);
        },
      }, "Copy announcement"), status);
  }

  function pendingParts(p) {
    const f = form(p.number);
    if (!p.proxy && f.presenter === "proxy") f.presenter = "winner";
    const digits = el("input", {
      id: `digits-${p.number}`, inputmode: "numeric", autocomplete: "off", maxlength: "4",
      pattern: "[0-9]{2,4}", placeholder: "2 to 4 digits", "aria-describedby": `digits-hint-${p.number}`,
    });
    digits.value = f.digits;
    const receipt = el("input", {
      id: `receipt-${p.number}`, autocomplete: "off", autocapitalize: "characters", spellcheck: "false",
      placeholder: "type or scan", enterkeyhint: "done",
    });
    receipt.value = f.receipt;
    const present = cmdButton({ class: "big ok", dataset: { action: "present" } }, "✓ Presented: verify");
    const check = () => setBlocked(present, !(f.document && /^[0-9]{2,4}$/.test(f.digits) && f.receipt.trim()));
    digits.addEventListener("input", () => {
      digits.value = digits.value.replace(/\D/g, "").slice(0, 4); // never a whole ID number
      f.digits = digits.value;
      check();
    });
    receipt.addEventListener("input", () => { f.receipt = receipt.value; check(); });
    receipt.addEventListener("keydown", (ev) => {
      if (ev.key !== "Enter") return;
      ev.preventDefault(); // a scanner ends its code with Enter
      f.receipt = receipt.value;
      check();
      if (!present.disabled) present.click();
      else if (!f.document) toast("Choose the document type seen", true);
      else if (!/^[0-9]{2,4}$/.test(f.digits)) digits.focus();
    });
    present.addEventListener("click", () => {
      command(`picks/${p.number}/present`, {
        presenter: f.presenter, document: f.document, last_digits: f.digits, receipt: f.receipt.trim(),
      }, `present winner #${p.number}`);
    });
    check();

    const proxyNote = p.proxy
      ? el("p", { class: "proxy-note" }, "Proxy on file: ", el("strong", {}, p.proxy.name),
        ` · ${DOC_NAME[p.proxy.document] || p.proxy.document} ending ${p.proxy.last_digits}`)
      : el("p", { class: "proxy-note none" }, "No proxy on file: only the winner may present.");

    const noShow = cmdButton({ class: "secondary", dataset: { action: "no-show" } }, "No-show");
    confirmTap(noShow, "Tap again: no-show", () => command(`picks/${p.number}/no-show`, {}, `no-show #${p.number}`));

    return [
      announcementPart(p),
      proxyNote,
      el("div", { class: "form-grid" },
        el("span", { class: "flabel" }, "Who presents"),
        segmented("presenter", [["winner", "Winner"], ["proxy", "Proxy", !p.proxy]], f.presenter, (x) => { f.presenter = x; }),
        el("span", { class: "flabel" }, "Document seen"),
        segmented("document", DOCUMENTS, f.document, (x) => { f.document = x; check(); }),
        el("div", { class: "row2" },
          el("div", {},
            el("label", { for: digits.id }, "Last digits of the ID"),
            digits,
            el("small", { id: `digits-hint-${p.number}`, class: "hint" }, "Only the last 2 to 4 digits, never the whole number")),
          el("div", {},
            el("label", { for: receipt.id }, "Ticket receipt number"),
            receipt))),
      el("div", { class: "w-actions" }, present, el("div", { class: "row" }, noShow, voidButton(p))),
      voidPart(p),
    ];
  }

  function voidButton(p) {
    const f = form(p.number);
    return el("button", {
      type: "button", class: "secondary", dataset: { action: "void-open" }, "aria-expanded": String(f.voidOpen),
      onclick: (ev) => {
        f.voidOpen = !f.voidOpen;
        ev.currentTarget.setAttribute("aria-expanded", String(f.voidOpen));
        const box = ev.currentTarget.closest(".winner").querySelector(".void-box");
        box.hidden = !f.voidOpen;
        if (f.voidOpen) box.querySelector("input").focus();
      },
    }, "Void…");
  }

  function voidPart(p) {
    const f = form(p.number);
    const reason = el("input", { id: `reason-${p.number}`, autocomplete: "off", maxlength: "200", placeholder: "why" });
    reason.value = f.reason;
    const go = cmdButton({ class: "danger", dataset: { action: "void" } }, "Void this winner");
    const check = () => setBlocked(go, !f.reason.trim());
    reason.addEventListener("input", () => { f.reason = reason.value; check(); });
    go.addEventListener("click", () => command(`picks/${p.number}/void`, { reason: f.reason.trim() }, `void #${p.number}`));
    check();
    const box = el("div", { class: "void-box" },
      el("label", { for: reason.id }, "Reason for the void"), reason, go);
    box.hidden = !f.voidOpen;
    return box;
  }

  function verifiedParts(p) {
    const f = form(p.number);
    const parts = [];
    const pr = p.presented || {};
    parts.push(el("p", { class: "presented" },
      `Presented by the ${pr.presenter === "proxy" ? "proxy" + (pr.proxy ? ` ${pr.proxy.name}` : "") : "winner"}`
      + (pr.document ? ` · ${DOC_NAME[pr.document] || pr.document} ending ${pr.last_digits}` : "")
      + (pr.receipt ? ` · receipt ${pr.receipt}` : "")));

    if (view.add_ons.length) {
      parts.push(el("div", { class: "add-ons" }, el("span", { class: "flabel" }, "Add-ons"),
        view.add_ons.map((a) => {
          const done = p.add_ons && Object.prototype.hasOwnProperty.call(p.add_ons, a.id);
          return el("div", { class: "add-on", dataset: { addOn: a.id } },
            el("div", { class: "ao-name" }, el("strong", {}, a.name), el("small", {}, a.prize)),
            done
              ? el("span", { class: `ao-done ${p.add_ons[a.id] ? "yes" : "no"}` }, p.add_ons[a.id] ? "✓ Verified" : "✗ Not verified")
              : el("div", { class: "ao-buttons" },
                cmdButton({ class: "ok", dataset: { verified: "true" },
                  onclick: () => command(`picks/${p.number}/add-ons/${encodeURIComponent(a.id)}`, { verified: true }, `add-on ${a.name}`) }, "Verified"),
                cmdButton({ class: "secondary", dataset: { verified: "false" },
                  onclick: () => command(`picks/${p.number}/add-ons/${encodeURIComponent(a.id)}`, { verified: false }, `add-on ${a.name}`) }, "Not verified")));
        })));
    }

    if (view.game) {
      parts.push(el("p", { class: "hint by-game" }, "The stage game pays this winner: play it below once every position is presented."));
    } else if (p.position_prize) {
      parts.push(el("div", { class: "w-actions" },
        cmdButton({ class: "big primary", dataset: { action: "award" },
          onclick: () => command(`picks/${p.number}/award`, { source: "position" }, `award #${p.number}`) },
        `Award ${p.position_prize}`)));
    } else {
      const amount = el("input", { id: `amount-${p.number}`, inputmode: "decimal", autocomplete: "off", placeholder: "e.g. 2500" });
      amount.value = f.amount;
      const ref = el("input", { id: `ref-${p.number}`, autocomplete: "off", spellcheck: "false", maxlength: "128", placeholder: "shown on the device" });
      ref.value = f.ref;
      const go = cmdButton({ class: "big primary", dataset: { action: "award" } }, "Award the device's prize");
      const cents = () => {
        const t = f.amount.replace(/[\s R]/g, "").replace(",", ".");
        if (!/^\d+(\.\d{1,2})?$/.test(t)) return null;
        return Math.round(Number(t) * 100);
      };
      const check = () => setBlocked(go, cents() === null || !f.kind || !f.ref.trim());
      amount.addEventListener("input", () => { f.amount = amount.value; check(); });
      ref.addEventListener("input", () => { f.ref = ref.value; check(); });
      ref.addEventListener("keydown", (ev) => { if (ev.key === "Enter" && !go.disabled) { ev.preventDefault(); go.click(); } });
      go.addEventListener("click", () => command(`picks/${p.number}/award`, {
        source: "device", amount: cents(), kind: f.kind, ref: f.ref.trim(),
      }, `award #${p.number}`));
      check();
      parts.push(el("div", { class: "form-grid device" },
        el("span", { class: "flabel" }, "The device's reveal"),
        el("div", { class: "row2" },
          el("div", {}, el("label", { for: amount.id }, "Amount in rand"), amount),
          el("div", {}, el("label", { for: ref.id }, "Device reference"), ref)),
        el("span", { class: "flabel" }, "Kind"),
        segmented("kind", KINDS, f.kind, (x) => { f.kind = x; check(); }),
        el("div", { class: "w-actions" }, go)));
    }
    parts.push(el("div", { class: "w-actions" }, voidButton(p)), voidPart(p));
    return parts;
  }

  function awardedPart(p) {
    if (!p.letter_no) return el("p", { class: "letter pending-letter" }, "Prize recorded; the letter is being issued…");
    const base = `/prizes/${encodeURIComponent(p.letter_no)}`;
    return el("div", { class: "letter" },
      el("div", {}, "Prize letter ", el("strong", { class: "letter-no" }, p.letter_no)),
      el("div", { class: "letter-links" },
        el("a", { class: "button secondary", href: `${base}/letter`, target: "_blank", rel: "noopener", dataset: { link: "letter" } }, "Open the letter"),
        el("a", { class: "button secondary", href: `${base}/letter.pdf`, target: "_blank", rel: "noopener" }, "PDF")));
  }

  function tick() {
    for (const c of document.querySelectorAll(".w-count[data-deadline]")) {
      const left = RAPS.secondsLeft(c.dataset.deadline);
      const total = Number(c.dataset.seconds) || 90;
      c.textContent = String(Math.ceil(left));
      c.classList.toggle("warn", left <= Math.min(30, total / 3) && left > Math.min(10, total / 6));
      c.classList.toggle("critical", left <= Math.min(10, total / 6));
    }
  }

  // -------------------------------------------------------------------- start

  async function start() {
    me = await RAPS.loadMe();
    $("site").textContent = me.site.name;
    $("who").textContent = `${me.user} · ${me.role}`;
    $("sign-out").addEventListener("click", RAPS.signOut);
    $("back").addEventListener("click", showChoose);
    $("net-retry").addEventListener("click", () => { if (retryNow) retryNow(); });
    for (const id of ["open-btn", "draw-btn", "close-btn", "force-btn"]) $(id).dataset.cmd = "1";
    $("open-btn").addEventListener("click", () => command("open", {}, "open the draw"));
    $("draw-btn").addEventListener("click", () => command("draw", {}, "draw the next winner"));
    confirmTap($("close-btn"), "Tap again to close and reveal the seed", () => command("close", { force: false }, "close the draw"));
    confirmTap($("force-btn"), () => `Tap again: winner #${view && view.pending} becomes a no-show, then close`,
      () => command("close", { force: true }, "force-close the draw"));
    setInterval(tick, 250);

    await loadDraws();
    const pending = readPending();
    const wanted = pending ? pending.did : decodeURIComponent(location.hash.slice(1));
    if (wanted && draws.some((d) => d.draw_id === wanted)) await enter(wanted);
    else showChoose();
    if (pending && pending.did === did) send(pending); // finish what a lost connection cut off
  }

  start().catch((e) => toast(e.message || String(e), true));
})();
