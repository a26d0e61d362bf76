"""The witness's own log held against the journal (`raps verify --witness-log FILE`).

The witness keeps every signature it gave (`raps witness export SESSION`, JSON lines: one
with `"log": "open"`, then one with `"log": "signature"` per signed request). Every
request it signed must be in the journal as it signed it: the request record with that
number, pick, attempt, digest, at that journal entry (seq and hash), and its pick drawn
with that signature. A signed request the journal lacks is a deleted or rewritten request
(the "delete the tail request and draw again" attack): tampering, whatever the journal's
own chain says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

_REQUESTS = {"pick.requested": "pick.drawn", "draw.requested": "draw.picked"}


def compare_log(
    log: Sequence[Mapping[str, Any]],
    by_session: Mapping[str, Sequence[dict[str, Any]]],
    entries: Mapping[str, Sequence[tuple[int, str]]],
    site: str | None = None,
) -> list[str]:
    """Problems (each a sign of tampering) between a witness log and the journal's records
    (by session, with each record's (seq, hash) by session when known)."""
    out: list[str] = []
    for line in log:
        sid = str(line.get("session_id"))
        if site is not None and line.get("site") != site:
            continue
        recs = by_session.get(sid)
        if recs is None:
            if line.get("log") == "signature":
                out.append(f"the witness signed request {line.get('request')} of {sid}, of "
                           "which the journal holds nothing")  # fmt: skip
            continue
        if line.get("log") == "open":
            out += _check_open(sid, line, recs)
        elif line.get("log") == "signature":
            out += _check_signed(sid, line, recs, entries.get(sid))
    return out


def _check_open(sid: str, line: Mapping[str, Any], recs: Sequence[dict[str, Any]]) -> list[str]:
    opened = next((r for r in recs if r.get("type") in ("session.opened", "draw.opened")), None)
    if opened is None:
        return [f"the witness saw {sid} opened; the journal has no opening record"]
    d = opened.get("data") or {}
    w = _witness_of(d)
    if (d.get("commitment"), w.get("public_key")) != (
        line.get("commitment"),
        line.get("public_key"),
    ):
        return [f"{sid} opened with another commitment or witness key than the witness saw"]
    return []


def _check_signed(
    sid: str,
    line: Mapping[str, Any],
    recs: Sequence[dict[str, Any]],
    seqs: Sequence[tuple[int, str]] | None,
) -> list[str]:
    n = line.get("request")
    found = None
    for i, r in enumerate(recs):
        d = r.get("data") or {}
        if r.get("type") in _REQUESTS and d.get("request") == n:
            found = (i, r)
            break
    what = f"the witness signed request {n} of {sid} (pick {line.get('pick')}, digest " \
           f"{str(line.get('digest'))[:12]}...)"  # fmt: skip
    if found is None:
        return [f"{what}; the journal lacks it: a deleted or rewritten request"]
    i, r = found
    d = r["data"]
    digest = d.get("pool_digest", d.get("bin_digest"))
    same = (d.get("pick"), d.get("attempt"), digest) == (
        line.get("pick"), line.get("attempt"), line.get("digest"),
    )  # fmt: skip
    if seqs is not None and i < len(seqs):
        same = same and tuple(seqs[i]) == (line.get("seq"), line.get("entry_hash"))
    if not same:
        return [f"{what}; the journal's request {n} is another one: a rewritten request"]
    drawn = _REQUESTS[str(r["type"])]
    for later in recs[i + 1 :]:
        ld = later.get("data") or {}
        if later.get("type") == drawn and ld.get("pick") == d.get("pick"):
            w = _witness_of(ld)
            if w.get("signature") != line.get("signature"):
                return [f"{what}; its pick in the journal carries another signature or none"]
            break
    return []


def _witness_of(d: Mapping[str, Any]) -> Mapping[str, Any]:
    w = d.get("witness")
    return w if isinstance(w, dict) else {}
