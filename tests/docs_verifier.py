"""An independent verifier of RAPS exports, written from docs/fairness.md alone.

It imports nothing of the project (tests/test_docs_verifier.py checks that with the AST):
only the standard library's hashlib, hmac, json and datetime, and `cryptography` for
Ed25519. It covers what that page specifies for derivation v3 (RAPS sessions and ticket
draws, with or without the witness): the chain of an export, the commitment, every pick,
the witness's signatures, and the anomaly report; `verdict` says OK, ANOMALIES or FAILED
the way `raps verify` exits 0, 3 or 1.

Usage: python tests/docs_verifier.py EXPORT.jsonl [--witness-key HEX]
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import datetime, timedelta
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

V3 = "raps-pick-v3"
FILLED = ("pending", "verified", "awarded")

# ---------------------------------------------------------------- encodings


def u(n: int, size: int) -> bytes:
    return n.to_bytes(size, "big")


def text(s: str) -> bytes:
    raw = s.encode("utf-8")
    return u(len(raw), 4) + raw


def sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


# ------------------------------------------------------------ the bin digest


def height(card: str) -> int:
    rank = int.from_bytes(sha(b"raps-rank-v2" + card.encode("utf-8")), "big")
    h = 0
    while h < 10 and (rank >> (6 * h)) & 63 == 0:
        h += 1
    return h


def bin_digest(items: list[tuple[str, int]]) -> str:
    """docs/fairness.md "The bin digest", level by level."""
    if not items:
        return sha(b"raps-bin-v2" + u(0, 8) + u(0, 8) + bytes(32)).hex()
    heights = {c: height(c) for c, _ in items}
    level: list[tuple[bytes, int, int, str]] = []  # (hash, total, count, last card)
    chunk: list[tuple[str, int]] = []
    for card, w in items:
        chunk.append((card, w))
        if heights[card] >= 1:
            level.append(leaf(chunk))
            chunk = []
    if chunk:
        level.append(leaf(chunk))
    depth = 0
    while len(level) > 1:
        depth += 1
        upper, group = [], []
        for node in level:
            group.append(node)
            if heights[node[3]] >= depth + 1:
                upper.append(join(group))
                group = []
        if group:
            upper.append(join(group))
        level = upper
    top, total, count, _ = level[0]
    return sha(b"raps-bin-v2" + u(count, 8) + u(total, 8) + top).hex()


def leaf(entries: list[tuple[str, int]]) -> tuple[bytes, int, int, str]:
    body = b"".join(u(len(c.encode()), 2) + c.encode() + u(w, 8) for c, w in entries)
    return sha(b"raps-leaf-v2" + body), sum(w for _, w in entries), len(entries), entries[-1][0]


def join(group: list[tuple[bytes, int, int, str]]) -> tuple[bytes, int, int, str]:
    body = b"".join(h + u(t, 8) + u(n, 8) for h, t, n, _ in group)
    return (
        sha(b"raps-node-v2" + body),
        sum(g[1] for g in group),
        sum(g[2] for g in group),
        group[-1][3],
    )


# ------------------------------------------------------------- derivation v3


def mix_of(signature: str | None) -> bytes:
    return (
        bytes(32) if signature is None else sha(b"raps-witness-mix-v1" + bytes.fromhex(signature))
    )


def ticket(seed: bytes, sid: str, p: int, a: int, digest: str, mix: bytes, total: int) -> int:
    message = b"raps-pick-v3" + text(sid) + u(p, 4) + u(a, 4) + bytes.fromhex(digest) + mix
    limit = 2**256 - 2**256 % total
    k = 0
    while True:
        block = int.from_bytes(hmac.new(seed, message + u(k, 4), hashlib.sha256).digest(), "big")
        if block < limit:
            return block % total
        k += 1


def locate(items: list[tuple[str, int]], t: int) -> tuple[str, int, int]:
    first = 0
    for card, w in items:
        if t < first + w:
            return card, w, first
        first += w
    raise ValueError("ticket beyond the bin")


# --------------------------------------------------------------- the witness


def signed(public_key: str, message: bytes, signature: Any) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key)).verify(
            bytes.fromhex(str(signature)), message
        )
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True


def open_message(site: str, sid: str, commitment: str, derivation: str) -> bytes:
    return (b"raps-witness-open-v1" + text(site) + text(sid) + bytes.fromhex(commitment)
            + text(derivation))  # fmt: skip


def request_message(w: dict[str, Any], sid: str, req: dict[str, Any], kind: str,
                    commitment: str, seq: int, entry_hash: str) -> bytes:  # fmt: skip
    return (
        b"raps-witness-request-v1" + text(w["site"]) + text(sid) + u(req["request"], 4)
        + u(req["pick"], 4) + u(req["attempt"], 4) + text(kind) + text(V3)
        + bytes.fromhex(req["digest"]) + bytes.fromhex(commitment) + u(seq, 8)
        + bytes.fromhex(entry_hash)
    )  # fmt: skip


class Checker:
    """One draw (a session or a ticket draw): its problems, notes and anomalies."""

    def __init__(self, sid: str, entries: list[tuple[int, str]], pinned: str | None) -> None:
        self.sid = sid
        self.entries = entries  # (seq, hash) of each record
        self.pinned = pinned
        self.problems: list[str] = []
        self.anomalies: list[str] = []
        self.notes: list[str] = []
        self.witness: dict[str, Any] | None = None
        self.commitment = ""

    def bad(self, i: int, what: str) -> None:
        self.problems.append(f"record {i}: {what}")

    def opened(self, i: int, d: dict[str, Any]) -> bool:
        if d.get("derivation") != V3:
            self.bad(i, f"derivation {d.get('derivation')!r}: this verifier reads v3 only")
            return False
        self.commitment = d["commitment"]
        if "witness" not in d:
            self.bad(i, "no witness field")
        w = d.get("witness")
        if w is None:
            self.notes.append("opened without a witness")
        elif not signed(w["public_key"], open_message(w["site"], self.sid, self.commitment, V3),
                        w["receipt"]):  # fmt: skip
            self.bad(i, "the witness's receipt does not check")
        if self.pinned is not None and (w or {}).get("public_key") != self.pinned:
            self.bad(i, "not the pinned witness key")
        self.witness = w
        return True

    def witnessed(self, i: int, d: dict[str, Any], req: dict[str, Any], kind: str,
                  non_empty: bool) -> bytes:  # fmt: skip
        """The pick's witness field checked; its mix."""
        w, got = self.witness, d.get("witness")
        if w is None or not non_empty:
            if got is not None:
                self.bad(i, "a witness on a pick that has none")
            return bytes(32)
        if not isinstance(got, dict):
            self.bad(i, "the pick records no witness")
            return bytes(32)
        if got.get("request") != req["request"]:
            self.bad(i, "witnessed another request")
        if (got.get("seq"), got.get("entry_hash")) != tuple(self.entries[req["index"]]):
            self.bad(i, "the witness signed another journal entry")
        if got.get("signature") is None:
            if not w.get("fallback"):
                self.bad(i, "drawn without the witness, no fallback allowed")
            self.anomalies.append(f"pick {d.get('pick')} drawn without the witness's signature")
            return bytes(32)
        msg = request_message(w, self.sid, req, kind, self.commitment, int(got["seq"]),
                              str(got["entry_hash"]))  # fmt: skip
        if not signed(w["public_key"], msg, got["signature"]):
            self.bad(i, "the witness's signature does not check")
        return mix_of(got["signature"])

    def seed(self, recs: list[dict[str, Any]]) -> bytes | None:
        closes = [r for r in recs if r["type"] in ("session.closed", "draw.closed")]
        if len(closes) != 1:
            return None
        seed = bytes.fromhex(closes[0]["data"]["seed"])
        if hashlib.sha256(seed).hexdigest() != self.commitment:
            self.bad(len(recs), "the seed does not match the commitment")
            return None
        return seed


# ---------------------------------------------------------------- a session


def check_session(c: Checker, recs: list[dict[str, Any]]) -> None:
    if not recs or recs[0]["type"] not in ("session.override", "session.opened"):
        c.bad(0, "the session does not begin with its open")
        return
    oi = next((i for i, r in enumerate(recs) if r["type"] == "session.opened"), None)
    if oi is None or not c.opened(oi, recs[oi]["data"]):
        return
    o = recs[oi]["data"]
    seed = c.seed(recs)
    quotas, claim = o["quotas"], float(o["claim_seconds"])
    bar_no_show, bar_void = o["exclude_no_shows"], o["exclude_voided"]
    picks: dict[int, dict[str, Any]] = {}  # number -> card, kind, slot, state, at
    requests: dict[int, dict[str, Any]] = {}
    failed: dict[int, list[tuple[str, str]]] = {}
    count = 0
    closed = False
    steps = {
        "pick.verified": ("verified", ("pending",)),
        "pick.awarded": ("awarded", ("verified",)),
        "pick.no_show": ("no_show", ("pending",)),
        "pick.voided": ("void", ("pending", "verified")),
    }
    for i, r in enumerate(recs):
        t, d = r["type"], r["data"]
        if closed:
            c.bad(i, "after the close")
            continue
        if i < oi:
            continue
        if t == "pick.requested":
            kind = d["kind"]
            mine = [p for p in picks.values() if p["kind"] == kind]
            last = {p["slot"]: p["state"] for p in mine}
            free = [s for s in range(1, quotas.get(kind, 0) + 1) if last.get(s) not in FILLED]
            drawn = sum(1 for p in mine if free and p["slot"] == free[0])
            if not free or (d["slot"], d["attempt"]) != (free[0], drawn):
                c.bad(i, "not the lowest free slot and its attempt")
            count += 1
            if d.get("request") != count:
                c.bad(i, "request numbers do not run 1, 2, 3")
            requests[d["pick"]] = {"index": i, "request": count, "pick": d["pick"],
                                   "attempt": d["attempt"], "digest": d["pool_digest"],
                                   "kind": kind, "slot": d["slot"]}  # fmt: skip
        elif t == "pick.abandoned":
            requests.pop(d["pick"], None)
            c.anomalies.append(f"pick {d['pick']} abandoned")
        elif t == "pick.recheck_failed":
            failed.setdefault(d["pick"], []).append((d["card"], d["pool_digest"]))
        elif t in ("pick.drawn", "pick.no_eligible"):
            n = d["pick"]
            req = requests.pop(n, None)
            pool = list(d.get("pool", [])) if t == "pick.drawn" else []
            removed = failed.pop(n, [])
            full = sorted(set(pool) | {card for card, _ in removed})
            if req is None or (d["kind"], d["slot"], d["attempt"]) != (
                req["kind"],
                req["slot"],
                req["attempt"],
            ):
                c.bad(i, "no matching request")
                continue
            if bin_digest([(x, 1) for x in full]) != req["digest"]:
                c.bad(i, "drawn from another pool than requested")
            mix = c.witnessed(i, d, req, d["kind"], bool(full))
            if seed is None:
                continue
            for card, digest in removed:  # the failed re-checks, replayed
                if card in pool or bin_digest([(x, 1) for x in full]) != digest:
                    c.bad(i, "a failed re-check does not replay")
                    break
                k = ticket(seed, c.sid, n, d["attempt"], digest, mix, len(full))
                if full[k] != card:
                    c.bad(i, "a failed re-check named another card")
                full.remove(card)
            if t == "pick.no_eligible":
                continue
            if n != len(picks) + 1:
                c.bad(i, "pick numbers do not run 1, 2, 3")
            if pool != sorted(set(pool)) or len(pool) != d["pool_size"]:
                c.bad(i, "the pool is not canonical or not its size")
            if bin_digest([(x, 1) for x in pool]) != d["pool_digest"]:
                c.bad(i, "the pool does not match its digest")
            barring = (
                set(FILLED)
                | ({"no_show"} if bar_no_show else set())
                | ({"void"} if bar_void else set())
            )
            if {p["card"] for p in picks.values() if p["state"] in barring} & set(pool):
                c.bad(i, "a barred card in the pool")
            if not pool:
                c.bad(i, "drawn from an empty pool")
                continue
            k = ticket(seed, c.sid, n, d["attempt"], d["pool_digest"], mix, len(pool))
            if (k, pool[k]) != (d["index"], d["card"]):
                c.bad(i, "the seed gives another winner")
            picks[n] = {"card": d["card"], "kind": d["kind"], "slot": d["slot"],
                        "state": "pending", "at": datetime.fromisoformat(r["at"])}  # fmt: skip
            filled = sum(
                1 for p in picks.values() if p["kind"] == d["kind"] and p["state"] in FILLED
            )
            if filled > quotas.get(d["kind"], 0):
                c.bad(i, "over the quota")
        elif t in steps:
            new, legal = steps[t]
            p = picks.get(d["pick"])
            if p is None or p["state"] not in legal:
                c.bad(i, "not a legal step")
                continue
            p["state"] = new
            early = datetime.fromisoformat(r["at"]) - p["at"] < timedelta(seconds=claim)
            if t == "pick.no_show" and d.get("by") != "claim_timer" and early:
                c.anomalies.append(f"pick {d['pick']}: an early no-show")
        elif t == "session.closed":
            closed = True
            states = [p["state"] for p in picks.values()]
            said = {k: v for k, v in d["outcomes"].items() if v}
            have = {s: states.count(s) for s in set(states)}
            if d["picks"] != len(picks) or said != have:
                c.bad(i, "the close's summary differs from the records")
            if requests:
                c.anomalies.append("a request never drawn from before the close")
    if not closed:
        c.notes.append("not closed")


# ---------------------------------------------------------------- a ticket draw


def check_draw(c: Checker, recs: list[dict[str, Any]]) -> None:
    if not recs or recs[0]["type"] != "draw.opened" or not c.opened(0, recs[0]["data"]):
        c.bad(0, "the draw does not begin with its open")
        return
    o = recs[0]["data"]
    rules = o["rules"]
    seed = c.seed(recs)
    bin_ = {card: w for card, w in o["bin"]}
    if bin_digest([(x, w) for x, w in o["bin"]]) != o["bin_digest"]:
        c.bad(0, "the bin does not match its digest")
    external = dict(o["barred"])
    picks: dict[int, dict[str, Any]] = {}
    req: dict[str, Any] | None = None
    count = 0

    def eligible() -> list[tuple[str, int]]:
        own = set()
        for p in picks.values():
            if p["state"] in FILLED or (p["state"] == "no_show" and rules["exclude_no_shows"]) \
                    or (p["state"] == "void" and rules["exclude_voided"]):  # fmt: skip
                own.add(p["card"])
        return sorted((x, w) for x, w in bin_.items() if x not in external and x not in own)

    def position(i: int, d: dict[str, Any]) -> None:
        last: dict[int, str] = {}
        drawn: dict[int, int] = {}
        for p in picks.values():
            last[p["position"]] = p["state"]
            drawn[p["position"]] = drawn.get(p["position"], 0) + 1
        free = [x for x in range(1, rules["winners"] + 1) if last.get(x) not in FILLED]
        if any(p["state"] == "pending" for p in picks.values()) or not free or \
                (d["position"], d["attempt"]) != (free[0], drawn.get(free[0], 0)):  # fmt: skip
            c.bad(i, "not the lowest free position and its attempt")

    for i, r in enumerate(recs[1:], 1):
        t, d = r["type"], r["data"]
        if t in ("draw.requested", "draw.no_eligible"):
            for card, n in d["changes"]:
                if n:
                    bin_[card] = n
                else:
                    bin_.pop(card, None)
            for card, why in d["barred"].items():
                external.setdefault(card, why)
            position(i, d)
            items = eligible()
            if t == "draw.no_eligible":
                if items:
                    c.bad(i, "no eligible recorded with cards eligible")
                continue
            count += 1
            if d.get("request") != count or d["pick"] != len(picks) + 1:
                c.bad(i, "request or pick numbers do not run 1, 2, 3")
            digest = bin_digest(items)
            if (digest, len(items), sum(w for _, w in items)) != (
                d["bin_digest"],
                d["bin_count"],
                d["bin_total"],
            ):
                c.bad(i, "the eligible bin does not match")
            req = {"index": i, "request": count, "pick": d["pick"], "attempt": d["attempt"],
                   "position": d["position"], "digest": d["bin_digest"], "total": d["bin_total"],
                   "items": items}  # fmt: skip
        elif t == "draw.picked":
            said = (d["pick"], d["position"], d["attempt"], d["bin_digest"], d["bin_total"])
            if req is None or said != (
                req["pick"],
                req["position"],
                req["attempt"],
                req["digest"],
                req["total"],
            ):
                c.bad(i, "not drawn from the requested bin")
                req = None
                continue
            mix = c.witnessed(i, d, req, "tickets", True)
            if seed is not None:
                k = ticket(seed, c.sid, d["pick"], d["attempt"], req["digest"], mix, req["total"])
                card, w, first = locate(req["items"], k)
                if (k, card, w, first) != (d["ticket"], d["card"], d["tickets"], d["first"]):
                    c.bad(i, "the seed gives another winner")
            at = datetime.fromisoformat(r["at"])
            if datetime.fromisoformat(d["deadline"]) != at + timedelta(
                seconds=rules["present_seconds"]
            ):
                c.bad(i, "a wrong deadline")
            picks[d["pick"]] = {"card": d["card"], "position": d["position"], "state": "pending"}
            req = None
        elif t in ("draw.presented", "draw.awarded", "draw.no_show", "draw.voided"):
            p = picks.get(d["pick"])
            new = {"draw.presented": "verified", "draw.awarded": "awarded",
                   "draw.no_show": "no_show", "draw.voided": "void"}[t]  # fmt: skip
            legal = {"verified": ("pending",), "awarded": ("verified",), "no_show": ("pending",),
                     "void": ("pending", "verified")}[new]  # fmt: skip
            if p is None or p["state"] not in legal:
                c.bad(i, "not a legal step")
                continue
            p["state"] = new
        elif t == "draw.closed" and req is not None:
            c.anomalies.append("a request never drawn from before the close")


# ------------------------------------------------------------------- exports


def read(path: str) -> tuple[str | None, list[dict[str, Any]]]:
    focus, rows = None, []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f):
            if not line.strip():
                continue
            row = json.loads(line)
            if n == 0 and "export" in row:
                focus = row["export"].get("session_id")
                continue
            rows.append(row)
    return focus, rows


def chain_problems(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for k, row in enumerate(rows):
        rec = dict(row["record"])
        data = {key: v for key, v in rec.get("data", {}).items() if key != "pool"}
        body = json.dumps({**rec, "data": data}, sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False)  # fmt: skip
        digest = hashlib.sha256(
            f'{{"prev":"{row["prev"]}","seq":{row["seq"]},"record":{body}}}'.encode()
        ).hexdigest()
        if digest != row["hash"]:
            out.append(f"entry {row['seq']}: hash does not match")
        if k and (row["prev"], row["seq"]) != (rows[k - 1]["hash"], rows[k - 1]["seq"] + 1):
            out.append(f"entry {row['seq']}: does not follow entry {rows[k - 1]['seq']}")
    return out


def verify_export(path: str, pinned: str | None = None) -> tuple[str, list[str]]:
    """("OK" | "ANOMALIES" | "FAILED", the lines that say why)."""
    focus, rows = read(path)
    problems = chain_problems(rows)
    streams: dict[str, list[tuple[dict[str, Any], tuple[int, str]]]] = {}
    for row in rows:
        rec = row["record"]
        streams.setdefault(rec["session_id"], []).append((rec, (row["seq"], row["hash"])))
    anomalies: list[str] = []
    for sid, got in streams.items():
        if focus is not None and sid != focus:
            continue
        recs = [r for r, _ in got]
        c = Checker(sid, [e for _, e in got], pinned)
        if any(r["type"] == "session.opened" for r in recs):
            check_session(c, recs)
        elif any(r["type"] == "draw.opened" for r in recs):
            check_draw(c, recs)
        else:
            continue
        problems += [f"{sid}: {p}" for p in c.problems]
        anomalies += [f"{sid}: {a}" for a in c.anomalies]
    if problems:
        return "FAILED", problems
    return ("ANOMALIES", anomalies) if anomalies else ("OK", [])


if __name__ == "__main__":
    import sys

    args = sys.argv[1:]
    key = args[args.index("--witness-key") + 1] if "--witness-key" in args else None
    verdict, why = verify_export(args[0], key)
    print(verdict, *why, sep="\n")
    raise SystemExit({"OK": 0, "ANOMALIES": 3, "FAILED": 1}[verdict])
