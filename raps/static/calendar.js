// The calendar page: a month of every promotion's RAPS sessions, ticket draws and
// calendar occurrences; what is open now and next; eligible players and entered tickets.
// Marketing and admins create, reschedule and cancel sessions, create promotions and
// change who qualifies, a promotion's period and its calendar; an admin approves
// marketing's sessions and promotion changes (which wait until then).  Ticket draws are
// moved, cancelled or added on their program's draw calendar (the same proposals and
// approvals).  Every change asks why: the reason is journaled with the user's name.
//
// Changes are retry-safe like the handheld's: one command id per submit, re-sent
// unchanged after a lost reply or a 503 (RAPS.deliver).  A refusal names its field,
// which the form marks.
"use strict";
(() => {
  const { el } = RAPS;
  const $ = (id) => document.getElementById(id);
  const NAMES = {
    "/handheld": "Handheld", "/dispatch": "Dispatch", "/ops": "Ops", "/admin": "Admin",
    "/audit": "Audit", "/stage": "Stage", "/rewards": "Rewards", "/calendar": "Calendar",
  };
  const POLL_MS = 5000;
  const DOW = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
  const KIND = { session: "RAPS session", ticket_draw: "Ticket draw", occurrence: "Calendar" };

  let me = null;
  let month = null; // "YYYY-MM"
  let view = null;
  let dialogOpen = false;

  const planner = () => me && (me.role === "marketing" || me.role === "admin");
  const isAdmin = () => me && me.role === "admin";
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  // ------------------------------------------------------------------ times

  function parts(iso) {
    const f = new Intl.DateTimeFormat("en-GB", {
      timeZone: me.site.timezone, year: "numeric", month: "2-digit", day: "2-digit",
      hour: "2-digit", minute: "2-digit", hourCycle: "h23",
    });
    const p = Object.fromEntries(f.formatToParts(new Date(iso)).map((x) => [x.type, x.value]));
    return { day: `${p.year}-${p.month}-${p.day}`, time: `${p.hour}:${p.minute}` };
  }
  const wall = (iso) => (iso ? `${parts(iso).day} ${parts(iso).time}` : "");
  function shown(iso) {
    return new Date(iso).toLocaleString("en-GB", {
      timeZone: me.site.timezone, weekday: "short", day: "numeric", month: "short",
      year: "numeric", hour: "2-digit", minute: "2-digit",
    });
  }

  // ------------------------------------------------------------------ rendering

  function badges(i) {
    const out = [];
    if (i.kind === "session") {
      if (i.rehearsal) out.push(el("span", { class: "badge" }, "REHEARSAL"));
      if (i.status !== "approved") out.push(el("span", { class: "badge warn" }, i.status.toUpperCase()));
      else if (i.state !== "scheduled") out.push(el("span", { class: "badge" }, i.state.toUpperCase()));
    } else if (i.kind === "ticket_draw") {
      out.push(el("span", { class: "badge" }, `${i.tickets} tickets`));
      if (i.state !== "scheduled") out.push(el("span", { class: "badge" }, i.state.toUpperCase()));
    } else {
      out.push(el("span", { class: "badge warn" }, i.condition ? "IF " + i.condition : "no session yet"));
    }
    return out;
  }

  function itemButton(i) {
    const cls = ["item", i.kind, i.status || "", i.state || "", i.rehearsal ? "rehearsal" : ""].join(" ");
    return el("button", { type: "button", class: cls, dataset: { id: i.id }, onclick: () => openDetail(i) },
      `${parts(i.at).time} ${i.name}`, ...badges(i));
  }

  function renderList(id, items, empty) {
    const list = $(id);
    if (!items.length) {
      list.replaceChildren(el("li", {}, empty));
      return;
    }
    list.replaceChildren(...items.map((i) => el("li", {},
      el("strong", {}, `${KIND[i.kind]}: `), i.name, " · ", shown(i.at),
      i.why ? ` · ${i.why}` : "", i.kind === "ticket_draw" ? ` · ${i.tickets} tickets entered by ${i.players}` : "",
      " ", el("button", { type: "button", class: "secondary small", onclick: () => openDetail(i) }, "Details"))));
  }

  function qualifies(d) {
    if (!d) return "as configured";
    const areas = d.areas_included ? `only ${d.areas_included.join(", ")}` : "every area";
    const out = d.areas_excluded.length ? `, not ${d.areas_excluded.join(", ")}` : "";
    return `${d.threshold_points} points ${d.window.start}-${d.window.end}, ${d.tiers.join("/")}, ` +
      `${d.pool_kinds.join(" + ")}, ${areas}${out}`;
  }

  function renderPromotions() {
    $("promotions").replaceChildren(...view.promotions.map((p) => {
      const eligible = p.pool_kinds.map((k) => `${p.eligible[k] || 0} ${k}`).join(", ");
      const period = p.period ? `${p.period.first} to ${p.period.last}` : "no period set";
      const row = el("div", { class: "promo", dataset: { promotion: p.id } },
        el("strong", {}, p.name), p.exists ? "" : el("span", { class: "badge warn" }, "NEW"),
        el("span", { class: "qualifies" }, `Qualify: ${qualifies(p.definition)}`),
        el("span", {}, `Period: ${period}`),
        p.exists ? el("span", { class: "eligible" }, `Eligible now: ${eligible || "none"}`) : "",
        el("span", {}, p.calendar ? "Calendar set" : "No calendar"));
      if (p.waiting) {
        const w = p.waiting;
        const what = [w.definition ? "who qualifies" : "", w.changes_plan ? "period and calendar" : ""]
          .filter(Boolean).join(" and ");
        row.append(el("span", { class: "badge warn waiting" }, `WAITING: ${what}`),
          el("span", { class: "waiting-by" }, `proposed by ${w.by} (${w.role}): ${w.reason}`));
        if (isAdmin()) {
          row.append(el("button", { type: "button", class: "small", onclick: () => decideForm(p, "approve") }, "Approve changes"),
            el("button", { type: "button", class: "secondary small", onclick: () => decideForm(p, "reject") }, "Reject"));
        }
      }
      if (planner()) {
        row.append(el("button", { type: "button", class: "secondary small", onclick: () => definitionForm(p) },
          "Who qualifies"));
        if (p.exists) {
          row.append(el("button", { type: "button", class: "secondary small", onclick: () => promotionForm(p) },
            "Period and calendar"));
        }
      }
      return row;
    }));
  }

  // ------------------------------------------------------- ticket draw calendars

  function calendarSummary(e) {
    const c = e.calendar;
    const n = (k) => (c[k] || []).length;
    return [n("weekly") && `${n("weekly")} weekly rule(s)`, n("dated") && `${n("dated")} dated rule(s)`,
      n("moved") && `${n("moved")} moved`, n("cancelled") && `${n("cancelled")} cancelled`,
      n("conditional") && `${n("conditional")} conditional`].filter(Boolean).join(", ");
  }

  function renderTicketCalendars() {
    const rows = view.ticket_calendars || [];
    const out = rows.map((t) => {
      const e = t.entry || (t.waiting && t.waiting.entry);
      const row = el("div", { class: "promo tcal", dataset: { program: t.program_id, index: String(t.index) } },
        el("strong", {}, `${t.program} #${t.index + 1}`), t.entry ? "" : el("span", { class: "badge warn" }, "NEW"),
        el("span", {}, `Draws ${e.name || e.id} · ${e.winners || 5} winners${e.bin ? " · bin " + e.bin : ""}`),
        el("span", {}, calendarSummary(e)));
      if (t.waiting) {
        const w = t.waiting;
        row.append(el("span", { class: "badge warn waiting" }, "WAITING"),
          el("span", { class: "waiting-by" }, `proposed by ${w.by} (${w.role}): ${w.reason}`));
        if (isAdmin()) {
          row.append(el("button", { type: "button", class: "small", onclick: () => ticketDecideForm(t, "approve") }, "Approve"),
            el("button", { type: "button", class: "secondary small", onclick: () => ticketDecideForm(t, "reject") }, "Reject"));
        }
      }
      if (planner() && t.entry) {
        row.append(el("button", { type: "button", class: "secondary small", onclick: () => ticketCalendarForm(t, t.entry) }, "Change"));
      }
      return row;
    });
    if (planner()) {
      for (const pid of view.ticket_programs || []) {
        const n = rows.filter((t) => t.program_id === pid).length;
        const like = rows.find((t) => t.program_id === pid && t.entry);
        const blank = like ? { ...like.entry, calendar: { dated: [], windows: like.entry.calendar.windows } }
          : { id: `${pid}-{at:%Y-%m-%d-%H%M}`, winners: 5, calendar: { dated: [], windows: { entry: { start: "08:00", end: "-5m" } } } };
        out.push(el("button", { type: "button", class: "secondary small", dataset: { program: pid },
          onclick: () => ticketCalendarForm({ program_id: pid, program: pid, index: n }, blank) }, `Add a calendar to ${pid}`));
      }
    }
    $("ticket-calendars").replaceChildren(...(out.length ? out : [el("p", {}, "No ticket program has a calendar.")]));
  }

  function ticketUrl(t, what) {
    return `/api/schedule/ticket-calendars/${encodeURIComponent(t.program_id)}/${t.index}${what ? "/" + what : ""}`;
  }

  function ticketCalendarForm(t, entry) {
    show(`${t.program}: draw calendar #${t.index + 1}`, [
      el("label", { for: "f-entry" }, "Draws (id, name, bin, winners, prizes) and their calendar (weekly, dated, moved, cancelled, conditional, windows: docs/configuration.md)"),
      el("textarea", { id: "f-entry", name: "entry", spellcheck: "false" }, JSON.stringify(entry, null, 2)),
      ...field("Why (journaled with your name)", "reason", "", { maxlength: 500 }),
      el("p", { class: "note" }, isAdmin() ? "Applies at once." : "An admin approves it before it applies."),
    ], [el("button", { type: "button", id: "f-submit", onclick: () => submitTicketCalendar(t) }, "Save")]);
  }

  async function submitTicketCalendar(t, entry) {
    if (!entry) {
      try { entry = JSON.parse(value("entry")); } catch (e) { $("d-error").textContent = `entry: not valid JSON (${e.message})`; return; }
    }
    await send(ticketUrl(t), { entry, reason: value("reason") },
      isAdmin() ? "Calendar saved" : "Proposed: an admin approves it");
  }

  function ticketDecideForm(t, what) {
    const w = t.waiting;
    const label = what === "approve" ? "Approve" : "Reject";
    show(`${label}: ${t.program} calendar #${t.index + 1}`, [facts([["Proposed by", `${w.by} (${w.role}), ${shown(w.at)}`],
      ["Why", w.reason], ["Calendar", JSON.stringify(w.entry.calendar)]]),
    ...field("Why (journaled with your name)", "reason", what === "approve" ? "approved" : "", { maxlength: 500 })],
    [el("button", { type: "button", id: "f-submit", class: what === "reject" ? "danger" : "",
      onclick: () => send(ticketUrl(t, what), { reason: value("reason") }, what === "approve" ? "Approved" : "Rejected") }, label)]);
  }

  // a draw of a calendar moved (to: "YYYY-MM-DD HH:MM") or cancelled (to: null), as the
  // calendar says it: a moved draw's move is changed, a conditional draw's time
  function editDraw(entry, at, to, reason) {
    const cal = structuredClone(entry.calendar);
    const moved = (cal.moved || []).find((m) => m.to === at);
    const cond = (cal.conditional || []).find((c) => c.at === at);
    if (cond) {
      if (to) cond.at = to; else cal.conditional = cal.conditional.filter((c) => c !== cond);
    } else if (moved) {
      if (to) moved.to = to;
      else { cal.moved = cal.moved.filter((m) => m !== moved); (cal.cancelled ||= []).push({ at: moved.from, reason }); }
    } else if (to) (cal.moved ||= []).push({ from: at, to, reason });
    else (cal.cancelled ||= []).push({ at, reason });
    return { ...entry, calendar: cal };
  }

  function drawForm(i, what) {
    const [pid, index] = i.calendar;
    const t = view.ticket_calendars.find((x) => x.program_id === pid && x.index === index);
    const body = what === "move" ? [...field("Move to (YYYY-MM-DD HH:MM)", "to", wall(i.at), { autocomplete: "off" })] : [];
    body.push(...field("Why (journaled with your name)", "reason", "", { maxlength: 500 }));
    show(`${what === "move" ? "Move" : "Cancel"} ${i.name}`, body, [el("button", { type: "button", id: "f-submit",
      class: what === "cancel" ? "danger" : "", onclick: () => {
        const reason = value("reason");
        submitTicketCalendar(t, editDraw(t.entry, wall(i.at), what === "move" ? value("to") : null, reason));
      } }, what === "move" ? "Move draw" : "Cancel draw")]);
  }

  function renderGrid() {
    const [y, m] = month.split("-").map(Number);
    const first = new Date(Date.UTC(y, m - 1, 1));
    const lead = (first.getUTCDay() + 6) % 7; // Monday first
    const days = new Date(Date.UTC(y, m, 0)).getUTCDate();
    const byDay = new Map();
    for (const i of view.items) {
      const d = parts(i.at).day;
      if (!byDay.has(d)) byDay.set(d, []);
      byDay.get(d).push(i);
    }
    const today = parts(new Date(RAPS.now()).toISOString()).day;
    const cells = DOW.map((d) => el("div", { class: "dow", role: "columnheader" }, d));
    for (let k = 0; k < lead; k++) cells.push(el("div", { class: "day out" }));
    for (let d = 1; d <= days; d++) {
      const key = `${month}-${String(d).padStart(2, "0")}`;
      const items = byDay.get(key) || [];
      cells.push(el("div", { class: "day" + (key === today ? " today" : ""), role: "gridcell", dataset: { day: key } },
        el("div", { class: "num" }, String(d)), ...items.map(itemButton)));
    }
    $("grid").replaceChildren(...cells);
  }

  function render() {
    const [y, m] = month.split("-").map(Number);
    $("month-name").textContent = new Date(Date.UTC(y, m - 1, 15)).toLocaleString("en-GB",
      { month: "long", year: "numeric", timeZone: "UTC" });
    renderList("open-now", view.open_now, "Nothing is open now.");
    renderList("next-items", view.next, "Nothing is scheduled.");
    renderPromotions();
    renderTicketCalendars();
    renderGrid();
    $("updated").textContent = `Updated ${shown(view.now)} · times in ${view.timezone}`;
  }

  async function load() {
    try {
      view = await RAPS.getJSON(`/api/calendar?month=${month}`);
      RAPS.syncClock(view.now);
      render();
    } catch (e) {
      $("updated").textContent = `Could not load the calendar: ${e.message}. Retrying…`;
    }
  }

  // ------------------------------------------------------------------ the dialog

  function field(label, name, value, attrs = {}) {
    const id = `f-${name}`;
    return [el("label", { for: id }, label),
      el("input", { id, name, value: value === undefined || value === null ? "" : String(value), ...attrs })];
  }

  function show(title, body, actions) {
    $("d-title").textContent = title;
    $("d-body").replaceChildren(...body);
    $("d-error").textContent = "";
    $("d-actions").replaceChildren(...actions,
      el("button", { type: "button", class: "secondary", onclick: closeDialog }, "Close"));
    if (!$("detail").open) $("detail").showModal();
    dialogOpen = true;
  }

  function closeDialog() {
    $("detail").close();
    dialogOpen = false;
  }

  function facts(rows) {
    return el("table", {}, el("tbody", {}, rows.filter(Boolean).map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v)))));
  }

  async function openDetail(i) {
    if (i.kind === "ticket_draw") {
      show(i.name, [facts([["Promotion", i.promotion], ["Program", i.program], ["Draw", shown(i.at)],
        ["Entries", `${shown(i.opens)} until ${shown(i.closes)}`], ["Winners", String(i.winners)],
        ["Entered", `${i.tickets} tickets by ${i.players} players`], ["State", i.state]])],
      i.calendar && planner() && i.state === "scheduled" ? [
        el("button", { type: "button", onclick: () => drawForm(i, "move") }, "Move draw"),
        el("button", { type: "button", class: "danger", onclick: () => drawForm(i, "cancel") }, "Cancel draw")] : []);
      return;
    }
    if (i.kind === "occurrence") {
      const rows = [["Promotion", i.promotion], ["At", shown(i.at)]];
      if (i.moved_from) rows.push(["Moved from", `${i.moved_from}${i.reason ? " (" + i.reason + ")" : ""}`]);
      if (i.condition) rows.push(["Only if", i.condition]);
      for (const [name, [a, b]] of Object.entries(i.windows)) rows.push([`Window ${name}`, `${shown(a)} to ${parts(b).time}`]);
      const actions = planner() ? [el("button", { type: "button", onclick: () => sessionForm(fromOccurrence(i), "new") }, "Create its session")] : [];
      show(i.name, [facts(rows)], actions);
      return;
    }
    const s = await RAPS.getJSON(`/api/schedule/sessions/${encodeURIComponent(i.id)}`);
    const rows = [["Promotion", s.promotion], ["Status", s.status], ["State", s.state],
      ["Starts", shown(s.at)], ["Window ends", s.ends ? shown(s.ends) : "no window"],
      ["Winners", `${s.slots} slots, ${s.tables} tables`], ["Claim", claimText(s)],
      ["Mode", s.rehearsal ? "rehearsal" : "live"], ["Picks", s.picks === null ? "…" : String(s.picks)]];
    if (s.off_calendar) rows.push(["Off the calendar", s.off_calendar]);
    const hist = el("ul", { class: "hist" }, s.history.map((h) => el("li", {},
      `${shown(h.at)} · ${h.type.replace("session_", "")}${h.changed.length ? " (" + h.changed.join(", ") + ")" : ""} by ${h.user} (${h.role}): ${h.reason}`)));
    const actions = [];
    if (s.changeable && planner()) {
      actions.push(el("button", { type: "button", onclick: () => sessionForm(s, "change") }, "Change"));
      actions.push(el("button", { type: "button", class: "danger", onclick: () => reasonForm(s, "cancel") }, "Cancel session"));
    }
    if (s.status === "proposed" && isAdmin()) {
      actions.push(el("button", { type: "button", onclick: () => reasonForm(s, "approve") }, "Approve"));
    }
    show(s.name, [facts(rows), el("h3", {}, "History"), hist], actions);
  }

  // "90 s from absent · escalate after 120 s": when the countdown starts, the en-route limit
  function claimText(s) {
    const from = s.claim_starts === "absent" ? "from absent" : "from the draw";
    const esc = s.max_en_route_seconds ? ` · escalate after ${s.max_en_route_seconds} s` : "";
    return `${s.claim_seconds} s ${from}${esc}`;
  }

  function fromOccurrence(i) {
    const w = i.windows.raps || Object.values(i.windows)[0];
    const d = parts(i.at).day.replaceAll("-", "");
    return { promotion_id: i.promotion_id, id: `${i.promotion_id}-${d}-${parts(i.at).time.replace(":", "")}`,
      name: i.name, at: w ? w[0] : i.at, ends: w ? w[1] : null, slots: 6, tables: 4, claim_seconds: 90 };
  }

  function sessionForm(s, mode) {
    const body = [];
    if (mode === "new") {
      const sel = el("select", { id: "f-promotion_id", name: "promotion_id" },
        view.promotions.map((p) => el("option", { value: p.id, selected: p.id === s.promotion_id }, p.name)));
      body.push(el("label", { for: "f-promotion_id" }, "Promotion"), sel,
        ...field("Session id", "session_id", s.id || "", { maxlength: 64, autocomplete: "off", spellcheck: "false" }),
        el("label", {}, el("input", { type: "checkbox", id: "f-rehearsal", name: "rehearsal", checked: !!s.rehearsal, style: "width:auto" }),
          " Rehearsal (training: no approval, no live records, any time)"));
    }
    body.push(...field("Name", "name", s.name === s.id ? "" : s.name, { maxlength: 80 }),
      el("div", { class: "row2" },
        el("div", {}, ...field("Starts (YYYY-MM-DD HH:MM)", "starts", s.at ? wall(s.at) : "", { autocomplete: "off" })),
        el("div", {}, ...field("Window ends (YYYY-MM-DD HH:MM)", "ends", s.ends ? wall(s.ends) : "", { autocomplete: "off" }))),
      el("div", { class: "row2" },
        el("div", {}, ...field("Slot winners", "slots", s.slots ?? 6, { type: "number", min: 0, max: 100 })),
        el("div", {}, ...field("Table winners", "tables", s.tables ?? 4, { type: "number", min: 0, max: 100 }))),
      ...field("Seconds to present", "claim_seconds", s.claim_seconds ?? 90, { type: "number", min: 1, max: 3600 }),
      el("label", { for: "f-claim_starts" }, "The countdown starts"),
      el("select", { id: "f-claim_starts", name: "claim_starts" },
        el("option", { value: "draw", selected: s.claim_starts !== "absent" }, "at the draw"),
        el("option", { value: "absent", selected: s.claim_starts === "absent" }, "when the winner is found absent")),
      ...field("Escalate a winner nobody reached after (seconds; 0: never)", "max_en_route_seconds",
        s.max_en_route_seconds === null ? 0 : (s.max_en_route_seconds ?? 120), { type: "number", min: 0, max: 3600 }),
      ...field("Off the calendar: why (only for a live session outside the calendar's windows)", "off_calendar",
        s.off_calendar || "", { maxlength: 500, autocomplete: "off" }),
      ...field("Why (journaled with your name)", "reason", "", { maxlength: 500, autocomplete: "off" }));
    const title = mode === "new" ? "New session" : `Change ${s.name}`;
    show(title, body, [el("button", { type: "button", id: "f-submit", onclick: () => submitSession(s, mode) },
      mode === "new" ? "Create session" : "Save change")]);
  }

  function value(name) {
    const input = document.querySelector(`#d-body [name="${name}"]`);
    return input ? (input.type === "checkbox" ? input.checked : input.value.trim()) : undefined;
  }

  // a number field left empty sends nothing (the default, or no change), never a silent 0
  // (0 en-route seconds means "never escalate": it has to be typed)
  function number(name) {
    const v = value(name);
    return v === undefined || v === "" ? null : Number(v);
  }

  async function submitSession(s, mode) {
    const f = {
      name: value("name") || null, starts: value("starts") || null, ends: value("ends") || null,
      slots: number("slots"), tables: number("tables"), claim_seconds: number("claim_seconds"),
      claim_starts: value("claim_starts"), max_en_route_seconds: number("max_en_route_seconds"),
      off_calendar: value("off_calendar") || null,
    };
    if (mode === "new") {
      await send("/api/schedule/sessions", { ...f, session_id: value("session_id"), promotion_id: value("promotion_id"),
        rehearsal: value("rehearsal"), reason: value("reason") }, "Session created");
    } else {
      const changes = {};
      const before = { name: s.name === s.id ? null : s.name, starts: wall(s.at), ends: s.ends ? wall(s.ends) : null,
        slots: s.slots, tables: s.tables, claim_seconds: s.claim_seconds,
        claim_starts: s.claim_starts, max_en_route_seconds: s.max_en_route_seconds || 0,
        off_calendar: s.off_calendar || null };
      for (const [k, v] of Object.entries(f)) if (v !== before[k] && v !== null) changes[k] = v;
      await send(`/api/schedule/sessions/${encodeURIComponent(s.id)}/change`, { changes, reason: value("reason") }, "Change saved");
    }
  }

  function reasonForm(s, what) {
    const label = what === "approve" ? "Approve" : "Cancel session";
    show(`${label}: ${s.name}`, [...field("Why (journaled with your name)", "reason", what === "approve" ? "approved" : "", { maxlength: 500 })],
      [el("button", { type: "button", id: "f-submit", class: what === "cancel" ? "danger" : "",
        onclick: () => send(`/api/schedule/sessions/${encodeURIComponent(s.id)}/${what}`, { reason: value("reason") },
          what === "approve" ? "Approved" : "Cancelled") }, label)]);
  }

  function promotionForm(p) {
    const text = (v) => (v ? JSON.stringify(v, null, 2) : "");
    show(`${p.name}: period and calendar`, [
      el("div", { class: "row2" },
        el("div", {}, ...field("Period from", "first", p.period ? p.period.first : "", { type: "date" })),
        el("div", {}, ...field("Period to", "last", p.period ? p.period.last : "", { type: "date" }))),
      el("label", { for: "f-calendar" }, "Calendar (weekly, dated, moved, cancelled, conditional, windows: docs/configuration.md)"),
      el("textarea", { id: "f-calendar", name: "calendar", spellcheck: "false" }, text(p.calendar)),
      el("label", { for: "f-calendar_sessions" }, "A RAPS session per occurrence (window, slots, tables, claim_seconds); empty: none"),
      el("textarea", { id: "f-calendar_sessions", name: "calendar_sessions", spellcheck: "false", style: "min-height:4rem" }, text(p.calendar_sessions)),
      ...field("Why (journaled with your name)", "reason", "", { maxlength: 500 }),
    ], [el("button", { type: "button", id: "f-submit", onclick: () => submitPromotion(p) }, "Save")]);
  }

  async function submitPromotion(p) {
    const json = (name) => {
      const t = value(name);
      if (!t) return null;
      try { return JSON.parse(t); } catch (e) { throw new Error(`${name}: not valid JSON (${e.message})`); }
    };
    let body;
    try {
      const first = value("first");
      const last = value("last");
      body = { period: first || last ? { first, last } : null, calendar: json("calendar"),
        calendar_sessions: json("calendar_sessions"), reason: value("reason") };
    } catch (e) {
      $("d-error").textContent = e.message;
      return;
    }
    await send(`/api/schedule/promotions/${encodeURIComponent(p.id)}`, body,
      isAdmin() ? "Calendar saved" : "Calendar proposed: an admin approves it");
  }

  // ------------------------------------------------------- who qualifies, approvals

  const TIERS = ["ten", "jack", "queen", "king", "ace"];
  const POOLS = ["slots", "tables"];

  function checks(name, all, chosen) {
    return el("div", { class: "checks", id: `f-${name}` }, all.map((x) => el("label", { class: "check" },
      el("input", { type: "checkbox", name, value: x, checked: chosen.includes(x) }), ` ${x}`)));
  }

  function definitionForm(p) {
    const d = (p && (p.definition || (p.waiting && p.waiting.definition))) || { threshold_points: 50, window: { start: "08:00", end: "19:00" },
      tiers: TIERS, pool_kinds: POOLS, areas_included: null, areas_excluded: [], min_active_seconds: 0 };
    const isNew = !p;
    const body = [];
    if (isNew) body.push(...field("Promotion id (letters, digits, '.', '_', '-')", "promotion_id", "", { maxlength: 64, autocomplete: "off", spellcheck: "false" }));
    body.push(...field("Name", "name", p ? p.name : "", { maxlength: 80 }),
      el("div", { class: "row2" },
        el("div", {}, ...field("Points to qualify", "threshold_points", d.threshold_points, { type: "number", min: 0 })),
        el("div", {}, ...field("Seconds active without a break", "min_active_seconds", d.min_active_seconds, { type: "number", min: 0 }))),
      el("div", { class: "row2" },
        el("div", {}, ...field("Points count from (HH:MM)", "start", d.window.start, { autocomplete: "off" })),
        el("div", {}, ...field("until (HH:MM, 24:00 midnight)", "end", d.window.end, { autocomplete: "off" }))),
      el("label", { for: "f-tiers" }, "Tiers"), checks("tiers", TIERS, d.tiers),
      el("label", { for: "f-pool_kinds" }, "Pools"), checks("pool_kinds", POOLS, d.pool_kinds),
      ...field(`Only these areas (comma-separated; empty: every area). Areas: ${view.areas.join(", ")}`, "areas_included",
        d.areas_included ? d.areas_included.join(", ") : "", { autocomplete: "off" }),
      ...field("Never these areas (comma-separated)", "areas_excluded", d.areas_excluded.join(", "), { autocomplete: "off" }),
      ...field("Why (journaled with your name)", "reason", "", { maxlength: 500, autocomplete: "off" }));
    const note = isAdmin() ? "Applies at once." : "An admin approves it before it applies.";
    show(isNew ? "New promotion" : `${p.name}: who qualifies`, [...body, el("p", { class: "note" }, note)],
      [el("button", { type: "button", id: "f-submit", onclick: () => submitDefinition(p) }, isNew ? "Create promotion" : "Save")]);
  }

  function chosen(name) {
    return [...document.querySelectorAll(`#d-body [name="${name}"]:checked`)].map((x) => x.value);
  }

  function list(text) {
    return text.split(",").map((x) => x.trim()).filter(Boolean);
  }

  async function submitDefinition(p) {
    const id = p ? p.id : value("promotion_id");
    const inside = value("areas_included");
    const definition = {
      name: value("name"), threshold_points: Number(value("threshold_points")),
      min_active_seconds: Number(value("min_active_seconds")),
      window: { start: value("start"), end: value("end") },
      tiers: chosen("tiers"), pool_kinds: chosen("pool_kinds"),
      areas_included: inside ? list(inside) : null, areas_excluded: list(value("areas_excluded")),
    };
    const was = p && (p.definition || (p.waiting && p.waiting.definition));  // the form has no field for it: kept
    if (was && was.witness_fallback != null) definition.witness_fallback = was.witness_fallback;
    await send(`/api/schedule/promotions/${encodeURIComponent(id || "-")}/definition`, { definition, reason: value("reason") },
      isAdmin() ? "Promotion saved" : "Proposed: an admin approves it");
  }

  function decideForm(p, what) {
    const w = p.waiting;
    const rows = [["Proposed by", `${w.by} (${w.role}), ${shown(w.at)}`], ["Why", w.reason]];
    if (w.definition) rows.push(["Who qualifies", qualifies(w.definition)], ["Name", w.definition.name]);
    if (w.changes_plan) {
      rows.push(["Period", w.period ? `${w.period.first} to ${w.period.last}` : "none"],
        ["Calendar", w.calendar ? JSON.stringify(w.calendar) : "none"],
        ["Sessions", w.calendar_sessions ? JSON.stringify(w.calendar_sessions) : "none"]);
    }
    const label = what === "approve" ? "Approve changes" : "Reject";
    show(`${label}: ${p.name}`, [facts(rows), ...field("Why (journaled with your name)", "reason", what === "approve" ? "approved" : "", { maxlength: 500 })],
      [el("button", { type: "button", id: "f-submit", class: what === "reject" ? "danger" : "",
        onclick: () => send(`/api/schedule/promotions/${encodeURIComponent(p.id)}/${what}`, { reason: value("reason") },
          what === "approve" ? "Changes approved" : "Changes rejected") }, label)]);
  }

  function refusal(data, status) {
    const d = data && data.detail;
    if (d && typeof d === "object" && !Array.isArray(d)) return [d.field, d.detail];
    if (Array.isArray(d)) {
      const x = d[0] || {};
      const loc = (x.loc || []).filter((k) => k !== "body" && k !== "changes");
      return [loc[0] || "", `${loc.join(".")}: ${x.msg}`];
    }
    return ["", typeof d === "string" ? d : `refused (${status})`];
  }

  async function send(url, body, done) {
    const button = $("f-submit");
    if (button) button.disabled = true;
    for (const n of document.querySelectorAll("#d-body .invalid")) n.classList.remove("invalid");
    const res = await RAPS.deliver(url, { command_id: RAPS.uuid(), ...body },
      (why) => { $("d-error").textContent = `No answer yet (${why}); retrying the same change…`; }, sleep);
    if (button) button.disabled = false;
    if (!res) return;
    if (res.ok) {
      closeDialog();
      RAPS.toast(done);
      await load();
      return;
    }
    const [name, text] = refusal(res.data, res.status);
    $("d-error").textContent = name && !text.startsWith(name) ? `${name}: ${text}` : text;
    const key = String(name || "").split(".").pop().replace(/\[\d+\]$/, "");
    const input = document.querySelector(`#d-body [name="${key}"]`);
    if (input) {
      input.classList.add("invalid");
      input.focus();
    }
  }

  // ------------------------------------------------------------------ start

  function shift(by) {
    const [y, m] = month.split("-").map(Number);
    const d = new Date(Date.UTC(y, m - 1 + by, 1));
    month = `${d.getUTCFullYear()}-${String(d.getUTCMonth() + 1).padStart(2, "0")}`;
    history.replaceState(null, "", `#month=${month}`);
    load();
  }

  async function start() {
    me = await RAPS.loadMe();
    $("site").textContent = me.site.name || me.site.id;
    $("who").textContent = `${me.user} (${me.role})`;
    $("nav").replaceChildren(...me.pages.map((p) => el("a", { href: p }, NAMES[p] || p)));
    $("sign-out").addEventListener("click", RAPS.signOut);
    const hashMonth = /month=(\d{4}-\d{2})/.exec(location.hash);
    month = hashMonth ? hashMonth[1] : parts(me.now).day.slice(0, 7);
    $("prev").addEventListener("click", () => shift(-1));
    $("next").addEventListener("click", () => shift(1));
    $("today").addEventListener("click", () => { month = parts(new Date(RAPS.now()).toISOString()).day.slice(0, 7); shift(0); });
    if (planner()) {
      $("new-promotion").hidden = false;
      $("new-promotion").addEventListener("click", () => definitionForm(null));
      $("new-session").hidden = false;
      $("new-session").addEventListener("click", () => sessionForm({ promotion_id: view.promotions[0].id, slots: 6, tables: 4, claim_seconds: 90 }, "new"));
    }
    if (planner() || me.role === "auditor") $("export").hidden = false;
    $("detail").addEventListener("close", () => { dialogOpen = false; });
    await load();
    setInterval(() => { if (!dialogOpen) load(); }, POLL_MS);
  }

  start();
})();
