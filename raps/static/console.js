// ops, admin and audit pages: read-only views (admin may sign a user out everywhere).
"use strict";
(() => {
  const { el } = RAPS;
  const $ = (id) => document.getElementById(id);
  const page = document.body.dataset.page;
  const NAMES = { "/handheld": "Handheld", "/dispatch": "Dispatch", "/ops": "Ops", "/admin": "Admin", "/audit": "Audit", "/calendar": "Calendar", "/report": "Reports" };

  function table(headers, rows) {
    return el("table", {},
      el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))),
      el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, c))))));
  }

  function section(title, ...children) {
    return el("section", { class: "card" }, el("h2", {}, title), ...children);
  }

  async function ops() {
    const ready = await fetch("/readyz", { credentials: "same-origin" }).then((r) => r.json()).catch(() => null);
    const [pools, sessions, head] = await Promise.all([
      RAPS.getJSON("/api/pools"), RAPS.getJSON("/api/sessions"), RAPS.getJSON("/api/journal/head"),
    ]);
    const totals = new Map();
    for (const r of pools) {
      const key = `${r.promotion_id}|${r.pool}|${r.area}`;
      totals.set(key, (totals.get(key) || 0) + r.eligible);
    }
    return [
      section("Health",
        el("p", {}, "Ready: ", ready && ready.ready ? el("span", { class: "ok" }, "yes") : el("span", { class: "bad" }, "NO"),
          ready ? ` · storage ${ready.storage ? "up" : "DOWN"}` + (ready.sources_down.length ? ` · sources down: ${ready.sources_down.join(", ")}` : "") : " · no answer"),
        el("p", {}, "Journal head: ", el("span", { class: "hex" }, head.seq ? `${head.seq}:${head.hash}` : "empty"))),
      section("Eligible players (promotion · pool · area)",
        table(["Promotion", "Pool", "Area", "Eligible"], [...totals].sort().map(([k, n]) => [...k.split("|"), String(n)]))),
      section("Sessions",
        table(["Session", "Promotion", "Starts", "Mode", "State", "Picks"],
          sessions.map((s) => [s.session_id, s.promotion_id, s.starts, s.rehearsal ? "rehearsal" : "live", s.state, String(s.picks)]))),
    ];
  }

  async function admin() {
    const [users, config] = await Promise.all([RAPS.getJSON("/api/admin/users"), RAPS.getJSON("/api/admin/config")]);
    const rows = users.map((u) => {
      const b = el("button", { type: "button", class: "secondary", dataset: { user: u.name } }, "Sign out everywhere");
      b.addEventListener("click", async () => {
        const r = await RAPS.post(`/api/admin/users/${encodeURIComponent(u.name)}/sign-out`, {});
        const data = await r.json().catch(() => ({}));
        b.textContent = r.ok ? `Signed out (${data.ended})` : (data.detail || "refused");
      });
      return [u.name, u.role, u.api_token ? "yes" : "no", String(u.signed_in), b];
    });
    return [
      section("Users", el("p", {}, "Users are kept in the config file ([[users]]; secrets hashed with raps hash-password)."),
        table(["User", "Role", "API token", "Signed in", ""], rows)),
      section("Configuration (secrets left out)", el("pre", {}, JSON.stringify(config, null, 2))),
    ];
  }

  async function audit() {
    const sessions = await RAPS.getJSON("/api/sessions");
    const rows = await Promise.all(sessions.map(async (s) => {
      const base = `/api/sessions/${encodeURIComponent(s.session_id)}`;
      const v = await RAPS.getJSON(`${base}/verification`);
      const check = v.seed_matches_commitment === null ? "seed not revealed yet"
        : v.seed_matches_commitment ? el("span", { class: "ok" }, "seed matches") : el("span", { class: "bad" }, "SEED MISMATCH");
      return [s.session_id, s.rehearsal ? "rehearsal" : "live", s.state,
        el("span", { class: "hex" }, v.commitment || "—"), check,
        el("span", {}, el("a", { href: `${base}/export`, download: `${s.session_id}.jsonl` }, "export"), " · ",
          el("a", { href: `${base}/verification` }, "verification data"), " · ",
          el("a", { href: `/report#${encodeURIComponent(s.session_id)}` }, "report")),
        el("span", { class: "hex" }, v.verify_command)];
    }));
    return [section("Sessions", el("p", {}, "Download a session's export and check it offline with raps verify."),
      table(["Session", "Mode", "State", "Commitment", "Seed", "Data", "Check offline"], rows))];
  }

  async function start() {
    const me = await RAPS.loadMe();
    $("site").textContent = me.site.name;
    $("who").textContent = `${me.user} · ${me.role}`;
    $("sign-out").addEventListener("click", RAPS.signOut);
    $("nav").replaceChildren(...me.pages.map((p) => el("a", { href: p }, NAMES[p] || p)));
    const build = { ops, admin, audit }[page];
    const draw = async () => $("content").replaceChildren(...await build());
    await draw();
    if (page === "ops") setInterval(() => draw().catch(() => {}), 5000);
  }

  start().catch((e) => $("content").replaceChildren(el("p", { class: "error" }, e.message || String(e))));
})();
