// The dispatch wall screen never scrolls: what does not fit is made to fit, and what
// still cannot is counted, never cut off.
//
// - pending cards: the first of five densities that fits (large cards .. three columns),
//   then the latest deadlines give way to "+N more pending";
// - the ESCALATE bar: every critical winner's place, whole; those that do not fit in its
//   height give way to "+N more critical";
// - the history of resolved picks: as many whole rows as fit, in pages that turn by
//   themselves (PAGE_MS) or with its ‹ › buttons;
// - the header's session tags: two rows, then a count.
// It all runs again whenever the space changes (a ResizeObserver on the pending area:
// the ESCALATE bar appearing, the history growing, the window), not only on new data.
// Phones and tablets (narrow) scroll instead: nothing is hidden there.
"use strict";
const DFit = (() => {
  const { el } = RAPS;
  const $ = (id) => document.getElementById(id);
  const DENSITIES = 5; // dens-0 (large cards) .. dens-4 (three columns)
  const PAGE_MS = 8000;
  let page = 0;
  let pages = 1;
  let historyTotal = -1;

  // a phone or a tablet (narrower than a wall screen): one column that scrolls
  const narrow = () => window.matchMedia("(max-width: 1199px)").matches;

  const overflows = (box) => box.scrollHeight > box.clientHeight + 1 || box.scrollWidth > box.clientWidth + 1;

  function setDensity(level) {
    for (let i = 0; i < DENSITIES; i++) document.body.classList.toggle(`dens-${i}`, i === level);
    document.body.dataset.density = String(level);
  }

  function pending() {
    const box = document.querySelector(".d-pending");
    const cards = [...$("pending").children];
    for (const c of cards) c.hidden = false;
    const more = $("more");
    more.hidden = true;
    if (narrow()) { setDensity(0); return; }
    for (let level = 0; level < DENSITIES; level++) {
      setDensity(level);
      if (!overflows(box)) return;
    }
    // denser than three columns is unreadable across a room: the latest deadlines
    // give way, and the list says how many are not shown
    more.hidden = false;
    let hidden = 0;
    for (let i = cards.length - 1; i > 0 && overflows(box); i--) {
      cards[i].hidden = true;
      hidden += 1;
      more.textContent = `+${hidden} more pending (later deadlines)`;
    }
  }

  // items: [text], soonest first.  The bar shows as many whole as fit its height.
  function escalation(items) {
    const bar = $("escalation");
    const on = items.length > 0;
    bar.classList.toggle("on", on);
    document.body.classList.toggle("escalating", on);
    if (!on) { bar.replaceChildren(); return; }
    const nodes = items.map((u) => el("span", { class: "esc-item" }, u));
    const more = el("span", { class: "esc-more", hidden: true });
    bar.replaceChildren(el("strong", {}, "ESCALATE"), ...nodes, more);
    for (let shown = nodes.length; shown > 1 && overflows(bar); shown--) {
      nodes[shown - 1].hidden = true;
      more.hidden = false;
      more.textContent = `+${nodes.length - shown + 1} more critical`;
    }
  }

  function sessions(open) {
    const box = $("d-sessions");
    box.classList.remove("compact");
    if (narrow() || !overflows(box)) return;
    box.classList.add("compact");
    if (!overflows(box)) return;
    const live = open.filter((s) => !s.rehearsal).length;
    // replaceChildren prints a null as "null": only the tags there are
    const tags = [el("span", { class: "d-tag idle" }, `${open.length} sessions open`)];
    if (live) tags.push(el("span", { class: "d-tag live" }, `${live} LIVE`));
    if (open.length - live) tags.push(el("span", { class: "d-tag rehearsal" }, `${open.length - live} REHEARSAL`));
    box.replaceChildren(...tags);
  }

  // The resolved picks' rows (latest first), a page of whole rows at a time.
  function history() {
    const box = document.querySelector(".d-history");
    const rows = [...$("history").children];
    if (rows.length !== historyTotal) page = 0; // something new: the latest first
    historyTotal = rows.length;
    for (const r of rows) r.hidden = false;
    let size = rows.length;
    if (!narrow()) {
      while (size > 1 && overflows(box)) rows[--size].hidden = true;
    }
    pages = size ? Math.ceil(rows.length / size) : 1;
    page = Math.min(page, pages - 1);
    rows.forEach((r, i) => { r.hidden = Math.floor(i / size) !== page; });
    const first = page * size + 1;
    const last = Math.min(rows.length, first + size - 1);
    $("history-more").textContent = pages > 1 ? `${first}-${last} of ${rows.length}` : "";
    $("history-pager").hidden = pages < 2;
    return { page, pages, size };
  }

  // the next (1) or the previous (-1) page of the history, round
  function turn(step) {
    page = (((page + step) % pages) + pages) % pages;
    history();
  }

  // Fit again whenever the pending area changes size (not only on new data).
  function watch() {
    // the pages turn by themselves, however often new data arrives; a page turned by
    // hand stays a full PAGE_MS
    let auto = null;
    const restart = () => {
      clearInterval(auto);
      auto = setInterval(() => { if (pages > 1) turn(1); }, PAGE_MS);
    };
    $("history-prev").addEventListener("click", () => { turn(-1); restart(); });
    $("history-next").addEventListener("click", () => { turn(1); restart(); });
    restart();
    let queued = false;
    const again = () => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => { queued = false; pending(); });
    };
    new ResizeObserver(again).observe(document.querySelector(".d-main"));
  }

  return { pending, escalation, sessions, history, watch, turn, narrow };
})();
