"""Recompute a closed ticket draw from its records alone and name every mismatch.

Only the plain reference code is used (selector.bindigest.bin_digest and locate,
selector.fairness.ticket_index and commitment), never the SumTree the draw ran on, so
what passes here is what an inspector's own reimplementation of docs/fairness.md checks.

Checked, per draw:
- the revealed seed hashes to the commitment published at open;
- the bin recorded at open is canonical and matches its digest, count and total;
- before every pick the eligible bin is rebuilt from the records (the bin, late entries,
  bars from outside, and the draw's own bars: the pending winner, the winners, no-shows
  and voided winners as the rules say); its digest, count and total are as recorded, so
  no barred card was eligible; the ticket follows from the seed and the card holds it;
- pick numbers run 1, 2, 3, ...; a pick goes into the lowest free position, never past
  the number of winners; attempts count per position, so a redraw only follows a no-show
  or a void of that position; one pick at a time;
- presentations by their deadline; add-ons once, before the award; awards only of
  presented picks, with the position's prize or a device's reference.

`selector.tickets.day_verify.verify_day` adds the once-per-promotional-day limit across a
day's draws.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from selector.bindigest import bin_digest, locate
from selector.fairness import (
    DERIVATION_V2,
    DERIVATION_V3,
    commitment,
    ticket_index,
    ticket_index_v3,
    witness_mix,
)
from selector.records import Record
from selector.tickets.draw_picks import (
    ADD_ON,
    AWARDED,
    CLOSED,
    NO_ELIGIBLE,
    NO_SHOW,
    OPENED,
    PICKED,
    PRESENTED,
    REQUESTED,
    TICKET_KIND,
    VOIDED,
    AwardSource,
    NoShowReason,
)
from selector.tickets.draw_rules import DocumentType, DrawRules, Presenter, last_digits
from selector.verify import Mismatch
from selector.witness import RequestTerms, WitnessAtOpen, pick_witness_problems, witness_at_open

_FILLED = ("pending", "verified", "awarded")
_WON = ("verified", "awarded")
_DIAGNOSE_SINGLES = 8  # barred cards tried one by one to explain a digest mismatch


def _as_dicts(records: Iterable[Record | dict[str, Any]]) -> list[dict[str, Any]]:
    return [r.to_dict() if isinstance(r, Record) else r for r in records]


@dataclass(frozen=True, slots=True)
class _Request:
    index: int  # of its record
    number: int  # the pick's
    position: int
    attempt: int
    request: int
    digest: str
    count: int
    total: int


@dataclass(slots=True)
class _Pick:
    number: int
    card: str
    position: int
    deadline: datetime
    state: str = "pending"
    add_ons: dict[str, bool] = field(default_factory=dict)


class _Replay:
    """The draw as its records say it went, with the eligible bin kept sorted."""

    def __init__(
        self, seed: bytes, session_id: str, rules: DrawRules, bin_: list[tuple[str, int]],
        barred: Mapping[str, str], bad: list[Mismatch],
    ) -> None:  # fmt: skip
        self.seed = seed
        self.session_id = session_id
        self.rules = rules
        self.bad = bad
        self.bin = dict(bin_)
        self.external = dict(barred)
        self.eligible = [c for c, _ in bin_ if c not in self.external]  # canonical order
        self.picks: dict[int, _Pick] = {}
        self.card_picks: dict[str, list[_Pick]] = {}
        self.last: dict[int, _Pick] = {}
        self.draws: dict[int, int] = {}
        self.closed_at: int | None = None
        # derivation v3: the witness, the journal entries, the open request
        self.derivation = DERIVATION_V2
        self.witness: WitnessAtOpen | None = None
        self.commitment = ""
        self.entries: Sequence[tuple[int, str]] | None = None
        self.request_count = 0
        self.open_request: _Request | None = None
        # the daemon's restore (selector.tickets.draw_verify_open): each recorded bin was
        # rebuilt in the draw's own tree and matched; the tickets are recomputed from it
        self.trust_bins = False

    # -------------------------------------------------------------- the bin

    def own_bar(self, card: str) -> str | None:
        for p in self.card_picks.get(card, ()):
            if p.state in _FILLED:
                return p.state
            if p.state == "no_show" and self.rules.exclude_no_shows:
                return p.state
            if p.state == "void" and self.rules.exclude_voided:
                return p.state
        return None

    def refresh(self, card: str) -> None:
        should = card in self.bin and card not in self.external and self.own_bar(card) is None
        i = bisect.bisect_left(self.eligible, card)
        present = i < len(self.eligible) and self.eligible[i] == card
        if should and not present:
            self.eligible.insert(i, card)
        elif present and not should:
            del self.eligible[i]

    def apply(self, i: int, n: int | None, d: Mapping[str, Any]) -> None:
        changes = [(c, t) for c, t in d["changes"]]
        if any(a >= b for (a, _), (b, _) in itertools.pairwise(changes)):
            self.bad.append(Mismatch(i, n, "changes are not in canonical (sorted, unique) order"))
        for card, tickets in changes:
            if isinstance(tickets, bool) or not isinstance(tickets, int) or tickets < 0:
                self.bad.append(Mismatch(i, n, f"change of {card!r} to {tickets!r} tickets"))
                continue
            if tickets:
                self.bin[card] = tickets
            else:
                self.bin.pop(card, None)
            self.refresh(card)
        for card, reason in d["barred"].items():
            self.external.setdefault(card, reason)
            self.refresh(card)

    def items(self) -> list[tuple[str, int]]:
        b = self.bin
        return [(c, b[c]) for c in self.eligible]

    def barred_in_bin(self) -> list[str]:
        cards = {c for c in self.external if c in self.bin}
        cards |= {c for c in self.card_picks if c in self.bin and self.own_bar(c) is not None}
        return sorted(cards)

    # ------------------------------------------------------------ positions

    def free_position(self) -> int | None:
        for position in range(1, self.rules.winners + 1):
            last = self.last.get(position)
            if last is None or last.state not in _FILLED:
                return position
        return None

    def check_position(self, i: int, n: int | None, d: Mapping[str, Any]) -> None:
        position, attempt = d["position"], d["attempt"]
        pending = [p.number for p in self.picks.values() if p.state == "pending"]
        if pending:
            self.bad.append(Mismatch(i, n, f"drawn while pick {pending[0]} was pending"))
        if not 1 <= position <= self.rules.winners:
            self.bad.append(
                Mismatch(i, n, f"position {position} exceeds the draw's {self.rules.winners} "
                         "winners")
            )  # fmt: skip
            return
        last = self.last.get(position)
        if last is not None and last.state in _FILLED:
            self.bad.append(
                Mismatch(i, n, f"redraw into position {position} while its pick {last.number} "
                         f"is {last.state}: a redraw only follows a no-show or a void")
            )  # fmt: skip
        elif position != self.free_position():
            self.bad.append(
                Mismatch(i, n, f"drawn into position {position}, the lowest free position is "
                         f"{self.free_position()}")
            )  # fmt: skip
        if attempt != self.draws.get(position, 0):
            self.bad.append(
                Mismatch(i, n, f"attempt {attempt}, but position {position} had "
                         f"{self.draws.get(position, 0)} pick(s) before")
            )  # fmt: skip

    # ---------------------------------------------------------------- picks

    def check_bin(
        self, i: int, n: int | None, d: Mapping[str, Any]
    ) -> tuple[list[tuple[str, int]], str, int]:
        """Late entries and bars applied, the position checked, the eligible bin rebuilt
        and compared with the record's count, total and digest."""
        self.apply(i, n, d)
        self.check_position(i, n, d)
        if self.trust_bins:
            return [], d["bin_digest"], d["bin_total"]
        items = self.items()
        total = sum(w for _, w in items)
        digest = bin_digest(items)
        if (digest, len(items), total) != (d["bin_digest"], d["bin_count"], d["bin_total"]):
            self.bad.append(Mismatch(i, n, self.explain(items, d)))
        return items, digest, total

    def check_number(self, i: int, n: int) -> None:
        if n != len(self.picks) + 1:
            self.bad.append(Mismatch(i, n, f"pick number {n}, expected {len(self.picks) + 1}"))

    def pick(self, i: int, r: Mapping[str, Any]) -> None:
        """A v2 pick: its bin and its winner in one record."""
        d = r["data"]
        n = d["pick"]
        self.check_number(i, n)
        items, digest, total = self.check_bin(i, n, d)
        self.winner(i, r, items, digest, total, None)

    def request(self, i: int, r: Mapping[str, Any]) -> None:
        """A v3 request: the bin a pick draws from, made durable before its winner."""
        d = r["data"]
        n = d["pick"]
        if self.open_request is not None:
            self.bad.append(Mismatch(i, n, f"a second request while pick "
                                     f"{self.open_request.number}'s is open"))  # fmt: skip
        self.check_number(i, n)
        self.request_count += 1
        if d.get("request") != self.request_count:
            self.bad.append(Mismatch(i, n, f"request number {d.get('request')}, expected "
                                     f"{self.request_count}"))  # fmt: skip
        _, digest, total = self.check_bin(i, n, d)
        self.open_request = _Request(i, n, d["position"], d["attempt"], self.request_count,
                                     digest, d["bin_count"], total)  # fmt: skip

    def picked_v3(self, i: int, r: Mapping[str, Any]) -> None:
        """A v3 pick: the winner from exactly the open request's bin, with the witness's
        signature of that request mixed in."""
        d = r["data"]
        n = d["pick"]
        req, self.open_request = self.open_request, None
        if req is None:
            self.bad.append(Mismatch(i, n, "draw.picked without a draw.requested before it"))
            return
        same = (n, d["position"], d["attempt"], d["bin_digest"], d["bin_total"])
        if same != (req.number, req.position, req.attempt, req.digest, req.total):
            self.bad.append(Mismatch(i, n, "drawn from a bin other than the one requested"))
        entry = None if self.entries is None else self.entries[req.index]

        def terms(seq: int, entry_hash: str) -> RequestTerms:
            site = self.witness.site if self.witness else ""
            return RequestTerms(
                site, self.session_id, req.request, req.number, req.attempt, TICKET_KIND,
                self.derivation, req.digest, self.commitment, seq, entry_hash,
            )  # fmt: skip

        w = d.get("witness")
        for problem in pick_witness_problems(self.witness, w, req.request, entry, terms):
            self.bad.append(Mismatch(i, n, problem))
        mix = witness_mix(w.get("signature") if isinstance(w, dict) else None)
        self.winner(i, r, [] if self.trust_bins else self.items(), req.digest, req.total, mix)

    def winner(
        self,
        i: int,
        r: Mapping[str, Any],
        items: list[tuple[str, int]],
        digest: str,
        total: int,
        mix: bytes | None,
    ) -> None:
        """The ticket from the seed (v3: and the witness's mix), the card holding it, and
        the pick's deadline; the pick joins the draw."""
        d = r["data"]
        n = d["pick"]
        at = datetime.fromisoformat(r["at"])
        deadline = datetime.fromisoformat(d["deadline"])
        if deadline != at + timedelta(seconds=self.rules.present_seconds):
            self.bad.append(Mismatch(i, n, f"deadline {d['deadline']} is not drawn at + "
                                     f"{self.rules.present_seconds} s"))  # fmt: skip
        card = d["card"]
        why = self.external.get(card) or self.own_bar(card)
        if why is not None:
            self.bad.append(Mismatch(i, n, f"barred card {card} ({why}) was drawn"))
        if not (total if self.trust_bins else items):
            self.bad.append(Mismatch(i, n, "pick drawn from an empty bin"))
        else:
            seed, sid, attempt = self.seed, self.session_id, d["attempt"]
            if mix is None:
                ticket, _ = ticket_index(seed, sid, n, attempt, digest, total)
            else:
                ticket, _ = ticket_index_v3(seed, sid, n, attempt, digest, mix, total)
            if ticket != d["ticket"]:
                self.bad.append(
                    Mismatch(i, n, f"ticket {d['ticket']} recorded, seed gives {ticket}")
                )
            if items:  # trusted bins: the draw's own tree located the ticket's card
                k = locate(items, ticket)
                if items[k][0] != card:
                    self.bad.append(Mismatch(i, n, f"winner {card} recorded, ticket {ticket} is "
                                             f"{items[k][0]}'s"))  # fmt: skip
                else:
                    first = sum(w for _, w in items[:k])
                    if (d["tickets"], d["first"]) != (items[k][1], first):
                        self.bad.append(Mismatch(i, n, f"{card} holds tickets {first}.."
                                                 f"{first + items[k][1] - 1}, recorded "
                                                 f"{d['first']} + {d['tickets']}"))  # fmt: skip
        p = _Pick(n, card, d["position"], deadline)
        self.picks[n] = p
        self.card_picks.setdefault(card, []).append(p)
        if 1 <= p.position <= self.rules.winners:
            self.last[p.position] = p
            self.draws[p.position] = self.draws.get(p.position, 0) + 1
        self.refresh(card)

    def explain(self, items: list[tuple[str, int]], d: Mapping[str, Any]) -> str:
        """Name what the recorded bin holds that it must not: barred cards left in."""
        total = sum(w for _, w in items)
        base = (
            f"eligible bin digest/count/total do not match: recorded {d['bin_count']} cards, "
            f"{d['bin_total']} tickets; the records give {len(items)} cards, {total} tickets"
        )
        barred = self.barred_in_bin()
        tries = [barred] + ([[c] for c in barred] if 1 < len(barred) <= _DIAGNOSE_SINGLES else [])
        for extra in tries:
            if not extra or len(items) + len(extra) != d["bin_count"]:
                continue
            full = sorted([*items, *((c, self.bin[c]) for c in extra)])
            if bin_digest(full) == d["bin_digest"]:
                return f"barred card(s) left in the bin: {', '.join(extra)}"
        return base

    def no_eligible(self, i: int, d: Mapping[str, Any]) -> None:
        self.apply(i, None, d)
        self.check_position(i, None, d)
        if self.eligible:
            self.bad.append(Mismatch(i, None, f"no_eligible recorded while {len(self.eligible)} "
                                     "card(s) were eligible"))  # fmt: skip

    # ---------------------------------------------------------- resolutions

    def resolution(self, i: int, r: Mapping[str, Any]) -> None:
        d = r["data"]
        t = r["type"]
        n = d["pick"]
        p = self.picks.get(n)
        if p is None:
            self.bad.append(Mismatch(i, n, f"{t} for a pick that was never drawn"))
            return
        if "card" in d and d["card"] != p.card:
            self.bad.append(Mismatch(i, n, f"{t} names {d['card']}, the pick drew {p.card}"))
        at = datetime.fromisoformat(r["at"])
        if t == PRESENTED:
            self.presented(i, n, p, d, at)
        elif t == ADD_ON:
            self.add_on(i, n, p, d)
        elif t == AWARDED:
            self.awarded(i, n, p, d)
        elif t == NO_SHOW:
            if p.state != "pending":
                self.bad.append(Mismatch(i, n, f"no-show of a pick that is {p.state}"))
            reasons = {x.value for x in NoShowReason}
            if d["reason"] not in reasons:
                self.bad.append(Mismatch(i, n, f"no-show reason {d['reason']!r}"))
            if d["reason"] == NoShowReason.TIMEOUT and at < p.deadline:
                self.bad.append(Mismatch(i, n, "timed out before its deadline"))
            self.set_state(p, "no_show")
        else:
            if p.state not in ("pending", "verified"):
                self.bad.append(Mismatch(i, n, f"void of a pick that is {p.state}"))
            if not str(d.get("reason", "")).strip():
                self.bad.append(Mismatch(i, n, "void without a reason"))
            self.set_state(p, "void")

    def set_state(self, p: _Pick, state: str) -> None:
        p.state = state
        self.refresh(p.card)

    def presented(self, i: int, n: int, p: _Pick, d: Mapping[str, Any], at: datetime) -> None:
        if p.state != "pending":
            self.bad.append(Mismatch(i, n, f"presentation of a pick that is {p.state}"))
        if at > p.deadline:
            self.bad.append(Mismatch(i, n, f"presented at {at.isoformat()}, after its deadline "
                                     f"{p.deadline.isoformat()}"))  # fmt: skip
        try:
            who = Presenter(d["presenter"])
            DocumentType(d["document"])
            last_digits(d["last_digits"])
        except ValueError as e:
            self.bad.append(Mismatch(i, n, f"presentation details: {e}"))
            who = None
        if who == Presenter.PROXY and not d.get("proxy"):
            self.bad.append(Mismatch(i, n, "a proxy presented without the nominated proxy"))
        if who == Presenter.WINNER and d.get("proxy"):
            self.bad.append(Mismatch(i, n, "a winner in person recorded with a proxy"))
        if not str(d.get("receipt", "")).strip():
            self.bad.append(Mismatch(i, n, "presented without a ticket receipt"))
        self.set_state(p, "verified")

    def add_on(self, i: int, n: int, p: _Pick, d: Mapping[str, Any]) -> None:
        if p.state != "verified":
            self.bad.append(Mismatch(i, n, f"add-on for a pick that is {p.state}"))
        spec = self.rules.add_on(d["add_on"])
        if spec is None:
            self.bad.append(Mismatch(i, n, f"unknown add-on {d['add_on']!r}"))
            return
        if d["add_on"] in p.add_ons:
            self.bad.append(Mismatch(i, n, f"add-on {d['add_on']!r} recorded twice"))
        p.add_ons[d["add_on"]] = bool(d["verified"])
        expected = [x.to_dict() for x in spec.prizes] if d["verified"] else []
        if d["prizes"] != expected:
            self.bad.append(Mismatch(i, n, f"add-on {d['add_on']!r} prizes are not the rules'"))

    def awarded(self, i: int, n: int, p: _Pick, d: Mapping[str, Any]) -> None:
        if p.state != "verified":
            self.bad.append(Mismatch(i, n, f"award of a pick that is {p.state}, not presented"))
        if d.get("winner_card") != p.card:
            self.bad.append(Mismatch(i, n, "the award does not name the winner's card"))
        if d["position"] != p.position:
            self.bad.append(Mismatch(i, n, f"award for position {d['position']}, pick is "
                                     f"position {p.position}"))  # fmt: skip
        if d["source"] == AwardSource.POSITION:
            expected = None
            if 1 <= p.position <= self.rules.winners:
                expected = self.rules.prize_for(p.position)
            if expected is None or expected.to_dict() != d["prize"]:
                self.bad.append(Mismatch(i, n, "prize is not the rules' prize for the position"))
        elif d["source"] == AwardSource.DEVICE:
            if not str(d.get("ref", "")).strip():
                self.bad.append(Mismatch(i, n, "a device's prize without the device's reference"))
        elif d["source"] == AwardSource.STAGE:
            # what the game gave is checked against the game's own stream (raps verify)
            lines = d.get("lines") or []
            if not str(d.get("ref", "")).strip() or not lines or lines[0] != d["prize"]:
                self.bad.append(Mismatch(i, n, "a stage game's award without its game and lines"))
        else:
            self.bad.append(Mismatch(i, n, f"prize source {d['source']!r}"))
        if list(d.get("add_ons", [])) != [a for a, ok in p.add_ons.items() if ok]:
            self.bad.append(Mismatch(i, n, "award's add-ons are not the verified ones"))
        self.set_state(p, "awarded")

    def closed(self, i: int, d: Mapping[str, Any]) -> None:
        pending = [p.number for p in self.picks.values() if p.state == "pending"]
        if pending:
            self.bad.append(Mismatch(i, None, f"closed with pick {pending[0]} pending"))
        filled = sum(1 for p in self.last.values() if p.state in _WON)
        if d.get("positions_filled") != filled:
            self.bad.append(Mismatch(i, None, f"positions_filled {d.get('positions_filled')}, "
                                     f"the records give {filled}"))  # fmt: skip
        self.closed_at = i


def _open(
    recs: list[dict[str, Any]], bad: list[Mismatch], trust_bins: bool = False
) -> _Replay | None:
    """Seed, commitment, rules and the bin at open; None when nothing else can be checked."""
    opened = [i for i, r in enumerate(recs) if r.get("type") == OPENED]
    closed = [i for i, r in enumerate(recs) if r.get("type") == CLOSED]
    if len(opened) != 1 or opened[0] != 0:
        bad.append(Mismatch(0, None, f"expected draw.opened first and once, found {len(opened)}"))
        return None
    if len(closed) != 1:
        bad.append(Mismatch(len(recs), None, "draw is not closed: its seed is not revealed"))
        return None
    o = recs[0]["data"]
    ci = closed[0]
    try:
        seed = bytes.fromhex(recs[ci]["data"]["seed"])
        seed_ok = commitment(seed) == o["commitment"]
    except (ValueError, KeyError, TypeError):
        seed, seed_ok = b"", False
    if not seed_ok:
        bad.append(Mismatch(ci, None, "revealed seed does not match the commitment made at open"))
        return None
    derivation = o.get("derivation")
    if derivation not in (DERIVATION_V2, DERIVATION_V3):
        bad.append(Mismatch(0, None, f"derivation {derivation!r}, not {DERIVATION_V2} or "
                            f"{DERIVATION_V3}"))  # fmt: skip
        return None
    rules = DrawRules.from_dict(o["rules"])
    items = [(c, w) for c, w in o["bin"]]
    ok = all(isinstance(w, int) and not isinstance(w, bool) and w >= 1 for _, w in items)
    if not ok:
        bad.append(Mismatch(0, None, "bin holds a card with fewer than 1 ticket"))
    if any(a >= b for (a, _), (b, _) in itertools.pairwise(items)):
        bad.append(Mismatch(0, None, "bin is not in canonical (sorted, unique) order"))
        items = sorted(dict(items).items())
    elif ok and not trust_bins:
        total = sum(w for _, w in items)
        if bin_digest(items) != o["bin_digest"]:
            bad.append(Mismatch(0, None, "bin does not match its recorded digest"))
        if (len(items), total) != (o["bin_count"], o["bin_total"]):
            bad.append(Mismatch(0, None, f"bin holds {len(items)} cards and {total} tickets, "
                                f"recorded {o['bin_count']} and {o['bin_total']}"))  # fmt: skip
    replay = _Replay(seed, recs[0]["session_id"], rules, items, o["barred"], bad)
    replay.derivation = derivation
    replay.commitment = str(o["commitment"])
    replay.trust_bins = trust_bins
    return replay


def verify_draw(
    records: Iterable[Record | dict[str, Any]],
    *,
    entries: Sequence[tuple[int, str]] | None = None,
    witness_key: str | None = None,
    trust_bins: bool = False,
) -> list[Mismatch]:
    """All mismatches found in one ticket draw's records (empty list: the draw holds).

    `entries`: the (seq, hash) of each record's journal entry, when known: a witness's
    signature must then name the entry of its request. `witness_key`: a witness public key
    the inspector pinned. `trust_bins`: the recorded bins' digests are taken as they are
    (the daemon's restore matched each in the draw's own tree), every other check made."""
    recs = _as_dicts(records)
    bad: list[Mismatch] = []
    try:
        replay = _open(recs, bad, trust_bins)
        if replay is not None and replay.derivation == DERIVATION_V3:
            replay.witness, problems = witness_at_open(
                recs[0]["data"], replay.session_id, DERIVATION_V3, witness_key
            )
            bad.extend(Mismatch(0, None, p) for p in problems)
            replay.entries = entries if entries is None or len(entries) == len(recs) else None
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        return [*bad, Mismatch(0, None, f"malformed draw.opened record: {e!r}")]
    if replay is None:
        return bad
    draw_id = recs[0]["data"].get("draw_id")
    for i, r in enumerate(recs[1:], 1):
        d = r.get("data", {})
        n = d.get("pick") if isinstance(d, dict) else None
        try:
            if r["session_id"] != replay.session_id or d.get("draw_id") != draw_id:
                bad.append(Mismatch(i, n, "record belongs to another draw"))
                continue
            if replay.closed_at is not None:
                bad.append(Mismatch(i, n, f"{r['type']} after the draw was closed"))
            t = r["type"]
            v3 = replay.derivation == DERIVATION_V3
            if t == PICKED:
                replay.picked_v3(i, r) if v3 else replay.pick(i, r)
            elif t == REQUESTED and v3:
                replay.request(i, r)
            elif t == NO_ELIGIBLE:
                replay.no_eligible(i, d)
            elif t in (PRESENTED, ADD_ON, AWARDED, NO_SHOW, VOIDED):
                replay.resolution(i, r)
            elif t == CLOSED:
                replay.closed(i, d)
            else:
                bad.append(Mismatch(i, n, f"unknown record type {t!r}"))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            bad.append(Mismatch(i, n, f"malformed {r.get('type')!r} record: {e!r}"))
    return bad
