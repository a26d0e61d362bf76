"""The game desk: the stage games after the ticket draws, made durable (issue 19).

A draw's game (config `[stage]`, `raps.config.games`) opens once the draw's winners are
verified: its contestants are the draw's picks in position order, never what a request
says. Each game is a journal stream (`stage:<mechanic>:<draw>`); its seed is derived
from its draw's seed (`selector.stagegames.derive.game_seed`), committed when the draw
opened, before any winner was known. Every host command runs under the service's
journal lock (the stage desk's) and is answered once its records are committed; a retry
(the same command id) is answered from what the first one did. Closing a game is one
journal append: `stage.closed`, the stage ledger's entries, the car spots its positions
earn, the draw's award of each winner and their prize letter; so is opening the safe
(with the value it is offered at) and sharing the vault. A failed write undoes the
command: the desk reloads from the journal, which decides.

The desk also tells the stage desk what a game changes for its draw: a car final opens
with the finalists still needed and the spot holders barred; a vault share is refused
once the safe was ever cracked, and while a 21:00 draw's safe is still in play; a draw
with a game pays its winners only through the game, and closes only once the game is
over (closing reveals the draw's seed, and so every game seed of the draw).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from raps.config.games import DrawPlan, StagePlan
from raps.games.pay import Payer, Winner, by_position, sub, verified
from raps.games.streams import PREFIX, SEQUENCE, game_stream, parse_stream
from raps.games.views import game_view
from raps.logs import get_logger
from raps.metrics import GAME_RECORDS, Metrics
from raps.tickets.stage import StageDesk, StageRefused, StageUnavailable, draw_stream
from selector.records import Actor, Record
from selector.session import Command, CommandConflict, PickState, SessionError, SessionState
from selector.stagegames.bonus import BonusGame
from selector.stagegames.cars import SPOTS_PREFIX, CarFinal, CarQualifiers
from selector.stagegames.derive import game_seed
from selector.stagegames.game import DrawGame, GameState, StageError, StageGame
from selector.stagegames.ledger import STREAM as LEDGER_STREAM
from selector.stagegames.ledger import StageLedger
from selector.stagegames.paddles import PaddleGame
from selector.stagegames.podium import PodiumGame
from selector.stagegames.restore import restore_game
from selector.stagegames.safe import SafeGame
from selector.tickets.draw_rules import DrawRules
from selector.tickets.draw_session import TicketDrawSession
from selector.tickets.prizes import PrizeRefused


@dataclass(slots=True)
class Ctx:
    """One host command on one draw's game."""

    p: DrawPlan
    s: TicketDrawSession
    cmd: Command
    pay: Payer


class GameDesk:
    """Every stage game of the site, the stage ledger (and so the safe) and the car spots."""

    def __init__(self, plan: StagePlan, stage: StageDesk, metrics: Metrics) -> None:
        self.plan = plan
        self.stage = stage
        self.journal = stage.journal
        self.metrics = metrics
        self.clock = stage.clock
        self.games: dict[str, StageGame] = {}
        self.ledger = StageLedger(plan.progressive)
        self.cars = {cid: self._new_car(cid) for cid in plan.cars}
        self.refused: dict[str, str] = {}  # draws whose games the journal does not vouch for
        self._stale = False
        self._seeds: dict[str, bytes] = {}
        self.log = get_logger(component="stage-games")
        stage.games = self

    def _new_car(self, car_id: str) -> CarQualifiers:
        c = self.plan.cars[car_id]
        return CarQualifiers(car_id, c.finalists, c.extra_spot_cash, c.sources, c.final_draw)

    # ------------------------------------------------------------------ reading

    def plan_of(self, draw_id: str) -> DrawPlan:
        self.stage.stage_draw(draw_id)
        p = self.plan.draws.get(draw_id)
        if p is None:
            raise StageRefused("no_game", f"draw {draw_id!r} has no stage game", 404)
        return p

    def game(self, draw_id: str, mechanic: str) -> StageGame | None:
        return self.games.get(game_stream(mechanic, draw_id))

    def safe_cracked(self) -> bool:
        """Whether the safe was ever cracked: the 20 Dec 21:30 vault share is held only if
        not (rule 135; the calendar's condition for that draw)."""
        return self.ledger.ever_cracked

    def in_progress(self, draw_id: str) -> bool:
        """A game of the draw has begun and not every game of it has closed."""
        p = self.plan.draws.get(draw_id)
        if p is None:
            return False
        games = [self.game(draw_id, m) for m in SEQUENCE[p.kind]]
        begun = [g for g in games if g is not None]
        return bool(begun) and (
            len(begun) < len(games) or any(g.state is not GameState.CLOSED for g in begun)
        )

    def unpaid(self, draw_id: str) -> list[int]:
        """Positions whose verified winner the game has not paid yet."""
        s = self.stage.sessions[draw_id]
        return [w.position for w in verified(s) if w.pick.state is PickState.VERIFIED]

    def view(self, draw_id: str, public: bool) -> dict[str, Any] | None:
        if draw_id not in self.plan.draws:
            return None
        return game_view(self, draw_id, public)

    # ------------------------------------------------------ what the draw asks

    def open_rules(self, draw_id: str, rules: DrawRules) -> tuple[DrawRules, dict[str, str]]:
        p = self.plan.draws.get(draw_id)
        if p is None:
            return rules, {}
        self._usable(draw_id)
        if p.kind is DrawGame.VAULT_SHARE and self.ledger.ever_cracked:
            raise StageRefused("safe_cracked", "the safe was cracked: there is no vault share "
                               "draw (rule 135)")  # fmt: skip
        if p.kind is DrawGame.VAULT_SHARE and self.ledger.shared:
            raise StageRefused("vault_shared", "the vault has been shared already")
        if p.kind is DrawGame.VAULT_SHARE:
            self._no_safe_in_play()
        if p.kind is DrawGame.PODIUM_SAFE and self.ledger.shared:
            raise StageRefused("vault_shared", "the vault has been shared: the safe is closed, "
                               "and this draw's podiums are paid through it")  # fmt: skip
        if p.kind is DrawGame.CAR_FINAL and p.car is not None:
            q = self.cars[p.car]
            barred = {c: f"car_spot:{p.car}" for c in q.holders()}
            return replace(rules, winners=q.finalists_needed(), prizes=()), barred
        return rules, {}

    def refuse(self, draw_id: str, step: str) -> None:
        if draw_id not in self.plan.draws:
            return
        if step == "award":
            raise StageRefused("prize_by_game", "this draw's winners are paid by its stage game")
        if step == "void" and self.in_progress(draw_id):
            raise StageRefused("game_open", "the draw's stage game has begun: its contestants "
                               "stay until it closes")  # fmt: skip
        if step == "close" and self.stage.sessions[draw_id].state is SessionState.OPEN:
            if self.in_progress(draw_id):
                raise StageRefused("game_open", "close the draw's stage game first: closing "
                                   "the draw reveals its seed")  # fmt: skip
            if self.unpaid(draw_id):
                raise StageRefused("game_unpaid", f"positions {self.unpaid(draw_id)} are "
                                   "verified but unpaid: play the draw's stage game "
                                   "(or void them)")  # fmt: skip

    def safe_in_play(self) -> list[str]:
        """The `podium+safe` draws whose safe may still be played: open, their safe not
        closed (offered, or still to come after the podiums)."""
        out = []
        for draw_id, p in self.plan.draws.items():
            s = self.stage.sessions.get(draw_id)
            if p.kind is not DrawGame.PODIUM_SAFE or s is None or s.state is not SessionState.OPEN:
                continue
            safe = self.game(draw_id, "safe")
            if safe is None or safe.state is not GameState.CLOSED:
                out.append(draw_id)
        return out + [d for d in self.ledger.in_play() if d not in out]

    def _no_safe_in_play(self) -> None:
        """The vault is shared only once no draw may still crack or grow the safe: sharing
        under one would close the safe its winners are playing for, and its draw could
        then never pay them or close."""
        busy = self.safe_in_play()
        if busy:
            raise StageRefused("safe_in_play", f"the safe is in play at draw {busy[0]}: share "
                               "the vault once that draw has closed its safe")  # fmt: skip

    def _usable(self, draw_id: str) -> None:
        if draw_id in self.refused:
            raise StageRefused("game_refused", f"the stage games of draw {draw_id} were refused "
                               f"at restore: {self.refused[draw_id]}; run raps verify")  # fmt: skip

    # ------------------------------------------------------------------ restore

    async def restore(self) -> None:
        """Games, the stage ledger and the car spots as the journal leaves them. A draw is
        refused whose games, or the ledger or car spots every game pays through, the
        journal does not vouch for (raps.tickets.stage_loader), or cannot be restored."""
        games: dict[str, StageGame] = {}
        ledger = StageLedger(self.plan.progressive)
        cars = {cid: self._new_car(cid) for cid in self.plan.cars}
        refused: dict[str, str] = {}
        own = [game_stream(m, d) for d, p in self.plan.draws.items() for m in SEQUENCE[p.kind]]
        shared = [LEDGER_STREAM, *(SPOTS_PREFIX + c for c in self.plan.cars)]
        misfiled = await self.stage.loader.misfiled([*own, *shared])
        listed = await self.journal.session_ids(LEDGER_STREAM, SPOTS_PREFIX, PREFIX)
        for stream in [*listed, *(s for s in [*own, *shared] if s not in listed)]:
            if stream != LEDGER_STREAM and not stream.startswith((SPOTS_PREFIX, PREFIX)):
                continue
            read = await self.stage.loader.read(stream, misfiled.get(stream))
            if read.refused is not None:
                game = stream.startswith(PREFIX)
                for draw_id in [parse_stream(stream)[1]] if game else self.plan.draws:
                    refused.setdefault(draw_id, f"{stream}: {read.refused}")
                self.log.error("stage game refused at restore", game=stream, reason=read.refused)
            elif not read.entries:
                continue
            elif stream == LEDGER_STREAM:
                ledger = StageLedger.replay(read.records, None)
            elif stream.startswith(SPOTS_PREFIX):
                car_id = stream.removeprefix(SPOTS_PREFIX)
                cars[car_id] = CarQualifiers.replay(car_id, read.records)
            else:
                draw_id = parse_stream(stream)[1]
                try:
                    seed = game_seed(await self._draw_seed(draw_id), stream)
                    games[stream] = restore_game(read.records, seed)
                except (StageError, ValueError, KeyError) as e:
                    refused[draw_id] = str(e)
                    self.log.error("stage game refused at restore", game=stream, reason=str(e))
        self.games, self.ledger, self.cars, self.refused = games, ledger, cars, refused
        self._stale = False
        self.update_gauges()

    async def _draw_seed(self, draw_id: str) -> bytes:
        seed = self._seeds.get(draw_id)
        if seed is None:
            stream = draw_stream(draw_id)
            sealed = await self.journal.sealed_seed(stream)
            if sealed is None:
                raise StageRefused("draw_not_open", f"draw {draw_id} has not opened")
            seed = self._seeds[draw_id] = self.stage.sealer.unseal(stream, *sealed)
        return seed

    # ----------------------------------------------------------------- commands

    async def open(self, draw_id: str, mechanic: str, actor: Actor, command_id: str) -> None:
        seed_of: dict[str, bytes] = {}

        async def prepare() -> None:
            seed_of["draw"] = await self._draw_seed(draw_id)

        def run(c: Ctx) -> None:
            self._open(c, mechanic, seed_of["draw"])

        await self._command(draw_id, actor, command_id, run, prepare)

    async def close(self, draw_id: str, mechanic: str, actor: Actor, command_id: str) -> None:
        await self._command(draw_id, actor, command_id, lambda c: self._close(c, mechanic))

    async def step(
        self, draw_id: str, mechanic: str, action: str, actor: Actor, command_id: str, **args: Any
    ) -> None:
        """A contestant's choice (whoever's turn it is, as the game says)."""
        await self._command(
            draw_id, actor, command_id, lambda c: self._step(c, mechanic, action, args)
        )

    async def share_vault(self, draw_id: str, actor: Actor, command_id: str) -> None:
        await self._command(draw_id, actor, command_id, self._share)

    async def award_spots(self, draw_id: str, actor: Actor, command_id: str) -> None:
        await self._command(draw_id, actor, command_id, self._spots)

    # --------------------------------------------------------------- journaling

    def _watched(self, s: TicketDrawSession) -> list[Any]:
        """Everything a command may add records to, in the order they are journaled."""
        return [*self.games.values(), *self.cars.values(), self.ledger, s, self.stage.prizes]

    async def _command(
        self,
        draw_id: str,
        actor: Actor,
        command_id: str,
        run: Callable[[Ctx], None],
        prepare: Callable[[], Any] | None = None,
    ) -> None:
        p = self.plan_of(draw_id)
        async with self.stage.lock:
            if self._stale:
                await self._reload()
            self._usable(draw_id)
            s = await self.stage.fresh(draw_id)
            if prepare is not None:
                await prepare()
            cmd = Command(command_id, actor, self.clock())
            sizes = {id(o): len(o.records) for o in self._watched(s)}
            ctx = Ctx(p, s, cmd, Payer(self.stage, self.ledger, s, cmd, p.day))
            try:
                run(ctx)
            except (StageError, SessionError, PrizeRefused, CommandConflict, ValueError) as e:
                if self._made(s, sizes):
                    await self._undo(draw_id)
                raise StageRefused(_code(e), str(e)) from e
            except StageRefused:
                if self._made(s, sizes):
                    await self._undo(draw_id)
                raise
            new = self._made(s, sizes)
            if not new:
                return  # a retry: answered from what the first one did
            try:
                await self.journal.append([r.to_dict() for r in new])
            except Exception as e:
                self.metrics.journal_failures.inc()
                self.log.error("stage game journal write failed; the command is undone",
                               draw=draw_id, error=type(e).__name__)  # fmt: skip
                await self._undo(draw_id)
                raise StageUnavailable("the journal could not be written; nothing was done") from e
            head = self.journal.head
            self.metrics.journal_head.set(head.seq if head else 0)
            for rec in new:
                if rec.type.startswith("draw."):
                    self.metrics.stage_records.labels(rec.type).inc()
                elif rec.type in GAME_RECORDS:
                    self.metrics.stage_game_records.labels(rec.type).inc()
            self.update_gauges()
            self.stage.changed(draw_id)

    def _made(self, s: TicketDrawSession, sizes: dict[int, int]) -> list[Record]:
        out: list[Record] = []
        for o in self._watched(s):
            out += o.records[sizes.get(id(o), 0) :]
        return out

    async def _undo(self, draw_id: str) -> None:
        """Nothing of the command stands: the journal decides (now, or at the next one)."""
        self._stale = True
        await self.stage.recover(draw_id)
        try:
            await self._reload()
        except Exception:
            self.log.error("journal unreadable after a failed write; reloading later")

    async def _reload(self) -> None:
        try:
            await self.journal.load_head()
            await self.restore()
        except Exception as e:
            raise StageUnavailable("the journal cannot be read; try again shortly") from e

    def update_gauges(self) -> None:
        """The safe's value: before the ledger starts (its first record comes with the
        first stage prize), the plan's base, which is what the screen already shows."""
        led = self.ledger
        self.metrics.stage_safe_value.set(
            led.safe_value if led.started else self.plan.progressive.base
        )

    # ------------------------------------------------------------------- steps

    def _winners(self, c: Ctx) -> list[Winner]:
        """The draw's verified winners, every position drawn: the game's contestants.

        None at all only for a draw that opened with no position to draw: a car final
        whose six spots were all won before it (rule 69: the 21:00 finalist draw draws
        as many as are still needed; its car game is then among the spot holders)."""
        s = c.s
        if s.state is not SessionState.OPEN:
            raise StageRefused("draw_not_open", f"draw {s.draw_id} is {s.state.value}")
        if s.pending():
            raise StageRefused("winner_pending", f"pick {s.pending()[0].number} is still "
                               "pending: verify or resolve it first")  # fmt: skip
        ws = verified(s)
        ran_out = any(r.type == "draw.no_eligible" for r in s.records)
        if (not ws and s.rules.winners) or (len(ws) < s.rules.winners and not ran_out):
            raise StageRefused("positions_open", f"{len(ws)} of {s.rules.winners} winners "
                               "verified: draw and verify every position first")  # fmt: skip
        return ws

    def _open(self, c: Ctx, mechanic: str, draw_seed: bytes) -> None:
        p, s, cmd = c.p, c.s, c.cmd
        seq = SEQUENCE[p.kind]
        if mechanic not in seq:
            raise StageRefused("no_such_game", f"draw {s.draw_id} ({p.kind.value}) plays "
                               f"{', '.join(seq) or 'no game'}, not {mechanic}")  # fmt: skip
        stream = game_stream(mechanic, s.draw_id)
        known = self.games.get(stream)
        if known is not None:
            if known.answered(cmd.command_id):
                return  # a retry
            raise StageRefused("game_opened", f"the {mechanic} game is already {known.state}")
        for earlier in seq[: seq.index(mechanic)]:
            g = self.game(s.draw_id, earlier)
            if g is None or g.state is not GameState.CLOSED:
                raise StageRefused("game_order", f"the {earlier} game comes first")
        if seq.index(mechanic) == 0:
            ws = self._winners(c)
            if any(w.pick.state is not PickState.VERIFIED for w in ws):
                raise StageRefused("already_paid", "a winner of this draw is already paid")
        else:
            ws = verified(s)
        cards = [w.card for w in ws]
        game: StageGame
        if mechanic == "podium":
            game = PodiumGame(stream, s.draw_id, p.day, p.podiums, cards,
                              final=p.kind is not DrawGame.PODIUM_SAFE)  # fmt: skip
        elif mechanic == "bonus":
            podium = self.game(s.draw_id, "podium")
            assert isinstance(podium, PodiumGame)
            bonus_cards = podium.bonus_cards()
            positions = [next(w.position for w in ws if w.card == b) for b in bonus_cards]
            game = BonusGame(stream, s.draw_id, p.day, bonus_cards, positions, p.bonus)
        elif mechanic == "paddles":
            game = PaddleGame(stream, s.draw_id, p.day, cards, p.paddles, p.reveals,
                              p.reveal_kind)  # fmt: skip
        elif mechanic == "safe":
            busy = [g.game_id for g in self.games.values()
                    if isinstance(g, SafeGame) and g.state is not GameState.CLOSED]  # fmt: skip
            if busy:  # one safe at a time: a crack changes what the other was offered
                raise StageRefused("safe_in_play", f"the safe is in play at {busy[0]}")
            podium = self.game(s.draw_id, "podium")
            assert isinstance(podium, PodiumGame)
            prizes = [podium.prize_of(i).amount for i in range(1, len(cards) + 1)]
            c.pay.start_ledger()
            game = SafeGame(stream, s.draw_id, p.day, cards, prizes, self.ledger.safe_value,
                            p.odds, p.forfeit)  # fmt: skip
        else:
            assert p.car is not None
            q = self.cars[p.car]
            for w in ws:
                spot = q.qualify(sub(cmd, f"spot/{q.car_draw_id}/{w.position}"), w.card,
                                 s.draw_id, w.position)  # fmt: skip
                c.pay.post([spot])
                c.pay.award(w, [spot], q.stream)
            car = self.plan.cars[p.car]
            game = CarFinal(stream, s.draw_id, p.day, q.holders(), car.vehicles, car.car_value)
        game.open(cmd, game_seed(draw_seed, stream), draw_stream(s.draw_id))
        self.games[stream] = game
        if isinstance(game, SafeGame):
            self.ledger.offer_safe(sub(cmd, "offer"), s.draw_id, stream, game.safe_value)

    def _close(self, c: Ctx, mechanic: str) -> None:
        p, s, cmd = c.p, c.s, c.cmd
        g = self.game(s.draw_id, mechanic)
        if g is None:
            raise StageRefused("game_not_open", f"the {mechanic} game has not opened")
        if g.state is GameState.CLOSED and g.answered(cmd.command_id):
            return  # a retry: the close and all it paid were one commit
        g.close(cmd)
        if isinstance(g, CarFinal):
            (car,) = g.awards()
            c.pay.post([car])
            c.pay.letter(car.position, g.game_id, [car], g.records[-1], None)
            return
        paid = by_position(g.awards())
        quals = [(self.cars[car_id], ps) for car_id, ps in self.plan.qualifying(s.draw_id)]
        for w in verified(s):
            if w.position not in paid:
                continue
            lines = paid[w.position] + c.pay.qualify(quals, w)
            c.pay.post(lines)
            c.pay.award(w, lines, g.game_id)
        last = SEQUENCE[p.kind][-1] == mechanic
        if last and p.kind.value in self.ledger.rules.grows_at:
            c.pay.start_ledger()
            cracked = isinstance(g, SafeGame) and g.cracked
            self.ledger.safe_draw_closed(sub(cmd, "grow"), s.draw_id, p.kind.value, cracked)

    def _step(self, c: Ctx, mechanic: str, action: str, args: dict[str, Any]) -> None:
        cmd = c.cmd
        g = self.game(c.s.draw_id, mechanic)
        if g is None:
            raise StageRefused("game_not_open", f"the {mechanic} game has not opened")
        who = _recorded_card(g, cmd.command_id) or _turn(g)
        if who is None and action not in ("reveal_winner", "vehicle", "decide"):
            raise StageRefused("no_turn", f"nobody's turn: the {mechanic} game is {g.state}")
        w = who or ""
        if isinstance(g, PodiumGame) and action == "choose":
            g.choose(cmd, w, args["randomiser"])
        elif isinstance(g, BonusGame) and action == "decide":
            card = _card_at(g.contestants, g.positions, args["position"])
            g.decide(cmd, card, args["play"])
        elif isinstance(g, BonusGame) and action == "box":
            g.open_box(cmd, w, args["box"])
        elif isinstance(g, PaddleGame) and action == "paddle":
            g.pick_paddle(cmd, w, args["paddle"])
        elif isinstance(g, PaddleGame) and action == "reveal":
            g.reveal(cmd, w, args["reveal"])
        elif isinstance(g, PaddleGame) and action == "stop":
            g.stop(cmd, w)
        elif isinstance(g, SafeGame) and action in ("decline", "attempt", "spin"):
            getattr(g, action)(cmd, w)
        elif isinstance(g, SafeGame) and action == "guess":
            g.guess(cmd, w, args["code"])
        elif isinstance(g, CarFinal) and action == "reveal_winner":
            g.reveal(cmd)
        elif isinstance(g, CarFinal) and action == "vehicle":
            g.choose_vehicle(cmd, args["vehicle"], args.get("buy_back"))
        else:
            raise StageRefused("no_such_step", f"the {mechanic} game has no step {action!r}", 404)

    def _share(self, c: Ctx) -> None:
        p, s, cmd = c.p, c.s, c.cmd
        if p.kind is not DrawGame.VAULT_SHARE:
            raise StageRefused("no_such_game", f"draw {s.draw_id} is not the vault share")
        ws = self._winners(c)
        if self.ledger.ever_cracked:
            raise StageRefused("safe_cracked", "the safe was cracked: no vault share (rule 135)")
        self._no_safe_in_play()
        c.pay.start_ledger()
        shares = self.ledger.share_vault(sub(cmd, "share"), s.draw_id, p.day, [w.card for w in ws])
        for w, e in zip(ws, shares, strict=True):
            c.pay.award(w, [e.award], LEDGER_STREAM)

    def _spots(self, c: Ctx) -> None:
        p, s, cmd = c.p, c.s, c.cmd
        if p.kind is not DrawGame.CAR_SPOTS or p.car is None:
            raise StageRefused("no_such_game", f"draw {s.draw_id} draws no car spots")
        q = self.cars[p.car]
        for w in self._winners(c):
            if w.pick.state is PickState.AWARDED:
                continue
            spot = q.qualify(sub(cmd, f"spot/{q.car_draw_id}/{w.position}"), w.card, s.draw_id,
                             w.position)  # fmt: skip
            c.pay.post([spot])
            c.pay.award(w, [spot], q.stream)


def _turn(g: StageGame) -> str | None:
    """Whose turn it is, as the game says (the request never names the contestant)."""
    if isinstance(g, PodiumGame):
        return g.next_card()
    if isinstance(g, BonusGame):
        return g.turn()
    if isinstance(g, PaddleGame):
        i = g.current()
        return None if i is None else g.winners[i]
    if isinstance(g, SafeGame):
        p = g.current()
        return None if p is None else g.winners[p - 1]
    return None


def _recorded_card(g: StageGame, command_id: str) -> str | None:
    """A retried command acts for the contestant it acted for the first time."""
    if not g.answered(command_id):
        return None
    for rec in g.records:
        if rec.data.get("command_id") == command_id:
            card = rec.data.get("card")
            return card if isinstance(card, str) else None
    return None


def _card_at(cards: tuple[str, ...], positions: tuple[int, ...], position: int) -> str:
    for c, p in zip(cards, positions, strict=True):
        if p == position:
            return c
    raise StageRefused("not_a_contestant", f"position {position} is not a bonus contestant")


def _code(e: Exception) -> str:
    if isinstance(e, CommandConflict):
        return "command_id_reused"
    if isinstance(e, PrizeRefused):
        return str(e.reason)
    return "refused_by_rules" if isinstance(e, StageError) else "refused"
