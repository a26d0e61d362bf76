// The dispatch screen's part in a winner's claim (selector.claims): security taps
// "En route" with the officer's name (the dispatcher on the wall screen, or the officer
// on a patrol phone: the narrow layout), sees who is assigned, and a winner nobody has
// reached within the session's max_en_route_seconds is escalated. A winner excluded
// while waiting gets a red EXCLUDED banner until the slot is drawn again.
//
// A tap makes one command id; a lost or stalled answer re-sends the same id
// (RAPS.deliver), so a retry never acknowledges twice.
"use strict";
const DClaim = (() => {
  const { el } = RAPS;
  const TIMEOUT_MS = 5000;

  const claimOf = (p) => p.claim || { phase: "drawn" };

  // Pending winners in order of urgency: a running countdown by its deadline, then
  // those whose countdown waits for "absent", by draw time.
  function sortKey(p) {
    return p.deadline ? `0${p.deadline}` : `1${p.drawn_at}`;
  }

  // When a winner not yet reached escalates (ms), or null: no limit, found absent.
  function escalatesAt(s, p) {
    const c = claimOf(p);
    const limit = s.max_en_route_seconds;
    if (!limit || c.phase === "absent") return null;
    const base = c.phase === "en_route" ? c.en_route_at : p.drawn_at;
    return Date.parse(base) + limit * 1000;
  }

  // Over the limit now: not acknowledged that long after the draw, or en route that long
  // since the acknowledgement (the journal's pick.escalated is written once; the bar
  // clears when security acknowledges, and comes back if the walk takes too long).
  function overLimit(s, p) {
    const at = escalatesAt(s, p);
    return at !== null && RAPS.now() >= at;
  }

  // What changes the card: its countdown and its claim.
  function key(p) {
    const c = claimOf(p);
    return [p.deadline, c.phase, c.officer, c.escalated_at, c.extended_seconds].join("|");
  }

  function mmss(seconds) {
    const s = Math.max(0, Math.floor(seconds));
    return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
  }

  // The ESCALATE bar's words for a winner over the limit.
  function escalation(s, p) {
    const c = claimOf(p);
    const since = Date.parse(c.phase === "en_route" ? c.en_route_at : p.drawn_at);
    const long = mmss((RAPS.now() - since) / 1000);
    return c.phase === "en_route" ? `en route ${long} (${c.officer})` : `not acknowledged ${long}`;
  }

  // The card's claim line: who is on the way, and the "En route" step.
  function panel(s, p, me) {
    const c = claimOf(p);
    const status = el("div", { class: "d-claim-status", role: "status" },
      c.phase === "en_route" ? `EN ROUTE: ${c.officer}`
        : c.phase === "absent" ? "Winner absent · PA called · countdown running"
          : "Nobody on the way yet");
    if (c.phase === "absent") return el("div", { class: "d-claim", dataset: { phase: c.phase } }, status);
    const id = `officer-${s.session_id}-${p.pick}`;
    const input = el("input", { id, class: "d-officer", value: c.officer || me.user, maxlength: "80",
      autocomplete: "off", "aria-label": `Officer going to winner #${p.pick}` });
    const go = el("button", { type: "button", class: "d-enroute", dataset: { action: "en-route" } },
      c.phase === "en_route" ? "Reassign" : "En route");
    go.addEventListener("click", () => send(s, p, input.value, go, status));
    return el("div", { class: "d-claim", dataset: { phase: c.phase } }, status,
      el("div", { class: "d-claim-go" }, input, go));
  }

  async function send(s, p, officer, button, status) {
    const name = officer.trim();
    if (!name) { status.textContent = "Type the officer's name"; return; }
    if (button.dataset.flight === "1") return;
    button.dataset.flight = "1";
    button.disabled = true;
    const url = `/api/sessions/${encodeURIComponent(s.session_id)}/picks/${p.pick}/en-route`;
    const body = { officer: name, command_id: RAPS.uuid() };
    const wait = (ms) => new Promise((r) => setTimeout(r, ms));
    try {
      const got = await RAPS.deliver(url, body, (why) => { status.textContent = `${why}: retrying…`; }, wait, {
        timeoutMs: TIMEOUT_MS, onSlow: () => { status.textContent = "No answer yet · retrying"; },
      });
      if (got && !got.ok) status.textContent = typeof got.data.detail === "string" ? got.data.detail : `refused (${got.status})`;
      else if (got) status.textContent = `EN ROUTE: ${name}`;
    } finally {
      button.dataset.flight = "0";
      button.disabled = false;
    }
  }

  // Excluded while waiting: a slot's latest pick voided by an exclusion, not yet redrawn.
  function excluded(sessions) {
    const out = [];
    for (const s of sessions) {
      const last = new Map();
      for (const p of s.picks) last.set(`${p.kind}:${p.slot}`, p);
      for (const p of last.values()) {
        if (p.state === "void" && /^excluded: /.test(p.void_reason || "")) out.push({ s, p });
      }
    }
    return out;
  }

  function renderExcluded(box, sessions) {
    const list = excluded(sessions);
    box.hidden = list.length === 0;
    box.replaceChildren(...list.map(({ s, p }) => {
      const [area, spot] = RAPS.where(p.location);
      const why = (p.void_reason || "").replace("excluded: ", "").replace(/_/g, " ");
      return el("div", { class: "x-item", dataset: { pick: p.pick, session: s.session_id } },
        el("strong", {}, `EXCLUDED #${p.pick}`),
        ` ${why} · ${p.display_name} · ${area} · ${spot} · do not pay · redraw`);
    }));
  }

  return { sortKey, escalatesAt, overLimit, escalation, key, panel, renderExcluded, excluded };
})();
