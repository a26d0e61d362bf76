"""What a stage game pays, turned into records: the stage ledger's entries, the car spots
a position earns, the draw's award of each winner, and the winner's prize letter.

Why one place: a game's close pays several winners across four journal streams
(`stage-prizes`, `car-spots:<car>`, `draw:<draw>`, `prizes`) and every one of those
records must be made by one command, so that the close is one journal append and a retry
(the same command id) finds each step already done and makes nothing. Each step's
command id is the host's, suffixed with what it does (`<id>/post/3`, `<id>/award/2`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from raps.tickets.stage import StageDesk, draw_stream
from selector.records import Record
from selector.session import Command, PickState
from selector.stagegames.cars import CarQualifiers
from selector.stagegames.game import Award
from selector.stagegames.ledger import StageLedger
from selector.tickets.draw_picks import AwardSource, TicketPick
from selector.tickets.draw_rules import PrizeKind as DrawPrizeKind
from selector.tickets.draw_rules import PrizeSpec
from selector.tickets.draw_session import TicketDrawSession


def sub(cmd: Command, what: str) -> Command:
    """One step of the host's command, under its own derived id."""
    return Command(f"{cmd.command_id}/{what}", cmd.actor, cmd.at)


def record_digest(rec: Record) -> str:
    """The SHA-256 of a record's canonical JSON: a prize letter's verification code."""
    body = json.dumps(rec.to_dict(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(body.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Winner:
    """A verified winner of the draw: their pick, as the game takes them, in order."""

    position: int
    pick: TicketPick

    @property
    def card(self) -> str:
        return self.pick.card


def verified(s: TicketDrawSession) -> list[Winner]:
    """The draw's winners in position order: the last pick of each filled position."""
    last: dict[int, TicketPick] = {}
    for p in s.picks:
        last[p.position] = p
    return [
        Winner(pos, p)
        for pos, p in sorted(last.items())
        if p.state in (PickState.VERIFIED, PickState.AWARDED)
    ]


class Payer:
    """Pays the winners of one draw within one host command."""

    def __init__(
        self,
        stage: StageDesk,
        ledger: StageLedger,
        s: TicketDrawSession,
        cmd: Command,
        day: date,
    ) -> None:
        self.stage = stage
        self.ledger = ledger
        self.s = s
        self.cmd = cmd
        self.day = day

    def start_ledger(self) -> None:
        if not self.ledger.started:
            self.ledger.start(sub(self.cmd, "start"))

    def qualify(
        self, cars: Sequence[tuple[CarQualifiers, tuple[int, ...]]], w: Winner
    ) -> list[Award]:
        """The car spots (or R5,000 instead, rule 70) the winner's position earns."""
        out = []
        for q, positions in cars:
            if w.position in positions:
                out.append(q.qualify(sub(self.cmd, f"spot/{q.car_draw_id}/{w.position}"),
                                     w.card, self.s.draw_id, w.position))  # fmt: skip
        return out

    def post(self, awards: Sequence[Award]) -> None:
        self.start_ledger()
        for a in awards:
            self.ledger.post(sub(self.cmd, f"post/{a.position}/{a.kind.value}/{a.ref}"), a,
                             self.day)  # fmt: skip

    def award(self, w: Winner, awards: Sequence[Award], ref: str) -> None:
        """The draw's award of the winner (every line the game gave) and their letter."""
        lines = tuple(PrizeSpec(a.amount, DrawPrizeKind(a.kind.value)) for a in awards)
        out = self.s.award(sub(self.cmd, f"award/{w.pick.number}"), w.pick.number, lines[0],
                           AwardSource.STAGE, ref, lines)  # fmt: skip
        if out.replayed:  # a retry: the award and its letter were made the first time
            return
        rec = next(r for r in out.records if r.type == "draw.awarded")
        self.letter(w.pick.number, self.s.session_id, awards, rec, w.pick)

    def letter(
        self,
        pick: int,
        session_id: str,
        awards: Sequence[Award],
        rec: Record,
        tp: TicketPick | None,
    ) -> None:
        """The winner's prize letter, when there is something to collect (a qualifying
        spot alone, amount 0 and no add-on, has none)."""
        stage, s = self.stage, self.s
        sd = stage.draws[s.draw_id]
        kept = [a for a in sd.rules.add_ons if tp is not None and tp.add_ons.get(a.id)]
        total = sum(a.amount for a in awards) + sum(p.amount for a in kept for p in a.prizes)
        if total == 0:
            return
        add_ons = [
            {"id": a.id, "name": a.name, "prizes": [[p.amount, p.kind.value] for p in a.prizes]}
            for a in kept
        ]
        card = awards[0].card
        prof = stage.tickets.floor.profile(card) if stage.tickets.floor else None
        stage.prizes.issue(
            sub(self.cmd, f"letter/{session_id}/{pick}"),
            draw_id=s.draw_id, draw_name=sd.draw.name, session_id=session_id, pick=pick,
            winner_card=card, winner_name=prof.display_name if prof is not None else card,
            prizes=[(a.amount, a.kind.value) for a in awards], add_ons=add_ons,
            awarded_at=rec.at, collect_days=sd.collect_days, digest_hex=record_digest(rec),
        )  # fmt: skip


def by_position(awards: Sequence[Award]) -> dict[int, list[Award]]:
    out: dict[int, list[Award]] = {}
    for a in awards:
        out.setdefault(a.position, []).append(a)
    return out


__all__ = ["Payer", "Winner", "by_position", "draw_stream", "record_digest", "sub", "verified"]
