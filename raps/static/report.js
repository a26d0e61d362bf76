// The end-of-session report (marketing, admin, auditor): every pick with its times,
// outcome, who acted and the prize, from GET /api/sessions/{id}/report (built from the
// session's journal); the same rows as CSV; printable (report.css, @media print).
"use strict";
(() => {
  const { el } = RAPS;
  const $ = (id) => document.getElementById(id);
  const NAMES = { "/handheld": "Handheld", "/dispatch": "Dispatch", "/ops": "Ops", "/admin": "Admin", "/audit": "Audit", "/calendar": "Calendar", "/report": "Reports" };
  let me = null;

  function time(iso) {
    if (!iso) return "";
    return new Date(iso).toLocaleString("en-GB", { timeZone: me.site.timezone, hour12: false,
      day: "numeric", month: "short", hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }

  function who(at, by) {
    return at ? [el("span", { class: "r-time" }, time(at)), el("span", { class: "r-by" }, by)] : "";
  }

  function prize(r) {
    if (r.outcome !== "awarded") return r.void_reason ? `void: ${r.void_reason}` : "";
    const kind = RAPS.PRIZE[r.prize_kind] || r.prize_kind;
    return `${RAPS.letterMoney(Math.round(Number(r.prize_amount) * 100))} ${kind} · envelope ${r.envelope}`;
  }

  // The claim's steps: security en route, the winner absent, an escalation, an
  // extension (who, how long, why), each on its own line; empty for a pick that had none.
  function claim(r) {
    const lines = [];
    if (r.en_route_at) lines.push(`en route ${time(r.en_route_at)}: ${r.en_route_by}`);
    if (r.absent_at) lines.push(`absent ${time(r.absent_at)} (${r.absent_by})`);
    if (r.escalated_at) lines.push(`ESCALATED ${time(r.escalated_at)}`);
    if (r.extended_by) lines.push(`+${r.extended_seconds} s by ${r.extended_by}: ${r.extension_reason}`);
    return lines.flatMap((t, i) => (i ? [el("br"), t] : [t]));
  }

  function fact(name, value) {
    return [el("dt", {}, name), el("dd", {}, value || "—")];
  }

  async function show(sid) {
    const rep = await RAPS.getJSON(`/api/sessions/${encodeURIComponent(sid)}/report`);
    $("r-title").textContent = `${rep.promotion_name} · session ${rep.session_id}`;
    $("r-facts").replaceChildren(
      ...fact("Site", rep.site),
      ...fact("Mode", rep.rehearsal ? "REHEARSAL" : "LIVE"),
      ...fact("State", rep.state),
      ...fact("Opened", rep.opened_at ? `${time(rep.opened_at)} by ${rep.opened_by}` : ""),
      ...fact("Closed", rep.closed_at ? `${time(rep.closed_at)} by ${rep.closed_by}` : ""),
      ...fact("Commitment", el("span", { class: "hex" }, rep.commitment || "")),
      ...fact("Seed", el("span", { class: "hex" }, rep.seed || "revealed at close")));
    const totals = Object.entries(rep.prize_totals).map(([k, v]) => `${RAPS.letterMoney(v)} ${RAPS.PRIZE[k] || k}`);
    $("r-totals").textContent = `${rep.picks.length} picks · prizes awarded: ${totals.join(", ") || "none"}`;
    $("r-rows").replaceChildren(...rep.picks.map((r) => el("tr", { dataset: { pick: r.pick, outcome: r.outcome } },
      el("td", {}, r.pick + (r.attempt !== "0" ? ` (redraw ${r.attempt})` : "")),
      el("td", {}, `${RAPS.KIND[r.pool] || r.pool} ${r.slot}`),
      el("td", {}, `${r.winner} · ${r.tier.toUpperCase()}`, el("br"), el("span", { class: "r-card" }, r.card)),
      el("td", {}, r.area, el("br"), r.location),
      el("td", {}, who(r.drawn_at, r.drawn_by)),
      el("td", { class: "r-claim" }, claim(r)),
      el("td", {}, who(r.resolved_at, r.resolved_by)),
      el("td", { class: `r-out o-${r.outcome}` }, r.outcome.replace("_", "-"),
        r.outcome_at && r.outcome_at !== r.resolved_at ? who(r.outcome_at, r.outcome_by) : ""),
      el("td", {}, prize(r)))));
    if (!rep.picks.length) $("r-rows").append(el("tr", {}, el("td", { colspan: "9" }, "No picks.")));
    $("r-csv").href = rep.csv;
    $("r-csv").setAttribute("download", `${sid}-report.csv`);
    document.title = `Report ${sid} - RAPS`;
  }

  async function start() {
    me = await RAPS.loadMe();
    $("site").textContent = me.site.name;
    $("who").textContent = `${me.user} · ${me.role}`;
    $("sign-out").addEventListener("click", RAPS.signOut);
    $("nav").replaceChildren(...me.pages.map((p) => el("a", { href: p }, NAMES[p] || p)));
    $("r-print").addEventListener("click", () => window.print());
    const sessions = await RAPS.getJSON("/api/sessions");
    sessions.sort((a, b) => b.starts.localeCompare(a.starts) || a.session_id.localeCompare(b.session_id));
    const pick = $("r-session");
    pick.replaceChildren(...sessions.map((s) => el("option", { value: s.session_id },
      `${s.session_id} · ${(me.promotions || {})[s.promotion_id] || s.promotion_id} · ${s.state}`)));
    const wanted = decodeURIComponent(location.hash.slice(1));
    if (sessions.some((s) => s.session_id === wanted)) pick.value = wanted;
    pick.addEventListener("change", () => {
      history.replaceState(null, "", "#" + encodeURIComponent(pick.value));
      show(pick.value).catch((e) => $("r-totals").textContent = e.message);
    });
    if (pick.value) await show(pick.value);
  }

  start().catch((e) => $("r-totals").replaceChildren(el("span", { class: "bad" }, e.message || String(e))));
})();
