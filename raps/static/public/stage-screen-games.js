// The stage games on the audience's screen: what the game reveals, as it is revealed.
//
// The screen's view carries the public game (first name and initial, masked cards):
// the podium each randomiser names, the boxes and the prize reveals opened so far, the
// paddles' chances, the digit safe's value with its stated odds and each code tried,
// the car's winner. What is hidden stays hidden until the game closes; then its seed
// and commitment are shown. A reveal new since the screen opened lands with a flip
// (none under prefers-reduced-motion).
"use strict";
const ScreenGames = (() => {
  const NAMES = { podium: "Podium randomiser", bonus: "Bonus boxes", paddles: "Paddles", safe: "The digit safe", car: "The car" };
  const seen = new Set();
  let first = true;

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function money(minor) {
    const whole = Math.floor(Math.abs(minor) / 100);
    return `R${whole.toLocaleString("en-US")}`;
  }

  // A reveal the audience has not seen yet flips in; the first view shows what is there.
  function reveal(node, key) {
    node.dataset.reveal = key;
    if (!seen.has(key)) {
      seen.add(key);
      if (!first) node.classList.add("flip");
    }
    return node;
  }

  function render(box, v) {
    const g = v.game;
    const begun = g && (g.games.some((x) => x.state !== "not_open") || (g.vault && g.vault.shared)
      || (g.safe && v.state === "open"));
    document.body.classList.toggle("gaming", Boolean(begun));
    box.hidden = !begun;
    if (!begun) { first = false; return; }
    const parts = [el("h2", "sg-title", g.name)];
    if (g.safe) parts.push(safe(g.safe));
    const live = g.games.filter((x) => x.state !== "not_open");
    const current = live.filter((x) => x.state !== "closed").pop() || live[live.length - 1];
    for (const x of live) {
      if (x === current) parts.push(game(x));
      else parts.push(el("p", "sg-done", `${NAMES[x.mechanic]}: done · seed ${x.seed}`));
    }
    if (g.vault && g.vault.shared) {
      const list = el("ol", "sg-list");
      for (const s of g.vault.shares) list.append(reveal(el("li", "sg-share", `${s.name} · ${s.text}`), `share:${s.position}`));
      parts.push(el("h3", "sg-sub", "The vault, shared"), list);
    }
    box.replaceChildren(...parts);
    first = false;
  }

  function safe(s) {
    const wrap = el("div", "sg-safe");
    wrap.append(el("div", "sg-safe-label", s.shared ? "The vault" : "The digit safe"),
      el("div", "sg-safe-value", money(s.value)));
    if (s.odds) wrap.append(el("div", "sg-odds", `Odds: ${s.odds} · a try costs ${money(s.forfeit)}`));
    wrap.dataset.value = String(s.value);
    return wrap;
  }

  function game(x) {
    const sec = el("section", `sg-game ${x.mechanic}`);
    sec.dataset.mechanic = x.mechanic;
    sec.dataset.state = x.state;
    sec.append(el("h3", "sg-sub", NAMES[x.mechanic]));
    if (x.mechanic === "podium") podium(sec, x);
    else if (x.mechanic === "bonus") bonus(sec, x);
    else if (x.mechanic === "paddles") paddles(sec, x);
    else if (x.mechanic === "safe") safeGame(sec, x);
    else if (x.mechanic === "car") car(sec, x);
    if (x.state === "closed") {
      sec.append(el("div", "sg-proof", `Seed ${x.seed}`), el("div", "sg-proof dim", `Commitment ${x.commitment}`));
    } else if (x.commitment) {
      sec.append(el("div", "sg-proof dim", `Commitment ${x.commitment}`));
    }
    return sec;
  }

  function turn(sec, t, what) {
    if (t) sec.append(el("div", "sg-turn", `${t.name} ${what}`));
  }

  function podium(sec, x) {
    turn(sec, x.turn, "picks a randomiser");
    const list = el("ol", "sg-list");
    for (const c of x.chosen) {
      list.append(reveal(el("li", "sg-chosen", `${c.name} · randomiser ${c.randomiser} → podium ${c.podium} · ${c.text}`),
        `chosen:${c.position}`));
    }
    sec.append(list);
  }

  function bonus(sec, x) {
    const who = el("div", "sg-row");
    for (const c of x.contestants) {
      who.append(el("div", "sg-contestant", `${c.name} · ${c.symbol} ${"★".repeat(c.count)}${"☆".repeat(x.needed - c.count)}`
        + (c.decided === false ? " · declined" : "")));
    }
    sec.append(who);
    turn(sec, x.turn, "opens a box");
    const grid = el("div", "sg-grid boxes");
    for (let n = 1; n <= x.boxes; n++) {
      const symbol = x.opened[String(n)];
      grid.append(symbol ? reveal(el("div", `sg-cell open ${symbol}`, symbol), `box:${n}`) : el("div", "sg-cell", n));
    }
    sec.append(grid);
    if (x.winner) sec.append(reveal(el("div", "sg-win", `${x.winner.name} wins the jackpot`), "bonus-winner"));
  }

  function paddles(sec, x) {
    const me = x.turn ? x.contestants[x.turn.position - 1] : null;
    if (me) {
      turn(sec, x.turn, me.paddle ? `· paddle ${me.paddle}: ${me.left} of ${me.chances} chances left` : "picks a paddle");
    }
    const grid = el("div", "sg-grid reveals");
    for (let n = 1; n <= x.reveals; n++) {
      const amount = x.opened[String(n)];
      grid.append(amount !== undefined ? reveal(el("div", "sg-cell open", money(amount)), `reveal:${n}`) : el("div", "sg-cell", n));
    }
    sec.append(grid);
    const list = el("ol", "sg-list");
    for (const c of x.contestants) {
      if (c.done) list.append(reveal(el("li", "sg-chosen", `${c.name} · ${c.prize_text}`), `paddle-prize:${c.position}`));
    }
    sec.append(list);
  }

  function safeGame(sec, x) {
    const t = x.turn;
    if (t) turn(sec, t, t.trying ? "tries the code" : "decides: keep the podium prize, or try the safe?");
    const list = el("ol", "sg-list");
    for (const c of x.contestants) {
      let text = `${c.name} · ${c.podium_text}`;
      if (c.decision === "declined") text += " · keeps it";
      if (c.decision === "attempted") text += ` · tries ${c.tries.join(" ") || "…"}`;
      const li = el("li", c.cracked ? "sg-chosen cracked" : "sg-chosen", text);
      list.append(reveal(li, `safe:${c.position}:${c.decision}:${c.tries.length}`));
    }
    sec.append(list);
    if (x.cracked_by) {
      const c = x.contestants[x.cracked_by - 1];
      sec.append(reveal(el("div", "sg-win", `${c.name} cracks the safe: ${x.value_text}`), "cracked"));
    }
  }

  function car(sec, x) {
    const list = el("ol", "sg-list");
    for (const f of x.finalists) {
      const won = x.winner && x.winner.card === f.card;
      list.append(el("li", won ? "sg-chosen won" : "sg-chosen", `${f.name} · ${f.card}`));
    }
    sec.append(list);
    if (x.winner) {
      sec.append(reveal(el("div", "sg-win", `${x.winner.name} wins the car` + (x.vehicle ? `: the ${x.vehicle}` : "")),
        `car:${x.vehicle || ""}`));
    }
  }

  return { render };
})();
