// The handheld's sound and vibration cues: a new winner, 30 s left to claim, a no-show,
// a winner excluded while waiting; and the claim countdowns that give the "30 s left"
// one (countdown: the rules, with the time passed in; tick: the page's countdowns).
// Tones are made on the phone with the Web Audio API (no audio file, nothing from a CDN);
// the vibration where the phone has one (navigator.vibrate).  The header's mute switch
// silences both and is remembered on the device (localStorage "raps.cues.muted").
"use strict";
const HHCues = (() => {
  const KEY = "raps.cues.muted";
  const CUES = {
    // [frequency Hz, seconds] per tone, and the vibration pattern (ms)
    winner: { tones: [[660, 0.12], [880, 0.18]], vibrate: [120] },
    warn: { tones: [[880, 0.1], [880, 0.1], [880, 0.1]], vibrate: [80, 60, 80] },
    no_show: { tones: [[440, 0.25], [330, 0.35]], vibrate: [300, 120, 300] },
    excluded: { tones: [[330, 0.2], [330, 0.2], [330, 0.4]], vibrate: [400, 100, 400, 100, 400] },
  };
  const log = []; // every cue given: { cue, sound, vibrate } (the page tests read it)
  let ctx = null;

  function muted() {
    return localStorage.getItem(KEY) === "1";
  }

  function audio() {
    const Ctx = window.AudioContext || window.webkitAudioContext;
    if (!Ctx) return null;
    if (!ctx) ctx = new Ctx();
    if (ctx.state === "suspended") ctx.resume().catch(() => {});
    return ctx;
  }

  function tones(list) {
    const a = audio();
    if (!a) return false;
    let t = a.currentTime + 0.01;
    for (const [freq, secs] of list) {
      const osc = a.createOscillator();
      const gain = a.createGain();
      osc.type = "square";
      osc.frequency.value = freq;
      gain.gain.setValueAtTime(0.0001, t);
      gain.gain.exponentialRampToValueAtTime(0.3, t + 0.01);
      gain.gain.exponentialRampToValueAtTime(0.0001, t + secs);
      osc.connect(gain).connect(a.destination);
      osc.start(t);
      osc.stop(t + secs + 0.02);
      t += secs + 0.06;
    }
    return true;
  }

  // Give cue `name` ("winner", "warn", "no_show", "excluded"), unless muted.
  function cue(name) {
    const c = CUES[name];
    if (!c || muted()) {
      log.push({ cue: name, sound: false, vibrate: false, muted: true });
      return;
    }
    let sound = false;
    try { sound = tones(c.tones); } catch (_) { sound = false; }
    const vibrate = Boolean(navigator.vibrate && navigator.vibrate(c.vibrate));
    log.push({ cue: name, sound, vibrate, muted: false });
  }

  // A claim countdown at `now` (ms, the server's clock): seconds shown, its level and
  // whether to give the "30 s left" cue.  Amber at a third of the claim time left (at
  // most 30 s: a real 90 s claim warns at 30 s), red at a sixth (at most 10 s).  The cue
  // comes once, on the first tick at or below the warning after one above it (`memo`,
  // the card's dataset, remembers); a card first seen below it gives none.
  function countdown(deadlineMs, now, claim, memo) {
    const left = Math.max(0, (deadlineMs - now) / 1000);
    const warnAt = Math.min(30, claim / 3);
    const criticalAt = Math.min(10, claim / 6);
    let cue = false;
    if (left > warnAt) memo.above = "1";
    else if (memo.above === "1" && left > 0) {
      memo.above = "0";
      cue = true;
    }
    const level = left <= criticalAt ? "critical" : left <= warnAt ? "warn" : "";
    return { secs: left > 0 ? Math.ceil(left) : 0, level, cue, warnAt, criticalAt };
  }

  // Every running countdown on the page, each quarter second: its seconds, the name a
  // screen reader hears, its colour and the "30 s left" cue.
  function tick() {
    const now = RAPS.now();
    for (const c of document.querySelectorAll(".w-count[data-deadline]")) {
      const t = countdown(Date.parse(c.dataset.deadline), now, Number(c.dataset.claim) || 90, c.dataset);
      c.firstChild.textContent = String(t.secs);
      c.setAttribute("aria-label", `${t.secs} ${t.secs === 1 ? "second" : "seconds"} left to claim`);
      if (t.cue) cue("warn");
      c.classList.toggle("warn", t.level === "warn");
      c.classList.toggle("critical", t.level === "critical");
    }
  }

  // The header's switch: aria-pressed="true" while muted.
  function bind(button) {
    const show = () => {
      const m = muted();
      button.setAttribute("aria-pressed", String(m));
      button.textContent = m ? "Muted" : "Sound";
      button.title = m ? "Cues are muted: tap for sound and vibration" : "Tap to mute sound and vibration";
    };
    button.addEventListener("click", () => {
      localStorage.setItem(KEY, muted() ? "0" : "1");
      show();
      if (!muted()) audio(); // a tap lets the page make sound from now on
    });
    // the first tap anywhere unlocks audio (browsers keep it off until a gesture)
    document.addEventListener("pointerdown", () => { if (!muted()) audio(); }, { once: true });
    show();
  }

  return { cue, bind, muted, log, CUES, countdown, tick };
})();
