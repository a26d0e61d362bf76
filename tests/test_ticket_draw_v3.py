"""Ticket draws by derivation v3: a pick is two commits (its bin, then its winner), the
witness's signature of the request is mixed in, a failed commit of the winner cannot change
who wins, an abandoned request is reported, and a v2 draw restored after the upgrade keeps
drawing in one step.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import pytest

from raps.chain import Head, link
from raps.signing import SigningKey
from selector.anomalies import draw_report
from selector.bindigest import bin_digest, locate
from selector.fairness import DERIVATION_V2, DERIVATION_V3, commitment, ticket_index_v3, witness_mix
from selector.records import Record
from selector.tickets.draw_picks import DrawError
from selector.tickets.draw_rules import DrawRules
from selector.tickets.draw_session import TicketDrawSession
from selector.tickets.draw_verify import verify_draw
from selector.verify import Mismatch
from selector.witness import WitnessAtOpen, WitnessReply, open_message
from tests.test_ticket_draw_rules import BIN, DAY, SEED, Host, new_draw

SITE = "test-casino"
WITNESS = SigningKey(hashlib.sha256(b"test_ticket_draw_v3 witness").digest())
DRAW = "teeds-queen"
STREAM = f"draw:{DRAW}"


class Stage:
    """The stage desk's two commits per draw, the journal chained as the daemon chains it."""

    def __init__(self, fallback: bool = False, witnessed: bool = True) -> None:
        self.s = TicketDrawSession(STREAM, DRAW, f"bin-{DRAW}", DAY, DrawRules(winners=3))
        self.h = Host(self.s)
        receipt = WITNESS.sign(open_message(SITE, STREAM, commitment(SEED), DERIVATION_V3))
        w = WitnessAtOpen(SITE, WITNESS.public_hex, receipt, fallback) if witnessed else None
        self.s.open(self.h.cmd(), SEED, BIN, {}, witness=w)
        self.entries: list[tuple[int, str]] = []
        self.head: Head | None = None
        self.commit()

    def commit(self) -> None:
        new = self.s.records[len(self.entries) :]
        for e in link([r.to_dict() for r in new], self.head):
            self.entries.append((e.seq, e.hash))
            self.head = Head(e.seq, e.hash)

    def request(self) -> Any:
        c = self.h.cmd(1)
        self.s.request(c)
        self.commit()
        seq, entry_hash = self.entries[-1]
        self.s.note_request_entry(seq, entry_hash)
        return c

    def reply(self, reachable: bool = True) -> WitnessReply | None:
        if not self.s.needs_witness():
            return None
        seq, entry_hash = self.entries[self.request_index()]
        if not reachable:
            return WitnessReply(seq, entry_hash, None, "witness unreachable")
        terms = self.s.witness_terms()
        assert terms is not None
        return WitnessReply(seq, entry_hash, WITNESS.sign(terms.message()))

    def request_index(self) -> int:
        return max(i for i, r in enumerate(self.s.records) if r.type == "draw.requested")

    def draw(self, reachable: bool = True) -> Any:
        c = self.request()
        out = self.s.complete(c, self.reply(reachable))
        self.commit()
        assert out.pick is not None
        return out.pick


def plain(s: TicketDrawSession) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = json.loads(json.dumps([r.to_dict() for r in s.records]))
    return out


def full(stage: Stage, reachable: bool = True) -> Stage:
    h, s = stage.h, stage.s
    p1 = stage.draw(reachable)
    h.present(p1)
    s.update_bin({"N1": 6})
    p2 = stage.draw(reachable)
    s.no_show(h.cmd(), p2.number)
    p3 = stage.draw(reachable)
    h.present(p3)
    h.close(force=True)
    stage.commit()
    return stage


@pytest.fixture(scope="module")
def honest() -> Stage:
    return full(Stage())


def named(bad: list[Mismatch], pick: int | None, words: str) -> bool:
    return any(m.pick == pick and words in m.message for m in bad)


def test_a_witnessed_draw_verifies_and_each_pick_is_the_reference(honest: Stage) -> None:
    recs = plain(honest.s)
    assert verify_draw(recs, entries=honest.entries, witness_key=WITNESS.public_hex) == []
    types = [r["type"] for r in recs]
    assert types.count("draw.requested") == types.count("draw.picked") == 3
    opened = recs[0]["data"]
    assert opened["derivation"] == DERIVATION_V3
    assert opened["witness"]["public_key"] == WITNESS.public_hex
    bin_ = dict(BIN)
    won: set[str] = set()
    for i, r in enumerate(recs):
        d = r["data"]
        if r["type"] == "draw.requested":
            for c, n in d["changes"]:
                bin_[c] = n
            items = sorted((c, w) for c, w in bin_.items() if c not in won)
            assert (d["bin_digest"], d["bin_total"]) == (
                bin_digest(items),
                sum(bin_.values()) - sum(bin_[c] for c in won),
            )
        elif r["type"] == "draw.picked":
            mix = witness_mix(d["witness"]["signature"])
            assert d["witness"]["seq"] == honest.entries[i - 1][0]
            ticket, _ = ticket_index_v3(
                SEED, STREAM, d["pick"], d["attempt"], d["bin_digest"], mix, d["bin_total"]
            )
            assert (d["ticket"], d["card"]) == (ticket, items[locate(items, ticket)][0])
            won.add(d["card"])


def test_a_winner_s_refused_commit_cannot_change_the_winner() -> None:
    """The veto-by-failed-commit attack: the request is durable; a trigger refuses the
    winner's commit again and again; every retry, from the journal as it is, gives the
    same winner (and the witness the same signature)."""
    stage = Stage()
    c = stage.request()
    winners = set()
    for _ in range(5):
        records = [Record.from_dict(json.loads(json.dumps(r.to_dict()))) for r in stage.s.records]
        retry = TicketDrawSession.restore(STREAM, DRAW, f"bin-{DRAW}", DAY, DrawRules(winners=3),
                                          records, SEED)  # fmt: skip
        seq, entry_hash = stage.entries[-1]
        retry.note_request_entry(seq, entry_hash)
        terms = retry.witness_terms()
        assert terms is not None
        out = retry.complete(c, WitnessReply(seq, entry_hash, WITNESS.sign(terms.message())))
        assert out.pick is not None
        winners.add(out.pick.card)  # ...and the commit fails: the journal keeps the request
    assert len(winners) == 1


def test_late_entries_wait_while_a_bin_is_requested() -> None:
    stage = Stage()
    c = stage.request()
    digest = stage.s.records[-1].data["bin_digest"]
    stage.s.update_bin({"LATE": 50})  # arrives between the two commits
    out = stage.s.complete(c, stage.reply())
    assert out.pick is not None and out.records[-1].data["bin_digest"] == digest
    stage.commit()
    stage.h.present(out.pick)
    stage.request()
    assert stage.s.records[-1].data["changes"] == [["LATE", 50]]


@pytest.mark.parametrize(
    ("edit", "pick", "words"),
    [
        (lambda r: picked(r, 2)["witness"].__setitem__("signature", "11" * 64), 2, "witness sig"),
        (lambda r: requested(r, 2)["changes"].append(["ZZ", 4]), 2, "digest/count/total"),
        (lambda r: picked(r, 3).__setitem__("bin_total", 1), 3, "other than the one requested"),
        (lambda r: requested(r, 3).__setitem__("request", 7), 3, "request number 7"),
        (lambda r: picked(r, 1)["witness"].__setitem__("seq", 99), 1, "another journal entry"),
    ],
)
def test_an_edit_to_a_request_or_a_pick_is_named(
    honest: Stage, edit: Any, pick: int, words: str
) -> None:
    recs = copy.deepcopy(plain(honest.s))
    edit(recs)
    bad = verify_draw(recs, entries=honest.entries)
    assert named(bad, pick, words), bad


def picked(recs: list[dict[str, Any]], n: int) -> dict[str, Any]:
    return next(r["data"] for r in recs if r["type"] == "draw.picked" and r["data"]["pick"] == n)


def requested(recs: list[dict[str, Any]], n: int) -> dict[str, Any]:
    return next(r["data"] for r in recs if r["type"] == "draw.requested" and r["data"]["pick"] == n)


def test_a_fallback_pick_and_an_abandoned_request_are_anomalies() -> None:
    stage = full(Stage(fallback=True), reachable=False)
    recs = plain(stage.s)
    assert verify_draw(recs, entries=stage.entries) == []
    assert sum("without the witness's signature" in a for a in draw_report(recs).anomalies) == 3
    left = Stage()
    left.request()  # the winner never drawn: the draw closed instead
    left.h.close()
    left.commit()
    recs = plain(left.s)
    assert verify_draw(recs) == []
    assert any("never drawn from before the close" in a for a in draw_report(recs).anomalies)
    with pytest.raises(DrawError, match="no fallback"):
        strict = Stage()
        strict.s.complete(strict.request(), strict.reply(reachable=False))


def test_a_v2_draw_restored_after_the_upgrade_keeps_drawing_in_one_step() -> None:
    s, h = new_draw(BIN, DrawRules(winners=2), derivation=DERIVATION_V2)
    h.present(h.draw())
    records = [Record.from_dict(json.loads(json.dumps(r.to_dict()))) for r in s.records]
    back = TicketDrawSession.restore(
        s.session_id, s.draw_id, s.bin_id, s.day, s.rules, records, SEED
    )
    assert back.derivation == DERIVATION_V2
    h.s = back
    p2 = h.draw()
    assert back.records[-1].type == "draw.picked" and "changes" in back.records[-1].data
    h.present(p2)
    h.close()
    assert verify_draw(back.records) == []
