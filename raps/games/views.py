"""What the stage pages see of a draw's game: the host's view (full cards, the next step)
and the audience's (first name and initial, masked cards). Plain dicts; nothing here
changes state.

A game's hidden contents (what every box, paddle and reveal hides, the safe's codes, the
car's winner) appear only once the game is closed, with its seed and commitment: before
that, a view shows only what has been revealed on stage, from the game's own state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from raps.config.games import DrawPlan, StagePlan
from raps.games.streams import SEQUENCE, game_stream
from raps.redact import announced_name, mask_card
from raps.tickets.stage import StageDesk
from selector.stagegames.bonus import BLANK, BonusGame
from selector.stagegames.cars import CarFinal, CarQualifiers
from selector.stagegames.game import DrawGame, GameState, StageGame
from selector.stagegames.ledger import StageLedger
from selector.stagegames.paddles import PaddleGame
from selector.stagegames.podium import BONUS, PodiumGame
from selector.stagegames.safe import CODE, SafeGame
from selector.tickets.announcing import money


class Games(Protocol):
    """What the views read of the game desk (raps.games.desk.GameDesk)."""

    @property
    def plan(self) -> StagePlan: ...

    @property
    def stage(self) -> StageDesk: ...

    @property
    def games(self) -> Mapping[str, StageGame]: ...

    @property
    def ledger(self) -> StageLedger: ...

    @property
    def cars(self) -> Mapping[str, CarQualifiers]: ...

    @property
    def refused(self) -> Mapping[str, str]: ...

    def in_progress(self, draw_id: str) -> bool: ...

    def unpaid(self, draw_id: str) -> list[int]: ...


class _Names:
    def __init__(self, desk: Games, public: bool) -> None:
        self.floor = desk.stage.tickets.floor
        self.public = public

    def who(self, card: str, position: int | None = None) -> dict[str, Any]:
        prof = self.floor.profile(card) if self.floor is not None else None
        name = announced_name(prof.display_name if prof is not None else card, "first_initial")
        out: dict[str, Any] = {"name": name, "card": mask_card(card) if self.public else card}
        if position is not None:
            out["position"] = position
        return out


def game_view(desk: Games, draw_id: str, public: bool) -> dict[str, Any]:
    p = desk.plan.draws[draw_id]
    names = _Names(desk, public)
    games = [_game(desk, draw_id, m, names) for m in SEQUENCE[p.kind]]
    out: dict[str, Any] = {
        "kind": p.kind.value,
        "name": p.name,
        "sequence": list(SEQUENCE[p.kind]),
        "games": games,
        "refused": desk.refused.get(draw_id),
    }
    if not public:
        out["next"] = _next(desk, draw_id, p, games)
        out["unpaid"] = desk.unpaid(draw_id)
    if p.kind in (DrawGame.PODIUM_SAFE, DrawGame.VAULT_SHARE):
        out["safe"] = _safe_summary(desk, p)
    if p.kind is DrawGame.VAULT_SHARE:
        out["vault"] = _vault(desk, draw_id, names)
    if p.car is not None:
        q = desk.cars[p.car]
        out["car"] = {
            "car_id": p.car,
            "finalists": q.finalists,
            "needed": q.finalists_needed(),
            "holders": [names.who(c) for c in q.holders()],
        }
    return out


def _safe_summary(desk: Games, p: DrawPlan) -> dict[str, Any]:
    led = desk.ledger
    value = led.safe_value if led.started else desk.plan.progressive.base
    out: dict[str, Any] = {
        "value": value,
        "value_text": money(value),
        "ever_cracked": led.ever_cracked,
        "shared": led.shared,
    }
    if p.odds is not None:
        out |= {"odds": p.odds.text(), "forfeit": p.forfeit, "forfeit_text": money(p.forfeit)}
    return out


def _vault(desk: Games, draw_id: str, names: _Names) -> dict[str, Any]:
    shares = [e for e in desk.ledger.entries if e.award.draw_id == draw_id
              and e.award.kind.value == "vault_share"]  # fmt: skip
    return {
        "shared": bool(shares),
        "shares": [
            {
                **names.who(e.award.card, e.award.position),
                "amount": e.award.amount,
                "text": money(e.award.amount),
            }
            for e in shares
        ],
    }


def _next(desk: Games, draw_id: str, p: DrawPlan, games: list[dict[str, Any]]) -> dict[str, Any]:
    """The host's next step, so the page shows one button at a time."""
    s = desk.stage.sessions[draw_id]
    if draw_id in desk.refused:
        return {"action": "refused"}
    if s.state.value != "open":
        return {"action": "none", "why": f"the draw is {s.state.value}"}
    if p.kind is DrawGame.VAULT_SHARE:
        return {"action": "share"} if desk.unpaid(draw_id) else {"action": "close_draw"}
    if p.kind is DrawGame.CAR_SPOTS:
        return {"action": "spots"} if desk.unpaid(draw_id) else {"action": "close_draw"}
    for g in games:
        if g["state"] == "not_open":
            return {"action": "open", "mechanic": g["mechanic"]}
        if g["state"] in ("open", "finished"):
            step = "close" if g["state"] == "finished" else "play"
            return {"action": step, "mechanic": g["mechanic"]}
    return {"action": "close_draw"}


def _game(desk: Games, draw_id: str, mechanic: str, names: _Names) -> dict[str, Any]:
    g = desk.games.get(game_stream(mechanic, draw_id))
    out: dict[str, Any] = {"mechanic": mechanic, "stream": game_stream(mechanic, draw_id)}
    if g is None:
        return out | {"state": "not_open"}
    closed = g.state is GameState.CLOSED
    seed = g.revealed_seed
    out |= {
        "state": g.state.value,
        "commitment": g.commitment,
        "seed": seed.hex() if seed is not None else None,
        "contents": g.contents() if closed else None,  # hidden until the close
        "awards": [
            {
                **names.who(a.card, a.position),
                "amount": a.amount,
                "kind": a.kind.value,
                "text": f"{money(a.amount)} {a.kind.value.replace('_', ' ')}",
            }
            for a in g.awards()
        ]
        if g.state in (GameState.FINISHED, GameState.CLOSED)
        else [],
    }
    if isinstance(g, PodiumGame):
        out |= _podium(g, names)
    elif isinstance(g, BonusGame):
        out |= _bonus(g, names)
    elif isinstance(g, PaddleGame):
        out |= _paddles(g, names)
    elif isinstance(g, SafeGame):
        out |= _safe(g, names)
    elif isinstance(g, CarFinal):
        out |= _car(g, names)
    return out


def _podium(g: PodiumGame, names: _Names) -> dict[str, Any]:
    chosen = [
        {**names.who(card, pos), "randomiser": r, "podium": podium,
         "prize": g.podiums[podium - 1].to_dict(),
         "text": "the bonus feature" if g.podiums[podium - 1].kind == BONUS
         else money(g.podiums[podium - 1].amount)}
        for pos, (card, r, podium) in sorted(g.chosen.items())
    ]  # fmt: skip
    nxt = g.next_card()
    return {
        "randomisers": len(g.podiums),
        "free": g.free_randomisers(),
        "chosen": chosen,
        "contestants": [names.who(c, i) for i, c in enumerate(g.winners, 1)],
        "turn": None if nxt is None or g.state is not GameState.OPEN
        else names.who(nxt, g.winners.index(nxt) + 1),
    }  # fmt: skip


def _bonus(g: BonusGame, names: _Names) -> dict[str, Any]:
    turn = g.turn()
    winner = g.play.winner
    return {
        "boxes": g.rules.boxes,
        "needed": g.rules.needed,
        "symbols": list(g.rules.symbols),
        "contestants": [
            {
                **names.who(c, p),
                "symbol": g.rules.symbols[i],
                "decided": g.decisions.get(c),
                "count": g.play.counts[i],
            }
            for i, (c, p) in enumerate(zip(g.contestants, g.positions, strict=True))
        ],
        "opened": {str(b): s for b, s in g.play.opened.items()},
        "blank": BLANK,
        "turn": None if turn is None else names.who(turn, g.positions[g.contestants.index(turn)]),
        "winner": None if winner is None else names.who(g.contestants[winner]),
    }


def _paddles(g: PaddleGame, names: _Names) -> dict[str, Any]:
    i = g.current() if g.state is GameState.OPEN else None
    taken = {t.paddle for t in g.turns if t.paddle is not None}
    return {
        "paddles": len(g.paddles),
        "free": [n for n in range(1, len(g.paddles) + 1) if n not in taken],
        "reveals": len(g.reveals),
        "opened": {str(r): a for r, a in g.opened_amounts().items()},
        "contestants": [
            {
                **names.who(card, n),
                "paddle": t.paddle,
                "chances": t.chances if t.paddle else None,
                "used": len(t.opened),
                "left": t.chances - len(t.opened) if t.paddle else None,
                "prize": t.prize,
                "prize_text": None if t.prize is None else money(t.prize),
                "done": t.done,
            }
            for n, (card, t) in enumerate(zip(g.winners, g.turns, strict=True), 1)
        ],
        "turn": None if i is None else names.who(g.winners[i], i + 1),
    }


def _safe(g: SafeGame, names: _Names) -> dict[str, Any]:
    p = g.current() if g.state is GameState.OPEN else None
    rows = []
    for n, card in enumerate(g.winners, 1):
        decision = None if n not in g.keep else "attempted" if n in g.trying else "declined"
        rows.append(
            {**names.who(card, n), "podium_prize": g.podium_prizes[n - 1],
             "podium_text": money(g.podium_prizes[n - 1]), "decision": decision,
             "keep": g.keep.get(n), "tries": list(g.trying.get(n, [])),
             "cracked": g.cracked_by == n}
        )  # fmt: skip
    trying = p is not None and p in g.trying
    return {
        "value": g.safe_value,
        "value_text": money(g.safe_value),
        "odds": g.odds.text(),
        "mode": g.odds.mode,
        "digits": g.odds.digits if g.odds.mode == CODE else None,
        "tries": g.odds.tries if g.odds.mode == CODE else 1,
        "forfeit": g.forfeit,
        "forfeit_text": money(g.forfeit),
        "contestants": rows,
        "turn": None if p is None else {**names.who(g.winners[p - 1], p), "trying": trying},
        "cracked_by": g.cracked_by,
    }


def _car(g: CarFinal, names: _Names) -> dict[str, Any]:
    return {
        "finalists": [names.who(c, i) for i, c in enumerate(g.finalists, 1)],
        "vehicles": list(g.vehicles),
        "car_value": g.car_value,
        "car_value_text": money(g.car_value),
        "winner": None
        if g.winner is None
        else names.who(g.winner, g.finalists.index(g.winner) + 1),
        "vehicle": g.vehicle,
        "buy_back": g.buy_back,
    }
