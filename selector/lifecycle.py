"""A RAPS session's life as a state machine, checked from its records alone.

No seed is needed, so the daemon runs it on open sessions before it restores them and
`raps verify` on every session. What it holds a session to:

- nothing before `session.opened` but an override, one open, nothing after the close;
- a draw asks for its pool first (`pick.requested`), one request at a time, for the next
  pick number, into the lowest free slot of its pool kind (within the quota), with the
  attempt equal to the number of earlier draws into that slot; the request ends in
  exactly one of `pick.drawn`, `pick.no_eligible` or `pick.abandoned`, each naming the
  same pick, kind, slot and attempt (a session written before requests existed has none,
  and its draws are held to the same numbering themselves);
- a failed re-check only inside its pick's request;
- every step of a pick legal: verified from pending, awarded from verified, a no-show
  from pending, a void from pending or verified; a claim-timer no-show made by the
  system's timer, a staff no-show by a person; the claim's own steps and deadlines (a
  claim-timer no-show at or after the deadline the rules derive) are selector.claim_verify's;
- the close's `picks` and `outcomes` equal to what precedes it.

Record types it does not know are left to the checks that know them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from selector.claim_verify import claim_mismatches
from selector.records import SYSTEM_TIMER, Record

PENDING, VERIFIED, AWARDED, NO_SHOW, VOID = "pending", "verified", "awarded", "no_show", "void"
OUTCOMES = (PENDING, VERIFIED, AWARDED, NO_SHOW, VOID)
FILLED = (PENDING, VERIFIED, AWARDED)
RESOLVED = {
    "pick.verified": VERIFIED,
    "pick.awarded": AWARDED,
    "pick.no_show": NO_SHOW,
    "pick.voided": VOID,
}
LEGAL_FROM = {
    VERIFIED: (PENDING,),
    AWARDED: (VERIFIED,),
    NO_SHOW: (PENDING,),
    VOID: (PENDING, VERIFIED),
}
# the records that end a request, and the one that starts it
ENDS_REQUEST = ("pick.drawn", "pick.no_eligible", "pick.abandoned")
REQUEST_FIELDS = ("pick", "kind", "slot", "attempt")


@dataclass(frozen=True, slots=True)
class Mismatch:
    position: int  # index of the record in the session's record list
    pick: int | None
    message: str

    def __str__(self) -> str:
        where = f"record {self.position}" + (f" (pick {self.pick})" if self.pick else "")
        return f"{where}: {self.message}"


@dataclass(slots=True)
class _Pick:
    kind: str
    slot: int
    state: str


@dataclass
class _Life:
    """The session as its records so far leave it."""

    bad: list[Mismatch] = field(default_factory=list)
    state: str = "scheduled"
    quotas: dict[str, int] = field(default_factory=dict)
    picks: dict[int, _Pick] = field(default_factory=dict)
    draws_into: dict[tuple[str, int], int] = field(default_factory=dict)
    last_in: dict[tuple[str, int], int] = field(default_factory=dict)  # slot -> its last pick
    request: dict[str, Any] | None = None
    with_requests: bool = False

    def free_slot(self, kind: str) -> int | None:
        for slot in range(1, int(self.quotas.get(kind, 0)) + 1):
            last = self.last_in.get((kind, slot))
            if last is None or self.picks[last].state not in FILLED:
                return slot
        return None


def as_dicts(records: Iterable[Record | dict[str, Any]]) -> list[dict[str, Any]]:
    return [r.to_dict() if isinstance(r, Record) else r for r in records]


def verify_lifecycle(records: Iterable[Record | dict[str, Any]]) -> list[Mismatch]:
    """Every way the records break the session's state machine, in record order."""
    recs = as_dicts(records)
    life = _Life(with_requests=any(r.get("type") == "pick.requested" for r in recs))
    for i, r in enumerate(recs):
        try:
            _step(life, i, r)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            n = _pick_of(r)
            life.bad.append(Mismatch(i, n, f"malformed {r.get('type')!r} record: {e!r}"))
    claims = [Mismatch(i, n, what) for i, n, what in claim_mismatches(recs)]
    return sorted(life.bad + claims, key=lambda m: m.position)  # stable: ours first


def _pick_of(r: dict[str, Any]) -> int | None:
    d = r.get("data")
    n = d.get("pick") if isinstance(d, dict) else None
    return n if isinstance(n, int) else None


def _step(life: _Life, i: int, r: dict[str, Any]) -> None:
    t, d = r["type"], r.get("data") or {}
    n = _pick_of(r)
    bad = life.bad
    if life.state == "closed":
        bad.append(Mismatch(i, n, f"{t} after the session's close"))
    elif t == "session.opened":
        if life.state != "scheduled":
            bad.append(Mismatch(i, None, "a second session.opened"))
        life.state = "open"
        life.quotas = {str(k): int(v) for k, v in (d.get("quotas") or {}).items()}
    elif life.state == "scheduled" and t != "session.override":
        bad.append(Mismatch(i, n, f"{t} before the session was opened"))
    elif t == "pick.requested":
        _requested(life, i, d)
    elif t == "pick.recheck_failed":
        req = life.request
        if life.with_requests and (req is None or req["pick"] != n):
            bad.append(Mismatch(i, n, f"a failed re-check of pick {n} outside its request"))
    elif t in ENDS_REQUEST:
        _end_request(life, i, r)
    elif t in RESOLVED:
        _resolved(life, i, r)
    elif t == "session.closed":
        _closed(life, i, d)


def _requested(life: _Life, i: int, d: dict[str, Any]) -> None:
    n = int(d["pick"])
    if life.request is not None:
        life.bad.append(
            Mismatch(i, n, f"a second request while pick {life.request['pick']}'s is open")
        )
    _check_numbering(life, i, d, "requested")
    life.request = {k: d[k] for k in REQUEST_FIELDS}


def _check_numbering(life: _Life, i: int, d: dict[str, Any], what: str) -> None:
    """A new draw: the next pick number, the lowest free slot, the slot's next attempt."""
    n, kind, slot, attempt = int(d["pick"]), str(d["kind"]), int(d["slot"]), int(d["attempt"])
    bad = life.bad
    expected = len(life.picks) + 1
    if n != expected:
        bad.append(Mismatch(i, n, f"pick number {n} {what}, expected {expected}"))
    free = life.free_slot(kind)
    if free is None:
        quota = life.quotas.get(kind, 0)
        bad.append(Mismatch(i, n, f"{kind} slot {slot} {what}, but all {quota} are filled"))
    elif slot != free:
        bad.append(Mismatch(i, n, f"{kind} slot {slot} {what}, but the lowest free is {free}"))
    earlier = life.draws_into.get((kind, slot), 0)
    if attempt != earlier:
        bad.append(
            Mismatch(
                i,
                n,
                f"attempt {attempt} {what} for {kind} slot {slot}, which was drawn "
                f"{earlier} time(s) before",
            )
        )


def _end_request(life: _Life, i: int, r: dict[str, Any]) -> None:
    t, d = r["type"], r["data"]
    n = int(d["pick"])
    req = life.request
    if life.with_requests:
        if req is None:
            life.bad.append(Mismatch(i, n, f"{t} without a pick.requested before it"))
        else:
            said = {k: d.get(k) for k in REQUEST_FIELDS}
            if said != req:
                life.bad.append(
                    Mismatch(i, n, f"{t} names {_fields(said)}; the open request is {_fields(req)}")
                )
        life.request = None
    elif t == "pick.drawn":
        _check_numbering(life, i, d, "drawn")
    if t != "pick.drawn":
        return
    if n in life.picks:
        life.bad.append(Mismatch(i, n, f"pick {n} drawn twice"))
    kind, slot = str(d["kind"]), int(d["slot"])
    life.picks[n] = _Pick(kind, slot, PENDING)
    life.draws_into[(kind, slot)] = life.draws_into.get((kind, slot), 0) + 1
    life.last_in[(kind, slot)] = n


def _fields(d: dict[str, Any]) -> str:
    return ", ".join(f"{k} {d.get(k)}" for k in REQUEST_FIELDS)


def _resolved(life: _Life, i: int, r: dict[str, Any]) -> None:
    t, d = r["type"], r["data"]
    n = int(d["pick"])
    pick = life.picks.get(n)
    if pick is None:
        return  # named by the recomputation ("never drawn")
    new = RESOLVED[t]
    if pick.state not in LEGAL_FROM[new]:
        life.bad.append(Mismatch(i, n, f"pick {n} is {pick.state}: {t} is no legal step from it"))
    if t == "pick.no_show":
        _check_no_show(life, i, r)
    pick.state = new


def _check_no_show(life: _Life, i: int, r: dict[str, Any]) -> None:
    """Who may make a no-show (when: selector.claim_verify, from the derived deadline)."""
    d, actor = r["data"], r.get("actor") or {}
    n = int(d["pick"])
    system = actor.get("user") == "system"
    by = d.get("by")
    if by == "claim_timer":
        if (actor.get("user"), actor.get("role")) != ("system", SYSTEM_TIMER):
            who = f"{actor.get('user')} ({actor.get('role')})"
            life.bad.append(Mismatch(i, n, f"a claim-timer no-show made by {who}"))
    elif by == "staff":
        if system:
            life.bad.append(Mismatch(i, n, "a staff no-show made by the system"))
    else:
        life.bad.append(Mismatch(i, n, f"a no-show by {by!r} (claim_timer or staff)"))


def _closed(life: _Life, i: int, d: dict[str, Any]) -> None:
    life.state = "closed"
    life.request = None  # a request open at the close is an anomaly, not a broken step
    picks = life.picks
    if d.get("picks") != len(picks):
        life.bad.append(
            Mismatch(i, None, f"close says {d.get('picks')} picks, the records hold {len(picks)}")
        )
    counts = {k: sum(1 for p in picks.values() if p.state == k) for k in OUTCOMES}
    said = {k: int(v) for k, v in (d.get("outcomes") or {}).items() if v}
    if said != {k: v for k, v in counts.items() if v}:
        life.bad.append(
            Mismatch(i, None, f"close's outcomes {said} differ from the records' {counts}")
        )
