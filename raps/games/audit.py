"""`raps verify` for the stage games: every game recomputed from its revealed seed (and
that seed from its draw's), the stage ledger replayed (so the safe's value), the car
spots replayed, and the cross-checks that tie them to the draws.

A game not closed yet (its seed unrevealed) is replayed without the seed
(`verify_open_game`: its opened config, the turn order, every choice in range and never
twice, each reveal one the configured contents could hide); its reveals are checked
against the seed once it closes.

Cross-checks (of open and closed games), each named when it fails:
- a game's contestants are its draw's verified winners in position order (the bonus's,
  the podium's two bonus winners; the safe's, the podium's winners with their podium
  prizes; the car final's, the car draw's spot holders);
- the safe is offered at the value the ledger held then (`stage.safe_offered` = the
  safe game's `safe_value`), and grows only at a draw of a counting kind whose game
  closed (the ledger's replay refuses any other), cracked there exactly if its game
  paid the safe;
- every prize the games, the car spots and the vault share gave is in the ledger, and
  the ledger holds nothing else (no phantom prize); each winner's draw award lists
  exactly those prizes, and their letter pays exactly those (the car's letter, the car);
- a vault share goes to its own draw's winners, and only while the safe was never
  cracked (the replay refuses it after a crack).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from raps.games.streams import PREFIX, parse_stream
from selector.records import Record
from selector.stagegames.cars import SPOTS_PREFIX, CarQualifiers
from selector.stagegames.game import CLOSED, PrizeKind, StageError
from selector.stagegames.ledger import STREAM as LEDGER_STREAM
from selector.stagegames.verify import verify_game, verify_ledger, verify_open_game
from selector.tickets.announcing import money

Row = Mapping[str, Any]
# a prize as the cross-checks compare it: (draw, position, card, amount, kind)
Prize = tuple[str, int, str, int, str]


def is_stage(stream: str) -> bool:
    return stream == LEDGER_STREAM or stream.startswith((PREFIX, SPOTS_PREFIX))


def belongs(stream: str, focus: str) -> bool:
    """A draw's export (`draw:<id>`) holds its games too: they are verified with it."""
    return stream.startswith(PREFIX) and focus == f"draw:{parse_stream(stream)[1]}"


@dataclass
class StageReport:
    games: dict[str, list[str]] = field(default_factory=dict)  # closed games' problems
    steps: dict[str, int] = field(default_factory=dict)
    derived: dict[str, bool] = field(default_factory=dict)  # seed checked against the draw's
    open_games: dict[str, list[str]] = field(default_factory=dict)  # not closed: problems
    ledger: list[str] | None = None  # None: no ledger in what was verified
    ledger_text: str = ""
    spots: dict[str, list[str]] = field(default_factory=dict)
    spots_text: dict[str, str] = field(default_factory=dict)
    cross: list[str] = field(default_factory=list)
    finalists: dict[str, list[str]] = field(default_factory=dict)  # final draw -> holders

    @property
    def ok(self) -> bool:
        broken = any(self.games.values()) or bool(self.ledger) or any(self.spots.values())
        broken = broken or any(self.open_games.values())
        return not broken and not self.cross

    def lines(self) -> list[str]:
        out: list[str] = []
        for stream, problems in self.games.items():
            if problems:
                out.append(f"stage game {stream}: FAILED ({len(problems)} mismatch(es))")
                out += [f"  {p}" for p in problems]
                continue
            _, draw_id = parse_stream(stream)
            how = (
                f"seed derived from draw:{draw_id}'s"
                if self.derived.get(stream)
                else f"its seed checked against draw:{draw_id}'s once that draw closes"
            )
            out.append(f"stage game {stream}: OK ({self.steps[stream]} step(s) recomputed; {how})")
        for stream, problems in self.open_games.items():
            if problems:
                out.append(f"stage game {stream}: FAILED, not closed yet ({len(problems)} "
                           "mismatch(es))")  # fmt: skip
                out += [f"  {p}" for p in problems]
            else:
                out.append(f"stage game {stream}: not closed yet; {self.steps[stream]} step(s) "
                           "replayed against its opened config and turn order (its reveals "
                           "are checked against its seed once it closes)")  # fmt: skip
        for stream, problems in self.spots.items():
            if problems:
                out.append(f"car spots {stream}: FAILED ({len(problems)} problem(s))")
                out += [f"  {p}" for p in problems]
            else:
                out.append(f"car spots {stream}: OK ({self.spots_text[stream]})")
        if self.ledger is not None:
            if self.ledger:
                out.append(f"stage prizes: FAILED ({len(self.ledger)} problem(s))")
                out += [f"  {p}" for p in self.ledger]
            else:
                out.append(f"stage prizes: OK ({self.ledger_text})")
        if self.cross:
            out.append(f"stage cross-checks: FAILED ({len(self.cross)} problem(s))")
            out += [f"  {p}" for p in self.cross]
        return out


def check_stage(by_session: Mapping[str, list[dict[str, Any]]]) -> StageReport | None:
    """The stage streams among `by_session` (every stream verified), or None if none."""
    streams = {s: r for s, r in by_session.items() if is_stage(s)}
    if not streams:
        return None
    rep = StageReport()
    closed_games: dict[str, list[Record]] = {}
    open_games: dict[str, list[Record]] = {}
    for stream, rows in streams.items():
        if not stream.startswith(PREFIX):
            continue
        recs = _records(rows, rep.games, stream)
        if recs is None:
            continue
        if not recs or recs[-1].type != CLOSED:
            rep.steps[stream] = max(len(recs) - 1, 0)
            rep.open_games[stream] = _guard(lambda r=recs: [str(m) for m in verify_open_game(r)])
            open_games[stream] = recs
            continue
        draw_id = parse_stream(stream)[1]
        draw_seed = _draw_seed(by_session.get(f"draw:{draw_id}", []))
        rep.derived[stream] = draw_seed is not None
        rep.steps[stream] = len(recs) - 2
        rep.games[stream] = _guard(lambda r=recs, d=draw_seed: [str(m) for m in verify_game(r, d)])
        closed_games[stream] = recs
    ledger_rows = streams.get(LEDGER_STREAM)
    ledger_entries: list[Prize] = []
    if ledger_rows is not None:
        ledger, bad = verify_ledger(ledger_rows)
        rep.ledger = [str(m) for m in bad]
        if ledger is not None:
            ledger_entries = [_prize(e.award.to_dict()) for e in ledger.entries]
            rep.ledger_text = (
                f"{len(ledger.entries)} prize(s), the safe at {money(ledger.safe_value)}, "
                "recomputed from the ledger"
            )
    spots: list[tuple[Prize, str]] = []  # (prize, the draw award's ref)
    for stream, rows in streams.items():
        if stream.startswith(SPOTS_PREFIX):
            spots += _check_spots(rep, stream, rows)
    if not rep.ok:
        return rep  # cross-checks read what verified; a broken stream is named already
    _cross(rep, by_session, {**closed_games, **open_games}, ledger_rows, ledger_entries, spots)
    return rep


def _records(
    rows: list[dict[str, Any]], bad: dict[str, list[str]], key: str
) -> list[Record] | None:
    try:
        return [Record.from_dict(r) for r in rows]
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        bad[key] = [f"records cannot be read: {e!r}"]
        return None


def _guard(run: Any) -> list[str]:
    try:
        out: list[str] = run()
        return out
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        return [f"records cannot be read: {e!r}"]


def _draw_seed(rows: list[dict[str, Any]]) -> bytes | None:
    for r in rows:
        if r.get("type") == "draw.closed":
            try:
                return bytes.fromhex(str(r.get("data", {}).get("seed")))
            except ValueError:
                return None
    return None


def _prize(d: Mapping[str, Any]) -> Prize:
    return (str(d["draw_id"]), int(d["position"]), str(d["card"]), int(d["amount"]),
            str(d["kind"]))  # fmt: skip


def _check_spots(
    rep: StageReport, stream: str, rows: list[dict[str, Any]]
) -> list[tuple[Prize, str]]:
    recs = _records(rows, rep.spots, stream)
    if recs is None:
        return []
    try:
        q = CarQualifiers.replay(stream.removeprefix(SPOTS_PREFIX), recs)
    except (StageError, KeyError, TypeError, ValueError) as e:
        rep.spots[stream] = [str(e)]
        return []
    rep.spots[stream] = []
    if q.final_draw is not None:
        rep.finalists[q.final_draw] = q.holders()
    extra = sum(1 for r in recs if r.type == "car.extra_spot")
    rep.spots_text[stream] = f"{len(q.spots)} spot(s), {extra} paid R5,000-style instead"
    out = []
    for r in recs:
        d = r.data
        if r.type == "car.qualified":
            out.append(((d["source"], d["position"], d["card"], 0, "car_spot"), stream))
        elif r.type == "car.extra_spot":
            out.append(((d["source"], d["position"], d["card"], d["amount"], "cash"), stream))
    return out


def _awarded(rows: Iterable[Row]) -> dict[int, Row]:
    """A draw's awards by position (its last award of each)."""
    out: dict[int, Row] = {}
    for r in rows:
        if r.get("type") == "draw.awarded":
            d = r.get("data", {})
            out[int(d.get("position", 0))] = d
    return out


def _winners(rows: Iterable[Row]) -> list[str]:
    """A draw's winners in position order: the last presented pick of each position
    that is not voided (the desk refuses a void once the game opened)."""
    last: dict[int, tuple[str, bool]] = {}
    picks: dict[int, int] = {}
    for r in rows:
        d, t = r.get("data", {}), r.get("type")
        if t == "draw.picked":
            picks[int(d["pick"])] = int(d["position"])
            last[int(d["position"])] = (str(d["card"]), False)
        elif t == "draw.presented":
            last[int(d["position"])] = (str(d["card"]), True)
        elif t in ("draw.voided", "draw.no_show"):
            last.pop(int(d["position"]), None)
    return [card for _, (card, ok) in sorted(last.items()) if ok]


def _cross(
    rep: StageReport,
    by_session: Mapping[str, list[dict[str, Any]]],
    games: Mapping[str, list[Record]],
    ledger_rows: list[dict[str, Any]] | None,
    ledger_entries: list[Prize],
    spots: list[tuple[Prize, str]],
) -> None:
    bad = rep.cross
    expected: list[tuple[Prize, str]] = list(spots)  # every prize, with its draw award's ref
    offered = {
        r["data"]["draw_id"]: r["data"]["value"]
        for r in ledger_rows or []
        if r.get("type") == "stage.safe_offered"
    }
    for stream, recs in games.items():
        mechanic, draw_id = parse_stream(stream)
        config = recs[0].data["config"]
        draw_rows = by_session.get(f"draw:{draw_id}")
        if draw_rows is not None and mechanic in ("podium", "paddles"):
            winners = config["winners"]
            if winners != _winners(draw_rows):
                bad.append(f"{stream}: its contestants {winners} are not the draw's verified "
                           f"winners {_winners(draw_rows)}")  # fmt: skip
        podium = games.get(f"{PREFIX}podium:{draw_id}")
        chosen = [r.data for r in podium or [] if r.type == "podium.chosen"]
        if mechanic == "bonus" and podium is not None:
            want = [c["card"] for c in chosen if c["prize"]["kind"] == "bonus"]
            if config["contestants"] != want:
                bad.append(f"{stream}: its contestants are not the podium's bonus winners {want}")
        if mechanic == "safe":
            if podium is not None:
                want_cards = podium[0].data["config"]["winners"]
                prizes = [c["prize"]["amount"] for c in chosen]
                if (config["winners"], config["podium_prizes"]) != (want_cards, prizes):
                    bad.append(f"{stream}: its contestants or podium prizes are not the podium's")
            if ledger_rows is not None and offered.get(draw_id) != config["safe_value"]:
                bad.append(f"{stream}: opened at {config['safe_value']}, but the ledger offered "
                           f"the safe at {offered.get(draw_id)}")  # fmt: skip
        holders = rep.finalists.get(draw_id)
        if mechanic == "car" and holders is not None and config["finalists"] != holders:
            bad.append(f"{stream}: its finalists are not the car draw's spot holders {holders}")
        if recs[-1].type == CLOSED:  # a game not closed yet has paid nothing
            expected += [(_prize(a), stream) for a in recs[-1].data.get("awards", [])]
    for r in ledger_rows or []:
        if r.get("type") == "stage.vault_shared":
            for a in r["data"]["shares"]:
                expected.append((_prize(a), LEDGER_STREAM))
            draw_rows = by_session.get(f"draw:{r['data']['draw_id']}")
            cards = [a["card"] for a in r["data"]["shares"]]
            if draw_rows is not None and cards != _winners(draw_rows):
                bad.append(f"vault share {r['data']['draw_id']}: shared among {cards}, not the "
                           "draw's verified winners")  # fmt: skip
        if r.get("type") == "stage.safe_draw":
            d = r["data"]
            safe = games.get(f"{PREFIX}safe:{d['draw_id']}")
            if safe is not None and safe[-1].type != CLOSED:
                safe = None
            if d["kind"] == "podium+safe" and safe is None:
                bad.append(f"safe growth at {d['draw_id']}: no closed safe game there")
            elif safe is not None:
                cracked = any(a["kind"] == "safe" for a in safe[-1].data.get("awards", []))
                if cracked != d["cracked"]:
                    bad.append(f"safe growth at {d['draw_id']}: cracked={d['cracked']}, but "
                               f"its safe game says {cracked}")  # fmt: skip
    if ledger_rows is not None:
        wanted = Counter(p for p, _ in expected)
        have = Counter(ledger_entries)
        bad += [f"ledger: prize {p} that no game, spot or share gave (a phantom)"
                for p in sorted(have - wanted)]  # fmt: skip
        bad += [f"ledger: prize {p} is missing" for p in sorted(wanted - have)]
        # the awards are checked against every stage stream; an export of one draw or
        # one game holds its games but not the whole ledger and car spots
        _check_draw_awards(bad, by_session, expected)


def _check_draw_awards(
    bad: list[str],
    by_session: Mapping[str, list[dict[str, Any]]],
    expected: list[tuple[Prize, str]],
) -> None:
    """Each winner's draw award lists what the stage gave them; their letter pays it."""
    lines: dict[tuple[str, int], list[tuple[int, str]]] = {}
    car_letters: dict[tuple[str, int], Prize] = {}
    for (draw, pos, card, amount, kind), ref in expected:
        if kind == PrizeKind.CAR.value:
            car_letters[(ref, pos)] = (draw, pos, card, amount, kind)
        else:
            lines.setdefault((draw, pos), []).append((amount, kind))
    stage_draws = {d for d, _ in lines}
    for draw in sorted(stage_draws):
        rows = by_session.get(f"draw:{draw}")
        if rows is None:
            continue
        for pos, d in sorted(_awarded(rows).items()):
            if d.get("source") != "stage":
                bad.append(f"draw {draw} position {pos}: paid by {d.get('source')}, not its game")
                continue
            got = sorted((x["amount"], x["kind"]) for x in d.get("lines", []))
            if got != sorted(lines.get((draw, pos), [])):
                bad.append(f"draw {draw} position {pos}: its award {got} is not what the stage "
                           f"gave {sorted(lines.get((draw, pos), []))}")  # fmt: skip
        missing = {p for d, p in lines if d == draw} - set(_awarded(rows))
        bad += [f"draw {draw} position {p}: the stage paid it, the draw never awarded it"
                for p in sorted(missing)]  # fmt: skip
    letters = [r.get("data", {}) for r in by_session.get("prizes", [])
               if r.get("type") == "prize.letter"]  # fmt: skip
    if "prizes" in by_session:
        issued = Counter((str(d.get("session_id")), int(d.get("pick", 0))) for d in letters)
        for draw in sorted(stage_draws):
            for pos, a in sorted(_awarded(by_session.get(f"draw:{draw}", [])).items()):
                total = sum(int(x["amount"]) for x in a.get("lines", []))
                n = issued[(f"draw:{draw}", int(a.get("pick", 0)))]
                if (total > 0 and n != 1) or n > 1:
                    bad.append(f"draw {draw} position {pos}: {n} letter(s) for a prize of {total}")
    for d in letters:
        sid, pick = str(d.get("session_id")), int(d.get("pick", 0))
        prizes = sorted((int(p["amount"]), str(p["kind"])) for p in d.get("prizes", []))
        if sid.startswith(PREFIX):
            car = car_letters.get((sid, pick))
            if car is None or prizes != [(car[3], car[4])] or d.get("winner_card") != car[2]:
                bad.append(f"letter {d.get('letter_no')}: pays no car the game {sid} gave")
            continue
        draw = sid.removeprefix("draw:")
        if draw in stage_draws:
            award = next((a for a in _awarded(by_session.get(sid, [])).values()
                          if a.get("pick") == pick), None)  # fmt: skip
            want = sorted((x["amount"], x["kind"]) for x in (award or {}).get("lines", []))
            if prizes != want:
                bad.append(f"letter {d.get('letter_no')}: pays {prizes}, the award says {want}")
