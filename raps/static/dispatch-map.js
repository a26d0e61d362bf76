// The dispatch screen's floor map: the SVG from /api/floor.svg, every pending winner's
// spot ringed and numbered.  Labels are sized in screen pixels, not map units: an area
// name, a table number, a bank name and a ring's pick number are at least MIN_PX on the
// screen (read across a room), and a label that cannot be that large where it stands is
// left out (the cards name every place).  A ring, at the largest its pulse grows, never
// reaches an area's name, and no badge lies on another (placeBadge: two winners at
// neighbouring machines, a map squeezed by the cards).
"use strict";
const DMap = (() => {
  const SVG = "http://www.w3.org/2000/svg";
  const MIN_PX = 16;
  const PULSE = 1.6; // the ring's animation scales it up to this
  let svg = null;
  const spots = new Map(); // "m:<machine>" or "s:<table>:<seat>" -> element

  async function load(box) {
    const r = await fetch("/api/floor.svg", { credentials: "same-origin" });
    if (r.status === 401) { RAPS.toLogin(); return null; }
    if (!r.ok) return null;
    const doc = new DOMParser().parseFromString(await r.text(), "image/svg+xml");
    svg = document.importNode(doc.documentElement, true);
    box.replaceChildren(svg);
    for (const m of svg.querySelectorAll("[data-machine]")) spots.set("m:" + m.dataset.machine, m);
    for (const s of svg.querySelectorAll(".seat[data-seat]")) spots.set(`s:${s.dataset.table}:${s.dataset.seat}`, s);
    return svg;
  }

  // screen pixels per map unit
  function scale() {
    const m = svg && svg.getScreenCTM();
    return m && m.a > 0 ? m.a : 0;
  }

  // A label `px` screen pixels high, or hidden when it would not fit `room` map units.
  function size(node, px, k, room) {
    const units = px / k;
    const fits = room === undefined || units <= room;
    node.style.fontSize = `${units}px`;
    node.classList.toggle("no-room", !fits);
  }

  // Every label at least MIN_PX on screen (areas a little more), where it fits.
  function fitLabels() {
    const k = scale();
    if (!svg || !k) return;
    for (const t of svg.querySelectorAll(".area-label")) {
      const box = t.parentNode.querySelector(".area-box");
      const w = box ? Number(box.getAttribute("width")) : Infinity;
      // the name runs along the area's top: as large as 2 units, at least MIN_PX + 4
      const units = Math.max(2, (MIN_PX + 4) / k);
      const fits = units * 0.62 * t.textContent.length <= w;
      t.style.fontSize = `${fits ? units : Math.max(MIN_PX / k, w / (0.62 * t.textContent.length))}px`;
      t.classList.toggle("no-room", !fits && w / (0.62 * t.textContent.length) < MIN_PX / k);
    }
    for (const t of svg.querySelectorAll(".table-label")) size(t, Math.max(MIN_PX, 0.9 * k), k, 1.8);
    for (const t of svg.querySelectorAll(".bank-labels text")) size(t, Math.max(MIN_PX, 0.7 * k), k, 1.3);
  }

  function spotOf(p) {
    const loc = p.location || {};
    return loc.kind === "slots" ? spots.get("m:" + loc.machine) : spots.get(`s:${loc.table}:${loc.seat}`);
  }

  // The largest ring radius at (cx, cy) whose pulse stays clear of every area name.
  function clearRadius(cx, cy, r, names) {
    let out = r;
    for (const b of names) out = Math.min(out, (boxDistance(b, cx, cy) - 0.15) / PULSE);
    return Math.max(out, 0.35);
  }

  // marks: [{ s, p, label, critical }] (pending winners, soonest first; `label` is the
  // pick's number, with its session's letter when several are open: "B1")
  function render(marks) {
    if (!svg) return;
    fitLabels();
    const layer = svg.querySelector(".marks");
    for (const hit of svg.querySelectorAll(".hit")) hit.classList.remove("hit");
    const vb = svg.viewBox.baseVal;
    const base = Math.max(1.5, Math.min(vb.width, vb.height) / 18);
    const names = [...svg.querySelectorAll(".area-label:not(.no-room)")].map((t) => t.getBBox());
    const k = scale() || 1;
    const nodes = [];
    // rings and lines under every badge: neither ever crosses another winner's badge
    const rings = [];
    const leads = [];
    const placed = []; // the badges so far, soonest first: { x, y, r }
    for (const { s, p, label: text, critical } of marks) {
      const spot = spotOf(p);
      if (!spot) continue;
      spot.classList.add("hit");
      const box = spot.getBBox();
      const cx = box.x + box.width / 2;
      const cy = box.y + box.height / 2;
      const r = clearRadius(cx, cy, base, names);
      // the number's badge sits inside the ring's reach, so it is clear of the names too;
      // wide enough for its label ("12", "B12")
      const chars = (text || String(p.pick)).length;
      const badgeR = Math.max(r * 0.55, (MIN_PX * 0.75) / k, (MIN_PX * 0.36 * (chars + 0.6)) / k);
      const off = Math.max(0, r * PULSE - badgeR) / Math.SQRT2;
      const at = placeBadge(cx, cy, off, badgeR, { placed, names, vb, gap: 2 / k });
      placed.push({ x: at.x, y: at.y, r: badgeR });
      const g = document.createElementNS(SVG, "g");
      g.setAttribute("class", "mark");
      g.dataset.pick = String(p.pick);
      g.dataset.session = s.session_id;
      const ring = circle("ring" + (critical ? " critical" : ""), cx, cy, r);
      const badge = circle("mark-badge" + (critical ? " critical" : ""), at.x, at.y, badgeR);
      const label = document.createElementNS(SVG, "text");
      label.setAttribute("class", "mark-label");
      label.setAttribute("x", at.x);
      label.setAttribute("y", at.y);
      // as large as the badge allows with the label inside it, never below MIN_PX
      label.style.fontSize = `${Math.max(Math.min(badgeR * 1.3, (1.6 * badgeR) / (0.6 * chars)), MIN_PX / k)}px`;
      label.textContent = text || String(p.pick);
      // a badge moved away from its ring is tied to it by a line
      if (Math.hypot(at.x - cx, at.y - cy) > r * PULSE) leads.push(lead(cx, cy, at, badgeR, g.dataset));
      Object.assign(ring.dataset, g.dataset); // its mark's pick and session
      rings.push(ring);
      g.append(badge, label);
      nodes.push(g);
    }
    layer.replaceChildren(...leads, ...rings, ...nodes);
  }

  // Where a badge goes: up and right of its spot, inside the ring's reach, unless that
  // lies on a badge already placed (two winners at neighbouring machines).  Then round
  // the spot, eight directions and more as it goes further out, the first place whose
  // badge is clear of every badge placed, of every area name and inside the map; the
  // first place when nothing is clear (a floor packed with winners).
  function placeBadge(cx, cy, off, br, { placed, names, vb, gap }) {
    const clear = (x, y) => x - br >= vb.x && y - br >= vb.y
      && x + br <= vb.x + vb.width && y + br <= vb.y + vb.height
      && placed.every((b) => Math.hypot(b.x - x, b.y - y) >= b.r + br + gap)
      && names.every((n) => boxDistance(n, x, y) >= br);
    const first = { x: cx + off, y: cy - off };
    if (clear(first.x, first.y)) return first;
    const start = Math.max(off * Math.SQRT2, br);
    for (let ring = 0; ring < 12; ring++) {
      const d = start + ring * br;
      const n = Math.max(8, Math.ceil((2 * Math.PI * d) / br));
      for (let i = 0; i < n; i++) {
        const a = -Math.PI / 4 + (2 * Math.PI * i) / n; // up and right first
        const x = cx + d * Math.cos(a);
        const y = cy + d * Math.sin(a);
        if (clear(x, y)) return { x, y };
      }
    }
    return first;
  }

  // the distance from (x, y) to a box (0 inside it)
  function boxDistance(b, x, y) {
    return Math.hypot(Math.max(b.x - x, 0, x - (b.x + b.width)), Math.max(b.y - y, 0, y - (b.y + b.height)));
  }

  function lead(cx, cy, at, br, data) {
    const d = Math.hypot(at.x - cx, at.y - cy);
    const line = document.createElementNS(SVG, "line");
    line.setAttribute("class", "mark-lead");
    line.dataset.pick = data.pick;
    line.dataset.session = data.session;
    line.setAttribute("x1", cx);
    line.setAttribute("y1", cy);
    line.setAttribute("x2", at.x - ((at.x - cx) * br) / d);
    line.setAttribute("y2", at.y - ((at.y - cy) * br) / d);
    return line;
  }

  function circle(cls, cx, cy, r) {
    const c = document.createElementNS(SVG, "circle");
    c.setAttribute("class", cls);
    c.setAttribute("cx", cx);
    c.setAttribute("cy", cy);
    c.setAttribute("r", r);
    return c;
  }

  // a ring turns red with its card
  function setCritical(isCritical) {
    if (!svg) return;
    for (const x of svg.querySelectorAll(".ring, .mark-badge")) {
      const of = x.classList.contains("ring") ? x.dataset : x.parentNode.dataset;
      x.classList.toggle("critical", isCritical(of.session, of.pick));
    }
  }

  return { load, render, fitLabels, setCritical, MIN_PX, PULSE, get svg() { return svg; } };
})();
