"""What screens and other systems may see of a RAPS session's picks and records: masked
cards, first name and initial, no pool."""

from __future__ import annotations

from typing import Any

from raps.chain import Head
from raps.redact import mask_card, short_name
from selector.records import Record
from selector.session import DrawSession, Outcome, Pick


def pick_view(p: Pick) -> dict[str, Any]:
    """What screens may show of a pick: masked card, first name and initial, location."""
    return {
        "pick": p.number,
        "kind": p.kind,
        "slot": p.slot,
        "attempt": p.attempt,
        "state": p.state.value,
        "display_name": short_name(p.display_name),
        "tier": p.tier,
        "card": mask_card(p.card),
        "location": p.location.to_dict(),
        "drawn_at": p.drawn_at.isoformat(),
        # none until the countdown starts (claim_starts "absent": when found absent)
        "deadline": None if p.deadline is None else p.deadline.isoformat(),
        "claim": p.claim.to_dict(),
        "prize": None
        if p.prize is None
        else {"amount": p.prize.amount, "kind": p.prize.kind.value, "envelope": p.prize.envelope},
        "void_reason": p.void_reason,
        "pool_size": p.pool_size,
        "pool_digest": p.pool_digest,
    }


def command_answer(outcome: Outcome, head: Head | None) -> dict[str, Any]:
    """A session command's answer: the pick it touched, whether it was a retry, the head."""
    return {
        "replayed": outcome.replayed,
        "no_eligible": outcome.no_eligible,
        "pick": pick_view(outcome.pick) if outcome.pick is not None else None,
        "journal_head": {"seq": head.seq, "hash": head.hash} if head else None,
    }


def public_record(rec: Record) -> dict[str, Any]:
    """A record as signage and other systems may see it: no pool, masked card."""
    d = rec.to_dict(plain=False)
    data = {k: v for k, v in d["data"].items() if k != "pool"}
    if "card" in data:
        data["card"] = mask_card(data["card"])
    if "display_name" in data:
        data["display_name"] = short_name(data["display_name"])
    d["data"] = data
    return d


def session_summary(s: DrawSession, head: Head | None) -> dict[str, Any]:
    """A session as the handheld, dispatch and the MQTT summary show it."""
    seed = s.revealed_seed
    return {
        "session_id": s.session_id,
        "promotion_id": s.promotion_id,
        "state": s.state.value,
        "rehearsal": s.rehearsal,
        "commitment": s.commitment,
        "seed": seed.hex() if seed else None,
        "quotas": {str(k): v for k, v in s.rules.quotas.items()},
        "claim_seconds": s.rules.claim_seconds,
        "claim_starts": s.rules.claim_starts.value,
        "max_en_route_seconds": s.rules.max_en_route_seconds,
        "picks": [pick_view(p) for p in s.picks],
        "journal_head": {"seq": head.seq, "hash": head.hash} if head else None,
    }


def log_fields(rec: Record) -> dict[str, Any]:
    """A record's log line fields: the log processor masks "card"; pools never go there."""
    keys = ("pick", "kind", "slot", "attempt", "reason", "card")
    fields: dict[str, Any] = {k: rec.data[k] for k in keys if k in rec.data}
    return {"session": rec.session_id, "user": rec.actor.user, "role": rec.actor.role, **fields}
