// Parts of the handheld's winner card: the PA announcement ready to read out, and the
// identity check at verification (the directory's full name, for marketing and admins:
// the handheld is theirs alone; the wall screen never gets it); the offline shell's
// registration.
"use strict";
const HHExtras = (() => {
  const { el } = RAPS;

  // Where the winner goes, as the PA says it: "Main Floor, Bank B03, Machine 12".
  function spoken(loc) {
    if (!loc) return "";
    if (loc.kind === "slots") return `${loc.area}, Bank ${loc.bank}, Machine ${loc.number}`;
    return `${loc.area}, Table ${loc.table}, Seat ${loc.seat}`;
  }

  // The line to read out: the winner's name as the promotion's `announce_name` says
  // (first name and initial by default), the promotion's name, where to go and the claim
  // time.
  function announcement(p, promotion, claimSeconds, name = p.display_name) {
    const secs = claimSeconds ? ` within ${claimSeconds} seconds` : "";
    return `Attention please: ${name}, you are a ${promotion} winner! `
      + `Please go to ${spoken(p.location)} with your player card and ID${secs}.`;
  }

  // The PA line on a pending winner's card.  `style` is the promotion's announce_name:
  // "first_initial" and "first" come from the name the card already has; "full" is
  // fetched (GET .../announcement, the handheld's roles only), the line saying so while
  // it loads and retrying on a stalled link.
  function paLine(p, promotion, claimSeconds, toast, sid, style = "first_initial") {
    const text = el("q", { class: "w-pa-text" });
    let line = "";
    const show = (name) => {
      line = announcement(p, promotion, claimSeconds, name);
      text.textContent = line;
    };
    const copy = el("button", { type: "button", class: "secondary small pa-copy" }, "Copy");
    copy.addEventListener("click", async () => {
      if (!line) return;
      try {
        await navigator.clipboard.writeText(line);
        toast("Announcement copied");
      } catch (_) {
        toast("Copy is not allowed here: read it from the screen", true);
      }
    });
    if (style === "full") {
      text.textContent = "Loading the winner's full name…";
      const slow = (why) => { text.textContent = `Loading the winner's full name: ${why} · retrying`; };
      RAPS.getJSON(`/api/sessions/${encodeURIComponent(sid)}/picks/${p.pick}/announcement`, {
        timeoutMs: HHCommands.TIMEOUT_MS, slowMs: HHCommands.SLOW_MS, retry: true, onSlow: slow, onRetry: slow,
      }).then((a) => show(a.name)).catch((e) => { text.textContent = `No PA line: ${e.message || e}`; });
    } else {
      show(style === "first" ? String(p.display_name).split(" ")[0] : p.display_name);
    }
    return el("div", { class: "w-pa", dataset: { pa: "1" } },
      el("span", { class: "w-pa-label" }, "PA"), text, copy);
  }

  // "ID check": the full name the directory gave (and its photo, when the directory has
  // one), fetched only when tapped, hidden again with a second tap.  On a stalled link the
  // button says "No answer yet · retrying" within 1.5 s and asks again (a tap meanwhile
  // gives up); it never greys out.
  function idCheck(sid, p) {
    const out = el("div", { class: "w-id-out", hidden: true, "aria-live": "polite" });
    const label = "ID check: show full name";
    const button = el("button", { type: "button", class: "secondary id-check", "aria-expanded": "false" }, label);
    let asking = null;
    const note = (text) => {
      let n = button.querySelector(".cmd-wait");
      if (!text) { if (n) n.remove(); return; }
      if (!n) { n = el("span", { class: "cmd-wait" }); button.append(n); }
      n.textContent = text;
    };
    const hide = () => {
      out.hidden = true;
      out.replaceChildren();
      button.setAttribute("aria-expanded", "false");
    };
    button.addEventListener("click", async () => {
      if (asking) { asking.abort(); return; } // a tap while waiting: give up
      if (!out.hidden) { hide(); return; }
      asking = new AbortController();
      button.setAttribute("aria-busy", "true");
      button.firstChild.textContent = "ID check: loading…";
      const slow = () => note("No answer yet · retrying (tap to stop)");
      try {
        const id = await RAPS.getJSON(`/api/sessions/${encodeURIComponent(sid)}/picks/${p.pick}/identity`, {
          timeoutMs: HHCommands.TIMEOUT_MS, slowMs: HHCommands.SLOW_MS, retry: true,
          onSlow: slow, onRetry: slow, signal: asking.signal,
        });
        out.replaceChildren(...identity(id));
        out.hidden = false;
        button.setAttribute("aria-expanded", "true");
      } catch (e) {
        if (e.name !== "AbortError") {
          out.replaceChildren(el("div", { class: "w-id-note" }, `ID check failed: ${e.message || e}`));
          out.hidden = false;
        }
      } finally {
        asking = null;
        note("");
        button.firstChild.textContent = label;
        button.setAttribute("aria-busy", "false");
      }
    });
    return el("div", { class: "w-id" }, button, out);
  }

  // What the identity answer shows: the full name, the photo (served by the daemon) or
  // why there is none, the masked card and tier.
  function identity(id) {
    return [
      el("div", { class: "w-id-name" }, el("span", { class: "w-id-label" }, "Full name"), id.full_name),
      id.photo_url
        ? el("img", { class: "w-id-photo", src: id.photo_url, alt: `Photo of ${id.full_name}` })
        : el("div", { class: "w-id-note" }, `No photo: ${id.photo_note || "the directory does not provide one"}`),
      el("div", { class: "w-id-note" }, `Card ${id.card} · ${String(id.tier).toUpperCase()}`),
    ];
  }

  // The offline shell (raps/static/worker/handheld-sw.js), once signed in.  When it
  // first takes control the page reads once more through it, so that a reload with no
  // network has the last state to show.  Without service workers (plain HTTP away from
  // this machine) the page works as before, with no offline shell.
  function offlineShell(refresh) {
    const sw = navigator.serviceWorker;
    if (!sw) return;
    sw.addEventListener("controllerchange", () => {
      RAPS.getJSON("/api/me").catch(() => {});
      RAPS.getJSON("/api/sessions").catch(() => {});
      refresh();
    });
    sw.register("/handheld-sw.js", { scope: "/handheld", updateViaCache: "none" }).catch(() => {});
  }

  return { announcement, paLine, idCheck, spoken, offlineShell };
})();
