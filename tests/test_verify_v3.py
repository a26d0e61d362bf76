"""Derivation v3 for RAPS sessions, with and without a witness: an honest session verifies,
its picks are the reference computation's, and every edit to a pool, a request number or a
witness signature is named; a v1 session restored after the upgrade keeps drawing by v1.

The witness here is its key in-process (the real process: tests/test_witness_service.py);
journal entries are chained by raps.chain as the journal chains them, so a signature
names the request's real (seq, entry hash).
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import pytest

from raps.chain import Head, link
from raps.signing import SigningKey
from selector.anomalies import session_report
from selector.bindigest import bin_digest
from selector.fairness import (
    DERIVATION_V1,
    DERIVATION_V3,
    commitment,
    pool_digest,
    ticket_index_v3,
    witness_mix,
)
from selector.records import Record
from selector.session import DrawSession, SessionError
from selector.verify import Mismatch, verify_session
from selector.witness import WitnessAtOpen, WitnessReply, open_message
from tests.builders import command
from tests.test_verify import SEED, SESSION_ID, Script, seated_floor

SITE = "test-casino"
WITNESS = SigningKey(hashlib.sha256(b"test_verify_v3 witness").digest())
OTHER_KEY = SigningKey(hashlib.sha256(b"someone else").digest())


class Journal:
    """Chains a session's records as the journal does: (seq, hash) per record."""

    def __init__(self, s: DrawSession) -> None:
        self.s = s
        self.entries: list[tuple[int, str]] = []
        self.head: Head | None = None

    def commit(self) -> None:
        new = self.s.records[len(self.entries) :]
        for e in link([r.to_dict(plain=False) for r in new], self.head):
            self.entries.append((e.seq, e.hash))
            self.head = Head(e.seq, e.hash)


def witness_at_open(
    key: SigningKey = WITNESS, fallback: bool = False, seed: bytes = SEED
) -> WitnessAtOpen:
    receipt = key.sign(open_message(SITE, SESSION_ID, commitment(seed), DERIVATION_V3))
    return WitnessAtOpen(SITE, key.public_hex, receipt, fallback)


class Witnessed(Script):
    """The daemon's two commits per draw, with the witness asked between them."""

    def __init__(self, witness: WitnessAtOpen | None, reachable: bool = True) -> None:
        floor, ev = seated_floor()
        super().__init__(DrawSession(SESSION_ID, "raps", floor), ev.now)
        self.journal = Journal(self.session)
        self.reachable = reachable
        self.session.open(self.cmd(), SEED, witness=witness)
        self.journal.commit()

    def reply(self) -> WitnessReply | None:
        s = self.session
        req = s.records[-1]
        assert req.type == "pick.requested"
        seq, entry_hash = self.journal.entries[-1]
        s.note_request_entry(seq, entry_hash)
        if not s.needs_witness():
            return None
        if not self.reachable:
            return WitnessReply(seq, entry_hash, None, "witness timed out after 2.0 s")
        terms = s.witness_terms()
        assert terms is not None
        return WitnessReply(seq, entry_hash, WITNESS.sign(terms.message()))

    def draw(self, kind: str) -> int:
        c = self.cmd()
        self.session.request(c, kind)
        self.journal.commit()
        out = self.session.complete(c, kind, self.reply())
        self.journal.commit()
        assert out.pick is not None, out
        return out.pick.number

    def run(self) -> Witnessed:
        s = self
        p1 = s.draw("slots")
        s.session.verify(s.cmd(), p1)
        p2 = s.draw("slots")
        s.session.no_show(s.cmd(), p2)
        s.draw("slots")
        p4 = s.draw("tables")
        s.session.void(s.cmd(), p4, "wrong seat announced")
        s.draw("tables")
        s.session.close(s.cmd(), force=True)
        s.journal.commit()
        return s


def plain(s: DrawSession) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = json.loads(json.dumps([r.to_dict() for r in s.records]))
    return out


@pytest.fixture(scope="module")
def honest() -> Witnessed:
    return Witnessed(witness_at_open()).run()


def drawn(recs: list[dict[str, Any]], n: int) -> dict[str, Any]:
    return next(r["data"] for r in recs if r["type"] == "pick.drawn" and r["data"]["pick"] == n)


def named(bad: list[Mismatch], pick: int | None, words: str) -> bool:
    return any(m.pick == pick and words in m.message for m in bad)


def test_an_honest_witnessed_session_verifies_and_each_pick_is_the_reference(
    honest: Witnessed,
) -> None:
    recs = plain(honest.session)
    assert (
        verify_session(recs, entries=honest.journal.entries, witness_key=WITNESS.public_hex) == []
    )
    opened = recs[0]["data"]
    assert opened["derivation"] == DERIVATION_V3
    assert opened["witness"]["public_key"] == WITNESS.public_hex
    requests = [r["data"]["request"] for r in recs if r["type"] == "pick.requested"]
    assert requests == list(range(1, len(requests) + 1))
    for d in (r["data"] for r in recs if r["type"] == "pick.drawn"):
        pool = d["pool"]
        digest = bin_digest([(c, 1) for c in pool])  # the reference, weight 1 per card
        assert d["pool_digest"] == digest
        mix = witness_mix(d["witness"]["signature"])
        index, _ = ticket_index_v3(
            SEED, SESSION_ID, d["pick"], d["attempt"], digest, mix, len(pool)
        )
        assert (d["index"], d["card"]) == (index, pool[index])


def test_a_retry_after_a_failed_commit_gets_the_same_signature_and_winner() -> None:
    """Ed25519 signs deterministically: the winner's commit refused (a trigger), the
    session rolled back to its request, asked again, signed again: the same winner."""
    w = Witnessed(witness_at_open())
    c = w.cmd()
    w.session.request(c, "slots")
    w.journal.commit()
    keep = len(w.session.records)
    reply = w.reply()
    first = w.session.complete(c, "slots", reply)
    assert first.pick is not None
    again = w.session.rolled_back(keep)  # the commit failed: the journal ends at the request
    seq, entry_hash = w.journal.entries[-1]
    again.note_request_entry(seq, entry_hash)
    terms = again.witness_terms()
    assert terms is not None
    signature = WITNESS.sign(terms.message())
    assert reply is not None and signature == reply.signature
    second = again.complete(c, "slots", WitnessReply(seq, entry_hash, signature))
    assert second.pick is not None and second.pick.card == first.pick.card


@pytest.mark.parametrize(
    ("edit", "pick", "words"),
    [
        (lambda r: drawn(r, 2)["witness"].__setitem__("signature", "00" * 64), 2, "witness sig"),
        (lambda r: drawn(r, 1)["witness"].__setitem__("signature", None), 1, "forbids"),
        (lambda r: drawn(r, 3).__setitem__("witness", None), 3, "records none"),
        (lambda r: drawn(r, 4)["witness"].__setitem__("seq", 3), 4, "another journal entry"),
        (lambda r: drawn(r, 2)["witness"].__setitem__("request", 5), 2, "witnessed request 5"),
    ],
)
def test_an_edited_witness_field_is_named(
    honest: Witnessed, edit: Any, pick: int, words: str
) -> None:
    recs = copy.deepcopy(plain(honest.session))
    edit(recs)
    bad = verify_session(recs, entries=honest.journal.entries)
    assert named(bad, pick, words), bad


def test_a_request_renumbered_or_a_pool_changed_is_named(honest: Witnessed) -> None:
    recs = plain(honest.session)
    renumbered = copy.deepcopy(recs)
    req = [r for r in renumbered if r["type"] == "pick.requested"]
    req[2]["data"]["request"] = 4  # as if request 3 had been deleted and drawn again
    assert named(verify_session(renumbered), 3, "request number 4, expected 3")
    swapped = copy.deepcopy(recs)
    pool = drawn(swapped, 3)["pool"]
    pool[0] = pool[0] + "X"
    bad = verify_session(swapped)
    assert named(bad, 3, "pool digest does not match"), bad


def test_the_pinned_key_and_the_receipt_are_checked(honest: Witnessed) -> None:
    recs = plain(honest.session)
    bad = verify_session(recs, witness_key=OTHER_KEY.public_hex)
    assert named(bad, None, "not the pinned"), bad
    forged = copy.deepcopy(recs)
    forged[0]["data"]["witness"]["public_key"] = OTHER_KEY.public_hex  # and every signature
    bad = verify_session(forged)
    assert named(bad, None, "receipt"), bad
    assert named(bad, 1, "witness signature"), bad


def test_the_core_refuses_a_bad_signature_a_missing_one_and_a_bad_receipt() -> None:
    w = Witnessed(witness_at_open())
    c = w.cmd()
    w.session.request(c, "slots")
    w.journal.commit()
    seq, entry_hash = w.journal.entries[-1]
    w.session.note_request_entry(seq, entry_hash)
    with pytest.raises(SessionError, match="needs the witness's signature"):
        w.session.complete(c, "slots")
    with pytest.raises(SessionError, match="does not match"):
        w.session.complete(c, "slots", WitnessReply(seq, entry_hash, OTHER_KEY.sign(b"x")))
    with pytest.raises(SessionError, match="no fallback"):
        w.session.complete(c, "slots", WitnessReply(seq, entry_hash, None, "timeout"))
    floor, ev = seated_floor()
    s = DrawSession(SESSION_ID, "raps", floor)
    bad = WitnessAtOpen(SITE, WITNESS.public_hex, OTHER_KEY.sign(b"x"), False)
    with pytest.raises(SessionError, match="receipt"):
        s.open(command("o", ev.now), SEED, witness=bad)


def test_a_fallback_pick_is_drawn_unwitnessed_and_reported_as_an_anomaly() -> None:
    w = Witnessed(witness_at_open(fallback=True), reachable=False).run()
    recs = plain(w.session)
    assert verify_session(recs, entries=w.journal.entries) == []
    d = drawn(recs, 1)
    assert d["witness"]["signature"] is None and "timed out" in d["witness"]["reason"]
    report = session_report(recs)
    assert sum("without the witness's signature" in a for a in report.anomalies) == 5


def test_an_unwitnessed_session_verifies_with_a_note() -> None:
    w = Witnessed(None).run()
    recs = plain(w.session)
    assert recs[0]["data"]["witness"] is None
    assert all(drawn(recs, n)["witness"] is None for n in range(1, 6))
    assert verify_session(recs, entries=w.journal.entries) == []
    report = session_report(recs)
    assert any("without a witness" in n for n in report.notes)
    assert not any("witness" in a for a in report.anomalies)


def test_a_v1_session_restored_after_the_upgrade_keeps_drawing_by_v1() -> None:
    floor, ev = seated_floor()
    s = DrawSession(SESSION_ID, "raps", floor)
    run = Script(s, ev.now)
    s.open(run.cmd(), SEED, derivation=DERIVATION_V1)
    run.draw("slots")
    old = [Record.from_dict(r) for r in plain(s)]
    for r in old:
        r.data.pop("derivation", None)  # written before v3: no derivation recorded
    back = DrawSession.restore(SESSION_ID, "raps", floor, s.rules, old, SEED)
    assert back.derivation == DERIVATION_V1
    run.session = back
    run.draw("tables")
    back.close(run.cmd(), force=True)
    recs = plain(back)
    d = drawn(recs, 2)
    assert d["pool_digest"] == pool_digest(d["pool"]) and "witness" not in d
    assert verify_session(recs) == []


def test_a_chosen_attempt_or_slot_is_named_even_when_the_pick_is_redone() -> None:
    """The attempt is part of the HMAC message: a daemon that tried attempts until a
    favoured card came up, the pick made self-consistent, is caught by the session's
    numbering (selector.lifecycle)."""
    w = Witnessed(None).run()  # no witness: only the rule stands between
    recs = plain(w.session)
    req = next(r["data"] for r in recs if r["type"] == "pick.requested" and r["data"]["pick"] == 3)
    d = drawn(recs, 3)
    assert (d["slot"], d["attempt"]) == (2, 1)  # a redraw after pick 2's no-show
    for x in (req, d):
        x["attempt"] = 0
    pool = d["pool"]
    index, _ = ticket_index_v3(
        SEED, SESSION_ID, 3, 0, d["pool_digest"], witness_mix(None), len(pool)
    )
    d["index"], d["card"] = index, pool[index]
    bad = verify_session(recs)
    assert named(bad, 3, "attempt 0 requested for slots slot 2, which was drawn 1 time(s)"), bad
