"""Where `raps verify` reads from: an export file, a database, the witness's own log.

An export is JSON lines (docs/journal.md, "Export and offline verification"): an optional
header naming the session, then one chained entry per line, or another stream's entry as
its links only; the database gives every entry with each pick's pool put back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from raps.chain import Entry, canonical_json, chained_record
from raps.store.database import open_engine
from raps.store.journal import JournalStore, with_pools

CONTEXT = "context"  # the record of an export's entry given as chain fields only


def export_focus(path: Path) -> str | None:
    """The session an export was made for (its first line says), or None (an older
    export, or a range): then every stream in it is verified."""
    with path.open(encoding="utf-8") as f:
        first = f.readline()
    try:
        head = json.loads(first)
    except json.JSONDecodeError:
        return None
    export = head.get("export") if isinstance(head, dict) else None
    return (
        str(export["session_id"]) if isinstance(export, dict) and "session_id" in export else None
    )


def read_witness_log(path: Path) -> list[dict[str, Any]]:
    """The witness's log of a draw (`raps witness export`): JSON lines."""
    out: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{lineno}: not a witness log line ({e})") from e
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{lineno}: not a witness log line")
            out.append(row)
    return out


def read_export(path: Path) -> tuple[list[Entry], list[dict[str, Any]]]:
    """Entries and records from an export file (JSON lines of seq, prev, hash, record,
    after an optional header line naming the exported session)."""
    entries: list[Entry] = []
    records: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                if lineno == 1 and isinstance(row, dict) and "export" in row:
                    continue
                if "record" not in row and "stream" in row:  # another stream's: links only
                    seq = int(row["seq"])
                    entries.append(Entry(seq, str(row["prev"]), "", str(row["hash"]), True))
                    records.append({"type": CONTEXT, "session_id": row["stream"], "seq": seq})
                    continue
                record = row["record"]
                body = canonical_json(chained_record(record))
                entries.append(Entry(int(row["seq"]), row["prev"], body, row["hash"]))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
                raise ValueError(f"{path}:{lineno}: not a journal export line ({e})") from e
            records.append(record)
    return entries, records


async def read_database(url: str) -> tuple[list[Entry], list[dict[str, Any]]]:
    engine = open_engine(url)
    try:
        store = JournalStore(engine)
        entries = await store.entries()
        return entries, await with_pools(store, entries)
    finally:
        await engine.dispose()


async def read_columns(url: str) -> list[tuple[int, str, str]]:
    """(seq, session_id, type) as the database's columns hold them."""
    engine = open_engine(url)
    try:
        return await JournalStore(engine).columns()
    finally:
        await engine.dispose()
