"""What the stage pages see of a draw: the host's full view, the audience's screen, the
Rewards desk's prize list.  Plain dicts for JSON; nothing here changes state.

The audience sees a winner as first name and initial, masked card and tier; the host
sees the full card (to check the receipt) and the proxy on file.  The seed appears only
once the draw is closed, with the line that lets anyone check it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from raps.redact import announced_name, mask_card
from raps.tickets.stage import StageDesk, StageDraw
from selector.tickets.announcing import announcement, money
from selector.tickets.draw_picks import Award, Presentation, TicketPick
from selector.tickets.draw_rules import PrizeSpec
from selector.tickets.prizes import Letter
from selector.tickets.proxies import Nomination


def prize_text(spec: PrizeSpec | dict[str, Any] | None) -> str:
    if spec is None:
        return "a prize revealed on stage"
    amount, kind = (
        (spec["amount"], spec["kind"]) if isinstance(spec, dict) else (spec.amount, spec.kind)
    )
    label = {"cash": "cash", "plus_play": "+Play", "voucher": "voucher", "item": "",
             "car": "car", "car_spot": "car draw spot", "safe": "from the safe",
             "vault_share": "vault share"}  # fmt: skip
    return f"{money(amount)} {label.get(str(kind), str(kind))}".strip()


def _bin_summary(desk: StageDesk, draw_id: str) -> dict[str, Any]:
    return desk.tickets.bin_summary(desk.bin_id(draw_id))


def _name_and_tier(desk: StageDesk, card: str) -> tuple[str, str]:
    floor = desk.tickets.floor
    prof = floor.profile(card) if floor is not None else None
    if prof is None:
        return card, "unknown"
    return prof.display_name, prof.tier.value


def _iso(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat()


def draws_list(desk: StageDesk) -> list[dict[str, Any]]:
    out = []
    for draw_id, sd in desk.draws.items():
        s = desk.sessions[draw_id]
        summary = _bin_summary(desk, draw_id)
        out.append(
            {
                "draw_id": draw_id,
                "name": sd.draw.name,
                "program": sd.program_name,
                "at": sd.draw.at.isoformat(),
                "state": s.state.value,
                "refused": desk.refused.get(draw_id),  # why the daemon will not run it
                "winners": s.rules.winners,
                "winners_drawn": len(s.winners()),
                "players": summary["players"],
                "tickets": summary["tickets"],
            }
        )
    return out


def host_view(desk: StageDesk, draw_id: str) -> dict[str, Any]:
    """Everything the stage host needs to run the draw, one tap per step."""
    sd = desk.stage_draw(draw_id)
    s = desk.sessions[draw_id]
    seed = s.revealed_seed
    picks = [_host_pick(desk, sd, draw_id, p) for p in s.picks]
    pending = [p.number for p in s.pending()]
    return {
        "draw_id": draw_id,
        "name": sd.draw.name,
        "program": sd.program_name,
        "at": sd.draw.at.isoformat(),
        "state": s.state.value,
        "refused": desk.refused.get(draw_id),  # why the daemon will not run it (a 409 each)
        "prizes_refused": desk.prizes_refused,
        "session_id": s.session_id,
        "commitment": s.commitment,
        "seed": seed.hex() if seed else None,
        "winners": s.rules.winners,
        "winners_drawn": len(s.winners()),
        "present_seconds": sd.rules.present_seconds,
        "win_limit": sd.rules.win_limit.value,
        "prizes": [
            None if s.rules.prize_for(i) is None else prize_text(s.rules.prize_for(i))
            for i in range(1, s.rules.winners + 1)
        ],
        "add_ons": [
            {
                "id": a.id,
                "name": a.name,
                "requires": a.requires.value,
                "prize": " + ".join(prize_text(p) for p in a.prizes),
            }
            for a in sd.rules.add_ons
        ],
        "bin": _bin_summary(desk, draw_id),
        "proxies": [
            {"member": mask_card(n.member), "name": n.name, "document": n.document.value}
            for n in desk.proxies.nominations(draw_id)
        ],
        "picks": picks,
        "pending": pending[0] if pending else None,
        "no_eligible": bool(s.records) and s.records[-1].type == "draw.no_eligible",
        "game": None if desk.games is None else desk.games.view(draw_id, public=False),
        "version": desk.version,
        "server_time": desk.clock().isoformat(),
    }


def _host_pick(desk: StageDesk, sd: StageDraw, draw_id: str, p: TicketPick) -> dict[str, Any]:
    name, tier = _name_and_tier(desk, p.card)
    nom = desk.proxies.proxy_for(draw_id, p.card)
    rules = desk.sessions[draw_id].rules
    spec = rules.prize_for(p.position) if p.position <= rules.winners else None
    letter = desk.prizes.by_pick(desk.sessions[draw_id].session_id, p.number)
    shown = announced_name(name, sd.announce_name)
    return {
        "number": p.number,
        "position": p.position,
        "attempt": p.attempt,
        "card": p.card,
        "card_masked": mask_card(p.card),
        "name": name,
        "announced_as": shown,
        "tier": tier,
        "tickets": p.tickets,
        "state": p.state.value,
        "reason": p.reason,
        "drawn_at": _iso(p.drawn_at),
        "deadline": _iso(p.deadline),
        "presented": _presented(p.presented),
        "add_ons": dict(p.add_ons),
        "prize": _award(p.award),
        "position_prize": None if spec is None else prize_text(spec),
        "proxy": None
        if nom is None
        else {"name": nom.name, "document": nom.document.value, "last_digits": nom.last_digits},
        "letter_no": None if letter is None else letter.letter_no,
        "announcement": announcement(
            shown, prize_text(spec), sd.announce_where, sd.rules.present_seconds
        ),
    }


def _presented(pr: Presentation | None) -> dict[str, Any] | None:
    if pr is None:
        return None
    return {
        "presenter": pr.presenter.value,
        "document": pr.document.value,
        "last_digits": pr.last_digits,
        "receipt": pr.receipt,
        "proxy": pr.proxy,
        "at": pr.at.isoformat(),
    }


def _award(a: Award | None) -> dict[str, Any] | None:
    if a is None:
        return None
    lines = a.lines or (a.prize,)
    return {
        "amount": a.prize.amount,
        "kind": a.prize.kind.value,
        "text": " + ".join(prize_text(x) for x in lines),
        "source": a.source.value,
        "ref": a.ref,
        "at": a.at.isoformat(),
    }


def screen_view(desk: StageDesk, draw_id: str) -> dict[str, Any]:
    """The audience's screen: read-only, nothing a player would not want on a wall."""
    sd = desk.stage_draw(draw_id)
    s = desk.sessions[draw_id]
    seed = s.revealed_seed
    summary = _bin_summary(desk, draw_id)
    picks = []
    for p in s.picks:
        name, tier = _name_and_tier(desk, p.card)
        picks.append(
            {
                "number": p.number,
                "position": p.position,
                "name": announced_name(name, "first_initial"),
                "card": mask_card(p.card),
                "tier": tier,
                "state": p.state.value,
                "reason": p.reason,
                "deadline": _iso(p.deadline),
            }
        )
    verification = None
    if seed is not None:
        verification = (
            f"SHA-256(seed) = {s.commitment}; derivation {s.derivation} "
            f"(docs/fairness.md); check with: raps verify EXPORT.jsonl"
        )
    return {
        "draw_id": draw_id,
        "name": sd.draw.name,
        "state": s.state.value,
        "entries": {
            "players": summary["players"],
            "tickets": summary["tickets"],
            "by_tier": summary["by_tier"],
        },
        "winners": s.rules.winners,
        "picks": picks,
        "game": None if desk.games is None else desk.games.view(draw_id, public=True),
        "commitment": s.commitment,
        "seed": seed.hex() if seed else None,
        "verification": verification,
        "version": desk.version,
        "server_time": desk.clock().isoformat(),
    }


def letter_view(desk: StageDesk, letter: Letter, now: datetime) -> dict[str, Any]:
    d = letter.to_dict() if hasattr(letter, "to_dict") else dict(vars(letter))
    d["winner_card"] = mask_card(letter.winner_card)
    if letter.collected_at is not None:
        d["state"] = "collected"
    elif letter.forfeit is not None:
        d["state"] = "forfeited"
    else:
        d["state"] = "overdue" if letter.expired(now) else "awaiting"
    d["letter_url"] = f"/prizes/{letter.letter_no}/letter"
    d["pdf_url"] = f"/prizes/{letter.letter_no}/letter.pdf"
    return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in d.items()}


def nomination_view(n: Nomination) -> dict[str, Any]:
    """A proxy form as the desks see it: the member's card masked, the ID's last digits."""
    return {
        "member": mask_card(n.member),
        "name": n.name,
        "document": n.document.value,
        "last_digits": n.last_digits,
        "proxy_card": None if n.proxy_card is None else mask_card(n.proxy_card),
        "at": n.at.isoformat(),
    }
