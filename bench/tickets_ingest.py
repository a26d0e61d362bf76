"""Part 1 of the tickets benchmark: what ticket crediting costs the floor's ingest rate.

Tickets on and off are measured in the same round, on the same prebuilt events, fed in
slices alternately to a floor with the ledger as its points sink and one without (the
pair's order flips every slice), so that the shared machine's bursts hit both alike;
each round divides its own figures.  Two paths:

(a) `Floor.apply_many` (the core): floors built as `Service.__init__` builds its floor
    (`Floor(cfg.layout(), cfg.promotions(), cfg.earn_rules(), idle, sink)`), the sink
    being `TicketLedger(plan, tier_of=...).points_sink` as `TicketDesk` makes it.  A
    third floor, fed the same slices, has a stub sink that grants unbounded room: what
    the floor's inline room check costs by itself.
(b) `Service.ingest` (every source's path: dedupe, floor, floor-log queue): two real
    `Service` objects over SQLite files in a temporary directory, started (migrations,
    restore), one with the ticket config and one without, fed batches of the MQTT
    ingest's BATCH_MAX events.  The floor log is not flushed (not timed by design).
"""

from __future__ import annotations

import asyncio
import gc
import math
import statistics
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from adapters.mqtt.ingest import BATCH_MAX
from bench.core_pool import PLAYERS, PROMO, TABLES, pick_events
from bench.harness import say, section
from raps.config import Config
from raps.floorsim import demo_layout
from raps.metrics import Metrics
from raps.seal import KEY_BYTES, SeedSealer
from raps.service import Service
from raps.store.database import open_engine
from selector.events import AnyFloorEvent, PlayerUpserted
from selector.floor import Floor, PointsCell, PointsSink
from selector.layout import FloorLayout
from selector.promotion import EarnRules, Promotion
from selector.tickets import TicketLedger, TicketPlan, TicketRecord, TicketsCredited

SLICE = 2_000  # events per alternation step (a few ms): bursts of load hit both
_UNBOUNDED = (1 << 30) - 1  # as selector/tickets/accrual.py's _BIG: a one-digit int


def _room_only(cell: PointsCell, epoch: float, milli: int, event_id: str) -> None:
    """A sink that never needs calling again: the floor's inline check, alone."""
    cell.lo, cell.hi, cell.room = -math.inf, math.inf, _UNBOUNDED


def make_floor(cfg: Config, sink: PointsSink | None) -> Floor:
    """The floor exactly as raps.service.Service builds it."""
    return Floor(cfg.layout(), cfg.promotions(), cfg.earn_rules(), cfg.floor.idle_seconds, sink)


def make_ticket_floor(cfg: Config) -> tuple[Floor, TicketLedger]:
    """Floor and ledger wired as TicketDesk does (tier_of asks the floor, via the desk)."""
    holder: list[Floor] = []
    ledger = TicketLedger(cfg.ticket_plan(), tier_of=lambda card: holder[0].tier_of(card))
    floor = make_floor(cfg, ledger.points_sink)
    holder.append(floor)
    return floor, ledger


def credits_by(records: Sequence[TicketRecord]) -> dict[str, Any]:
    credited = [r for r in records if isinstance(r, TicketsCredited)]
    return {
        "records": len(records),
        "credit_records": len(credited),
        "tickets": sum(r.tickets for r in credited),
        "by_bin": dict(sorted(Counter(r.bin_id for r in credited).items())),
        "by_cause": dict(Counter(r.cause.value for r in credited)),
    }


def slices_of(events: Sequence[AnyFloorEvent], size: int) -> list[list[AnyFloorEvent]]:
    return [list(events[i : i + size]) for i in range(0, len(events), size)]


def _alternate(
    feeders: dict[str, Callable[[list[AnyFloorEvent]], Any]],
    slices: list[list[AnyFloorEvent]],
    flip: int,
) -> tuple[dict[str, float], dict[str, float]]:
    """Feed every slice to both feeders, the order flipped every slice; gc off.
    Returns (wall seconds, CPU seconds) per feeder."""
    wall = dict.fromkeys(feeders, 0.0)
    cpu = dict.fromkeys(feeders, 0.0)
    names = list(feeders)
    gc.collect()
    gc.disable()
    try:
        for k, chunk in enumerate(slices):
            for name in names if (k + flip) % 2 == 0 else names[::-1]:
                feed = feeders[name]
                c0 = time.process_time()
                t0 = time.perf_counter()
                feed(chunk)
                wall[name] += time.perf_counter() - t0
                cpu[name] += time.process_time() - c0
    finally:
        gc.enable()
    return wall, cpu


def _round_line(i: int, rates: dict[str, float], cpu_rates: dict[str, float]) -> str:
    ratio = rates["on"] / rates["off"]
    return (
        f"  round {i + 1}: off {rates['off']:>9,.0f} ev/s, on {rates['on']:>9,.0f} ev/s,"
        f" on/off {ratio:.3f} (CPU time {cpu_rates['on'] / cpu_rates['off']:.3f})"
    )


def _summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    ratios = [r["ratio"] for r in rounds]
    cpu_ratios = [r["cpu_ratio"] for r in rounds]
    out: dict[str, Any] = {
        "events_per_s_off": [round(r["off"]) for r in rounds],
        "events_per_s_on": [round(r["on"]) for r in rounds],
        "ratio_rounds": [round(x, 4) for x in ratios],
        "ratio_median": round(statistics.median(ratios), 4),
        "ratio_cpu_rounds": [round(x, 4) for x in cpu_ratios],
        "ratio_cpu_median": round(statistics.median(cpu_ratios), 4),
        "events_per_s_off_median": round(statistics.median(r["off"] for r in rounds)),
        "events_per_s_on_median": round(statistics.median(r["on"] for r in rounds)),
    }
    return out


# ------------------------------------------------------------------ (a) the core


def bench_core(
    cfg_on: Config,
    directory: list[PlayerUpserted],
    events: list[AnyFloorEvent],
    rounds: int,
    stub_rounds: int,
) -> dict[str, Any]:
    section(
        f"(a) Floor.apply_many, tickets on vs off: {rounds} rounds, {len(events):,} events"
        f" each, in slices of {SLICE:,} fed alternately to two fresh floors, the order"
        f" flipped every slice; then (in {stub_rounds} of them) the same for off vs a"
        " room-only stub sink; gc off"
    )
    say(
        "  (two floors a pair: with three, the one always in the middle ran ~7% slower"
        " than the ends on the same code, which run twice in a row at every flip)"
    )
    slices = slices_of(events, SLICE)
    dir_slices = slices_of(directory, SLICE)
    results: list[dict[str, Any]] = []
    credits: dict[str, Any] = {}
    agree = True
    for i in range(rounds):
        rejected: Counter[str] = Counter()

        def feeder(
            f: Floor, name: str, rejected: Counter[str] = rejected
        ) -> Callable[[list[AnyFloorEvent]], None]:
            def feed(chunk: list[AnyFloorEvent]) -> None:
                rejected[name] += f.apply_many(chunk)

            return feed

        off = make_floor(cfg_on, None)
        on, ledger = make_ticket_floor(cfg_on)
        pair = {"off": feeder(off, "off"), "on": feeder(on, "on")}
        dwall, _ = _alternate(pair, dir_slices, i)  # the directory first, timed apart
        ledger.take_records()  # nothing yet: a directory earns no tickets
        wall, cpu = _alternate(pair, slices, i)
        pools = (off.eligible_counts(PROMO), on.eligible_counts(PROMO))
        got = credits_by(ledger.take_records())
        del off, on, ledger
        same = pools[0] == pools[1] and len(set(rejected.values())) == 1
        stub_ratio = stub_cpu_ratio = math.nan
        if i < stub_rounds:  # the diagnostic pair: the floor's inline room check alone
            off = make_floor(cfg_on, None)
            stub = make_floor(cfg_on, _room_only)
            for f in (off, stub):
                f.apply_many(directory)
            feeders = {"off2": feeder(off, "off2"), "room_only": feeder(stub, "room_only")}
            wall2, cpu2 = _alternate(feeders, slices, i)
            stub_ratio = wall2["off2"] / wall2["room_only"]
            stub_cpu_ratio = cpu2["off2"] / cpu2["room_only"]
            same = same and pools[0] == stub.eligible_counts(PROMO)
            same = same and rejected["off2"] == rejected["room_only"] == rejected["off"]
            del off, stub
        rates = {m: len(events) / wall[m] for m in ("off", "on")}
        cpu_rates = {m: len(events) / cpu[m] for m in ("off", "on")}
        results.append(
            {**rates, "ratio": rates["on"] / rates["off"],
             "cpu_ratio": cpu_rates["on"] / cpu_rates["off"], "room_only_ratio": stub_ratio,
             "room_only_cpu_ratio": stub_cpu_ratio,
             "directory_ratio": dwall["off"] / dwall["on"],
             "directory_off": len(directory) / dwall["off"]}
        )  # fmt: skip
        stub_note = (
            f"; room-only stub / off {stub_ratio:.3f} (its own pair)" if i < stub_rounds else ""
        )
        stub_note += f"; directory upserts on/off {dwall['off'] / dwall['on']:.3f}"
        say(_round_line(i, rates, cpu_rates) + stub_note)
        agree = agree and same and (not credits or got == credits)
        credits = got
    out = _summary(results)
    stub_ratios = [r["room_only_ratio"] for r in results[:stub_rounds]]
    out["room_only_ratio_rounds"] = [round(x, 4) for x in stub_ratios]
    out["room_only_ratio_median"] = round(statistics.median(stub_ratios), 4)
    out["credits"] = credits
    out["floors_agree"] = agree
    dratios = [r["directory_ratio"] for r in results]
    out["directory_ratio_rounds"] = [round(x, 4) for x in dratios]
    out["directory_ratio_median"] = round(statistics.median(dratios), 4)
    out["directory_upserts_per_s_off_median"] = round(
        statistics.median(r["directory_off"] for r in results)
    )
    say(
        f"  median on/off {out['ratio_median']:.3f} (CPU time {out['ratio_cpu_median']:.3f});"
        f" room-only stub/off {out['room_only_ratio_median']:.3f}: the floor's inline check"
        " alone, with a sink that is never called again; the directory's"
        f" {len(directory):,} upserts (timed apart, not in the ratio) on/off"
        f" {out['directory_ratio_median']:.3f}"
    )
    say(
        f"  ticket records per pass: {credits['credit_records']:,} credits"
        f" ({credits['tickets']:,} tickets) by bin {credits['by_bin']};"
        f" pools and rejections identical on, off and stub: {agree}"
    )
    return out


def sink_breakdown(
    cfg_on: Config, directory: list[PlayerUpserted], events: list[AnyFloorEvent]
) -> dict[str, Any]:
    """One more tickets-on pass with the sink timed call by call (not in any ratio)."""
    holder: list[Floor] = []
    ledger = TicketLedger(cfg_on.ticket_plan(), tier_of=lambda card: holder[0].tier_of(card))
    feed = ledger.points_sink
    calls = 0
    spent = 0.0
    clock = time.perf_counter

    def timed_sink(cell: PointsCell, epoch: float, milli: int, event_id: str) -> None:
        nonlocal calls, spent
        t0 = clock()
        feed(cell, epoch, milli, event_id)
        spent += clock() - t0
        calls += 1

    floor = make_floor(cfg_on, timed_sink)
    holder.append(floor)
    floor.apply_many(directory)
    directory_calls, calls, spent = calls, 0, 0.0
    gc.collect()
    gc.disable()
    try:
        t0 = clock()
        floor.apply_many(events)
        total = clock() - t0
    finally:
        gc.enable()
    games = sum(1 for e in events if type(e).__name__ == "GamePlayed")
    out = {
        "sink_calls": calls,
        "sink_calls_directory": directory_calls,
        "sink_calls_per_1k_events": round(1000 * calls / len(events), 2),
        "sink_us_per_call": round(spent / max(1, calls) * 1e6, 3),
        "sink_share_of_pass": round(spent / total, 4),
        "ledger_cells": len(ledger._accrual.cells),
        "games": games,
    }
    say(
        f"  where the ticket time goes (one extra timed pass, not in the ratios): the sink was"
        f" called {calls:,} times for {len(events):,} events ({games:,} games; the floor kept"
        f" the rest back inline), {out['sink_us_per_call']:.2f} us a call ="
        f" {out['sink_share_of_pass']:.1%} of the pass; {out['ledger_cells']:,} cards in"
        f" the ledger; {directory_calls:,} calls while the directory was applied"
    )
    return out


# ------------------------------------------------------------- (b) Service.ingest


class FixedClock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


async def _service(cfg: Config, url: str, sealer: SeedSealer, at: datetime) -> Service:
    service = Service(cfg, open_engine(url), sealer, Metrics(), FixedClock(at))
    await service.start()
    return service


def _ingest_feeder(service: Service) -> Callable[[list[AnyFloorEvent]], None]:
    ingest = service.ingest

    def feed(chunk: list[AnyFloorEvent]) -> None:
        for i in range(0, len(chunk), BATCH_MAX):
            ingest(chunk[i : i + BATCH_MAX], "sim")

    return feed


async def bench_service(
    cfg_on: Config,
    cfg_off: Config,
    folder: Path,
    directory: list[PlayerUpserted],
    events: list[AnyFloorEvent],
    rounds: int,
) -> dict[str, Any]:
    section(
        f"(b) Service.ingest, tickets on vs off: {rounds} rounds, {len(events):,} events"
        f" each in batches of {BATCH_MAX} (the MQTT ingest's BATCH_MAX), slices of"
        f" {SLICE:,} alternated between two started Services (SQLite files), gc off"
    )
    sealer = SeedSealer(bytes(KEY_BYTES))
    at = events[-1].ts + timedelta(seconds=1)
    slices = slices_of(events, SLICE)
    results: list[dict[str, Any]] = []
    credits: dict[str, Any] = {}
    agree = True
    for i in range(rounds):
        t0 = time.perf_counter()
        on = await _service(cfg_on, f"sqlite:///{folder / f'ingest-{i}-on.db'}", sealer, at)
        off = await _service(cfg_off, f"sqlite:///{folder / f'ingest-{i}-off.db'}", sealer, at)
        assert on.tickets.active and not off.tickets.active
        setup = time.perf_counter() - t0
        pair = {"off": _ingest_feeder(off), "on": _ingest_feeder(on)}
        dwall, _ = _alternate(pair, slices_of(directory, SLICE), i)  # timed apart
        wall, cpu = _alternate(pair, slices, i)
        rates = {m: len(events) / wall[m] for m in ("off", "on")}
        cpu_rates = {m: len(events) / cpu[m] for m in ("off", "on")}
        results.append(
            {**rates, "ratio": rates["on"] / rates["off"],
             "cpu_ratio": cpu_rates["on"] / cpu_rates["off"]}
        )  # fmt: skip
        results[-1]["directory_ratio"] = dwall["off"] / dwall["on"]
        say(
            _round_line(i, rates, cpu_rates)
            + f"; directory on/off {dwall['off'] / dwall['on']:.3f} [set-up {setup:.1f} s]"
        )
        got = credits_by(on.tickets.ledger.take_records())
        same = on.floor.eligible_counts(PROMO) == off.floor.eligible_counts(PROMO)
        same = same and len(on._unflushed) == len(off._unflushed)
        agree = agree and same and (not credits or got == credits)
        credits = got
        for s in (on, off):
            await s.engine.dispose()
        del on, off
    out = _summary(results)
    out["credits"] = credits
    out["services_agree"] = agree
    dratios = [r["directory_ratio"] for r in results]
    out["directory_ratio_rounds"] = [round(x, 4) for x in dratios]
    out["directory_ratio_median"] = round(statistics.median(dratios), 4)
    say(
        f"  median on/off {out['ratio_median']:.3f} (CPU time {out['ratio_cpu_median']:.3f});"
        f" {credits['credit_records']:,} credit records per pass; pools and queued floor-log"
        f" events identical on and off: {agree}"
    )
    return out


# ------------------------------------------------------------------------ memory


def make_ticket_floor_on(
    layout: FloorLayout, promos: list[Promotion], plan: TicketPlan
) -> tuple[Floor, TicketLedger]:
    holder: list[Floor] = []
    ledger = TicketLedger(plan, tier_of=lambda card: holder[0].tier_of(card))
    floor = Floor(layout, promos, EarnRules(), 120.0, ledger.points_sink)
    holder.append(floor)
    return floor, ledger


def bench_memory(cfg_on: Config, players: int) -> dict[str, Any]:
    """The ledger's bytes per player: the same floor state with and without tickets."""
    at = datetime(2026, 4, 25, 7, 0, tzinfo=UTC)  # 09:00 SAST: inside every bin's interval
    section(
        f"ledger memory (tracemalloc): {players:,} directory players, each carded in with a"
        " R500 game (50 points: points in every earning group, a ticket in every bin its tier"
        " earns in), bench.core_pool.pick_events; floor with the ledger minus floor without"
    )
    # pick_events makes bench.core_pool's 50,000 players as [upserts, card-ins, games]: keep
    # the first `players` of each
    made = pick_events(PLAYERS, at)
    events = [ev for k in range(3) for ev in made[k * PLAYERS : k * PLAYERS + players]]
    del made
    layout = demo_layout(players, TABLES)  # pick_events seats player i at machine i
    plan = cfg_on.ticket_plan()
    promos = [Promotion(PROMO)]
    gc.collect()
    tracemalloc.start()
    used: dict[str, int] = {}
    keep: dict[str, Any] = {}
    try:
        for mode in ("off", "on"):
            gc.collect()
            base = tracemalloc.take_snapshot() if mode == "on" else None
            before = tracemalloc.get_traced_memory()[0]
            if mode == "on":
                floor, ledger = make_ticket_floor_on(layout, promos, plan)
            else:
                floor, ledger = Floor(layout, promos, EarnRules(), 120.0, None), None
            floor.apply_many(events)
            records = ledger.take_records() if ledger is not None else []
            n_records = len(records)
            del records  # the desk journals them and keeps none
            gc.collect()
            used[mode] = tracemalloc.get_traced_memory()[0] - before
            if mode == "on":
                snap = tracemalloc.take_snapshot()
                keep = {"base": base, "snap": snap, "records": n_records, "ledger": ledger}
            del floor, ledger
    finally:
        tracemalloc.stop()
    per = (used["on"] - used["off"]) / players
    sites = []
    for stat in keep["snap"].compare_to(keep["base"], "lineno"):
        frame = stat.traceback[0]
        if "/selector/tickets/" not in frame.filename or stat.size_diff <= 0:
            continue
        name = Path(frame.filename)
        sites.append(
            {"site": f"tickets/{name.name}:{frame.lineno}",
             "bytes_per_player": round(stat.size_diff / players, 1)}
        )  # fmt: skip
        if len(sites) == 6:
            break
    say(
        f"  floor alone {used['off'] / players:,.0f} bytes a player; with the ledger"
        f" {used['on'] / players:,.0f}: the ledger adds {per:,.0f} bytes a player"
        f" ({keep['records']:,} credit records made and handed off)"
    )
    say("  the ledger's top allocation sites, bytes per player:")
    for s in sites:
        say(f"    {s['bytes_per_player']:8.1f}  {s['site']}")
    return {
        "ledger_bytes_per_player": round(per, 1),
        "floor_bytes_per_player": round(used["off"] / players, 1),
        "players": players,
        "credit_records": keep["records"],
        "top_sites": sites,
    }


def run_ingest(
    cfg_on: Config,
    cfg_off: Config,
    folder: Path,
    directory: list[PlayerUpserted],
    events: list[AnyFloorEvent],
    rounds: int,
    memory_players: int,
    stub_rounds: int,
) -> dict[str, Any]:
    core = bench_core(cfg_on, directory, events, rounds, stub_rounds)
    core["breakdown"] = sink_breakdown(cfg_on, directory, events)
    service = asyncio.run(bench_service(cfg_on, cfg_off, folder, directory, events, rounds))
    same = service["credits"] == core["credits"]
    say(f"  the core and the Service made the same ticket credits: {same}")
    memory = bench_memory(cfg_on, memory_players)
    return {"core": core, "service": service, "same_credits": same, "memory": memory}
