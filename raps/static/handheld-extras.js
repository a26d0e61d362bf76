// Parts of the handheld's winner card: the PA announcement ready to read out, and the
// identity check at verification (the directory's full name, for marketing and admins:
// the handheld is theirs alone; the wall screen never gets it).
"use strict";
const HHExtras = (() => {
  const { el } = RAPS;

  // Where the winner goes, as the PA says it: "Main Floor, Bank B03, Machine 12".
  function spoken(loc) {
    if (!loc) return "";
    if (loc.kind === "slots") return `${loc.area}, Bank ${loc.bank}, Machine ${loc.number}`;
    return `${loc.area}, Table ${loc.table}, Seat ${loc.seat}`;
  }

  // The line to read out: the name as the screens show it (first name and initial),
  // the promotion's name, where to go and the claim time.
  function announcement(p, promotion, claimSeconds) {
    const secs = claimSeconds ? ` within ${claimSeconds} seconds` : "";
    return `Attention please: ${p.display_name}, you are a ${promotion} winner! `
      + `Please go to ${spoken(p.location)} with your player card and ID${secs}.`;
  }

  function paLine(p, promotion, claimSeconds, toast) {
    const text = announcement(p, promotion, claimSeconds);
    const copy = el("button", { type: "button", class: "secondary small pa-copy" }, "Copy");
    copy.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(text);
        toast("Announcement copied");
      } catch (_) {
        toast("Copy is not allowed here: read it from the screen", true);
      }
    });
    return el("div", { class: "w-pa", dataset: { pa: "1" } },
      el("span", { class: "w-pa-label" }, "PA"), el("q", { class: "w-pa-text" }, text), copy);
  }

  // "ID check": the full name the directory gave (and its photo, once the feed has one),
  // fetched only when tapped, hidden again with a second tap.
  function idCheck(sid, p) {
    const out = el("div", { class: "w-id-out", hidden: true, "aria-live": "polite" });
    const button = el("button", { type: "button", class: "secondary id-check", "aria-expanded": "false" },
      "ID check: show full name");
    button.addEventListener("click", async () => {
      if (!out.hidden) {
        out.hidden = true;
        out.replaceChildren();
        button.setAttribute("aria-expanded", "false");
        return;
      }
      button.disabled = true;
      try {
        const id = await RAPS.getJSON(`/api/sessions/${encodeURIComponent(sid)}/picks/${p.pick}/identity`);
        out.replaceChildren(
          el("div", { class: "w-id-name" }, el("span", { class: "w-id-label" }, "Full name"), id.full_name),
          id.photo_url
            ? el("img", { class: "w-id-photo", src: id.photo_url, alt: `Photo of ${id.full_name}` })
            : el("div", { class: "w-id-note" }, "No photo: the directory does not provide one"),
          el("div", { class: "w-id-note" }, `Card ${id.card} · ${String(id.tier).toUpperCase()}`));
        out.hidden = false;
        button.setAttribute("aria-expanded", "true");
      } catch (e) {
        out.replaceChildren(el("div", { class: "w-id-note" }, `ID check failed: ${e.message || e}`));
        out.hidden = false;
      } finally {
        button.disabled = false;
      }
    });
    return el("div", { class: "w-id" }, button, out);
  }

  return { announcement, paLine, idCheck, spoken };
})();
