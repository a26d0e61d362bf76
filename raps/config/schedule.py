"""The config's share of the schedule: what `[[promotions]]` (who qualifies, period,
calendar, calendar_sessions) and `[[sessions]]` put in it at first start, and the check
that they can be put there at all.

Once running, the schedule in the journal is the truth: a restart adds what the config
has and the schedule lacks (a new promotion, a new session, a promotion's first
calendar) and leaves what the schedule already holds as it is, so a change made on the
calendar page is not undone by an old config file (`drifted` names the promotions whose
config no longer says what the schedule does, for the log).  `raps schedule import`
proposes changes on purpose; an admin approves them on the calendar page.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from adapters.wire.settings import StrictModel
from raps.config.draw_calendars import TicketCalendarEntry, calendar_entry
from raps.config.promotions import (
    PromotionConfig,
    SessionConfig,
    core_promotion,
    promotion_plan,
    session_plan,
)
from selector.promotion_spec import KEYS as DEFINITION_KEYS
from selector.promotion_spec import write_definition
from selector.records import Actor, Record
from selector.schedule import (
    EDITABLE,
    PromotionFacts,
    PromotionPlan,
    Schedule,
    ScheduleError,
    Status,
)
from selector.session import Command
from selector.ticket_calendars import Check, set_calendar

if TYPE_CHECKING:
    from raps.config.tickets import TicketProgramConfig

SEEDER = Actor("config", "config")
_SESSION_KEYS = {
    "slots": "quotas.slots",
    "tables": "quotas.tables",
    "session_id": "id",
    "promotion_id": "promotion",
}


def facts(promotions: Sequence[PromotionConfig], tz: str) -> dict[str, PromotionFacts]:
    return {
        p.id: PromotionFacts(p.id, p.name or p.id, frozenset(p.pool_kinds), tz) for p in promotions
    }


def seed(
    schedule: Schedule,
    promotions: Sequence[PromotionConfig],
    sessions: Sequence[SessionConfig],
    tz: str,
    command: Callable[[str], Command],
    *,
    source: str,
    taken: Collection[str] = (),
    programs: Sequence[TicketProgramConfig] = (),
) -> list[Record]:
    """Add to `schedule` what the config has and it lacks; its records, in order. A
    refusal is a ScheduleError whose key is the config's (``promotions[0].calendar...``).
    A ticket program's calendars are seeded while the schedule holds none of it."""
    out: list[Record] = []
    reason = f"seeded from {source}"
    blocked = frozenset(taken)
    for i, tp in enumerate(programs):
        if tp.id in schedule.ticket_calendars:
            continue
        for k, cal in enumerate(tp.calendars):
            cmd = command(f"seed:tickets:{tp.id}:{k}")
            try:
                out += set_calendar(schedule, cmd, tp.id, k, calendar_entry(cal), reason, _any)
            except ScheduleError as e:
                where = f"ticket_programs[{i}].calendars[{k}]"
                raise ScheduleError(f"{where}.{e.key}".rstrip("."), e.reason) from None
    for i, p in enumerate(promotions):
        if p.id in schedule.definitions:
            continue
        try:
            out += schedule.define(
                command(f"seed:definition:{p.id}"), p.id, definition(p, tz), reason
            )
        except ScheduleError as e:
            raise ScheduleError(f"promotions[{i}].{e.key}".rstrip("."), e.reason) from None
    for i, p in enumerate(promotions):
        plan = promotion_plan(p)
        if plan is None or p.id in schedule.promotions:
            continue
        try:
            out += schedule.set_promotion(
                command(f"seed:promotion:{p.id}"), plan, reason, taken=blocked
            )
        except ScheduleError as e:
            raise ScheduleError(
                f"promotions[{i}].{e.key}" if e.key else f"promotions[{i}]", e.reason
            ) from None
    for j, s in enumerate(sessions):
        if s.id in schedule.sessions:
            continue
        try:
            # no `taken`: a session of an older database has its journal already
            out += schedule.add(command(f"seed:session:{s.id}"), session_plan(s, tz), reason)
        except ScheduleError as e:
            key = _SESSION_KEYS.get(e.key, e.key)
            raise ScheduleError(
                f"sessions[{j}].{key}" if key else f"sessions[{j}]", e.reason
            ) from None
    return out


def seeds_a_plan(schedule: Schedule, promotions: Sequence[PromotionConfig]) -> bool:
    """Whether `seed` would set a promotion's plan (calendar sessions), the one step
    that needs the ids the journal already holds (`taken`)."""
    return any(p.id not in schedule.promotions and promotion_plan(p) for p in promotions)


def _any(_program: str, _index: int, _entry: Any) -> None:
    """The config's own calendars: checked with the whole config when it was loaded."""


def definition(p: PromotionConfig, tz: str) -> dict[str, Any]:
    """Who qualifies for a `[[promotions]]` entry, as the schedule's records hold it."""
    return write_definition(core_promotion(p, tz))


def drifted(schedule: Schedule, promotions: Sequence[PromotionConfig], tz: str) -> list[str]:
    """Promotions whose config says otherwise than the schedule (which is the truth)."""
    return [
        p.id
        for p in promotions
        if p.id in schedule.definitions and schedule.definitions[p.id] != definition(p, tz)
    ]


def seeding_command(at: datetime) -> Callable[[str], Command]:
    return lambda command_id: Command(command_id, SEEDER, at)


# ------------------------------------------------------------- TOML import and export


class ScheduleDocument(StrictModel):
    """What `raps schedule export` writes and `raps schedule import` reads: promotions
    with the keys of `[[promotions]]` (who qualifies and their schedule), and sessions
    with those of `[[sessions]]`."""

    promotions: tuple[PromotionConfig, ...] = ()
    sessions: tuple[SessionConfig, ...] = ()
    # the ticket programs' draw calendars, each program's in its order
    ticket_calendars: tuple[TicketCalendarEntry, ...] = ()


def export_document(schedule: Schedule, tz: str) -> dict[str, Any]:
    """The schedule as TOML-ready data: every promotion's definition, period and
    calendar, every session not cancelled (times in the site's wall time)."""
    zone = ZoneInfo(tz)
    promotions = []
    for pid, facts_ in schedule.facts.items():
        entry: dict[str, Any] = {"id": pid, "name": facts_.name}
        doc = schedule.definitions.get(pid)
        if doc is not None:
            entry.update({k: v for k, v in doc.items() if v is not None})
        plan = schedule.promotions.get(pid)
        if plan is not None:
            data = plan.to_data()
            entry.update({k: data[k] for k in ("period", "calendar") if data[k]})
            if data["sessions"]:
                entry["calendar_sessions"] = data["sessions"]
        promotions.append(entry)
    sessions = []
    for s in schedule.sessions.values():
        if s.status == Status.CANCELLED:
            continue
        row: dict[str, Any] = {"id": s.session_id, "promotion": s.promotion_id}
        if s.name:
            row["name"] = s.name
        row["starts"] = _wall(s.starts, zone)
        if s.ends is not None:
            row["ends"] = _wall(s.ends, zone)
        row.update(
            quotas={"slots": s.slots, "tables": s.tables},
            claim_seconds=s.claim_seconds,
            exclude_no_shows=s.exclude_no_shows,
            exclude_voided=s.exclude_voided,
            rehearsal=s.rehearsal,
            claim_starts=s.claim_starts,
            max_en_route_seconds=s.max_en_route_seconds or 0,
        )
        if s.off_calendar:
            row["off_calendar"] = s.off_calendar
        sessions.append(row)
    tickets = [
        {"program": pid, **entry}
        for pid, entries in schedule.ticket_calendars.items()
        for entry in entries
    ]
    return {"promotions": promotions, "sessions": sessions, "ticket_calendars": tickets}


def _wall(at: datetime, zone: ZoneInfo) -> str:
    """Wall time where it is unambiguous; with its offset where the clocks pass it twice."""
    local = at.astimezone(zone)
    naive = local.replace(tzinfo=None)
    again = naive.replace(tzinfo=zone, fold=1 - local.fold)
    if again.utcoffset() != local.utcoffset():
        return local.isoformat(timespec="minutes")
    return f"{naive:%Y-%m-%d %H:%M}"


@dataclass
class Imported:
    """What an import did: its records (proposals an admin approves), and the sessions
    it left as they are because they have opened (their journal is their own)."""

    records: list[Record] = field(default_factory=list)
    opened: list[str] = field(default_factory=list)


def import_document(
    schedule: Schedule,
    doc: ScheduleDocument,
    tz: str,
    command: Callable[[str], Command],
    *,
    reason: str,
    started: Collection[str],
    taken: Collection[str],
    check: Check = _any,
) -> Imported:
    """Propose what a document says where it differs: sessions added or changed, then
    promotions' definitions and schedules.  An opened session is left as it is and
    reported; sessions the document lacks stay (cancelling is decided on the calendar
    page).  Sessions are checked against the calendar as it stands (a new calendar's
    own sessions come with its approval, from `calendar_sessions`).  Proposals: an admin
    approves them on the calendar page.  All or nothing: the first refusal names its
    entry and key, and nothing is proposed."""
    out = Imported()
    started_, taken_ = frozenset(started), frozenset(taken)
    for j, s in enumerate(doc.sessions):
        if s.id in started_:
            out.opened.append(s.id)
            continue
        new = session_plan(s, tz)
        try:
            old = schedule.sessions.get(s.id)
            if old is None:
                cmd = command(f"import:add:{s.id}")
                out.records += schedule.add(cmd, new, reason, taken=taken_)
                continue
            changes = {k: getattr(new, k) for k in EDITABLE if getattr(new, k) != getattr(old, k)}
            fixed = [k for k in ("promotion_id", "rehearsal") if getattr(new, k) != getattr(old, k)]
            if fixed:
                raise ScheduleError(fixed[0], "cannot be changed: cancel the session, add another")
            if changes:
                out.records += schedule.change(
                    command(f"import:change:{s.id}"), s.id, changes, reason, started=False
                )
        except ScheduleError as e:
            key = _SESSION_KEYS.get(e.key, e.key)
            raise ScheduleError(f"sessions[{j}].{key}".rstrip("."), e.reason) from None
    for i, p in enumerate(doc.promotions):
        try:
            out.records += _import_promotion(schedule, p, tz, command, reason, started_, taken_)
        except ScheduleError as e:
            raise ScheduleError(f"promotions[{i}].{e.key}".rstrip("."), e.reason) from None
    out.records += _import_tickets(schedule, doc.ticket_calendars, command, reason, check)
    return out


def _import_tickets(
    schedule: Schedule,
    entries: Sequence[TicketCalendarEntry],
    command: Callable[[str], Command],
    reason: str,
    check: Check,
) -> list[Record]:
    """Ticket calendars that differ from the schedule's (and from what waits), proposed;
    the n-th entry of a program in the file is its n-th calendar."""
    out: list[Record] = []
    seen: dict[str, int] = {}
    for j, tc in enumerate(entries):
        k = seen[tc.program] = seen.get(tc.program, -1) + 1
        entry = calendar_entry(tc)
        have = schedule.ticket_calendars.get(tc.program, [])
        waiting = schedule.ticket_proposals.get(f"{tc.program}[{k}]")
        if (k < len(have) and have[k] == entry) or (waiting and waiting.entry == entry):
            continue
        try:
            cmd = command(f"import:tickets:{tc.program}:{k}")
            out += set_calendar(schedule, cmd, tc.program, k, entry, reason, check)
        except ScheduleError as e:
            raise ScheduleError(f"ticket_calendars[{j}].{e.key}".rstrip("."), e.reason) from None
    return out


def _import_promotion(
    schedule: Schedule,
    p: PromotionConfig,
    tz: str,
    command: Callable[[str], Command],
    reason: str,
    started: frozenset[str],
    taken: frozenset[str],
) -> list[Record]:
    """One promotion's definition (when the entry gives one: any key of who qualifies
    but its name, the others then at their defaults, as in a config) and its schedule."""
    out: list[Record] = []
    given = p.model_fields_set
    new = definition(p, tz)
    current = schedule.definitions.get(p.id)
    if given & (set(DEFINITION_KEYS) - {"name"}):
        wanted = new
    elif "name" in given and current is not None and p.name and p.name != current["name"]:
        wanted = {**current, "name": p.name}
    else:
        wanted = current or new
    waiting = schedule.proposals.get(p.id)
    if wanted != current and not (waiting and waiting.definition == wanted):
        cmd = command(f"import:definition:{p.id}")
        out += schedule.define(cmd, p.id, wanted, reason, started=started)
    plan = promotion_plan(p) or PromotionPlan(p.id)
    now = schedule.promotions.get(p.id, PromotionPlan(p.id))
    if plan.to_data() != now.to_data() and not (waiting and waiting.plan == plan):
        out += schedule.set_promotion(
            command(f"import:promotion:{p.id}"), plan, reason, started=started, taken=taken
        )
    return out
