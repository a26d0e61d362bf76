"""`raps demo`: a simulated Saturday at a casino, ending in a provable RAPS session.

A simulated floor plays from 08:00 to 18:00 (site time); the core keeps the pools;
at 18:00 a bonus jackpot session opens with a fresh secret seed from the OS CSPRNG,
draws its slot and table winners (with a no-show and a void to show redraws),
closes, reveals the seed, and every pick is recomputed by the verifier.  Nothing is
canned: the floor is simulated live and the seed is new on every run.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from datetime import datetime, time
from pathlib import Path
from zoneinfo import ZoneInfo

from raps.floorsim import PRIVATE_SALON, FloorSimulator, demo_layout
from raps.redact import mask_card
from selector.events import PoolKind
from selector.floor import Floor
from selector.promotion import EarnRules, Promotion, SessionRules
from selector.records import Actor
from selector.session import Command, DrawSession, Pick, Prize, PrizeKind
from selector.verify import verify_session

SITE_TZ = ZoneInfo("Africa/Johannesburg")
SESSION_DAY = datetime(2026, 4, 25).date()  # a RAPS Saturday of the Golden Horse seed
MARKETING = Actor("demo-marketing", "marketing")
ENVELOPES = (50_000, 100_000, 200_000, 500_000, 1_000_000)  # R500 .. R10,000


class Demo:
    """One simulated day; `say` prints (or collects) every line it reports."""

    def __init__(self, out: Path, say: Callable[[str], None] = print, players: int = 4000,
                 machines: int = 500, tables: int = 40) -> None:  # fmt: skip
        self.out = out
        self.say = say
        self.layout = demo_layout(machines, tables)
        self.promotion = Promotion(
            "raps-golden-horse",
            name="Bonus jackpot session (RAPS)",
            threshold_points=50,
            areas_excluded=frozenset({PRIVATE_SALON}),
        )
        self.floor = Floor(self.layout, [self.promotion], EarnRules())
        start = datetime.combine(SESSION_DAY, time(8, 0), SITE_TZ)
        self.sim = FloorSimulator(
            self.layout, players, start, seed=secrets.randbits(32), events_per_second=20
        )
        self._cmd = 0

    def command(self) -> Command:
        self._cmd += 1
        return Command(f"demo-{self._cmd}", MARKETING, self.sim.now)

    def play(self, seconds: float) -> int:
        """Let the floor play on for `seconds` of simulated time."""
        n = max(1, int(seconds / self.sim.step.total_seconds()))
        rejected = self.floor.apply_many(self.sim.events(n))
        self.floor.advance(self.sim.now)
        return n - rejected

    def run(self) -> list[str]:
        say = self.say
        say(f"RAPS demo: {len(self.layout.machines)} machines, {len(self.layout.tables)} "
            f"tables, {len(self.sim.players)} carded players, site time {SITE_TZ.key}")  # fmt: skip
        self.floor.apply_many(self.sim.directory())
        open_at = datetime.combine(SESSION_DAY, time(18, 0), SITE_TZ)
        applied = self.play((open_at - self.sim.now).total_seconds())
        say(f"simulated 08:00-18:00 on {SESSION_DAY}: {applied:,} floor events applied")
        self.report_pools()

        session = DrawSession(
            f"S-{SESSION_DAY:%Y%m%d}-1800", self.promotion.promotion_id, self.floor,
            SessionRules(),
        )  # fmt: skip
        session.open(self.command(), secrets.token_bytes(32))
        say(f"\nsession {session.session_id} open; commitment sha256(seed) = {session.commitment}")
        for kind in (PoolKind.SLOTS, PoolKind.TABLES):
            for _ in range(session.rules.quotas[kind]):
                self.draw_and_resolve(session, kind)
        session.close(self.command())
        seed = session.revealed_seed
        assert seed is not None
        say(f"\nsession closed; revealed seed = {seed.hex()}")
        return self.verify_and_save(session)

    def report_pools(self) -> None:
        pid = self.promotion.promotion_id
        for kind in PoolKind:
            by_area: dict[str, int] = {}
            for (k, area, _tier), n in self.floor.eligible_counts(pid).items():
                if k == kind.value:
                    by_area[area] = by_area.get(area, 0) + n
            left = self.floor.left_out_counts(pid, kind)
            eligible = len(self.floor.pool(pid, kind))
            self.say(
                f"  {kind.value:6} eligible {eligible:5}  by area {dict(sorted(by_area.items()))}"
            )
            self.say(f"         left out {dict(sorted(left.items()))}")

    def draw_and_resolve(self, session: DrawSession, kind: PoolKind) -> None:
        """Draw one winner; the demo makes some no-shows and one void to show redraws."""
        while True:
            self.play(20)
            outcome = session.draw(self.command(), kind)
            if outcome.no_eligible or outcome.pick is None:
                self.say(f"  {kind.value}: no eligible player")
                return
            pick = outcome.pick
            self.show(pick)
            if pick.number == 3:  # does not present: the claim timer makes it a no-show
                self.play(session.rules.claim_seconds + 1)
                session.expire(self.sim.now)
                self.say(f"      no-show after {session.rules.claim_seconds:.0f} s: redraw")
                continue
            if pick.kind == PoolKind.TABLES and pick.slot == 2 and pick.attempt == 0:
                session.void(self.command(), pick.number, "card played by a companion")
                self.say("      void (card played by a companion): redraw")
                continue
            self.play(15 + secrets.randbelow(60))
            session.verify(self.command(), pick.number)
            amount = ENVELOPES[secrets.randbelow(len(ENVELOPES))]
            prize = Prize(amount, PrizeKind.PLUS_PLAY if amount < 100_000 else PrizeKind.CASH,
                          envelope=f"E{pick.number:02d}")  # fmt: skip
            session.award(self.command(), pick.number, prize)
            self.say(f"      verified; envelope {prize.envelope}: R{amount / 100:,.0f} "
                     f"{prize.kind.value}")  # fmt: skip
            return

    def show(self, pick: Pick) -> None:
        self.say(f"  pick {pick.number:2} {pick.kind:6} slot {pick.slot} attempt {pick.attempt}: "
                 f"{pick.display_name} ({pick.tier}, card {mask_card(pick.card)}) at "
                 f"{pick.location.describe()}")  # fmt: skip
        deadline = pick.deadline.astimezone(SITE_TZ)
        self.say(f"      pool {pick.pool_size} players, digest {pick.pool_digest[:16]}..., "
                 f"index {pick.index}, claim by {deadline:%H:%M:%S}")  # fmt: skip

    def verify_and_save(self, session: DrawSession) -> list[str]:
        problems = [str(m) for m in verify_session(session.records)]
        drawn = sum(1 for r in session.records if r.type == "pick.drawn")
        if problems:
            self.say(f"verify: {len(problems)} mismatch(es)")
            for p in problems:
                self.say(f"  {p}")
        else:
            self.say(f"verify: all {drawn} picks recomputed from the revealed seed and pool "
                     f"snapshots; commitment holds")  # fmt: skip
        self.out.mkdir(parents=True, exist_ok=True)
        path = self.out / f"{session.session_id}.jsonl"
        with path.open("w", encoding="utf-8") as f:
            for r in session.records:
                f.write(json.dumps(r.to_dict(), separators=(",", ":")) + "\n")
        self.say(f"records written to {path}  (check again with: raps verify {path})")
        return problems


def run_demo(out: Path) -> int:
    problems = Demo(out).run()
    return 1 if problems else 0
