"""The ticket programs' draw calendars in the running daemon: changed from the calendar
page like the rest of the schedule (marketing proposes, an admin approves; journaled in
the stream "schedule" with who and why), and followed without a restart.

A change is checked before anything is recorded, and again at its approval, as the
ticket plan would then stand: the config's own checks of `[[ticket_programs.calendars]]`
(its calendar, its templates, the bins and earning periods the draws make, the stage
games that follow them), and the draws people already rely on: a draw open on stage (or
drawn) or whose bin has tickets entered is never moved, changed or dropped, and its bin
takes no other draw.  A refusal names the field (``calendar.moved[0].to``, or the draw).

Once committed, the ticket desk goes on under the new plan (its ledger keeps every
credit and entry, points toward tickets carried over), the stage gets the new draws and
the games their new plan.  At start the schedule's calendars replace the config's
before anything is restored: the database is the truth once running.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from raps.config import Config
from raps.config.draw_calendars import calendar_entry
from raps.config.errors import KeyedError
from raps.games.desk import GameDesk
from raps.logs import get_logger
from raps.schedule_desk import ScheduleDesk
from raps.tickets.desk import TicketDesk
from raps.tickets.stage import StageDesk
from selector.records import Actor, Record
from selector.schedule import ScheduleError
from selector.session import Command, SessionState
from selector.ticket_calendars import SET, decide, set_calendar
from selector.tickets import TicketDraw, TicketPlan


class TicketCalendarDesk:
    def __init__(self, cfg: Config, planner: ScheduleDesk, tickets: TicketDesk, stage: StageDesk,
                 games: GameDesk, clock: Callable[[], datetime]) -> None:  # fmt: skip
        self.cfg, self.planner, self.tickets, self.stage, self.games = (
            cfg, planner, tickets, stage, games)  # fmt: skip
        self.clock = clock
        self.current = cfg  # the config as the schedule's calendars make it
        self._applied: dict[str, list[dict[str, Any]]] = {}  # the calendars it was made of
        self.made_by = _made_by(cfg)  # draw id -> (program id, its calendar's index)
        self.log = get_logger(component="ticket-calendars")
        planner.followers.append(self.follow)

    # ----------------------------------------------------------------- commands

    async def set(self, actor: Actor, command_id: str, program_id: str, index: int,
                  entry: Mapping[str, Any], reason: str) -> list[Record]:  # fmt: skip
        planner = self.planner

        async def run(cmd: Command) -> list[Record]:
            return set_calendar(planner.schedule, cmd, program_id, index, entry, reason,
                                self.check)  # fmt: skip

        return await planner.run(actor, command_id, run)

    async def decide(self, actor: Actor, command_id: str, program_id: str, index: int,
                     approve: bool, reason: str) -> list[Record]:  # fmt: skip
        planner = self.planner

        async def run(cmd: Command) -> list[Record]:
            return decide(planner.schedule, cmd, program_id, index, approve, reason, self.check)

        return await planner.run(actor, command_id, run)

    # -------------------------------------------------------------------- checks

    def check(self, program_id: str, index: int, entry: Mapping[str, Any]) -> None:
        """Refuse, naming the field, what the calendar entry would make of the plan."""
        calendars = self.planner.schedule.ticket_calendars
        cfg = self.cfg.check_ticket_calendar(calendars, program_id, index, entry)
        self._kept(cfg.ticket_plan())

    def _kept(self, new: TicketPlan) -> None:
        """A draw opened on stage, or whose bin has entries, stays exactly as it is."""
        old = self.tickets.plan
        for d in old.draws:
            held = self._held(d)
            if held is None:
                continue
            when = f"draw {d.draw_id} ({d.at:%a %d %b %Y %H:%M}) {held}"
            try:
                nd = new.draw(d.draw_id)
            except KeyError:
                raise ScheduleError("calendar", f"{when}: it cannot be dropped") from None
            if _shape(nd) != _shape(d):
                raise ScheduleError("calendar", f"{when}: it cannot be moved or changed")
            before = [x.draw_id for x in old.bins[d.bin_id].draws]
            after = [x.draw_id for x in new.bins[d.bin_id].draws]
            if before != after:
                raise ScheduleError(
                    "calendar",
                    f"{when}: its bin {d.bin_id!r} keeps its draws ({', '.join(before)})",
                )

    def _held(self, d: TicketDraw) -> str | None:
        staged = self.stage.sessions.get(d.draw_id)
        if staged is not None and (staged.state != SessionState.SCHEDULED or staged.records):
            return f"is {staged.state.value} on stage"
        players = len(self.tickets.ledger.entered_by_card(d.bin_id))
        if players:
            return f"has tickets entered by {players} player(s) in bin {d.bin_id!r}"
        return None

    # ----------------------------------------------------------------- following

    async def follow(self, records: list[Record] | None) -> None:
        """After a commit (None: after the schedule was replayed): the new plan, if any
        ticket calendar changed."""
        if records is None or any(r.type == SET for r in records):
            await self.apply(load=True)

    async def apply(self, *, load: bool) -> None:
        """The ticket desk, the stage and the games as the schedule's calendars make them
        (`load`: stage the draws from their journals now; not at start, before restore)."""
        calendars = self.planner.schedule.ticket_calendars
        if calendars == self._applied:
            return  # nothing changed (a resync after a failed commit): the ledger stays
        self._applied = copy.deepcopy(calendars)
        if not load:  # at start: the schedule holds, whatever the config now says
            for p in self.cfg.ticket_programs:
                held = calendars.get(p.id)
                if held is not None and held != [calendar_entry(c) for c in p.calendars]:
                    self.log.warning("the config's ticket calendars differ from the schedule's, "
                                     "which hold: change them on the calendar page",
                                     program=p.id)  # fmt: skip
        try:
            cfg = self.cfg.with_ticket_calendars(calendars)
        except KeyedError as e:  # the config changed under the schedule: it cannot hold
            self.log.error("the schedule's ticket calendars do not fit the config; the "
                           "config's are used", key=e.key, error=str(e))  # fmt: skip
            cfg = self.cfg
        self.current, self.made_by = cfg, _made_by(cfg)
        self.tickets.replan(cfg.ticket_plan(), self.clock().timestamp())
        await self.stage.replan(cfg, load=load)
        self.games.plan = cfg.stage_plan()


def _shape(d: TicketDraw) -> tuple[Any, ...]:
    return (d.at, d.opens, d.closes, d.bin_id, d.winners, d.program_id)


def _made_by(cfg: Config) -> dict[str, tuple[str, int]]:
    """Which calendar made each draw (a listed `[[ticket_draws]]` one is in none)."""
    out: dict[str, tuple[str, int]] = {}
    for p in cfg.ticket_programs:
        for k, cal in enumerate(p.calendars):
            for d in cal.draws(p.id, cfg.site.timezone):
                out[str(d["id"])] = (p.id, k)
    return out
