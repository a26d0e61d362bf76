"""The fair peer of bench/core.py: a SQL sessions table updated once per event.

What a casino would otherwise run (SQLite in memory, one statement per event); the core
benchmark compares the floor's ingest rate and pick latency against it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from selector.events import (
    AnyFloorEvent,
    CardInserted,
    CardRemoved,
    GamePlayed,
    PlayerUpserted,
    TableRatingClosed,
    TableRatingOpened,
    TableRatingUpdated,
)
from selector.layout import FloorLayout
from selector.promotion import EarnRules

COMMIT_EVERY = 10_000  # events per transaction: the peer's best batching


class SqlPeer:
    """What a casino would otherwise run: a sessions table updated once per event.

    One row per card (directory data, where the card is, points today, last game);
    every event is one INSERT ... ON CONFLICT or UPDATE executed on its own, in a
    transaction committed every 10k events.  A pick is ORDER BY RANDOM() LIMIT 1 over
    the eligible rows.  It does less than the core: no qualifying window or local-day
    bookkeeping, no per-promotion status or reasons, no idle timers (idleness is a
    WHERE on last_game at pick time), no canonical pool digest or provable pick.
    """

    SCHEMA = """
        CREATE TABLE sessions (
            card TEXT PRIMARY KEY,
            tier TEXT,
            display_name TEXT,
            age_verified INTEGER NOT NULL DEFAULT 0,
            blocked INTEGER NOT NULL DEFAULT 0,
            kind TEXT,
            machine TEXT,
            table_id TEXT,
            seat INTEGER,
            active INTEGER NOT NULL DEFAULT 0,
            last_game REAL NOT NULL DEFAULT 0,
            points INTEGER NOT NULL DEFAULT 0,
            rating_credited INTEGER NOT NULL DEFAULT 0
        ) WITHOUT ROWID;
        CREATE INDEX sessions_machine ON sessions (machine);
    """
    UPSERT_PLAYER = (
        "INSERT INTO sessions (card, tier, display_name, age_verified, blocked)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (card) DO UPDATE SET tier = excluded.tier,"
        " display_name = excluded.display_name, age_verified = excluded.age_verified,"
        " blocked = excluded.blocked"
    )
    CARD_IN = (
        "INSERT INTO sessions (card, kind, machine) VALUES (?, 'slots', ?)"
        " ON CONFLICT (card) DO UPDATE SET kind = 'slots', machine = excluded.machine,"
        " table_id = NULL, seat = NULL, active = 0"
    )
    CARD_OUT = (
        "UPDATE sessions SET kind = NULL, machine = NULL, active = 0 WHERE card = ? AND machine = ?"
    )
    GAME = (
        "UPDATE sessions SET points = points + ?, last_game = max(last_game, ?), active = 1"
        " WHERE machine = ?"
    )
    RATING_OPEN = (
        "INSERT INTO sessions (card, kind, table_id, seat, active) VALUES (?, 'tables', ?, ?, 1)"
        " ON CONFLICT (card) DO UPDATE SET kind = 'tables', machine = NULL,"
        " table_id = excluded.table_id, seat = excluded.seat, active = 1, rating_credited = 0"
    )
    RATING_UPDATE = (
        "UPDATE sessions SET points = points + max(0, ?1 - rating_credited),"
        " rating_credited = max(rating_credited, ?1) WHERE card = ?2"
    )
    RATING_CLOSE = (
        "UPDATE sessions SET points = points + max(0, ?1 - rating_credited),"
        " rating_credited = 0, kind = NULL, table_id = NULL, seat = NULL, active = 0"
        " WHERE card = ?2"
    )
    ELIGIBLE = (
        "FROM sessions WHERE kind = ? AND active = 1 AND points >= ? AND age_verified = 1"
        " AND blocked = 0 AND (kind = 'tables' OR last_game > ?)"
    )

    def __init__(self, layout: FloorLayout, earn: EarnRules) -> None:
        self.conn = sqlite3.connect(":memory:", isolation_level=None)
        self.conn.executescript(self.SCHEMA)
        self.slot_rates = {mid: earn.slot_rate(m) for mid, m in layout.machines.items()}
        self.table_rates = {tid: earn.table_rate(t) for tid, t in layout.tables.items()}

    def apply_many(self, events: Sequence[AnyFloorEvent]) -> int:
        """One statement per event; returns the number of events executed."""
        cur = self.conn.cursor()
        ex = cur.execute
        slot_rates = self.slot_rates
        table_rates = self.table_rates
        game, card_in, card_out = self.GAME, self.CARD_IN, self.CARD_OUT
        r_open, r_update, r_close = self.RATING_OPEN, self.RATING_UPDATE, self.RATING_CLOSE
        upsert = self.UPSERT_PLAYER
        n = 0
        ex("BEGIN")
        for ev in events:
            kind = type(ev)
            if kind is GamePlayed:
                ex(game, (ev.wager * 1000 // slot_rates[ev.machine], ev.epoch, ev.machine))
            elif kind is CardInserted:
                ex(card_in, (ev.card, ev.machine))
            elif kind is CardRemoved:
                ex(card_out, (ev.card, ev.machine))
            elif kind is TableRatingUpdated:
                total = int(ev.average_bet * ev.minutes * 1000) // table_rates[ev.table]
                ex(r_update, (total, ev.card))
            elif kind is TableRatingOpened:
                ex(r_open, (ev.card, ev.table, ev.seat))
            elif kind is TableRatingClosed:
                total = int(ev.average_bet * ev.minutes * 1000) // table_rates[ev.table]
                ex(r_close, (total, ev.card))
            elif kind is PlayerUpserted:
                ex(upsert, (ev.card, ev.tier.value, ev.display_name, ev.age_verified,
                            bool(ev.exclusions)))  # fmt: skip
            else:
                continue
            n += 1
            if n % COMMIT_EVERY == 0:
                ex("COMMIT")
                ex("BEGIN")
        ex("COMMIT")
        return n

    def eligible(self, kind: str, now: float, threshold_milli: int, idle: float) -> int:
        row = self.conn.execute(
            "SELECT count(*) " + self.ELIGIBLE, (kind, threshold_milli, now - idle)
        ).fetchone()
        return int(row[0])

    def pick(self, kind: str, now: float, threshold_milli: int, idle: float) -> str | None:
        row = self.conn.execute(
            "SELECT card " + self.ELIGIBLE + " ORDER BY RANDOM() LIMIT 1",
            (kind, threshold_milli, now - idle),
        ).fetchone()
        return None if row is None else str(row[0])
