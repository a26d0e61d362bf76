"""`[[ticket_programs.calendars]]`: a program's ticket draws made from a calendar, instead
of listing each one in `[[ticket_draws]]`.

Seed 000 says its draws this way: every Wednesday at 13:00 (entries 08:00-12:55, proxy
forms until 15 minutes before) with 22 October moved to Tuesday 21 October; every
Thursday at 20:00 with 23 October moved to Sunday 26 October 13:00; selected Saturdays;
20 December 21:30 only if the safe was not cracked.  Each entry is one calendar
(selector.calendar_spec) with its windows `entry` (required: entries are taken from its
start until its end) and `proxy` (its end is the proxy deadline; without it the
program's `proxy_deadline_minutes`), and templates for the draws it makes::

    [[ticket_programs.calendars]]
    id = "wed-{at:%Y-%m-%d-%H%M}"                  # each draw's id, from its time
    name = "Wednesday cash draw {at:%a %d %b %H:%M}"
    bin = "car-{at:%Y-%m-%d}"                      # optional: the day's draws share a bin
    winners = 5
    [ticket_programs.calendars.calendar]
    moved = [{ from = "2025-10-22 13:00", to = "2025-10-21 13:00", reason = "rule 4" }]
    windows.entry = { start = "08:00", end = "-5m" }
    windows.proxy = { start = "08:00", end = "-15m" }
    [[ticket_programs.calendars.calendar.weekly]]
    weekdays = ["wed"]
    times = ["13:00"]
    first = "2025-10-01"
    last = "2025-12-31"

A template names only `{at}`, with strftime codes after a colon.  A conditional
occurrence makes a draw that carries its condition (the stage desk asks the daemon
whether it holds before the draw opens).
"""

from __future__ import annotations

import string
from datetime import datetime
from typing import Any

from pydantic import Field, field_validator

from adapters.wire.settings import StrictModel
from raps.config.stage import PrizeConfig
from selector.calendar import Occurrence
from selector.calendar_spec import SpecError, plain, read_calendar
from selector.ticket_calendars import entry_of

ENTRY, PROXY = "entry", "proxy"


def _template(v: str) -> str:
    """Only `{at}` (with a strftime format) may be named: nothing else is reachable."""
    try:
        parts = list(string.Formatter().parse(v))
    except ValueError as e:
        raise ValueError(f"not a template: {e}") from None
    for _, field, _spec, conversion in parts:
        if field is not None and (field != "at" or conversion):
            raise ValueError(f'names only {{at}}, like "wed-{{at:%Y-%m-%d-%H%M}}", not {{{field}}}')
    return v


class DrawCalendarConfig(StrictModel):
    """The draws one calendar makes for its program."""

    id: str
    name: str = ""
    bin: str | None = None
    winners: int = Field(default=5, ge=1)
    prizes: tuple[PrizeConfig, ...] | None = None
    calendar: dict[str, Any]

    @field_validator("id", "name", "bin")
    @classmethod
    def _only_at(cls, v: str | None) -> str | None:
        return None if v is None else _template(v)

    def draws(self, program: str, tz: str) -> list[dict[str, Any]]:
        """The draws' `[[ticket_draws]]` keys, one per occurrence; a SpecError naming the
        calendar's field when it cannot be."""
        try:
            calendar = read_calendar(self.calendar, tz)
        except SpecError as e:
            raise SpecError(f"calendar.{e.key}" if e.key else "calendar", e.reason) from None
        names = {w.name for w in calendar.windows}
        if ENTRY not in names:
            raise SpecError("calendar.windows", "needs an `entry` window: when entries are taken")
        return [self._draw(program, occ, PROXY in names) for occ in calendar.occurrences()]

    def _draw(self, program: str, occ: Occurrence, proxy: bool) -> dict[str, Any]:
        opens, closes = occ.window(ENTRY)
        draw: dict[str, Any] = {
            "id": _fill(self.id, occ.at),
            "program": program,
            "name": _fill(self.name, occ.at),
            "at": occ.at,
            "opens": opens,
            "closes": closes,
            "winners": self.winners,
        }
        if self.bin is not None:
            draw["bin"] = _fill(self.bin, occ.at)
        if self.prizes is not None:
            draw["prizes"] = self.prizes
        if proxy:
            draw["proxy_deadline"] = occ.window(PROXY)[1]
        if occ.condition is not None:
            draw["condition"] = occ.condition
        return draw


def _fill(template: str, at: datetime) -> str:
    return template.format(at=at)


class TicketCalendarEntry(DrawCalendarConfig):
    """A `[[ticket_calendars]]` entry of a schedule file (`raps schedule export`): one
    calendar of the program `program`, in the program's order."""

    program: str


def calendar_entry(cal: DrawCalendarConfig) -> dict[str, Any]:
    """The entry as the schedule's records hold it (selector.ticket_calendars)."""
    out = cal.model_dump(mode="json", exclude_none=True, exclude={"calendar", "program"})
    out["calendar"] = plain(cal.calendar)
    return entry_of(out)
