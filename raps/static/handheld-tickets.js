// The handheld's ticket-draws tab: every ticket draw and the selected draw's bin,
// polled while the tab is shown.  Read-only, and it shares nothing with the commands
// (no busy state, no toast), so it never holds up a draw.  Its own file so that
// handheld.js stays readable; `HHTickets.create(host)` wires it to the page.
"use strict";
const HHTickets = (() => {
  const { el } = RAPS;
  const $ = (id) => document.getElementById(id);

  // host: { me, localDay(iso), localTime(iso), hasSession(), pendingCount() }
  function create(host) {
    const { me, localDay, localTime } = host;
    let view = "sessions"; // or "tickets"
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
        // a stalled answer is abandoned and asked for again (5xx and lost ones too)
        tk.draws = await RAPS.getJSON("/api/tickets/draws", {
          timeoutMs: TICKET_TIMEOUT_MS, slowMs: HHCommands.SLOW_MS, retry: true,
        });
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
      $("mode-banner").hidden = tickets || !host.hasSession();
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
      const n = host.pendingCount();
      badge.hidden = view !== "tickets" || n === 0;
      badge.textContent = String(n);
      badge.setAttribute("aria-label", `${n} winner${n === 1 ? "" : "s"} pending`);
      $("tab-sessions").classList.toggle("attention", !badge.hidden);
    }

    return {
      init: initTickets,
      showView,
      renderPendingBadge,
      poll: pollTickets,
      get view() { return view; },
    };
  }

  return { create };
})();
