"""Recompute a closed session's picks from its records and name every mismatch.

What is checked, per session:
- the revealed seed hashes to the commitment published at open;
- every pool snapshot is in canonical order, its digest and size are as recorded;
- every pick's index follows from the seed (HMAC + rejection sampling) and names
  the recorded card; a failed re-check is recomputed from the pool it was drawn from;
- nobody barred at that moment (pending, already won, no-show, voided) was in a pool;
- no pool's quota was exceeded, and pick numbers run 1, 2, 3, ...
- by the session's derivation (v1, or v3 from its `session.opened`): v3 requests run 1, 2,
  3, ... and every witnessed pick carries the witness's signature of its request, checked
  against the public key committed at open (selector.witness);
and the session's life as a state machine (selector.lifecycle). Mismatches come in
record order, so the first one names where the records first stop holding.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from selector.derivation import RAPS_DERIVATIONS, raps_pick, reference_pool_digest
from selector.fairness import DERIVATION_V1, DERIVATION_V3, commitment, witness_mix
from selector.lifecycle import Mismatch, verify_lifecycle
from selector.records import Record
from selector.witness import RequestTerms, WitnessAtOpen, pick_witness_problems, witness_at_open

__all__ = ["Mismatch", "verify_lifecycle", "verify_session"]  # the first two: selector.lifecycle


def _as_dicts(records: Iterable[Record | dict[str, Any]]) -> list[dict[str, Any]]:
    return [r.to_dict() if isinstance(r, Record) else r for r in records]


def verify_session(
    records: Iterable[Record | dict[str, Any]],
    *,
    entries: Sequence[tuple[int, str]] | None = None,
    witness_key: str | None = None,
) -> list[Mismatch]:
    """All mismatches found in one session's records (empty list: the session holds).

    `entries`: the (seq, hash) of each record's journal entry, when known (an export, a
    database): a witness's signature must then name the entry of its request.
    `witness_key`: a witness public key the inspector pinned: the session's must be it."""
    recs = _as_dicts(records)
    bad: list[Mismatch] = verify_lifecycle(recs)
    opened = [(i, r) for i, r in enumerate(recs) if r["type"] == "session.opened"]
    closed = [(i, r) for i, r in enumerate(recs) if r["type"] == "session.closed"]
    if len(opened) != 1:
        return [Mismatch(0, None, f"expected one session.opened record, found {len(opened)}")]
    if len(closed) != 1:
        return [*bad, Mismatch(len(recs), None, "session is not closed: its seed is not revealed")]
    oi, o = opened[0][0], opened[0][1]["data"]
    ci, c = closed[0]
    try:
        seed = bytes.fromhex(c["data"]["seed"])
        seed_ok = commitment(seed) == o["commitment"]
    except (ValueError, KeyError, TypeError):
        seed_ok = False
        seed = b""
    if not seed_ok:
        return [Mismatch(ci, None, "revealed seed does not match the commitment made at open")]
    try:
        ctx = _Ctx.of(recs, oi, seed, entries, witness_key, bad)
    except (KeyError, TypeError, ValueError) as e:
        return [*bad, Mismatch(oi, None, f"malformed session.opened record: {e!r}")]
    if ctx is None:
        return bad
    quotas: dict[str, int] = o.get("quotas", {})
    exclude_no_shows = bool(o.get("exclude_no_shows", True))
    exclude_voided = bool(o.get("exclude_voided", True))

    states: dict[int, tuple[str, str, str, int]] = {}  # pick -> (card, kind, state, slot)
    # pick -> (card, pool digest) of each failed re-check before the pick's outcome
    failed: dict[int, list[tuple[str, str]]] = {}
    expected_pick = 1
    for i, r in enumerate(recs):
        try:
            _check_request(i, r, bad, ctx, failed)
            expected_pick = _check_record(
                i, r, bad, ctx, states, failed, expected_pick, quotas, exclude_no_shows,
                exclude_voided,
            )  # fmt: skip
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            pick = r.get("data", {}).get("pick") if isinstance(r, dict) else None
            bad.append(Mismatch(i, pick, f"malformed {r.get('type')!r} record: {e!r}"))
    # record order (stable: the lifecycle's first at a record), each mismatch said once
    return sorted(dict.fromkeys(bad), key=lambda m: m.position)


@dataclass(slots=True)
class _Request:
    index: int  # of its record
    digest: str
    number: int  # v3: the session's count of requests
    attempt: int
    kind: str


@dataclass(slots=True)
class _Ctx:
    """What every pick of a session is checked with."""

    seed: bytes
    session_id: str
    derivation: str
    commitment: str
    witness: WitnessAtOpen | None
    entries: Sequence[tuple[int, str]] | None
    # pick -> its open request (None: a v1 journal written before requests existed)
    requests: dict[int, _Request] | None
    request_count: int = 0
    # a pool's digest by its cards: a draw's pool is hashed for its request and its
    # pick alike (a start verifies an open session's picks before it is ready)
    digests: dict[tuple[str, ...], str] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        recs: list[dict[str, Any]],
        oi: int,
        seed: bytes,
        entries: Sequence[tuple[int, str]] | None,
        witness_key: str | None,
        bad: list[Mismatch],
    ) -> _Ctx | None:
        o = recs[oi]["data"]
        derivation = o.get("derivation", DERIVATION_V1)
        if derivation not in RAPS_DERIVATIONS:
            bad.append(Mismatch(oi, None, f"unknown derivation {derivation!r}"))
            return None
        witness = None
        if derivation == DERIVATION_V3:
            witness, problems = witness_at_open(o, recs[oi]["session_id"], derivation, witness_key)
            bad.extend(Mismatch(oi, None, p) for p in problems)
        if entries is not None and len(entries) != len(recs):
            entries = None
        # v3 draws always make their pool durable first; a v1 journal written before
        # requests existed has none, and is checked without
        has_requests = derivation == DERIVATION_V3 or any(
            r["type"] == "pick.requested" for r in recs
        )
        return cls(
            seed, recs[0]["session_id"], derivation, o["commitment"], witness, entries,
            {} if has_requests else None,
        )  # fmt: skip

    def digest(self, cards: list[str]) -> str:
        """The pool's digest by the reference code; a pool out of canonical order has
        none in v3 (its bin is not a bin): "" then, which matches no recorded digest."""
        key = tuple(cards)
        known = self.digests.get(key)
        if known is None:
            try:
                known = reference_pool_digest(self.derivation, cards)
            except ValueError:
                known = ""
            self.digests[key] = known
        return known


def _check_request(
    i: int,
    r: dict[str, Any],
    bad: list[Mismatch],
    ctx: _Ctx,
    failed: dict[int, list[tuple[str, str]]],
) -> None:
    """A draw's winner comes from the pool its request made durable: the first try's
    pool (the final one with every failed re-check put back) has the requested digest."""
    requests = ctx.requests
    if requests is None:
        return
    t, d = r["type"], r["data"]
    if t == "pick.requested":
        n = int(d["pick"])
        ctx.request_count += 1
        number = ctx.request_count
        if ctx.derivation == DERIVATION_V3 and d.get("request") != number:
            bad.append(Mismatch(i, n, f"request number {d.get('request')}, expected {number}"))
        requests[n] = _Request(i, d["pool_digest"], number, int(d["attempt"]), str(d["kind"]))
    elif t == "pick.abandoned":
        requests.pop(int(d["pick"]), None)
    elif t in ("pick.drawn", "pick.no_eligible"):
        n = int(d["pick"])
        wanted = requests.pop(n, None)
        pool = list(d.get("pool", [])) if t == "pick.drawn" else []
        first = sorted(set(pool) | {card for card, _ in failed.get(n, [])})
        if wanted is None:
            bad.append(Mismatch(i, n, f"{t} without a pick.requested before it"))
        elif ctx.digest(first) != wanted.digest:
            bad.append(Mismatch(i, n, "drawn from a pool other than the one requested"))
        if wanted is not None and ctx.derivation == DERIVATION_V3:
            _check_witness(i, n, d, bad, ctx, wanted, bool(first))


def _check_witness(
    i: int, n: int, d: dict[str, Any], bad: list[Mismatch], ctx: _Ctx, req: _Request, any_: bool
) -> None:
    """A v3 pick's witness (selector.witness.pick_witness_problems)."""
    entry = None if ctx.entries is None else ctx.entries[req.index]
    witness = ctx.witness if any_ else None
    site = witness.site if witness else ""

    def terms(seq: int, entry_hash: str) -> RequestTerms:
        return RequestTerms(
            site, ctx.session_id, req.number, n, req.attempt, req.kind, ctx.derivation,
            req.digest, ctx.commitment, seq, entry_hash,
        )  # fmt: skip

    for problem in pick_witness_problems(witness, d.get("witness"), req.number, entry, terms):
        bad.append(Mismatch(i, n, problem))


def _mix(ctx: _Ctx, d: dict[str, Any]) -> bytes:
    w = d.get("witness") if ctx.derivation == DERIVATION_V3 else None
    return witness_mix(w.get("signature") if isinstance(w, dict) else None)


def _check_record(
    i: int,
    r: dict[str, Any],
    bad: list[Mismatch],
    ctx: _Ctx,
    states: dict[int, tuple[str, str, str, int]],
    failed: dict[int, list[tuple[str, str]]],
    expected_pick: int,
    quotas: dict[str, int],
    exclude_no_shows: bool,
    exclude_voided: bool,
) -> int:
    """Check one record against the replayed session; returns the next expected pick."""
    d = r["data"]
    t = r["type"]
    if r["session_id"] != ctx.session_id:
        bad.append(Mismatch(i, None, "record belongs to another session"))
        return expected_pick
    if t == "pick.recheck_failed":
        failed.setdefault(d["pick"], []).append((d["card"], d["pool_digest"]))
    elif t == "pick.no_eligible":
        # re-checks of this attempt drew from pools that shrank to nothing
        bad.extend(_check_rechecks(i, d["pick"], d, ctx, [], failed.pop(d["pick"], [])))
    elif t == "pick.drawn":
        n = int(d["pick"])
        if n != expected_pick:
            bad.append(Mismatch(i, n, f"pick number {n}, expected {expected_pick}"))
        removed = failed.pop(n, [])
        bad.extend(_check_pick(i, d, ctx, states, removed, exclude_no_shows, exclude_voided))
        states[n] = (d["card"], d["kind"], "pending", d["slot"])
        filled = sum(
            1
            for _c, k, s, _ in states.values()
            if k == d["kind"] and s in ("pending", "verified", "awarded")
        )
        if filled > quotas.get(d["kind"], 0):
            bad.append(Mismatch(i, n, f"{d['kind']} quota {quotas.get(d['kind'])} exceeded"))
        return n + 1
    elif t in _RESOLVED:
        n = d["pick"]
        if n not in states:
            bad.append(Mismatch(i, n, f"{t} for a pick that was never drawn"))
            return expected_pick
        card, kind, _, slot = states[n]
        states[n] = (card, kind, _RESOLVED[t], slot)
    return expected_pick


_RESOLVED = {
    "pick.verified": "verified",
    "pick.awarded": "awarded",
    "pick.no_show": "no_show",
    "pick.voided": "void",
}


def _barred(
    states: dict[int, tuple[str, str, str, int]], exclude_no_shows: bool, exclude_voided: bool
) -> set[str]:
    barring = {"pending", "verified", "awarded"}
    if exclude_no_shows:
        barring.add("no_show")
    if exclude_voided:
        barring.add("void")
    return {card for card, _k, s, _slot in states.values() if s in barring}


def _check_pick(
    i: int,
    d: dict[str, Any],
    ctx: _Ctx,
    states: dict[int, tuple[str, str, str, int]],
    removed: list[tuple[str, str]],
    exclude_no_shows: bool,
    exclude_voided: bool,
) -> list[Mismatch]:
    n = d["pick"]
    pool: list[str] = list(d.get("pool", []))
    bad: list[Mismatch] = []
    if any(a >= b for a, b in itertools.pairwise(pool)):
        bad.append(Mismatch(i, n, "pool is not in canonical (sorted, unique) order"))
    digest = ctx.digest(pool)
    if digest != d["pool_digest"]:
        bad.append(Mismatch(i, n, "pool digest does not match the recorded pool"))
    if len(pool) != d["pool_size"]:
        bad.append(Mismatch(i, n, f"pool size {d['pool_size']} but {len(pool)} cards recorded"))
    barred = _barred(states, exclude_no_shows, exclude_voided)
    if barred & set(pool):
        bad.append(Mismatch(i, n, f"barred player(s) in the pool: {len(barred & set(pool))}"))
    bad += _check_rechecks(i, n, d, ctx, pool, removed)
    if not pool:
        return [*bad, Mismatch(i, n, "pick drawn from an empty pool")]
    index, _ = raps_pick(
        ctx.derivation, ctx.seed, ctx.session_id, n, d["attempt"], digest, len(pool), _mix(ctx, d)
    )
    if index != d["index"]:
        bad.append(Mismatch(i, n, f"index {d['index']} recorded, seed gives {index}"))
    if pool[index] != d["card"]:
        bad.append(Mismatch(i, n, f"winner {d['card']} recorded, seed gives {pool[index]}"))
    return bad


def _check_rechecks(
    i: int,
    n: int,
    d: dict[str, Any],
    ctx: _Ctx,
    pool: list[str],
    removed: list[tuple[str, str]],
) -> list[Mismatch]:
    """Failed re-checks drew from the final pool with the removed cards still in it."""
    if not removed:
        return []  # the usual case: no pool to rebuild (the daemon's restore runs this too)
    bad: list[Mismatch] = []
    in_pool = set(pool)
    full = sorted(in_pool | {card for card, _ in removed})
    mix = _mix(ctx, d)
    for card, digest in removed:
        if card in in_pool:
            bad.append(Mismatch(i, n, f"{card} failed its re-check but is in the final pool"))
            continue
        here = ctx.digest(full)
        if here != digest:
            bad.append(Mismatch(i, n, f"failed re-check of {card}: pool digest does not match"))
        idx, _ = raps_pick(
            ctx.derivation, ctx.seed, ctx.session_id, n, d["attempt"], here, len(full), mix
        )
        if full[idx] != card:
            bad.append(Mismatch(i, n, f"failed re-check named {card}, seed gives {full[idx]}"))
        full.remove(card)
    return bad
