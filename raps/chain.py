"""The journal's hash chain, in the spirit of Certificate Transparency logs.

Entry n holds seq n, the hash of entry n-1 and one core record; its hash is
SHA-256 over the canonical JSON of those three.  Changing, deleting, inserting or
reordering any entry changes every hash after it, and a copy of the head (seq,
hash) kept outside the database catches a truncated or rewritten tail.

A pick's pool snapshot is not part of the hashed record: it is stored beside the
chain, addressed by its SHA-256 digest, which the hashed record does contain.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

GENESIS = "0" * 64


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def chained_record(record: dict[str, Any]) -> dict[str, Any]:
    """The part of a record that the chain hashes: everything but a pick's pool."""
    data = record.get("data", {})
    if "pool" not in data:
        return record
    return {**record, "data": {k: v for k, v in data.items() if k != "pool"}}


def entry_hash(seq: int, prev: str, record_json: str) -> str:
    h = hashlib.sha256()
    h.update(f'{{"prev":"{prev}","seq":{seq},"record":'.encode())
    h.update(record_json.encode("utf-8"))
    h.update(b"}")
    return h.hexdigest()


@dataclass(frozen=True, slots=True)
class Entry:
    seq: int
    prev: str
    record_json: str  # canonical JSON of chained_record(record)
    hash: str
    # an entry of another stream in a one-session export: its links only, no record
    # (its hash is vouched for by the next entry's link, not recomputed)
    opaque: bool = False

    @property
    def record(self) -> dict[str, Any]:
        rec: dict[str, Any] = json.loads(self.record_json)
        return rec


@dataclass(frozen=True, slots=True)
class Head:
    seq: int
    hash: str

    def __str__(self) -> str:
        return f"{self.seq}:{self.hash}"

    @classmethod
    def parse(cls, text: str) -> Head:
        seq, sep, digest = text.partition(":")
        if not sep or not seq.isdigit() or len(digest) != 64:
            raise ValueError(f"a journal head is SEQ:SHA256HEX, not {text!r}")
        return cls(int(seq), digest.lower())


def link(records: Iterable[dict[str, Any]], head: Head | None) -> Iterator[Entry]:
    """Chain records onto a head (None: a new journal)."""
    seq, prev = (head.seq, head.hash) if head else (0, GENESIS)
    for rec in records:
        seq += 1
        body = canonical_json(chained_record(rec))
        digest = entry_hash(seq, prev, body)
        yield Entry(seq, prev, body, digest)
        prev = digest


def check_chain(
    entries: Sequence[Entry], expect_head: Head | None = None, from_genesis: bool = False
) -> str | None:
    """None when the entries form an unbroken chain (reaching expect_head if given);
    otherwise a message naming the first bad entry.

    A whole journal (a database) must start at entry 1 from the genesis hash; an
    export is a contiguous range and may start anywhere (`from_genesis=False`).
    """
    prev: str | None = None
    last: Entry | None = None
    expected_seq: int | None = 1 if from_genesis else None
    for e in entries:
        if expected_seq is not None and e.seq != expected_seq:
            return f"entry {e.seq}: expected seq {expected_seq} (entries missing or reordered)"
        if e.seq == 1 and e.prev != GENESIS:
            return "entry 1: does not start from the genesis hash"
        if prev is not None and e.prev != prev:
            return f"entry {e.seq}: previous-hash link broken"
        if e.opaque:
            prev, last, expected_seq = e.hash, e, e.seq + 1
            continue
        if entry_hash(e.seq, e.prev, e.record_json) != e.hash:
            return f"entry {e.seq}: hash does not match its content"
        try:
            json.loads(e.record_json)
        except json.JSONDecodeError:
            return f"entry {e.seq}: record is not valid JSON"
        prev, last, expected_seq = e.hash, e, e.seq + 1
    if expect_head is not None:
        if last is None or last.seq < expect_head.seq:
            have = last.seq if last else 0
            return f"journal ends at entry {have}, but the published head is {expect_head.seq}"
        at = next((e for e in entries if e.seq == expect_head.seq), None)
        if at is None or at.hash != expect_head.hash:
            return f"entry {expect_head.seq}: hash differs from the published head"
    return None
