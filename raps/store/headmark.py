"""The highest journal head this daemon has committed, kept outside the database.

A valid chain can still be a shortened one: an insider who deletes the newest rows (a
`pick.requested` whose winner they would rather not see drawn) leaves every remaining
link intact. The daemon therefore remembers the head of its own last commit, in memory
and in a small file beside the database (written and fsynced after each commit, off the
command's path, so an answer never waits for it), and `JournalStore.load_head` refuses
a journal whose head is behind that mark or holds another entry at its sequence number.

The file names the database it is for, so a config pointed at another database (a test,
a new install) starts a new mark instead of refusing a journal it never wrote. Someone
who can also delete this file on the daemon's host defeats it; the signed heads
published outside the host (raps.heads) are the inspector's answer to that.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from sqlalchemy.engine import make_url

from raps.chain import Head
from raps.logs import get_logger

MARK_TYPE = "raps.head-mark.v1"
DEFAULT_FILE = "var/journal-head.json"  # where a PostgreSQL site's daemon keeps it


def database_identity(url: str) -> str:
    """The database a URL names, the same whichever driver or password it is given with."""
    u = make_url(url)
    return u.set(drivername=u.get_backend_name()).render_as_string(hide_password=True)


def mark_path(url: str, configured: str | None) -> Path | None:
    """The mark's file: as configured, else beside a SQLite database file, else
    var/journal-head.json (relative to the working directory: systemd's state
    directory). An in-memory database has none."""
    if configured:
        return Path(configured)
    u = make_url(url)
    if u.get_backend_name() == "sqlite":
        if not u.database or u.database == ":memory:":
            return None
        return Path(u.database + ".head")
    return Path(DEFAULT_FILE)


class HeadMark:
    """The highest head committed to one database, in memory and in its file."""

    def __init__(self, path: Path, database: str) -> None:
        self.path = path
        self.database = database
        self.head: Head | None = None
        self._written: Head | None = None
        self._task: asyncio.Task[None] | None = None
        self._failing = False
        self.log = get_logger(component="journal")

    @classmethod
    def for_database(cls, url: str, configured: str | None = None) -> HeadMark | None:
        path = mark_path(url, configured)
        if path is None:
            return None
        mark = cls(path, database_identity(url))
        mark.load()
        return mark

    def load(self) -> None:
        """The mark as the file holds it; a file for another database, or none, is no mark."""
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as e:
            # an unreadable mark cannot refuse anything: say so loudly, start a new one
            self.log.error(
                "journal head mark unreadable; starting a new one",
                path=str(self.path),
                error=type(e).__name__,
            )
            return
        if not isinstance(doc, dict) or doc.get("database") != self.database:
            self.log.info(
                "journal head mark is for another database; starting a new one", path=str(self.path)
            )
            return
        try:
            self.head = self._written = Head(int(doc["seq"]), str(doc["hash"]))
        except (KeyError, TypeError, ValueError):
            self.log.error("journal head mark unreadable; starting a new one", path=str(self.path))

    def advance(self, head: Head) -> None:
        """A commit (or a journal read back ahead of the mark): remember it, and write
        it to the file in the background (the newest head wins; writes never overlap)."""
        if self.head is not None and head.seq <= self.head.seq:
            return
        self.head = head
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._write_newest())

    async def flush(self) -> None:
        """Wait until the file holds the newest head (before a stop, or in a test)."""
        while self._task is not None and not self._task.done():
            await asyncio.gather(self._task, return_exceptions=True)

    async def _write_newest(self) -> None:
        while self.head is not None and self.head != self._written:
            head = self.head
            try:
                await asyncio.to_thread(self._write, head)
            except OSError as e:
                if not self._failing:  # once per outage: the journal itself is fine
                    self.log.error(
                        "journal head mark cannot be written",
                        path=str(self.path),
                        error=type(e).__name__,
                    )
                self._failing = True
                return
            if self._failing:
                self.log.info("journal head mark written again", path=str(self.path))
            self._failing = False
            self._written = head

    def _write(self, head: Head) -> None:
        """Write a new file, fsync it, and rename it over the old one: a crash leaves the
        old mark or the new one, never half of either."""
        body = {"type": MARK_TYPE, "database": self.database, "seq": head.seq, "hash": head.hash}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(body) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
