"""Part 2 of the tickets benchmark: kiosk activations through the HTTP API of a real daemon.

One `raps run` process per database (bench.harness.RapsProcess), on a simulated floor
of the core benchmark's size playing in real time (its play credits points tickets in
the background, journaled at every floor-log flush, as on a live floor), with one draw
whose entry window is open now and 50 kiosk users.  50 kiosk clients (one
httpx.AsyncClient each, its own bearer token, one keep-alive connection) each enter a
distinct directory card per request, with a fresh request id:

- paced: one activation per kiosk every PACE s on average (uniform jitter of +-50%),
  i.e. 100 entries/s in all, far above a real floor; after a warm-up whose samples are
  dropped, every round trip is timed (send to parsed answer) [target p99 <= 20 ms];
- stress: closed loop, no think time (figures reported, no target).

Then every answer is checked: no 5xx, every receipt number answered is found by
GET /api/tickets/receipts/{no} (a sample, with its verification code), and, once the
daemon has stopped, every answered request id is in the journal exactly once and the
journal holds no entry that was not answered.

The kiosk tokens are checked against cheap argon2id hashes (as tests/daemon_helpers.py
cheap_hash makes them): a token is verified once, on a kiosk's first request (in the
warm-up), and cached by its SHA-256 for every later one (raps/web_context.py
TokenUsers), so the hash's cost is in no timed request; production costs would only
slow the warm-up (see the report for what they cost there).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import secrets
import sqlite3
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import argon2
import httpx

from bench.harness import PgServer, RapsProcess, percentile, say, section
from bench.tickets_setup import KIOSKS, TARGET_KIOSK_P99_MS, daemon_config
from raps.config import parse_config
from raps.floorsim import FloorSimulator

ROOT = Path(__file__).resolve().parent.parent
DRAW = "kiosk-draw"
SIM_SEED = 20260425
PACE = 0.5  # seconds between one kiosk's activations, on average
LATE = 0.005  # a paced request sent this much after its time counts as late

# tests/daemon_helpers.py cheap_hash: a real argon2id hash, verified in about a millisecond
_CHEAP = argon2.PasswordHasher(time_cost=1, memory_cost=64, parallelism=1)


@dataclass
class Sample:
    kiosk: int
    phase: str
    sent: float  # perf_counter
    latency: float  # seconds
    status: int  # 0: no answer (transport error)
    request_id: str
    card: str
    receipt: dict[str, Any] | None = None
    late: bool = False


@dataclass
class Run:
    """What one daemon's kiosks did."""

    cards: list[str]
    samples: list[Sample] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    next_card: int = 0
    seq: Counter[int] = field(default_factory=Counter)

    def card(self) -> str | None:
        if self.next_card >= len(self.cards):
            return None
        self.next_card += 1
        return self.cards[self.next_card - 1]


def eligible_cards(cfg_text: str, players: int) -> tuple[list[str], dict[str, str]]:
    """The simulated directory's cards that may enter (in the directory, age verified, no
    exclusion), from the daemon's own simulator: its players depend on the seed only."""
    cfg = parse_config(cfg_text, "kiosk config")
    sim = FloorSimulator(cfg.layout(), players, datetime.now(UTC), seed=SIM_SEED)
    ok = [p for p in sim.players if p.in_directory and p.age_verified and not p.exclusions]
    cards = [p.card for p in ok]
    random.Random(SIM_SEED).shuffle(cards)
    return cards, {p.card: p.tier.value for p in ok}


async def _post(client: httpx.AsyncClient, run: Run, k: int, phase: str, late: bool) -> bool:
    card = run.card()
    if card is None:
        return False
    run.seq[k] += 1
    rid = f"kiosk-{k:02d}:{run.seq[k]:06d}"
    body = {"request_id": rid, "card": card, "draw": DRAW}
    t0 = time.perf_counter()
    try:
        r = await client.post("/api/tickets/kiosk/entries", json=body)
        status = r.status_code
        receipt = r.json() if status == 200 else None
        if status != 200:
            run.errors[f"{status} {r.text[:120]}"] += 1
    except httpx.HTTPError as e:
        status, receipt = 0, None
        run.errors[type(e).__name__] += 1
    dt = time.perf_counter() - t0
    run.samples.append(Sample(k, phase, t0, dt, status, rid, card, receipt, late))
    return True


async def paced(client: httpx.AsyncClient, run: Run, k: int, phase: str, until: float) -> None:
    rng = random.Random(f"{phase}-{k}")
    due = time.perf_counter() + rng.uniform(0, PACE)
    while due < until:
        wait = due - time.perf_counter()
        if wait > 0:
            await asyncio.sleep(wait)
        late = time.perf_counter() - due > LATE
        if not await _post(client, run, k, phase, late):
            return
        due += rng.uniform(0.5 * PACE, 1.5 * PACE)


async def closed_loop(client: httpx.AsyncClient, run: Run, k: int, until: float) -> None:
    while time.perf_counter() < until:
        if not await _post(client, run, k, "stress", False):
            return


def cpu_of(pid: int) -> float:
    """User + system CPU seconds of a process (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def figures(samples: Sequence[Sample], seconds: float) -> dict[str, Any]:
    ok = [s.latency * 1000 for s in samples if s.status == 200]
    lat = ok or [0.0]
    return {
        "n": len(samples),
        "ok": len(ok),
        "p50_ms": round(percentile(lat, 50), 3),
        "p95_ms": round(percentile(lat, 95), 3),
        "p99_ms": round(percentile(lat, 99), 3),
        "max_ms": round(max(lat), 3),
        "mean_ms": round(statistics.fmean(lat), 3),
        "per_s": round(len(ok) / seconds, 1),
        "statuses": dict(Counter(str(s.status) for s in samples)),
        "late_sends": sum(1 for s in samples if s.late),
    }


def stalls(samples: Sequence[Sample], limit_ms: float) -> dict[str, Any]:
    """The round trips over the target, grouped into episodes of overlapping requests:
    many kiosks slow at once is the daemon's event loop (or the machine) stalling, one
    at a time is the cost of the request itself."""
    slow = sorted((s for s in samples if s.latency * 1000 > limit_ms), key=lambda s: s.sent)
    episodes: list[list[Sample]] = []
    end = -1.0
    for s in slow:
        if s.sent > end:
            episodes.append([])
        episodes[-1].append(s)
        end = max(end, s.sent + s.latency)
    sizes = sorted((len(e) for e in episodes), reverse=True)
    return {
        "over_target": len(slow),
        "share": round(len(slow) / max(1, len(samples)), 4),
        "episodes": len(episodes),
        "largest_episodes": sizes[:5],
        "in_multi_request_episodes": sum(n for n in sizes if n > 1),
        "worst_ms": round(max((s.latency for s in slow), default=0.0) * 1000, 1),
    }


def _line(name: str, f: dict[str, Any]) -> str:
    return (
        f"  {name}: {f['ok']:,} entries answered 200 of {f['n']:,}, {f['per_s']:,.1f}/s;"
        f" p50 {f['p50_ms']:.2f} ms, p95 {f['p95_ms']:.2f}, p99 {f['p99_ms']:.2f},"
        f" max {f['max_ms']:.2f} (mean {f['mean_ms']:.2f}); statuses {f['statuses']}"
    )


async def _phase(
    clients: list[httpx.AsyncClient], run: Run, name: str, seconds: float, pid: int
) -> dict[str, Any]:
    c0, d0, t0 = time.process_time(), cpu_of(pid), time.perf_counter()
    until = t0 + seconds
    if name == "idle":  # no requests: what the simulated floor costs the daemon alone
        await asyncio.sleep(seconds)
        return {"seconds": seconds, "daemon_cpu": round((cpu_of(pid) - d0) / seconds, 3),
                "loadavg_1min": round(os.getloadavg()[0], 2)}  # fmt: skip
    if name == "stress":
        jobs = [closed_loop(c, run, k, until) for k, c in enumerate(clients)]
    else:
        jobs = [paced(c, run, k, name, until) for k, c in enumerate(clients)]
    await asyncio.gather(*jobs)
    wall = time.perf_counter() - t0
    f = figures([s for s in run.samples if s.phase == name], wall)
    f["seconds"] = round(wall, 2)
    f["daemon_cpu"] = round((cpu_of(pid) - d0) / wall, 3)  # CPUs busy, on average
    f["client_cpu"] = round((time.process_time() - c0) / wall, 3)
    f["loadavg_1min"] = round(os.getloadavg()[0], 2)
    return f


async def _wait_directory(
    client: httpx.AsyncClient, cards: list[str], tiers: dict[str, str]
) -> int:
    """Until the simulated directory is in (the last card answers), then check that the
    daemon's directory is the one rebuilt here: tier, may enter, draw open, tickets due."""
    deadline = time.monotonic() + 120
    probe = cards[-1]
    while True:
        r = await client.get(f"/api/tickets/players/{probe}")
        if r.status_code == 200:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"the directory never arrived: {r.status_code} {r.text[:200]}")
        await asyncio.sleep(0.1)
    checked = 0
    for card in cards[:: max(1, len(cards) // 25)]:
        d = (await client.get(f"/api/tickets/players/{card}")).json()
        draw = next(x for x in d["draws"] if x["draw_id"] == DRAW)
        if d["tier"] != tiers[card] or not d["may_enter"] or not draw["entry_open"]:
            raise RuntimeError(f"card {card}: the daemon's directory differs: {d}")
        if draw["available"] + draw["bonus_due"] < 1:
            raise RuntimeError(f"card {card}: nothing to enter: {draw}")
        checked += 1
    return checked


async def _check_receipts(
    clients: list[httpx.AsyncClient], answered: list[Sample], sample: int
) -> dict[str, Any]:
    picked = answered[:: max(1, len(answered) // sample)] if answered else []
    bad: list[str] = []

    async def one(c: httpx.AsyncClient, s: Sample) -> None:
        assert s.receipt is not None
        r = await c.get(f"/api/tickets/receipts/{s.receipt['receipt_no']}",
                        params={"code": s.receipt["verification_code"]})  # fmt: skip
        got = r.json() if r.status_code == 200 else {}
        if not (got.get("code_matches") and got.get("tickets") == s.receipt["tickets"]):
            bad.append(f"{s.receipt['receipt_no']}: {r.status_code} {r.text[:120]}")

    for i in range(0, len(picked), len(clients)):
        batch = picked[i : i + len(clients)]
        await asyncio.gather(*(one(clients[j], s) for j, s in enumerate(batch)))
    return {"checked": len(picked), "bad": bad[:5], "bad_count": len(bad)}


def journal_entries(url: str, pg: PgServer | None, dbname: str) -> list[dict[str, Any]]:
    """Every tickets.entered record in the journal (read once the daemon has stopped)."""
    query = "SELECT record FROM journal WHERE type = 'tickets.entered' ORDER BY seq"
    if pg is None:
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            rows = conn.execute(query).fetchall()
        finally:
            conn.close()
    else:
        with pg.connect(dbname) as c:
            rows = c.execute(query).fetchall()
    return [json.loads(r[0])["data"] for r in rows]


def check_journal(run: Run, records: list[dict[str, Any]]) -> dict[str, Any]:
    by_request = Counter(r["request_id"] for r in records)
    answered = {s.request_id: s for s in run.samples if s.status == 200}
    missing = [rid for rid in answered if by_request[rid] != 1]
    unanswered = [rid for rid in by_request if rid not in answered]
    mismatched = [
        rid
        for rid, r in ((r["request_id"], r) for r in records)
        if rid in answered and (answered[rid].receipt or {}).get("receipt_no") != r["receipt_no"]
    ]
    cards = Counter(r["card"] for r in records)
    return {
        "journal_entries": len(records),
        "answered": len(answered),
        "answered_not_once": len(missing),
        "journaled_not_answered": len(unanswered),
        "receipt_mismatch": len(mismatched),
        "cards_entered_twice": sum(1 for n in cards.values() if n > 1),
        "tickets_entered": sum(int(r["tickets"]) for r in records),
        "ok": not missing and not unanswered and not mismatched,
    }


async def _phases(
    clients: list[httpx.AsyncClient], run: Run, phases: dict[str, float], pid: int
) -> dict[str, Any]:
    """Idle, warm-up, paced and stress, one after the other; their figures."""
    out: dict[str, Any] = {}
    idle = out["idle"] = await _phase(clients, run, "idle", phases["idle"], pid)
    say(
        f"  idle {phases['idle']:g} s (no requests, the floor playing): daemon"
        f" {idle['daemon_cpu']:.2f} CPUs; load average {idle['loadavg_1min']:.2f}"
    )
    for phase in ("warmup", "paced", "stress"):
        f = out[phase] = await _phase(clients, run, phase, phases[phase], pid)
        # the daemon's CPU per entry, beyond what it spends with no requests
        extra = (f["daemon_cpu"] - idle["daemon_cpu"]) * f["seconds"]
        f["daemon_cpu_ms_per_entry"] = round(1000 * extra / max(1, f["ok"]), 3)
        say(
            _line(phase, f) + f"; daemon {f['daemon_cpu']:.2f} CPUs"
            f" ({f['daemon_cpu_ms_per_entry']:.2f} ms CPU an entry over idle),"
            f" bench client {f['client_cpu']:.2f}; load average {f['loadavg_1min']:.2f}"
            + (f"; {f['late_sends']} sent late" if phase != "stress" else "")
        )
        if phase == "paced":
            st = f["stalls"] = stalls(
                [s for s in run.samples if s.phase == phase], TARGET_KIOSK_P99_MS
            )
            say(
                f"    over {TARGET_KIOSK_P99_MS:g} ms: {st['over_target']} round trips"
                f" ({st['share']:.1%}) in {st['episodes']} episodes of overlapping requests"
                f" (largest {st['largest_episodes']}; {st['in_multi_request_episodes']} in"
                f" episodes of several kiosks at once), worst {st['worst_ms']} ms"
            )
        if run.next_card >= len(run.cards):
            say(f"  (ran out of distinct cards during {phase})")
    return out


async def bench_kiosks(
    name: str,
    url: str,
    folder: Path,
    players: int,
    events_per_second: float,
    phases: dict[str, float],
    receipt_sample: int,
    pg: PgServer | None = None,
    dbname: str = "",
) -> dict[str, Any]:
    section(
        f"{name}: kiosk activations, {KIOSKS} kiosks against `raps run` (simulated floor of"
        f" {players:,} players playing at {events_per_second:g} events/s)"
    )
    tokens = [f"kiosk-bench-{k:02d}-{secrets.token_hex(12)}" for k in range(KIOSKS)]
    hashes = [(f"ehost-{k:02d}", _CHEAP.hash(t)) for k, t in enumerate(tokens)]
    now = datetime.now(UTC)
    text = daemon_config(
        url, folder, players, SIM_SEED, events_per_second, hashes, now, phases["sim_warmup"]
    )
    tag = name.lower()
    cfg_path = folder / f"kiosk-{tag}.toml"
    cfg_path.write_text(text)
    proc = RapsProcess(cfg_path, folder / f"kiosk-{tag}.ready", folder / f"kiosk-{tag}.log",
                       cwd=ROOT, name=f"{name} daemon")  # fmt: skip
    cards, tiers = eligible_cards(text, players)
    run = Run(cards)
    t0 = time.perf_counter()
    proc.spawn(create_key=True)
    result: dict[str, Any] = {}
    try:
        proc.wait_until_ready(timeout=120, interval=0.05)
        base = json.loads(proc.ready_file.read_text())["url"]
        pid = int(json.loads(proc.ready_file.read_text())["pid"])
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        clients = [
            httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {t}"},
                              limits=limits, timeout=10.0)
            for t in tokens
        ]  # fmt: skip
        try:
            checked = await _wait_directory(clients[0], cards, tiers)
            ready_s = time.perf_counter() - t0
            say(
                f"  daemon ready and directory in after {ready_s:.1f} s; {len(cards):,} cards"
                f" may enter (the simulator's directory, rebuilt from its seed; {checked}"
                " checked through GET /api/tickets/players)"
            )
            result.update(await _phases(clients, run, phases, pid))
            answered = [s for s in run.samples if s.status == 200]
            result["receipts"] = await _check_receipts(clients, answered, receipt_sample)
        finally:
            for c in clients:
                await c.aclose()
    finally:
        proc.stop()
    result["journal"] = check_journal(run, journal_entries(url, pg, dbname))
    fivexx = sum(1 for s in run.samples if s.status >= 500)
    result["errors_5xx"] = fivexx
    result["no_answer"] = sum(1 for s in run.samples if s.status == 0)
    result["other_errors"] = dict(run.errors.most_common(5))
    result["cards_available"] = len(cards)
    j, rc = result["journal"], result["receipts"]
    say(
        f"  checks: {rc['checked']} receipts fetched back with their code"
        f" ({rc['bad_count']} wrong); journal: {j['journal_entries']:,} entries for"
        f" {j['answered']:,} answered, {j['answered_not_once']} answered but not exactly once,"
        f" {j['journaled_not_answered']} journaled but unanswered, {j['receipt_mismatch']}"
        f" receipt numbers differing; 5xx {fivexx}, no answer {result['no_answer']}"
    )
    if run.errors:
        say(f"  non-200 answers: {dict(run.errors.most_common(5))}")
    result["ok"] = j["ok"] and fivexx == 0 and rc["bad_count"] == 0 and not result["no_answer"]
    return result
