"""The witness's durable log and its signing rules (SQLite, fsynced before it answers).

- `open_session`: registers a draw (site, session, commitment, derivation) and returns
  the witness's receipt, a signature of the open. Asked again with the same commitment it
  returns the same receipt; with another one only while nothing was signed for the draw
  yet (a retried open draws a new seed), else it refuses.
- `sign`: the signature of a request (selector.witness.RequestTerms). Asked again for the
  same request with the same terms it returns the stored signature (a retry after a
  failed commit gets the same winner); with other terms (another digest, another journal
  entry: the tail deleted and drawn again) it refuses; a request number at or below one
  already signed, or for a draw it never saw opened, is refused too: requests only move
  forward.

Every answer is committed (PRAGMA synchronous=FULL) before it is returned, so a crash
cannot make the witness forget a signature it gave.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from raps.signing import SigningKey
from selector.witness import RequestTerms, open_message

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    site TEXT NOT NULL, session_id TEXT NOT NULL, commitment TEXT NOT NULL,
    derivation TEXT NOT NULL, receipt TEXT NOT NULL, opened_at TEXT NOT NULL,
    PRIMARY KEY (site, session_id)
);
CREATE TABLE IF NOT EXISTS signatures (
    site TEXT NOT NULL, session_id TEXT NOT NULL, request INTEGER NOT NULL,
    terms TEXT NOT NULL, signature TEXT NOT NULL, signed_at TEXT NOT NULL,
    PRIMARY KEY (site, session_id, request)
);
"""


class WitnessRefusal(Exception):
    """A request the witness will not sign; `code` says which rule, `status` the HTTP code."""

    def __init__(self, code: str, message: str, status: int = 409) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


def _canonical(terms: RequestTerms) -> str:
    return json.dumps(terms.to_dict(), sort_keys=True, separators=(",", ":"))


class WitnessLog:
    def __init__(self, path: Path, key: SigningKey, sites: tuple[str, ...] = ()) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.key = key
        self.sites = frozenset(sites)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")  # the WAL is fsynced at every commit
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _served(self, site: str) -> None:
        if self.sites and site not in self.sites:
            raise WitnessRefusal("site_not_served", f"this witness does not serve site {site!r}")

    def open_session(
        self, site: str, session_id: str, commitment: str, derivation: str
    ) -> dict[str, Any]:
        self._served(site)
        receipt = self.key.sign(open_message(site, session_id, commitment, derivation))
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                row = db.execute(
                    "SELECT commitment, derivation, receipt FROM sessions "
                    "WHERE site = ? AND session_id = ?",
                    (site, session_id),
                ).fetchone()
                if row is not None and (row[0], row[1]) != (commitment, derivation):
                    signed = db.execute(
                        "SELECT count(*) FROM signatures WHERE site = ? AND session_id = ?",
                        (site, session_id),
                    ).fetchone()[0]
                    if signed:
                        raise WitnessRefusal(
                            "already_open",
                            f"draw {session_id} opened with another commitment and has "
                            f"{signed} signed request(s): it cannot open again",
                        )
                if row is None or (row[0], row[1]) != (commitment, derivation):
                    db.execute(
                        "INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?, ?, ?)",
                        (site, session_id, commitment, derivation, receipt, _now()),
                    )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return self.describe(receipt)

    def describe(self, receipt: str | None = None) -> dict[str, Any]:
        out = describe_key(self.key)
        if receipt is not None:
            out["receipt"] = receipt
        return out

    def sign(self, terms: RequestTerms) -> str:
        self._served(terms.site)
        try:
            message = terms.message()
        except ValueError as e:
            raise WitnessRefusal("malformed", f"the request is malformed: {e}", 422) from e
        canonical = _canonical(terms)
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                signature = self._sign_locked(db, terms, canonical, message)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return signature

    def _sign_locked(
        self, db: sqlite3.Connection, terms: RequestTerms, canonical: str, message: bytes
    ) -> str:
        site, sid = terms.site, terms.session_id
        row = db.execute(
            "SELECT commitment, derivation FROM sessions WHERE site = ? AND session_id = ?",
            (site, sid),
        ).fetchone()
        if row is None:
            raise WitnessRefusal("unknown_session", f"the witness never saw draw {sid} opened", 404)
        if (row[0], row[1]) != (terms.commitment, terms.derivation):
            raise WitnessRefusal(
                "commitment_mismatch",
                f"draw {sid} opened with another commitment or derivation than this request's",
            )
        old = db.execute(
            "SELECT terms, signature FROM signatures WHERE site = ? AND session_id = ? "
            "AND request = ?",
            (site, sid, terms.request),
        ).fetchone()
        if old is not None:
            if old[0] != canonical:
                raise WitnessRefusal(
                    "request_conflict",
                    f"request {terms.request} of draw {sid} was signed for another pool or "
                    "journal entry: a request is signed once",
                )
            return str(old[1])  # the same request again: the same signature
        top = db.execute(
            "SELECT max(request) FROM signatures WHERE site = ? AND session_id = ?", (site, sid)
        ).fetchone()[0]
        if top is not None and terms.request <= top:
            raise WitnessRefusal(
                "request_behind",
                f"request {terms.request} of draw {sid} is behind request {top}, already "
                "signed: requests only move forward",
            )
        signature = self.key.sign(message)
        db.execute(
            "INSERT INTO signatures VALUES (?, ?, ?, ?, ?, ?)",
            (site, sid, terms.request, canonical, signature, _now()),
        )
        return signature

    def export(self, session_id: str, site: str | None = None) -> list[dict[str, Any]]:
        """The draw's log as the witness holds it: its open, then every signed request."""
        args = (session_id, site, site)
        with self._lock:
            opens = self._db.execute(
                "SELECT site, session_id, commitment, derivation, receipt, opened_at "
                "FROM sessions WHERE session_id = ? AND (? IS NULL OR site = ?) ORDER BY site",
                args,
            ).fetchall()
            rows = self._db.execute(
                "SELECT terms, signature, signed_at FROM signatures "
                "WHERE session_id = ? AND (? IS NULL OR site = ?) ORDER BY site, request",
                args,
            ).fetchall()
        out: list[dict[str, Any]] = []
        for s, sid, commitment, derivation, receipt, at in opens:
            out.append({"log": "open", "site": s, "session_id": sid, "commitment": commitment,
                        "derivation": derivation, "receipt": receipt, "at": at,
                        **self.describe()})  # fmt: skip
        for terms, signature, at in rows:
            parsed = RequestTerms.from_dict(json.loads(terms)).to_dict()
            out.append({"log": "signature", **parsed, "signature": signature, "at": at,
                        **self.describe()})  # fmt: skip
        return out


def describe_key(key: SigningKey) -> dict[str, Any]:
    """The witness's public key as it publishes it (the inspector pins this)."""
    return {"public_key": key.public_hex, "key_id": key.key_id}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")
