"""Where a timed operation's time goes: a Probe stamps SQLAlchemy events and wrapped
calls, and the breakdowns turn the stamps of one pick or one bare commit into parts."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any, TypeVar

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from raps.chain import Entry, Head, link

T = TypeVar("T")


class Probe:
    """Timestamps of one timed operation, from SQLAlchemy events and wrapped calls."""

    def __init__(self) -> None:
        self.marks: list[tuple[str, float]] = []

    def mark(self, name: str) -> None:
        self.marks.append((name, time.perf_counter()))

    def reset(self) -> None:
        self.marks.clear()

    def first(self, name: str) -> float | None:
        return next((t for n, t in self.marks if n == name), None)

    def last(self, name: str) -> float | None:
        return next((t for n, t in reversed(self.marks) if n == name), None)

    def statements(self) -> list[float]:
        """Durations of the statements executed, in order."""
        out: list[float] = []
        began: float | None = None
        for name, t in self.marks:
            if name == "exec<":
                began = t
            elif name == "exec>" and began is not None:
                out.append(t - began)
                began = None
        return out

    def marker(self, name: str) -> Callable[..., None]:
        """An event listener that stamps `name`, whatever the event passes it."""

        def on_event(*_a: Any) -> None:
            self.mark(name)

        return on_event

    def attach(self, engine: AsyncEngine) -> None:
        """Stamp the engine's transactions, statements and connection checkouts."""
        sync = engine.sync_engine
        listened: tuple[tuple[Any, str, str], ...] = (
            (sync, "begin", "begin"),
            (sync, "before_cursor_execute", "exec<"),
            (sync, "after_cursor_execute", "exec>"),
            (sync, "commit", "commit"),
            (sync.pool, "checkout", "checkout"),
            (sync.pool, "reset", "reset"),
        )
        for target, event_name, mark in listened:
            event.listen(target, event_name, self.marker(mark))


def pick_breakdown(probe: Probe, t0: float, t1: float) -> dict[str, float] | None:
    """Seconds per part of one Service.draw; None if a mark is missing."""
    core0, core1 = probe.first("core<"), probe.first("core>")
    app0, app1 = probe.first("append<"), probe.last("append>")
    link0, link1 = probe.first("link<"), probe.first("link>")
    enc0, enc1 = probe.first("encode<"), probe.first("encode>")
    checkout, commit, reset = probe.first("checkout"), probe.last("commit"), probe.last("reset")
    first = probe.first("exec<")
    marks = (core0, core1, app0, app1, link0, link1, enc0, enc1, checkout, commit, reset, first)
    if None in marks:
        return None
    assert core0 is not None and core1 is not None and app0 is not None and app1 is not None
    assert link0 is not None and link1 is not None and checkout is not None
    assert enc0 is not None and enc1 is not None
    assert commit is not None and reset is not None and first is not None
    stmts = probe.statements()
    return {
        "core_draw": core1 - core0,
        "chain_hash": link1 - link0,
        "pool_delta_encode": enc1 - enc0,
        "checkout_and_ping": checkout - link1 - (enc1 - enc0),
        "insert_entry_with_pool": sum(stmts),
        "begin_to_first_statement": first - checkout,
        "txn_between_statements": (commit - first) - sum(stmts),
        "commit": reset - commit,
        "reset_and_release": app1 - reset,
        "append_other": (link0 - app0),
        "service_other": (t1 - t0) - (core1 - core0) - (app1 - app0),
    }


def bare_breakdown(probe: Probe, t0: float, t1: float) -> dict[str, float] | None:
    checkout, commit, reset = probe.first("checkout"), probe.last("commit"), probe.last("reset")
    first = probe.first("exec<")
    if checkout is None or commit is None or reset is None or first is None:
        return None
    stmts = probe.statements()
    return {
        "checkout_and_ping": checkout - t0,
        "begin_to_first_statement": first - checkout,
        "insert_row": sum(stmts),
        "txn_between_statements": (commit - first) - sum(stmts),
        "commit": reset - commit,
        "reset_and_release": t1 - reset,
    }


def timed_wrapper(probe: Probe, name: str, fn: Callable[..., T]) -> Callable[..., T]:
    def wrapper(*args: Any, **kwargs: Any) -> T:
        probe.mark(name + "<")
        try:
            return fn(*args, **kwargs)
        finally:
            probe.mark(name + ">")

    return wrapper


def timed_async(probe: Probe, name: str, fn: Callable[..., Awaitable[T]]) -> Callable[..., Any]:
    async def wrapper(*args: Any, **kwargs: Any) -> T:
        probe.mark(name + "<")
        try:
            return await fn(*args, **kwargs)
        finally:
            probe.mark(name + ">")

    return wrapper


def timed_link(probe: Probe) -> Callable[[Iterable[dict[str, Any]], Head | None], Iterator[Entry]]:
    def wrapper(records: Iterable[dict[str, Any]], head: Head | None) -> Iterator[Entry]:
        probe.mark("link<")
        entries = list(link(records, head))
        probe.mark("link>")
        return iter(entries)

    return wrapper
