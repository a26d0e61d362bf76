// The stage games on the host's page (issue 19): one screen per game of the draw.
//
// Podiums (a randomiser per winner, in draw order), the 15:00 bonus boxes (play or
// decline, then the 12-box grid and whose turn), the 19:00 paddles (pick a paddle, open
// reveals, chances left, stop), the 21:00 digit safe (the value and the stated odds,
// decline or forfeit to try, the keypad or the spin), the car final (reveal, vehicle,
// buy-back), the vault share and the car spots. The game view comes with the draw's
// host view (`view.game`); the page's `command` sends each tap once (the same id on a
// retry) and a refusal shows its reason. The contestant is always whoever's turn the
// server says it is: no tap names a card.
"use strict";
const StageGames = (() => {
  const { el } = RAPS;
  const money = RAPS.letterMoney;
  const NAMES = { podium: "Podium randomiser", bonus: "Bonus boxes", paddles: "Paddles", safe: "The digit safe", car: "The car" };
  const KINDS = {
    podium: "Podium randomiser", "podium+bonus": "Podiums and bonus boxes", paddles: "Paddles",
    "podium+safe": "Podiums and the digit safe", vault_share: "The vault share",
    car_spots: "Car draw qualifying spots", car_final: "Car draw final",
  };
  const typed = new Map(); // what the host typed, by draw and field, kept across renders
  let lastSig = null;

  function field(did, name, fallback = "") {
    const k = `${did}/${name}`;
    return typed.has(k) ? typed.get(k) : fallback;
  }

  function keep(did, name, value) {
    typed.set(`${did}/${name}`, value);
  }

  function render(box, view, api) {
    const g = view && view.game;
    box.hidden = !g;
    if (!g) { lastSig = null; box.replaceChildren(); return; }
    const sig = JSON.stringify([view.draw_id, view.state, g]);
    if (sig === lastSig) return;
    lastSig = sig;
    box.replaceChildren(...panel(view, g, api));
  }

  function panel(view, g, api) {
    const parts = [el("h2", {}, `Stage game: ${g.name}`),
      el("p", { class: "g-kind" }, KINDS[g.kind] || g.kind)];
    if (g.refused) parts.push(el("p", { class: "g-refused" }, `Refused at restore: ${g.refused}`));
    if (g.sequence.length > 1) {
      parts.push(el("ol", { class: "g-steps" }, g.games.map((x) => el("li", { dataset: { state: x.state } },
        `${NAMES[x.mechanic]}: ${x.state.replace("_", " ")}`))));
    }
    if (g.safe) parts.push(safeBanner(g.safe));
    parts.push(nextStep(view, g, api));
    for (const x of g.games) {
      if (x.state === "open" || x.state === "finished") parts.push(play(view, x, api));
      else if (x.state === "closed") parts.push(closed(x));
    }
    if (g.vault && g.vault.shared) {
      parts.push(el("div", { class: "g-vault" }, el("h3", {}, "Vault shares"),
        el("ol", {}, g.vault.shares.map((s) => el("li", {}, `${s.name} · ${s.card} · ${s.text}`)))));
    }
    if (g.car) {
      parts.push(el("p", { class: "g-car" },
        `Car draw ${g.car.car_id}: ${g.car.holders.length} of ${g.car.finalists} finalist spots held` +
        (g.car.holders.length ? ` (${g.car.holders.map((h) => h.name).join(", ")})` : "")));
    }
    return parts;
  }

  function safeBanner(s) {
    return el("div", { class: "g-safe-banner" },
      el("div", { class: "g-safe-value", dataset: { value: s.value } }, s.value_text),
      el("div", {}, s.odds ? `Odds: ${s.odds}` : "", s.forfeit_text ? ` · a try costs ${s.forfeit_text}` : "",
        s.ever_cracked ? " · cracked before" : "", s.shared ? " · shared" : ""));
  }

  function nextStep(view, g, api) {
    const n = g.next || {};
    const b = (label, path, action) => api.cmdButton({ class: "big primary", dataset: { action },
      onclick: () => api.command(path, {}, label) }, label);
    if (n.action === "open") {
      const wait = g.unpaid && !g.unpaid.length && n.mechanic === g.sequence[0];
      const go = b(`Open the ${NAMES[n.mechanic].toLowerCase()}`, `games/${n.mechanic}/open`, `open-${n.mechanic}`);
      if (wait) api.setBlocked(go, true);
      return el("div", { class: "g-next" }, el("p", { class: "hint" }, n.mechanic === g.sequence[0]
        ? "Opens over the draw's verified winners, in the order drawn (every position drawn and presented first)."
        : "Opens over the contestants the previous game gave."), go);
    }
    if (n.action === "close") {
      const go = api.cmdButton({ class: "big primary", dataset: { action: `close-${n.mechanic}` } },
        `Close the ${NAMES[n.mechanic].toLowerCase()}: reveal and pay`);
      api.confirmTap(go, "Tap again: the seed is revealed and the winners paid",
        () => api.command(`games/${n.mechanic}/close`, {}, `close the ${n.mechanic} game`));
      return el("div", { class: "g-next" }, go);
    }
    if (n.action === "share") {
      const go = api.cmdButton({ class: "big primary", dataset: { action: "share" } }, "Share the vault among the winners");
      api.confirmTap(go, "Tap again to share the vault", () => api.command("vault/share", {}, "share the vault"));
      return el("div", { class: "g-next" }, go);
    }
    if (n.action === "spots") return el("div", { class: "g-next" }, b("Award the qualifying spots", "spots/award", "spots"));
    if (n.action === "close_draw") return el("p", { class: "g-next hint" }, "Every winner is paid: close the draw.");
    if (n.action === "play") return el("p", { class: "g-next hint" }, `Playing: ${NAMES[n.mechanic]}.`);
    return el("p", { class: "g-next hint" }, n.why || "");
  }

  function turnLine(t, what) {
    return el("p", { class: "g-turn" }, t ? [el("strong", {}, `${t.name}`), ` (position ${t.position}) ${what}`] : "Nobody's turn");
  }

  function play(view, x, api) {
    const card = el("section", { class: `g-game ${x.mechanic}`, dataset: { mechanic: x.mechanic, state: x.state } },
      el("h3", {}, NAMES[x.mechanic]));
    if (x.mechanic === "podium") card.append(...podium(x, api));
    else if (x.mechanic === "bonus") card.append(...bonus(x, api));
    else if (x.mechanic === "paddles") card.append(...paddles(x, api));
    else if (x.mechanic === "safe") card.append(...safe(view, x, api));
    else if (x.mechanic === "car") card.append(...car(view, x, api));
    if (x.state === "finished") card.append(el("p", { class: "hint" }, "Finished: close it to reveal the seed and pay."));
    if (x.commitment) card.append(el("p", { class: "g-commit hex" }, `Commitment ${x.commitment}`));
    return card;
  }

  function podium(x, api) {
    const out = [];
    if (x.turn) {
      out.push(turnLine(x.turn, "picks a randomiser"));
      const free = new Set(x.free);
      out.push(el("div", { class: "g-grid randomisers" }, Array.from({ length: x.randomisers }, (_, i) => {
        const r = i + 1;
        const b = api.cmdButton({ class: "g-cell", dataset: { randomiser: r }, "aria-label": `Randomiser ${r}`,
          onclick: () => api.command("games/podium/choose", { randomiser: r }, `randomiser ${r}`) }, String(r));
        if (!free.has(r)) api.setBlocked(b, true);
        return b;
      })));
    }
    out.push(el("ol", { class: "g-chosen" }, x.chosen.map((c) => el("li", { dataset: { position: c.position } },
      `${c.name}: randomiser ${c.randomiser} → podium ${c.podium} · ${c.text}`))));
    return out;
  }

  function bonus(x, api) {
    const out = [];
    const undecided = x.contestants.filter((c) => c.decided === null || c.decided === undefined);
    for (const c of x.contestants) {
      const row = el("div", { class: "g-contestant", dataset: { position: c.position } },
        el("strong", {}, c.name), ` · symbol ${c.symbol} · ${c.count} of ${x.needed}`,
        c.decided === true ? " · plays" : c.decided === false ? " · declined" : "");
      if (undecided.includes(c)) {
        row.append(
          api.cmdButton({ class: "ok", dataset: { action: "plays" },
            onclick: () => api.command("games/bonus/decide", { position: c.position, play: true }, `${c.name} plays`) }, "Plays"),
          api.cmdButton({ class: "secondary", dataset: { action: "declines" },
            onclick: () => api.command("games/bonus/decide", { position: c.position, play: false }, `${c.name} declines`) }, "Declines"));
      }
      out.push(row);
    }
    if (x.turn) out.push(turnLine(x.turn, "opens a box"));
    out.push(el("div", { class: "g-grid boxes" }, Array.from({ length: x.boxes }, (_, i) => {
      const n = i + 1;
      const symbol = x.opened[String(n)];
      if (symbol) return el("div", { class: `g-cell open ${symbol}`, dataset: { box: n } }, `${n}: ${symbol}`);
      const b = api.cmdButton({ class: "g-cell", dataset: { box: n }, "aria-label": `Box ${n}`,
        onclick: () => api.command("games/bonus/box", { box: n }, `box ${n}`) }, String(n));
      if (!x.turn) api.setBlocked(b, true);
      return b;
    })));
    if (x.winner) out.push(el("p", { class: "g-win" }, `${x.winner.name} reveals all ${x.needed} first`));
    return out;
  }

  function paddles(x, api) {
    const out = [];
    const me = x.turn ? x.contestants[x.turn.position - 1] : null;
    if (me && me.paddle === null) {
      out.push(turnLine(x.turn, "picks a paddle"));
      const free = new Set(x.free);
      out.push(el("div", { class: "g-grid paddles" }, Array.from({ length: x.paddles }, (_, i) => {
        const n = i + 1;
        const b = api.cmdButton({ class: "g-cell", dataset: { paddle: n }, "aria-label": `Paddle ${n}`,
          onclick: () => api.command("games/paddles/paddle", { paddle: n }, `paddle ${n}`) }, `Paddle ${n}`);
        if (!free.has(n)) api.setBlocked(b, true);
        return b;
      })));
    } else if (me) {
      out.push(turnLine(x.turn, `has ${me.left} chance${me.left === 1 ? "" : "s"} left of ${me.chances}` +
        (me.prize_text ? ` · showing ${me.prize_text}` : "")));
      const stop = api.cmdButton({ class: "ok", dataset: { action: "stop" } }, me.prize_text ? `Stop: keep ${me.prize_text}` : "Stop");
      api.setBlocked(stop, !me.used);
      api.confirmTap(stop, "Tap again to keep it", () => api.command("games/paddles/stop", {}, "stop"));
      out.push(el("div", { class: "row" }, stop));
    }
    out.push(el("div", { class: "g-grid reveals" }, Array.from({ length: x.reveals }, (_, i) => {
      const n = i + 1;
      const amount = x.opened[String(n)];
      if (amount !== undefined) return el("div", { class: "g-cell open", dataset: { reveal: n } }, money(amount));
      const b = api.cmdButton({ class: "g-cell", dataset: { reveal: n }, "aria-label": `Reveal ${n}`,
        onclick: () => api.command("games/paddles/reveal", { reveal: n }, `reveal ${n}`) }, String(n));
      if (!me || me.paddle === null) api.setBlocked(b, true);
      return b;
    })));
    out.push(el("ol", { class: "g-chosen" }, x.contestants.map((c) => el("li", { dataset: { position: c.position } },
      `${c.name}: ` + (c.paddle ? `paddle ${c.paddle} (${c.chances} chances), ${c.used} opened` : "no paddle yet") +
      (c.done ? ` · ${c.prize_text}` : "")))));
    return out;
  }

  function safe(view, x, api) {
    // the safe's value and odds are in the banner above (the value it was offered at)
    const out = [el("p", { class: "hint" }, `Offered at ${x.value_text}: ${x.odds}`)];
    const t = x.turn;
    if (t && !t.trying) {
      const row = x.contestants[t.position - 1];
      out.push(turnLine(t, `holds ${row.podium_text}`));
      const decline = api.cmdButton({ class: "secondary", dataset: { action: "decline" },
        onclick: () => api.command("games/safe/decline", {}, `${t.name} declines`) }, `Decline: keep ${row.podium_text}`);
      const attempt = api.cmdButton({ class: "primary", dataset: { action: "attempt" } }, `Forfeit ${x.forfeit_text} to try the safe`);
      if (x.cracked_by) api.setBlocked(attempt, true);
      api.confirmTap(attempt, `Tap again: ${x.forfeit_text} forfeited`, () => api.command("games/safe/attempt", {}, `${t.name} tries the safe`));
      out.push(el("div", { class: "row" }, decline, attempt));
    } else if (t && x.mode === "code") {
      const row = x.contestants[t.position - 1];
      out.push(turnLine(t, `tries the code: ${row.tries.length} of ${x.tries} used`));
      const input = el("input", { id: "safe-code", inputmode: "numeric", autocomplete: "off", maxlength: String(x.digits),
        pattern: `[0-9]{${x.digits}}`, placeholder: "0".repeat(x.digits), "aria-label": `${x.digits}-digit code` });
      input.value = field(view.draw_id, "code");
      const go = api.cmdButton({ class: "big primary", dataset: { action: "guess" } }, "Try this code");
      const check = () => api.setBlocked(go, !new RegExp(`^[0-9]{${x.digits}}$`).test(input.value) || row.tries.includes(input.value));
      input.addEventListener("input", () => { input.value = input.value.replace(/\D/g, "").slice(0, x.digits); keep(view.draw_id, "code", input.value); check(); });
      go.addEventListener("click", () => { const code = input.value; keep(view.draw_id, "code", ""); api.command("games/safe/guess", { code }, `code ${code}`); });
      const keypad = el("div", { class: "g-keypad" }, ["1", "2", "3", "4", "5", "6", "7", "8", "9", "⌫", "0"].map((k) => el("button", {
        type: "button", class: "secondary", dataset: { key: k },
        onclick: () => {
          input.value = k === "⌫" ? input.value.slice(0, -1) : (input.value + k).slice(0, x.digits);
          keep(view.draw_id, "code", input.value);
          check();
        },
      }, k)));
      check();
      out.push(el("div", { class: "g-code" }, input, go), keypad,
        el("p", { class: "hint" }, row.tries.length ? `Tried: ${row.tries.join(", ")}` : "Each code once."));
    } else if (t) {
      out.push(turnLine(t, "spins"), api.cmdButton({ class: "big primary", dataset: { action: "spin" },
        onclick: () => api.command("games/safe/spin", {}, "spin") }, "Spin"));
    }
    out.push(el("ol", { class: "g-chosen" }, x.contestants.map((c) => el("li", { dataset: { position: c.position, cracked: c.cracked } },
      `${c.name}: ${c.podium_text}` + (c.decision === "declined" ? " · declined" : c.decision === "attempted"
        ? ` · tried ${c.tries.join(", ") || "…"}${c.cracked ? " · CRACKED" : ""}, keeps ${money(c.keep)}` : "")))));
    return out;
  }

  function car(view, x, api) {
    const out = [el("ol", { class: "g-chosen" }, x.finalists.map((f) => el("li", { dataset: { position: f.position } },
      `${f.name} · ${f.card}`, x.winner && x.winner.card === f.card ? el("strong", {}, " · WINS THE CAR") : "")))];
    if (!x.winner) {
      const go = api.cmdButton({ class: "big primary", dataset: { action: "reveal-car" } }, "Reveal the car's winner");
      api.confirmTap(go, "Tap again to reveal", () => api.command("games/car/reveal", {}, "reveal the car's winner"));
      out.push(go);
      return out;
    }
    if (x.vehicle) {
      out.push(el("p", { class: "g-win" }, `${x.winner.name} takes the ${x.vehicle}` +
        (x.buy_back !== null && x.buy_back !== undefined ? ` · buy-back ${money(x.buy_back)} as agreed` : "")));
      return out;
    }
    const chosen = field(view.draw_id, "vehicle", null);
    const buy = el("input", { id: "buy-back", inputmode: "decimal", autocomplete: "off", placeholder: "only if agreed",
      "aria-label": "Buy-back agreed with the dealership, in rand" });
    buy.value = field(view.draw_id, "buyback");
    const go = api.cmdButton({ class: "big primary", dataset: { action: "vehicle" } }, "Confirm the vehicle");
    const cents = () => {
      const t = buy.value.replace(/[\s R,]/g, "");
      if (!t) return null;
      return /^\d+(\.\d{1,2})?$/.test(t) ? Math.round(Number(t) * 100) : undefined;
    };
    const check = () => api.setBlocked(go, !field(view.draw_id, "vehicle", null) || cents() === undefined);
    buy.addEventListener("input", () => { keep(view.draw_id, "buyback", buy.value); check(); });
    go.addEventListener("click", () => api.command("games/car/vehicle",
      { vehicle: field(view.draw_id, "vehicle", null), buy_back: cents() }, "the vehicle"));
    const pick = el("div", { class: "segmented", role: "group" }, x.vehicles.map((v) => el("button", {
      type: "button", "aria-pressed": String(v === chosen), dataset: { vehicle: v },
      onclick: (ev) => {
        for (const b of ev.currentTarget.parentNode.children) b.setAttribute("aria-pressed", "false");
        ev.currentTarget.setAttribute("aria-pressed", "true");
        keep(view.draw_id, "vehicle", v);
        check();
      },
    }, v)));
    check();
    out.push(el("p", {}, `${x.winner.name} wins the car (${x.car_value_text}): which vehicle?`), pick,
      el("label", { for: "buy-back" }, "Cash buy-back agreed with the dealership (rand, optional)"), buy, go);
    return out;
  }

  function closed(x) {
    return el("section", { class: `g-game closed ${x.mechanic}`, dataset: { mechanic: x.mechanic, state: "closed" } },
      el("h3", {}, `${NAMES[x.mechanic]}: closed`),
      el("ul", { class: "g-awards" }, x.awards.map((a) => el("li", {}, `${a.name} (position ${a.position}): ${a.text}`))),
      el("p", { class: "g-commit hex" }, `Commitment ${x.commitment}`),
      el("p", { class: "g-seed hex" }, `Seed ${x.seed}`));
  }

  return { render };
})();
