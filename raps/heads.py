"""Signed journal heads and commitments: what an inspector captures outside the casino.

A truncated or rewritten journal can be a valid chain; only a copy of its head held
elsewhere shows what it was. The daemon signs every head it publishes with the site's
Ed25519 head key (raps/signing.py, a systemd credential like the seed key):

    {"type": "raps.head.v1", "site": ..., "seq": n, "hash": "...", "at": "...",
     "key_id": "...", "signature": "..."}

and each session's commitment, when it opens:

    {"type": "raps.commitment.v1", "site": ..., "session_id": ..., "promotion_id": ...,
     "commitment": "...", "rehearsal": false, "opened_at": "...", "seq": n, "hash": "...",
     "key_id": "...", "signature": "..."}

(`seq` and `hash` there are the journal entry holding the `session.opened` record). The
signature is Ed25519 over the canonical JSON (keys sorted, no spaces, UTF-8) of the
object without its `signature`. `raps verify --head FILE --site-key HEX` checks every
signed object in a capture against the public key alone and requires the journal to hold
each: a valid head the journal does not contain means it was cut back or rewritten.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from raps.chain import Entry, Head, canonical_json
from raps.logs import get_logger
from raps.signing import SigningKey
from selector.records import Record
from selector.signatures import SignatureError, check

HEAD_TYPE = "raps.head.v1"
COMMITMENT_TYPE = "raps.commitment.v1"
SIGNED_TYPES = (HEAD_TYPE, COMMITMENT_TYPE)


def signed(key: SigningKey | None, body: dict[str, Any]) -> dict[str, Any]:
    """The body with `key_id` and `signature` (a daemon without a head key, as in
    tests that build the service alone, publishes the body unsigned)."""
    if key is None:
        return body
    out = {**body, "key_id": key.key_id}
    return {**out, "signature": key.sign(canonical_json(out).encode("utf-8"))}


class HeadSigner:
    """Signs heads (the newest one kept: a commit's head is signed once) and commitments."""

    def __init__(self, key: SigningKey | None, site: str, clock: Callable[[], datetime]) -> None:
        self.key, self.site, self.clock = key, site, clock
        self._last: tuple[Head, dict[str, Any]] | None = None

    def head(self, head: Head) -> dict[str, Any]:
        if self._last is not None and self._last[0] == head:
            return self._last[1]
        body = {
            "type": HEAD_TYPE,
            "site": self.site,
            "seq": head.seq,
            "hash": head.hash,
            "at": self.clock().isoformat(),
        }
        out = signed(self.key, body)
        self._last = (head, out)
        return out

    def commitment(self, opened: Record, entry: Head) -> dict[str, Any]:
        """A session's commitment as its `session.opened` record (at journal entry
        `entry`) made it."""
        d = opened.data
        body = {
            "type": COMMITMENT_TYPE,
            "site": self.site,
            "session_id": opened.session_id,
            "promotion_id": d.get("promotion_id"),
            "commitment": d.get("commitment"),
            "rehearsal": d.get("rehearsal"),
            "opened_at": opened.at.isoformat(),
            "seq": entry.seq,
            "hash": entry.hash,
        }
        return signed(self.key, body)


class Publisher(Protocol):
    async def publish(self, topic: str, payload: dict[str, Any], retain: bool = False) -> None: ...


class HeadFeed:
    """The site's newest head, signed and retained on `{prefix}/{site}/journal/head`
    after every commit of any stream: coalesced (a burst of ticket entries publishes the
    newest head, not every one) and off the committing command's path."""

    def __init__(self, signer: HeadSigner, publisher: Publisher, topic: str) -> None:
        self.signer, self.publisher, self.topic = signer, publisher, topic
        self._newest: Head | None = None
        self._sent: Head | None = None
        self._task: asyncio.Task[None] | None = None
        self.log = get_logger(component="heads")

    def note(self, head: Head) -> None:
        self._newest = head
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._send())

    async def _send(self) -> None:
        while self._newest is not None and self._newest != self._sent:
            head = self._newest
            try:
                await self.publisher.publish(self.topic, self.signer.head(head), retain=True)
            except Exception as e:  # the journal is the record; MQTT is its echo
                self.log.warning("head publish failed", error=type(e).__name__)
                return
            self._sent = head


# ------------------------------------------------------------------ verifying


@dataclass
class HeadReport:
    """What `raps verify --head FILE` found: heads checked, problems (exit 1), notes."""

    checked: int = 0
    sites: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_signed(path: Path) -> list[tuple[int, Any]]:
    """(line number, parsed JSON) of each non-empty line of a capture: one signed head
    or commitment per line, or a message that carries one (a draw event, the answer of
    GET /api/journal/head); a whole file holding one JSON document is one line too."""
    text = path.read_text(encoding="utf-8")
    try:
        return [(1, json.loads(text))]
    except json.JSONDecodeError:
        pass
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                out.append((n, json.loads(line)))
            except json.JSONDecodeError as e:
                out.append((n, ValueError(f"not JSON ({e.msg})")))
    return out


def _signed_object(doc: Any) -> dict[str, Any] | None:
    """The signed object itself, or the one a draw event (`head`) or the API's answer
    (`signed`) carries."""
    if not isinstance(doc, dict):
        return None
    for obj in (doc, doc.get("head"), doc.get("signed")):
        if isinstance(obj, dict) and obj.get("type") in SIGNED_TYPES:
            return obj
    return None


def check_signed(
    lines: Sequence[tuple[int, Any]],
    site_key: str,
    entries: Sequence[Entry],
    records: Sequence[dict[str, Any]],
) -> HeadReport:
    """Each signed head and commitment: its signature by the site key, and the journal
    (or export) holding its entry; a commitment's entry must be that session's open."""
    rep = HeadReport()
    by_seq = {e.seq: (e, r) for e, r in zip(entries, records, strict=True)}
    first = entries[0].seq if entries else 1
    last = entries[-1].seq if entries else 0
    seen: set[str] = set()
    for n, doc in lines:
        obj = None if isinstance(doc, ValueError) else _signed_object(doc)
        if obj is None:
            why = str(doc) if isinstance(doc, ValueError) else "no signed head or commitment"
            rep.problems.append(f"line {n}: {why}")
            continue
        key = canonical_json(obj)
        if key in seen:
            continue  # a capture repeats retained messages
        seen.add(key)
        rep.checked += 1
        body = {k: v for k, v in obj.items() if k != "signature"}
        try:
            check(site_key, canonical_json(body).encode("utf-8"), str(obj.get("signature")))
        except SignatureError as e:
            rep.problems.append(f"line {n}: {e}: not the site's signature")
            continue
        rep.sites.add(str(obj.get("site")))
        try:
            seq, digest = int(obj["seq"]), str(obj["hash"])
        except (KeyError, TypeError, ValueError):
            rep.problems.append(f"line {n}: a signed object without seq and hash")
            continue
        what = f"line {n}: signed {'commitment' if obj['type'] == COMMITMENT_TYPE else 'head'}"
        if seq > last:
            rep.problems.append(
                f"{what} {seq}:{digest[:16]}... is not in the journal, which ends at entry "
                f"{last}: it was cut back or rewritten"
            )
        elif seq < first:
            rep.notes.append(f"{what} {seq} is before this export's first entry ({first})")
        elif by_seq[seq][0].hash != digest:
            rep.problems.append(
                f"{what} {seq}:{digest[:16]}...: the journal's entry {seq} is another "
                "one: it was rewritten"
            )
        elif obj["type"] == COMMITMENT_TYPE and by_seq[seq][1].get("type") == "context":
            rep.notes.append(f"{what} {seq}: another stream's entry here, its hash checked only")
        elif obj["type"] == COMMITMENT_TYPE:
            rep.problems += _commitment_problems(what, obj, by_seq[seq][1])
    if len(rep.sites) > 1:
        rep.problems.append(f"signed heads of more than one site: {sorted(rep.sites)}")
    return rep


def _commitment_problems(what: str, obj: dict[str, Any], record: dict[str, Any]) -> list[str]:
    d = record.get("data") or {}
    same = (
        record.get("type") == "session.opened"
        and record.get("session_id") == obj.get("session_id")
        and d.get("commitment") == obj.get("commitment")
    )
    if same:
        return []
    return [f"{what} of {obj.get('session_id')}: its entry is not that session's open"]
