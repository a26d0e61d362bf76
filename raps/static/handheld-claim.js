// A pending winner's claim on the handheld (selector.claims): where security is
// ("Security en route: <name>"), the "Absent" step (arrived, the winner is not there:
// the PA line, and with claim_starts "absent" the countdown starts now), an admin's one
// "Extend" with a reason; and the persistent red alert of a winner excluded while
// waiting ("#n EXCLUDED · do not pay · redraw") until the slot is drawn again.
"use strict";
const HHClaim = (() => {
  const { el } = RAPS;

  const claimOf = (p) => p.claim || { phase: "drawn" };
  const running = (p) => Boolean(p.deadline);

  // What changes a winner's card: its state, countdown and claim.
  function key(p) {
    const c = claimOf(p);
    return [p.state, p.deadline, c.phase, c.officer, c.escalated_at, c.extended_seconds].join("|");
  }

  // Most urgent first: running countdowns by deadline, then those waiting for "absent".
  function urgency(p) {
    return running(p) ? Date.parse(p.deadline) : 1e15 + Date.parse(p.drawn_at);
  }

  // The card's line about the claim: who is on the way, escalated, extended.
  function status(p, time) {
    const c = claimOf(p);
    const parts = [c.phase === "en_route"
      ? el("span", { class: "c-officer" }, `Security en route: ${c.officer}`)
      : c.phase === "absent" ? `Found absent ${time(c.absent_at)} · PA called` : "Waiting for security"];
    if (c.phase === "en_route") parts.push(` · since ${time(c.en_route_at)}`);
    else if (c.phase === "absent" && c.officer) parts.push(` · security: ${c.officer}`);
    if (c.escalated_at) parts.push(el("strong", { class: "c-esc" }, " · ESCALATED"));
    if (c.extended_seconds) parts.push(` · extended +${c.extended_seconds} s by ${c.extended_by}`);
    return el("div", { class: "w-claim", dataset: { phase: c.phase } }, ...parts);
  }

  // In place of the countdown while it waits for "absent".
  function notStarted() {
    return el("span", { class: "w-wait" }, "Countdown starts at absent");
  }

  // "Absent": arrived, the winner is not there (once, before anyone found them absent).
  function absentButton(p, session, cmdButton, command) {
    if (claimOf(p).phase === "absent") return null;
    const starts = session.claim_starts === "absent";
    const b = cmdButton({ class: starts ? "warn" : "secondary", dataset: { action: "absent" } },
      starts ? "Absent · start countdown" : "Absent · winner not there");
    b.addEventListener("click", () => command(`picks/${p.pick}/absent`, {}, `absent #${p.pick}`, b));
    return b;
  }

  // An admin's one extension of a running countdown: how long, and why (journaled,
  // shown to the inspector).
  function extendPanel(p, role, buttons, command) {
    if (role !== "admin" || !running(p) || claimOf(p).extended_seconds) return null;
    const id = `extend-${p.pick}`;
    const seconds = el("select", { id: `${id}-s`, "aria-label": "Seconds to add" },
      [30, 60, 90, 120].map((n) => el("option", { value: String(n), selected: n === 60 }, `+${n} s`)));
    const reason = el("input", { id: `${id}-r`, maxlength: "200", autocomplete: "off", placeholder: "Why" });
    const go = buttons.button({ class: "primary", dataset: { action: "extend-go", blocked: "1" } }, "Extend countdown");
    reason.addEventListener("input", () => buttons.setBlocked(go, reason.value.trim().length < 3));
    go.addEventListener("click", () => command(`picks/${p.pick}/extend`,
      { seconds: Number(seconds.value), reason: reason.value.trim() }, `extend #${p.pick}`, go));
    const form = el("div", { class: "form-grid w-extend-form", hidden: true },
      el("label", { for: seconds.id }, "Extend the countdown once, by"), seconds,
      el("label", { for: reason.id }, "Why (journaled, shown to the inspector)"), reason, go);
    const toggle = el("button", { type: "button", class: "secondary", dataset: { action: "extend" } }, "Extend…");
    toggle.addEventListener("click", () => { form.hidden = !form.hidden; });
    return el("div", { class: "w-extend" }, toggle, form);
  }

  // A slot's latest pick voided by an exclusion while it waited, not yet redrawn.
  function excluded(session) {
    if (session.state !== "open") return [];
    const last = new Map();
    for (const p of session.picks) last.set(`${p.kind}:${p.slot}`, p);
    return [...last.values()].filter((p) => p.state === "void" && /^excluded: /.test(p.void_reason || ""));
  }

  // The red alerts, and a cue for each one not seen before (none for those already
  // there when the page loaded: `primed` false).
  function renderExcluded(box, session, seen, primed) {
    const list = excluded(session);
    box.hidden = list.length === 0;
    box.replaceChildren(...list.map((p) => el("div", { class: "x-alert", dataset: { pick: p.pick } },
      el("strong", {}, `#${p.pick} EXCLUDED · do not pay · redraw`),
      el("span", {}, `${RAPS.KIND[p.kind]} ${p.slot} · ${p.display_name} · `
        + (p.void_reason || "").replace("excluded: ", "").replace(/_/g, " ")))));
    let fresh = false;
    for (const p of list) {
      const k = `${session.session_id}:${p.pick}`;
      if (!seen.has(k)) fresh = primed;
      seen.add(k);
    }
    return fresh;
  }

  return { key, urgency, running, status, notStarted, absentButton, extendPanel, excluded, renderExcluded };
})();
