"""Proxies for ticket draws: who may stand at the stage for an absent member.

The rules (seed 003 rules 11-12, seed 000 rules 15-17, 23 and their repeats): a member
nominates one proxy per draw on the prescribed form, until 15 minutes before the draw;
a proxy represents at most one participant in a draw; a proxy cannot take part in the
draw they stand in for; a proxy never receives the prize (selector.tickets.prizes).

The book keeps nominations only.  Who takes part in a draw (cards with entries in its
bin) and the form's deadline come in with each command, so the book has no ledger and
reads no clock.  A proxy is identified by document type, the last digits of the
document and the casefolded name (never a whole ID number), and by their card when
they are a member too.

A proxy who is a participant too is the draw's policy (`ProxyConflict`, per book or per
nomination): refused, or accepted with the proxy's own card barred from the draw.  Either
way `barred(draw)` names every member proxy, so one who enters after the form was taken
is barred at the draw's open all the same.

Deadlines are inclusive: a nomination or withdrawal at exactly the deadline is
accepted, one microsecond later is refused (`after_deadline`); an opening time, when
given (000: forms from 08h00), is inclusive too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from selector.records import Record
from selector.session import Command, CommandConflict
from selector.tickets.draw_rules import DocumentType
from selector.tickets.draw_rules import last_digits as _last_digits

NOMINATED = "proxy.nominated"
WITHDRAWN = "proxy.withdrawn"
STREAM_PREFIX = "proxies:"
DEFAULT_DEADLINE_MINUTES = 15
NAME_MAX = 80

Participants = Callable[[str], bool] | AbstractSet[str]


class ProxyConflict(StrEnum):
    """What to do when the nominated proxy is a participant of the same draw (000 r. 17)."""

    BAR_ENTRY = "bar_entry"  # accept; the proxy's own card is barred from the draw
    REFUSE_NOMINATION = "refuse_nomination"  # refuse with proxy_is_participant


class ProxyReason(StrEnum):
    """Why a nomination or withdrawal was refused: stable strings (API and metrics)."""

    BEFORE_OPEN = "before_open"
    AFTER_DEADLINE = "after_deadline"
    MEMBER_HAS_PROXY = "member_has_proxy"
    PROXY_REPRESENTS_ANOTHER = "proxy_represents_another"
    PROXY_IS_PARTICIPANT = "proxy_is_participant"
    PROXY_IS_MEMBER = "proxy_is_member"  # a member cannot stand as their own proxy
    MEMBER_IS_PROXY = "member_is_proxy"  # stands for someone else in this draw
    MEMBER_NOT_PARTICIPANT = "member_not_participant"
    NO_PROXY = "no_proxy"  # withdraw: the member has no proxy for the draw
    BAD_DOCUMENT = "bad_document"
    BAD_NAME = "bad_name"
    BAD_CARD = "bad_card"


class ProxyRefused(ValueError):
    """The rules refuse the command; nothing was recorded."""

    def __init__(self, reason: ProxyReason, detail: str) -> None:
        super().__init__(f"{reason.value}: {detail}")
        self.reason = reason
        self.detail = detail


def proxy_deadline(draw_at: datetime, minutes: int = DEFAULT_DEADLINE_MINUTES) -> datetime:
    """The last moment a proxy form is taken: 15 minutes before the draw by default."""
    return draw_at - timedelta(minutes=minutes)


def check_document(document: object, last_digits: object) -> tuple[DocumentType, str]:
    """A document type and 2 to 4 of its last digits; the whole number is never taken."""
    try:
        kind = DocumentType(str(document))
    except ValueError:
        raise ProxyRefused(
            ProxyReason.BAD_DOCUMENT,
            f"document must be one of {[d.value for d in DocumentType]}, not {document!r}",
        ) from None
    try:
        return kind, _last_digits(last_digits)  # type: ignore[arg-type]
    except ValueError as e:
        raise ProxyRefused(ProxyReason.BAD_DOCUMENT, str(e)) from None


def check_name(name: object) -> str:
    """A printable name of 1 to 80 characters, stripped."""
    text = name.strip() if isinstance(name, str) else ""
    if not text or len(text) > NAME_MAX or not text.isprintable():
        raise ProxyRefused(ProxyReason.BAD_NAME, f"name must be 1 to {NAME_MAX} printable chars")
    return text


def _card(what: str, card: object) -> str:
    """Card ids as the floor takes them (selector.events.check_card): printable, no spaces."""
    if not isinstance(card, str) or not card.isprintable() or any(c.isspace() for c in card):
        raise ProxyRefused(ProxyReason.BAD_CARD, f"{what} must be a card id without spaces")
    if not card:
        raise ProxyRefused(ProxyReason.BAD_CARD, f"{what} must not be empty")
    return card


def _aware(what: str, at: datetime | None) -> None:
    if at is not None and (at.tzinfo is None or at.utcoffset() is None):
        raise ValueError(f"proxies: {what} must be timezone-aware")


def _person(document: str, last_digits: str, name: str) -> tuple[str, str, str]:
    """Who the proxy is, as far as the form tells: spacing and case do not make another."""
    return (document, last_digits, " ".join(name.casefold().split()))


@dataclass(frozen=True, slots=True)
class Nomination:
    """One member's proxy for one draw, as the form recorded it."""

    draw_id: str
    member: str
    name: str
    document: DocumentType
    last_digits: str
    proxy_card: str | None
    barred_card: str | None  # the proxy's card, barred when BAR_ENTRY applied
    at: datetime
    command_id: str

    @property
    def person(self) -> tuple[str, str, str]:
        return _person(self.document.value, self.last_digits, self.name)


class ProxyBook:
    """Every draw's proxy nominations; each change is a Record for the journal."""

    def __init__(self, conflict: ProxyConflict | str = ProxyConflict.BAR_ENTRY) -> None:
        self.conflict = ProxyConflict(conflict)  # the default; a draw may pass its own
        self._active: dict[str, dict[str, Nomination]] = {}  # draw -> member -> nomination
        self._done: dict[str, tuple[tuple[Any, ...], Nomination]] = {}
        # the records this book made (not those replayed into it), in order: a caller
        # journals records[len_before:] before answering
        self.records: list[Record] = []

    # ---------------------------------------------------------------- commands

    def nominate(
        self,
        cmd: Command,
        *,
        draw_id: str,
        member: str,
        name: str,
        document: DocumentType | str,
        last_digits: str,
        deadline: datetime,
        participants: Participants,
        proxy_card: str | None = None,
        opens: datetime | None = None,
        conflict: ProxyConflict | str | None = None,
    ) -> Nomination:
        """Record a proxy form; a retried command id returns its first nomination.

        `participants`: the cards with entries in the draw's bin now; `conflict`: the
        draw's policy for a proxy who is one of them (default: the book's)."""
        policy = self.conflict if conflict is None else ProxyConflict(conflict)
        fingerprint = (
            "nominate", draw_id, member, name.strip() if isinstance(name, str) else name,
            str(document), last_digits, proxy_card,
        )  # fmt: skip
        replayed = self._replayed(cmd, fingerprint)
        if replayed is not None:
            return replayed
        _card("member", member)
        text = check_name(name)
        kind, digits = check_document(document, last_digits)
        if proxy_card is not None:
            _card("proxy_card", proxy_card)
        self._in_window(cmd.at, deadline, opens)
        taking_part = participants if callable(participants) else participants.__contains__
        active = self._active.get(draw_id, {})
        if member in active:
            raise ProxyRefused(
                ProxyReason.MEMBER_HAS_PROXY, f"card {member} already has a proxy for {draw_id}"
            )
        if not taking_part(member):
            raise ProxyRefused(
                ProxyReason.MEMBER_NOT_PARTICIPANT, f"card {member} has no entries in {draw_id}"
            )
        if proxy_card == member:
            raise ProxyRefused(ProxyReason.PROXY_IS_MEMBER, "a member cannot be their own proxy")
        if any(n.proxy_card == member for n in active.values()):
            raise ProxyRefused(
                ProxyReason.MEMBER_IS_PROXY, f"card {member} stands as a proxy in {draw_id}"
            )
        person = _person(kind.value, digits, text)
        for other in active.values():
            if other.person == person or (
                proxy_card is not None and other.proxy_card == proxy_card
            ):
                raise ProxyRefused(
                    ProxyReason.PROXY_REPRESENTS_ANOTHER,
                    f"the proxy already represents another participant in {draw_id}",
                )
        barred: str | None = None
        if proxy_card is not None and taking_part(proxy_card):
            if policy is ProxyConflict.REFUSE_NOMINATION:
                raise ProxyRefused(
                    ProxyReason.PROXY_IS_PARTICIPANT,
                    f"the proxy's card has entries in {draw_id}: a proxy cannot take part",
                )
            barred = proxy_card
        nomination = Nomination(
            draw_id, member, text, kind, digits, proxy_card, barred, cmd.at, cmd.command_id
        )
        rec = Record(
            NOMINATED, STREAM_PREFIX + draw_id, cmd.at, cmd.actor,
            {
                "command_id": cmd.command_id, "draw_id": draw_id, "member": member,
                "name": text, "document": kind.value, "last_digits": digits,
                "proxy_card": proxy_card, "barred_card": barred,
                "deadline": deadline.isoformat(),
            },
        )  # fmt: skip
        self._commit(rec)
        return nomination

    def withdraw(
        self,
        cmd: Command,
        *,
        draw_id: str,
        member: str,
        deadline: datetime,
    ) -> Nomination:
        """Cancel a member's proxy before the deadline; returns the nomination withdrawn."""
        fingerprint = ("withdraw", draw_id, member)
        replayed = self._replayed(cmd, fingerprint)
        if replayed is not None:
            return replayed
        self._in_window(cmd.at, deadline, None)
        current = self._active.get(draw_id, {}).get(member)
        if current is None:
            raise ProxyRefused(ProxyReason.NO_PROXY, f"card {member} has no proxy for {draw_id}")
        rec = Record(
            WITHDRAWN, STREAM_PREFIX + draw_id, cmd.at, cmd.actor,
            {"command_id": cmd.command_id, "draw_id": draw_id, "member": member},
        )  # fmt: skip
        self._commit(rec)
        return current

    # ----------------------------------------------------------------- queries

    def proxy_for(self, draw_id: str, member: str) -> Nomination | None:
        return self._active.get(draw_id, {}).get(member)

    def nominations(self, draw_id: str) -> list[Nomination]:
        """The draw's standing nominations, in the order they were made."""
        return list(self._active.get(draw_id, {}).values())

    def barred(self, draw_id: str) -> dict[str, str]:
        """Cards the draw's open must bar, with the reason: every proxy who is a member.

        Not only those with entries at nomination: a proxy who enters tickets after the
        form was taken still cannot take part in the draw they stand in for."""
        return {
            n.proxy_card: f"proxy_for:{n.member}"
            for n in self._active.get(draw_id, {}).values()
            if n.proxy_card is not None
        }

    def answered(self, command_id: str) -> bool:
        return command_id in self._done

    # ----------------------------------------------------------------- records

    def apply(self, rec: Record) -> None:
        """Fold one journaled record in (restart); ValueError for one that cannot follow."""
        if rec.type not in (NOMINATED, WITHDRAWN):
            raise ValueError(f"not a proxy record: type {rec.type!r}")
        try:
            self._apply(rec, rec.data)
        except (KeyError, TypeError) as exc:
            raise ValueError(f"proxy record {rec.type!r}: malformed data ({exc!r})") from None

    def _apply(self, rec: Record, d: dict[str, Any]) -> None:
        draw_id, member, command_id = d["draw_id"], d["member"], d["command_id"]
        active = self._active.setdefault(draw_id, {})
        if rec.type == NOMINATED:
            if member in active:
                raise ValueError(f"proxy record: {member} already has a proxy for {draw_id}")
            n = Nomination(
                draw_id, member, d["name"], DocumentType(d["document"]), d["last_digits"],
                d["proxy_card"], d["barred_card"], rec.at, command_id,
            )  # fmt: skip
            active[member] = n
            self._done[command_id] = (
                ("nominate", draw_id, member, n.name, n.document.value, n.last_digits,
                 n.proxy_card),
                n,
            )  # fmt: skip
        else:
            current = active.pop(member, None)
            if current is None:
                raise ValueError(f"proxy record: {member} has no proxy to withdraw in {draw_id}")
            self._done[command_id] = (("withdraw", draw_id, member), current)

    @classmethod
    def replay(
        cls, records: Iterable[Record], conflict: ProxyConflict | str = ProxyConflict.BAR_ENTRY
    ) -> ProxyBook:
        """The book as the journal's records left it (other record types are skipped)."""
        book = cls(conflict)
        for rec in records:
            if rec.type in (NOMINATED, WITHDRAWN):
                book.apply(rec)
        return book

    # --------------------------------------------------------------- internals

    def _replayed(self, cmd: Command, fingerprint: tuple[Any, ...]) -> Nomination | None:
        done = self._done.get(cmd.command_id)
        if done is None:
            return None
        if done[0] != fingerprint:
            raise CommandConflict(
                f"command id {cmd.command_id!r} was already used for {done[0][0]} "
                f"of {done[0][2]} in {done[0][1]}"
            )
        return done[1]

    def _commit(self, rec: Record) -> None:
        """Apply as a replay would (it also remembers the command id), then queue it."""
        self.apply(rec)
        self.records.append(rec)

    @staticmethod
    def _in_window(at: datetime, deadline: datetime, opens: datetime | None) -> None:
        for what, t in (("command time", at), ("deadline", deadline), ("opens", opens)):
            _aware(what, t)
        if opens is not None and at < opens:
            raise ProxyRefused(
                ProxyReason.BEFORE_OPEN, f"proxy forms are taken from {opens.isoformat()}"
            )
        if at > deadline:
            raise ProxyRefused(
                ProxyReason.AFTER_DEADLINE, f"proxy forms closed at {deadline.isoformat()}"
            )
