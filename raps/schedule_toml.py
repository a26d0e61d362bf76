"""`raps schedule export` and `raps schedule import`: the schedule as TOML, offline.

Export reads the journal of the configured database and writes what the calendar page
shows (every promotion's definition, period and calendar, every session not cancelled)
in the config's own keys, so the file can seed another site or go back into this one.

Import proposes what such a file says where it differs, as one journaled commit with
who and why: proposals, like marketing's, which an admin approves (or rejects) on the
calendar page, so a file cannot put a draw on the floor that no admin has looked at.
Sessions that have opened are left as they are and listed.  It writes to the journal
directly, so it runs only with the daemon stopped: it takes the database's writer lock
(raps.store.daemon_lock), which a running daemon holds, and refuses when it cannot.
The daemon loads the proposals at its next start.
"""

from __future__ import annotations

import getpass
import secrets
import tomllib
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import tomli_w
from pydantic import ValidationError

from raps.config import Config
from raps.config.errors import from_validation
from raps.config.schedule import Imported, ScheduleDocument, export_document, import_document
from raps.store.daemon_lock import DaemonLock, DatabaseBusy
from raps.store.database import migrate, open_engine
from raps.store.journal import JournalStore
from selector.records import Actor, Record
from selector.schedule import STREAM, Schedule
from selector.session import Command


async def _schedule(cfg: Config, journal: JournalStore) -> Schedule:
    await journal.load_head()
    entries = await journal.session_entries(STREAM)
    schedule = cfg.new_schedule([Record.from_dict(e.record) for e in entries])
    if not schedule.records:  # a database the daemon has not started on yet
        cfg.seed_schedule(schedule, datetime.now(UTC), await journal.session_ids())
    return schedule


def _check_tickets(
    cfg: Config, schedule: Schedule, program_id: str, index: int, entry: Mapping[str, Any]
) -> None:
    """A ticket calendar of the file, checked as the daemon's config would make its plan
    (what its draws already hold is checked again at the approval, in the daemon)."""
    cfg.check_ticket_calendar(schedule.ticket_calendars, program_id, index, entry)


async def export_toml(cfg: Config) -> str:
    engine = open_engine(cfg.storage.url)
    try:
        await migrate(engine)
        schedule = await _schedule(cfg, JournalStore(engine))
    finally:
        await engine.dispose()
    head = f"# raps schedule export, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, site {cfg.site.id}\n"
    note = f"# times are {cfg.site.timezone} wall time unless they carry an offset\n\n"
    return head + note + tomli_w.dumps(export_document(schedule, cfg.site.timezone))


def read_document(path: Path) -> ScheduleDocument:
    """A schedule file, strictly: a wrong key is named like a config's."""
    text = path.read_text(encoding="utf-8")
    try:
        return ScheduleDocument.model_validate(tomllib.loads(text))
    except ValidationError as e:
        raise from_validation(str(path), e, ScheduleDocument) from None


async def import_toml(
    cfg: Config, doc: ScheduleDocument, reason: str, user: str | None = None
) -> Imported:
    """Propose a document as user `user` (default: the login name); what it proposed and
    the opened sessions it left alone.  DatabaseBusy while a daemon runs on the database."""
    lock = DaemonLock(cfg.storage.url)
    if not await lock.acquire():
        raise DatabaseBusy(
            "a daemon is running on this database: stop it first (the import writes the "
            "journal directly), or make the change on the calendar page"
        )
    engine = open_engine(cfg.storage.url)
    try:
        await migrate(engine)
        journal = JournalStore(engine)
        schedule = await _schedule(cfg, journal)
        seeded = list(schedule.records)
        taken = await journal.session_ids()
        started = {sid for sid in taken if sid in schedule.sessions}
        actor = Actor(user or getpass.getuser(), "import")
        now = datetime.now(UTC)
        stamp = f"{now:%Y%m%dT%H%M%S}-{secrets.token_hex(4)}"  # each import its own ids
        done = import_document(
            schedule,
            doc,
            cfg.site.timezone,
            lambda cid: Command(f"{cid}:{stamp}", actor, now),
            reason=reason,
            started=started,
            taken=taken,
            check=partial(_check_tickets, cfg, schedule),
        )
        records = [] if await journal.session_entries(STREAM) else seeded
        records += done.records
        if records:
            await journal.append([r.to_dict() for r in records])
        return done
    finally:
        await engine.dispose()
        await lock.release()
