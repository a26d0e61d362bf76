"""The stage prize ledger and the digit safe's progressive derived from it.

Why derived: the safe's value is never a stored number that a restart or a kill -9 could
change; it is the fold of the ledger's records,

    value = sum(stage.safe_base) + sum(stage.safe_draw increments) - sum(safe and vault
            share payouts),

so replaying the journal always gives the same value, and it is never negative (a payout
is exactly the value at that moment, never more).

Which draws grow the safe (000 rule 126, "increase by R20,000 per cash draw if not won"):
the safe is played only at the Saturday 21:00 cash draw (rules 123-126), so a *cash
draw* here is, by default, a Saturday 21:00 cash draw (game kind `podium+safe`) at which
the safe was offered (`offer_safe`, when its game opened) and not cracked. Each such
draw adds one increment (R20,000) when its game closes (`safe_draw_closed(draw_id, kind,
cracked)`), once per draw id; a draw that cracked it adds none. Which game kinds count
is the rules' `grows_at` (config); every other draw is refused: Wednesday, Thursday
(`podium`), 15:00 (`podium+bonus`), 19:00 (`paddles`), the car draws (`car_spots`,
`car_final`) and the 21:30 vault share never count. The safe's first value is the base
(R100,000, `start`, which records the rules, so a verifier replays with the rules the
ledger ran by); after a crack it starts again at the base (`reset_on_crack`). On 20 Dec
21:30, if it was never cracked, the vault is shared among 5 winners (rules 135-138):
equal shares in cents, any remainder one cent each to the earliest positions; the value
is then 0 and the safe is closed. The share is refused while a draw that offered the
safe has not closed it (`in_play`): that draw's winners may still crack it, and a safe
closed under them could never pay them or grow.

Win once per promotional day (rules 74, 127, 139) is not decided here: the ticket draws
bar the day's earlier winners (their picks are the one source of truth,
`raps.tickets.stage.StageDesk.winners_today` and `selector.tickets.draw_verify.verify_day`),
so every prize a game gives goes to a card its draw was allowed to draw. `winners_on` is
a reading, for reports.

Records (stream `stage-prizes`), each with the host command's id: `stage.prize` (an
entry), `stage.safe_base`, `stage.safe_offered`, `stage.safe_draw`, `stage.vault_shared`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, TypeVar

from selector.records import Record
from selector.session import Command, CommandConflict
from selector.stagegames.game import (
    Award,
    DrawGame,
    PrizeKind,
    StageError,
    amount,
    cards_in_order,
)

STREAM = "stage-prizes"
PRIZE = "stage.prize"
SAFE_BASE = "stage.safe_base"
SAFE_OFFERED = "stage.safe_offered"
SAFE_DRAW = "stage.safe_draw"
VAULT_SHARED = "stage.vault_shared"
RECORD_TYPES = (PRIZE, SAFE_BASE, SAFE_OFFERED, SAFE_DRAW, VAULT_SHARED)
T = TypeVar("T")
PAYOUTS = (PrizeKind.SAFE, PrizeKind.VAULT_SHARE)


@dataclass(frozen=True, slots=True)
class ProgressiveRules:
    base: int = 10_000_000  # R100,000.00
    increment: int = 2_000_000  # R20,000.00
    reset_on_crack: bool = True
    vault_winners: int = 5
    # the game kinds whose draws grow the safe when it is not cracked there (rule 126)
    grows_at: tuple[str, ...] = (DrawGame.PODIUM_SAFE.value,)

    def __post_init__(self) -> None:
        amount("base", self.base)
        amount("increment", self.increment)
        object.__setattr__(self, "grows_at", tuple(self.grows_at))
        for kind in self.grows_at:
            if kind not in {k.value for k in DrawGame}:
                raise StageError(f"grows_at: {kind!r} is not a game kind")
        if self.vault_winners < 1:
            raise StageError("the vault is shared among at least one winner")

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "increment": self.increment,
            "reset_on_crack": self.reset_on_crack,
            "vault_winners": self.vault_winners,
            "grows_at": list(self.grows_at),
        }

    @classmethod
    def of(cls, d: dict[str, Any]) -> ProgressiveRules:
        return cls(
            d["base"], d["increment"], d["reset_on_crack"], d["vault_winners"],
            tuple(d["grows_at"]),
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Entry:
    entry: int
    day: date
    award: Award


class StageLedger:
    def __init__(self, rules: ProgressiveRules | None = None) -> None:
        self.rules = rules or ProgressiveRules()
        self.records: list[Record] = []
        self.entries: list[Entry] = []
        self.bases = 0
        self.increments = 0
        self.payouts = 0
        self.started = False
        self.cracks = 0
        self.shared = False
        self._offered: dict[str, str] = {}  # draw id -> the safe game offered there
        self._safe_draws: dict[str, bool] = {}  # draw id -> cracked
        self._by_key: dict[tuple[str, int, str, str], Entry] = {}
        self._done: dict[str, tuple[tuple[Any, ...], Any]] = {}

    # -- reading ----------------------------------------------------------------------

    @property
    def safe_value(self) -> int:
        return self.bases + self.increments - self.payouts

    @property
    def ever_cracked(self) -> bool:
        """Whether the safe was ever cracked (the 20 Dec 21:30 vault share is held only if
        not, rule 135)."""
        return self.cracks > 0

    def offered(self, draw_id: str) -> bool:
        return draw_id in self._offered

    def in_play(self) -> list[str]:
        """Draws that offered the safe and have not closed it yet: their value stands
        until they do (a crack there pays it, a miss grows it)."""
        return [d for d in self._offered if d not in self._safe_draws]

    def grew(self, draw_id: str) -> bool | None:
        """None: the draw has not closed the safe; else whether it was cracked there."""
        return self._safe_draws.get(draw_id)

    def winners_on(self, day: date) -> dict[str, str]:
        """Cards with a stage prize on the day, with the draw (a reading, for reports)."""
        return {e.award.card: e.award.draw_id for e in self.entries if e.day == day}

    def totals_by_kind(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for e in self.entries:
            out[e.award.kind.value] = out.get(e.award.kind.value, 0) + e.award.amount
        return out

    def safe_history(self) -> list[tuple[str, str, int, int, str]]:
        """(record type, draw or reason, change, value after, when), for reports and the
        screen: every change of the safe, in order."""
        out: list[tuple[str, str, int, int, str]] = []
        value = 0
        for r in self.records:
            d = r.data
            if r.type == SAFE_BASE:
                change, what = d["amount"], d["reason"]
            elif r.type == SAFE_DRAW:
                change, what = d["increment"], d["draw_id"]
            elif r.type == VAULT_SHARED:
                change, what = -d["value"], d["draw_id"]
            elif r.type == PRIZE and d["kind"] == PrizeKind.SAFE.value:
                change, what = -d["amount"], d["draw_id"]
            else:
                continue
            value += change
            out.append((r.type, what, change, value, r.at.isoformat()))
        return out

    # -- commands ---------------------------------------------------------------------

    def start(self, cmd: Command) -> Record:
        """The safe opens at its base value, once, before any draw."""

        def run() -> Record:
            if self.started:
                raise StageError("the safe has already started")
            self.started = True
            return self._base(cmd, "start", rules=self.rules.to_dict())

        return self._once(cmd, ("start",), run)

    def post(self, cmd: Command, award: Award, day: date) -> Entry:
        """Record one prize; the same award posted again returns the first entry, and a
        different one under the same (draw, position, kind, ref) is refused: a re-post
        never pays twice, and never silently pays something else."""

        def run() -> Entry:
            key = (award.draw_id, award.position, award.kind.value, award.ref)
            known = self._by_key.get(key)
            if known is not None:
                if (known.award, known.day) != (award, day):
                    raise StageError(f"entry {known.entry} already records {key} as "
                                     f"{known.award.to_dict()} on {known.day}: a different "
                                     "award under the same key is refused")  # fmt: skip
                return known
            amount("prize", award.amount)
            if award.kind is PrizeKind.VAULT_SHARE:
                raise StageError("vault shares are paid by share_vault only")
            if award.kind is PrizeKind.SAFE:
                self._check_safe_open()
                if award.draw_id not in self._offered:
                    raise StageError(f"the safe was not offered at draw {award.draw_id}")
                if award.amount != self.safe_value:
                    raise StageError(
                        f"the safe holds {self.safe_value}, not the {award.amount} claimed"
                    )
                if award.draw_id in self._safe_draws:
                    raise StageError(f"draw {award.draw_id} has already closed its safe")
            entry = self._entry(cmd, award, day)
            if award.kind is PrizeKind.SAFE:
                self.cracks += 1
                if self.rules.reset_on_crack:
                    self._base(cmd, "reset after crack")
            return entry

        return self._once(cmd, ("post", award, day), run)

    def offer_safe(self, cmd: Command, draw_id: str, game_id: str, value: int) -> Record:
        """A safe game opens at a draw with the value the ledger holds now (rule 126)."""

        def run() -> Record:
            self._check_safe_open()
            if draw_id in self._offered:
                raise StageError(f"the safe was already offered at draw {draw_id}")
            if value != self.safe_value:
                raise StageError(f"the safe holds {self.safe_value}, not the {value} offered")
            self._offered[draw_id] = game_id
            data = {"draw_id": draw_id, "game_id": game_id, "value": value}
            return self._emit(cmd, SAFE_OFFERED, data)

        return self._once(cmd, ("offer", draw_id, game_id, value), run)

    def safe_draw_closed(self, cmd: Command, draw_id: str, kind: str, cracked: bool) -> Record:
        """A draw whose game kind grows the safe is over: +increment unless cracked there.

        Refused for a kind the rules do not count (rule 126's reading, module docstring),
        and for a `podium+safe` draw at which the safe was never offered."""

        def run() -> Record:
            self._check_safe_open()
            if kind not in self.rules.grows_at:
                raise StageError(f"draw {draw_id} ({kind}) does not grow the safe: only "
                                 f"{', '.join(self.rules.grows_at)} draws do")  # fmt: skip
            if kind == DrawGame.PODIUM_SAFE.value and draw_id not in self._offered:
                raise StageError(f"the safe was not offered at draw {draw_id}")
            if draw_id in self._safe_draws:
                raise StageError(f"draw {draw_id} has already closed its safe")
            paid = any(
                e.award.draw_id == draw_id and e.award.kind is PrizeKind.SAFE for e in self.entries
            )
            if paid != cracked:
                raise StageError(f"draw {draw_id}: cracked={cracked} but the ledger says {paid}")
            self._safe_draws[draw_id] = cracked
            inc = 0 if cracked else self.rules.increment
            self.increments += inc
            data = {"draw_id": draw_id, "kind": kind, "cracked": cracked, "increment": inc}
            return self._emit(cmd, SAFE_DRAW, data)

        return self._once(cmd, ("safe_draw", draw_id, kind, cracked), run)

    def share_vault(
        self, cmd: Command, draw_id: str, day: date, winners: Sequence[str]
    ) -> list[Entry]:
        """20 Dec 21:30: an uncracked vault shared among the drawn winners (rules 135-138)."""

        def run() -> list[Entry]:
            self._check_safe_open()
            if self.cracks:
                raise StageError("the safe was cracked: there is no vault share (rule 135)")
            if self.in_play():
                raise StageError(f"the safe is in play at draw {self.in_play()[0]}: the vault "
                                 "is shared once that draw has closed its safe")  # fmt: skip
            cards = cards_in_order(list(winners))
            if len(cards) != self.rules.vault_winners:
                raise StageError(f"the vault is shared among {self.rules.vault_winners} winners")
            value = self.safe_value
            each, rest = divmod(value, len(cards))
            shares = [each + (1 if i < rest else 0) for i in range(len(cards))]
            awards = [
                Award(draw_id, i + 1, c, shares[i], PrizeKind.VAULT_SHARE, f"vault:{draw_id}")
                for i, c in enumerate(cards)
            ]
            self.shared = True
            data = {"draw_id": draw_id, "day": day.isoformat(), "value": value,
                    "shares": [a.to_dict() for a in awards]}  # fmt: skip
            self._emit(cmd, VAULT_SHARED, data)
            return [self._add(a, day) for a in awards]

        return self._once(cmd, ("share", draw_id, day, tuple(winners)), run)

    # -- replay -----------------------------------------------------------------------

    @classmethod
    def replay(
        cls, records: Iterable[Record], rules: ProgressiveRules | None = None
    ) -> StageLedger:
        """Rebuild by re-issuing every command (under its own id); refuses a record the
        rules could not make. Without `rules`, those the `start` record holds."""
        todo = list(records)
        if rules is None and todo and todo[0].type == SAFE_BASE and "rules" in todo[0].data:
            try:
                rules = ProgressiveRules.of(todo[0].data["rules"])
            except (KeyError, TypeError, ValueError) as e:
                raise StageError(f"record 0: the safe's rules cannot be read ({e})") from e
        out = cls(rules)
        i = 0
        while i < len(todo):
            before = len(out.records)
            try:
                out._reissue(i, todo[i])
            except (KeyError, TypeError, ValueError, CommandConflict) as e:
                raise StageError(f"record {i}: {e}") from e
            made = out.records[before:]
            if not made:
                raise StageError(f"record {i}: repeats an earlier record")
            for k, m in enumerate(made):
                if i + k >= len(todo) or m.to_dict() != todo[i + k].to_dict():
                    raise StageError(f"record {i + k}: does not follow from the records before")
            i += len(made)
        return out

    def _reissue(self, i: int, rec: Record) -> None:
        cid = rec.data.get("command_id")
        cmd = Command(cid if isinstance(cid, str) and cid else f"replay:{i}", rec.actor, rec.at)
        d = rec.data
        if rec.type == SAFE_BASE:
            self.start(cmd)
        elif rec.type == PRIZE:
            self.post(cmd, Award.from_dict(d), date.fromisoformat(d["day"]))
        elif rec.type == SAFE_OFFERED:
            self.offer_safe(cmd, d["draw_id"], d["game_id"], d["value"])
        elif rec.type == SAFE_DRAW:
            self.safe_draw_closed(cmd, d["draw_id"], d["kind"], d["cracked"])
        elif rec.type == VAULT_SHARED:
            cards = [s["card"] for s in d["shares"]]
            self.share_vault(cmd, d["draw_id"], date.fromisoformat(d["day"]), cards)
        else:
            raise StageError(f"record {i}: {rec.type!r} is not a ledger record")

    # -- inside -----------------------------------------------------------------------

    def _check_safe_open(self) -> None:
        if not self.started:
            raise StageError("the safe has not started")
        if self.shared:
            raise StageError("the vault has been shared: the safe is closed")

    def _base(self, cmd: Command, reason: str, **more: Any) -> Record:
        self.bases += self.rules.base
        return self._emit(cmd, SAFE_BASE, {"amount": self.rules.base, "reason": reason, **more})

    def _entry(self, cmd: Command, award: Award, day: date) -> Entry:
        data = {**award.to_dict(), "day": day.isoformat(), "entry": len(self.entries) + 1}
        self._emit(cmd, PRIZE, data)
        return self._add(award, day)

    def _add(self, award: Award, day: date) -> Entry:
        entry = Entry(len(self.entries) + 1, day, award)
        self.entries.append(entry)
        self._by_key[(award.draw_id, award.position, award.kind.value, award.ref)] = entry
        if award.kind in PAYOUTS:
            self.payouts += award.amount
        return entry

    def _emit(self, cmd: Command, type_: str, data: dict[str, Any]) -> Record:
        rec = Record(type_, STREAM, cmd.at, cmd.actor, {"command_id": cmd.command_id, **data})
        self.records.append(rec)
        return rec

    def _once(self, cmd: Command, fingerprint: tuple[Any, ...], run: Callable[[], T]) -> T:
        prev = self._done.get(cmd.command_id)
        if prev is not None:
            if prev[0] != fingerprint:
                raise CommandConflict(f"command id {cmd.command_id!r} was used for another command")
            out: T = prev[1]
            return out
        result = run()
        self._done[cmd.command_id] = (fingerprint, result)
        return result
