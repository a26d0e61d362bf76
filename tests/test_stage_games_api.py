"""The stage games through the daemon's HTTP API, on SQLite and on PostgreSQL (issue 19).

A Gold Reef City Saturday (tests/stage_games_kit.py): the 15:00 podiums and bonus boxes,
the 19:00 paddles, the 21:00 podiums and safe and the 21:30 vault share pay their
winners (ledger, draw awards, letters) and `raps verify` recomputes every reveal from
the draw's seed; the safe grows only at the 21:00 draw; a retry changes nothing, a
failed write undoes a close, a restart keeps every game and the safe's value; what the
host may not do is refused with a reason; the audience never sees a hidden content.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import tests.stage_games_kit as kit
from raps.audit import check, read_database
from tests.daemon_helpers import (
    accept_journal_writes,
    auth,
    card,
    client_for,
    reject_journal_writes,
    running_service,
)
from tests.stage_games_kit import C15, C21, CAR, D15, D19, D21, D2115, D2130, SAT, Show, show

pytestmark = [pytest.mark.asyncio]


async def test_a_saturday_pays_its_winners_through_the_games_and_verifies(
    db_url: str, tmp_path: Path
) -> None:
    async with show(db_url, tmp_path) as s:
        games = s.service.games
        assert await _safe_gauge(s) == 10_000_000  # the base, before any stage prize
        first = await s.draw_all(D15, add_on_first=True)
        await s.podium(D15)
        assert games.ledger.safe_value == 10_000_000
        view = await s.bonus(D15)
        assert all(p["state"] == "awarded" for p in view["picks"])
        assert view["game"]["next"] == {"action": "close_draw"}
        await s.ok(f"{D15}/close")
        # rule 74: the 19:00 draw opens with the 15:00 winners barred
        second = await s.draw_all(D19)
        assert not set(first) & set(second)
        await s.paddles(D19)
        await s.ok(f"{D19}/close")
        assert games.ledger.safe_value == 10_000_000  # 15:00 and 19:00 never grow it
        assert games.cars[CAR].holders() == [second[0]]  # the 19:00 winner 1 qualified
        await s.draw_all(D21)
        await s.podium(D21)
        # rule 135: the vault share waits until the 21:00 safe has closed
        early = await s.post(f"{D2130}/open")
        assert early.status_code == 409 and early.json()["reason"] == "safe_in_play"
        await s.safe(D21)  # every winner tries and misses
        await s.ok(f"{D21}/close")
        assert games.ledger.safe_value == 12_000_000  # +R20,000: offered and not cracked
        vault = await s.draw_all(D2130)
        assert (await s.game(D2130))["next"] == {"action": "share"}
        await s.ok(f"{D2130}/vault/share")
        await s.ok(f"{D2130}/close")
        assert games.ledger.safe_value == 0 and games.ledger.shared
        shares = [e.award for e in games.ledger.entries if e.award.kind.value == "vault_share"]
        assert [a.card for a in shares] == vault and sum(a.amount for a in shares) == 12_000_000
        lines = await s.verify()
        for draw in (D15, D19, D21):
            assert any(line.startswith(f"stage game stage:podium:{draw}: OK") or
                       line.startswith(f"stage game stage:paddles:{draw}: OK")
                       for line in lines), lines  # fmt: skip
        assert any("seed derived from draw:sat-2100's" in line for line in lines), lines
        assert any(line.startswith("stage prizes: OK") for line in lines), lines
        # one letter per paid winner, listing what the game gave and the add-on
        letters = s.service.stage.prizes.letters()
        assert len(letters) == 6 + 5 + 5 + 5
        top = next(x for x in letters if x.draw_id == D15 and x.pick == 1)
        assert [a.id for a in top.add_ons] == ["app"]
        assert await _safe_gauge(s) == 0  # shared
        await _the_prize_report(s, top.letter_no)


async def _safe_gauge(s: Show) -> float:
    metrics = await s.client.get("/metrics", headers=auth("ops"))
    (line,) = [x for x in metrics.text.splitlines() if x.startswith("raps_stage_safe_value_cents ")]
    return float(line.split()[1])


async def _the_prize_report(s: Show, letter_no: str) -> None:
    """The promotion's prizes: every one once, totals, the safe's history, uncollected."""
    r = await s.client.get("/api/prizes/report", headers=auth("marketing"))
    assert r.status_code == 200, r.text
    rep = r.json()
    kinds = rep["by_kind"]
    assert kinds["vault_share"] == 12_000_000 and kinds["cash"] > 0
    assert set(rep["by_day"]) == {SAT} and set(rep["by_draw"]) == {D15, D19, D21, D2130}
    # totals per draw and per day stay per kind: a share is never added to cash
    assert rep["by_draw"][D2130] == {"vault_share": 12_000_000}
    assert set(rep["by_draw"][D19]) == {"cash", "car_spot"}
    assert rep["by_day"][SAT] == {k: v for k, v in kinds.items()}
    assert [h["value"] for h in rep["safe"]["history"]] == [10_000_000, 12_000_000, 0]
    assert len(rep["uncollected"]) == len(rep["prizes"])  # nothing collected yet
    # the 19:00 first winner's car spot rides on their paddles letter
    spot = next(p for p in rep["prizes"] if p["kind"] == "car_spot")
    assert spot["draw_id"] == D19 and spot["position"] == 1 and spot["letter_no"]
    assert all(p["card"].startswith("*") for p in rep["prizes"])
    body = {"command_id": "collect-1", "document": "sa_id", "last_digits": "1234",
            "signature": {"kind": "typed", "text": "P. Test"}}  # fmt: skip
    r = await s.client.post(f"/api/prizes/{letter_no}/collect", json=body,
                            headers=auth("rewards_desk"))  # fmt: skip
    assert r.status_code == 200, r.text
    rep = (await s.client.get("/api/prizes/report", headers=auth("auditor"))).json()
    collected = [p for p in rep["prizes"] if p["letter_no"] == letter_no]
    assert collected and all(p["state"] == "collected" for p in collected)
    assert {p["add_on"] for p in collected} == {None, "app"}  # the +R500 rides on it
    csv = await s.client.get("/api/prizes/report.csv", headers=auth("marketing"))
    assert csv.status_code == 200 and csv.text.startswith("draw_id,draw_name,day,position")
    assert "120000.00" not in csv.text and "vault_share" in csv.text
    totals = await s.client.get("/api/prizes/report-totals.csv", headers=auth("auditor"))
    assert totals.status_code == 200
    assert totals.text.startswith("by,draw_id,draw_name,day,kind,amount\r\n")
    assert f"draw,{D2130},{D2130},{SAT},vault_share,120000.00\r\n" in totals.text
    assert f"day,,,{SAT},vault_share,120000.00\r\n" in totals.text
    page = await s.client.get("/prizes/report", headers=auth("auditor"))
    assert page.status_code == 200 and "The digit safe's history" in page.text
    assert page.text.count("<th>kind</th>") == 3  # by kind; per day and per draw by kind
    assert (await s.client.get("/api/prizes/report", headers=auth("stage_host"))).status_code == 403


async def test_a_crack_pays_the_safe_and_there_is_no_vault_share(
    db_url: str, tmp_path: Path
) -> None:
    async with show(db_url, tmp_path, players=12) as s:
        await s.draw_all(D21)
        await s.podium(D21)
        await s.draw_all(D2115)
        await s.podium(D2115)
        await s.ok(f"{D2115}/games/safe/open")  # one safe at a time: the other waits
        busy = await s.post(f"{D21}/games/safe/open")
        assert busy.status_code == 409 and busy.json()["reason"] == "safe_in_play"
        for _ in range(5):
            await s.ok(f"{D2115}/games/safe/decline")
        await s.ok(f"{D2115}/games/safe/close")
        assert s.service.games.ledger.safe_value == 12_000_000
        view = await s.safe(D21, crack_at=2)
        safe = view["game"]["games"][1]
        assert safe["cracked_by"] == 2 and safe["contents"]["codes"]  # revealed at close
        assert s.service.games.ledger.ever_cracked
        assert s.service.games.ledger.safe_value == 10_000_000  # back to the base
        paid = [e.award for e in s.service.games.ledger.entries if e.award.kind.value == "safe"]
        assert [a.amount for a in paid] == [12_000_000]  # the value it was offered at
        pick2 = next(p for p in view["picks"] if p["position"] == 2)
        assert "from the safe" in pick2["prize"]["text"]
        await s.ok(f"{D21}/close")
        refused = await s.post(f"{D2130}/open")
        assert refused.status_code == 409 and refused.json()["reason"] == "safe_cracked"
        await s.verify()


async def _stream_sizes(s: Show) -> dict[str, int]:
    ids = await s.service.journal.session_ids()
    return {i: len(await s.service.journal.session_entries(i)) for i in ids}


async def test_retries_a_failed_close_and_a_restart_change_nothing(
    db_url: str, tmp_path: Path
) -> None:
    async with show(db_url, tmp_path, players=8) as s:
        await s.draw_all(D21)
        await s.podium(D21)
        await s.ok(f"{D21}/games/safe/open", command_id="open-safe")
        again = await s.ok(f"{D21}/games/safe/open", command_id="open-safe")  # a lost reply
        assert again["game"]["games"][1]["state"] == "open"
        await s.ok(f"{D21}/games/safe/attempt", command_id="try-1")
        code = await s.safe_code(D21, 1)
        wrong = "999" if code != "999" else "998"
        first = await s.ok(f"{D21}/games/safe/guess", command_id="g-1", code=wrong)
        assert await s.ok(f"{D21}/games/safe/guess", command_id="g-1", code=wrong) == first
        lines = await s.verify()  # a game still open never breaks verify
        assert (
            f"stage game stage:safe:{D21}: not closed yet; 2 step(s) replayed against its "
            "opened config and turn order (its reveals are checked against its seed once it "
            "closes)" in lines
        ), lines
        for guess in [c for c in ("000", "001", "002") if c != code][:2]:
            await s.ok(f"{D21}/games/safe/guess", code=guess)
        for _ in range(4):
            await s.ok(f"{D21}/games/safe/decline")
        before = await _stream_sizes(s)
        value = s.service.games.ledger.safe_value
        await reject_journal_writes(s.service)
        failed = await s.post(f"{D21}/games/safe/close", command_id="close-safe")
        assert failed.status_code == 503, failed.text
        await accept_journal_writes(s.service)
        assert await _stream_sizes(s) == before  # nothing recorded
        assert (await s.game(D21))["games"][1]["state"] == "finished"  # undone in memory too
        assert s.service.games.ledger.safe_value == value
        await s.ok(f"{D21}/games/safe/close", command_id="close-safe")
        after = await _stream_sizes(s)
        await s.ok(f"{D21}/games/safe/close", command_id="close-safe")
        assert await _stream_sizes(s) == after  # the retry recorded nothing
        letters = len(s.service.stage.prizes.letters())
        cfg, clock, used = s.cfg, s.clock, s.n
    async with running_service(cfg, clock) as service, client_for(service, cfg) as client:
        s2 = Show(cfg, clock, service, client, n=used)  # fresh command ids after the restart
        assert service.games.ledger.safe_value == value + 2_000_000  # grown once, kept
        await s2.ok(f"{D21}/games/safe/close", command_id="close-safe")  # retry after restart
        assert await _stream_sizes(s2) == after
        assert len(service.stage.prizes.letters()) == letters == 5
        await s2.ok(f"{D21}/close")
        await s2.verify()


async def test_rules_69_70_74_87_a_car_day_fills_the_finalists_and_gives_the_car(
    db_url: str, tmp_path: Path
) -> None:
    async with show(db_url, tmp_path, players=8) as s:
        qualifier = (await s.draw_all(D19))[0]
        await s.paddles(D19)
        await s.ok(f"{D19}/close")
        q = s.service.games.cars[CAR]
        assert q.holders() == [qualifier] and q.finalists_needed() == 3
        s.clock.now = s.clock.now.replace(month=5, day=2)  # the car day, 12:05
        for i in range(1, 9):
            await s.enter(i, bin_draw=C15)
        spots = await s.draw_all(C15)
        assert (await s.game(C15))["next"] == {"action": "spots"}
        view = await s.ok(f"{C15}/spots/award")
        kinds = sorted(p["prize"]["kind"] for p in view["picks"])
        # a winner already holding a spot gets R5,000 instead (rule 70)
        assert kinds in (["car_spot", "car_spot"], ["car_spot", "cash"], ["cash", "car_spot"])
        await s.ok(f"{C15}/close")
        held = q.holders()
        assert len(held) == 1 + sum(1 for c in spots if c != qualifier)
        # rule 69: the 21:00 draw draws the finalists still needed, barring the holders
        await s.ok(f"{C21}/open")
        opened = (await s.service.journal.session_entries(f"draw:{C21}"))[0].record["data"]
        assert opened["rules"]["winners"] == 4 - len(held)
        in_bin = dict(opened["bin"])
        assert {c for c in held if c in in_bin} <= set(opened["barred"])  # every holder
        view = await s.view(C21)
        for _ in range(view["winners"]):
            await s.present(C21, (await s.ok(f"{C21}/draw"))["picks"][-1])
        await s.ok(f"{C21}/games/car/open")
        car = (await s.game(C21))["games"][0]
        assert [f["card"] for f in car["finalists"]] == q.holders() and len(q.holders()) == 4
        assert car["winner"] is None and car["contents"] is None  # hidden until revealed
        await s.ok(f"{C21}/games/car/reveal")
        refused = await s.post(f"{C21}/games/car/vehicle", vehicle="Yacht")
        assert refused.status_code == 409
        await s.ok(f"{C21}/games/car/vehicle", vehicle="Sedan", buy_back=31_000_000)
        await s.ok(f"{C21}/games/car/close")
        await s.ok(f"{C21}/close")
        car_prize = next(e for e in s.service.games.ledger.entries if e.award.kind.value == "car")
        assert dict(car_prize.award.detail) == {"vehicle": "Sedan", "buy_back": 31_000_000}
        letter = next(
            x for x in s.service.stage.prizes.letters() if x.session_id.startswith("stage:car")
        )
        assert letter.winner_card == car_prize.award.card and letter.total == 38_000_000
        assert s.service.games.ledger.safe_value == 10_000_000  # car draws never grow it
        rep = (await s.client.get("/api/prizes/report", headers=auth("auditor"))).json()
        spots = [p for p in rep["prizes"] if p["draw_id"] == C15 and p["kind"] == "car_spot"]
        assert spots and all(p["state"] == "no_letter" for p in spots)  # nothing to collect
        # no letter, yet a name: the floor's profile, shortened as on every screen
        assert all(p["winner"].startswith("Player") and p["winner"].endswith(" T.")
                   for p in spots), spots  # fmt: skip
        assert rep["by_kind"]["car"] == 38_000_000
        (car_row,) = [p for p in rep["prizes"] if p["kind"] == "car"]
        assert car_row["detail"] == {"vehicle": "Sedan", "buy_back": 31_000_000}
        assert rep["by_draw"][C21]["car"] == 38_000_000  # the car's value, kept apart
        csv = (await s.client.get("/api/prizes/report.csv", headers=auth("auditor"))).text
        assert ",380000.00,car," in csv and "buy_back=310000.00; vehicle=Sedan" in csv
        page = (await s.client.get("/prizes/report", headers=auth("auditor"))).text
        assert "R380,000.00 car (buy_back=R310,000.00; vehicle=Sedan)" in page
        lines = await s.verify()
        assert any(line.startswith(f"car spots car-spots:{CAR}: OK") for line in lines), lines


async def test_what_the_host_may_not_do_is_refused_and_the_screen_hides_the_contents(
    db_url: str, tmp_path: Path
) -> None:
    async with show(db_url, tmp_path, players=10) as s:
        assert (await s.post("no-such-draw/games/podium/open")).status_code == 404
        assert (await s.post(f"{D15}/games/roulette/open")).status_code == 422
        await s.ok(f"{D15}/open")
        got = (await s.ok(f"{D15}/draw"))["picks"][-1]
        early = await s.post(f"{D15}/games/podium/open")
        assert early.status_code == 409 and early.json()["reason"] == "winner_pending"
        await s.ok(f"{D15}/picks/1/present", presenter="winner", document="sa_id",
                   last_digits="1234", receipt=s.receipts[got["card"]])  # fmt: skip
        short = await s.post(f"{D15}/games/podium/open")
        assert short.json()["reason"] == "positions_open"
        manual = await s.post(f"{D15}/picks/1/award", source="device", amount=1, kind="cash",
                              ref="x")  # fmt: skip
        assert manual.status_code == 409 and manual.json()["reason"] == "prize_by_game"
        for _ in range(5):
            await s.present(D15, (await s.ok(f"{D15}/draw"))["picks"][-1])
        order = await s.post(f"{D15}/games/bonus/open")
        assert order.json()["reason"] == "game_order"
        await s.ok(f"{D15}/games/podium/open")
        assert (await s.post(f"{D15}/close")).json()["reason"] == "game_open"
        assert (await s.post(f"{D15}/picks/1/void", reason="x")).json()["reason"] == "game_open"
        screen = await s.client.get(f"/api/stage/screen/{D15}", headers=auth("stage_screen"))
        podium = screen.json()["game"]["games"][0]
        assert podium["contents"] is None and podium["seed"] is None and podium["commitment"]
        assert all(c["card"].startswith("*") for c in podium["contestants"])
        assert "next" not in screen.json()["game"]
        await s.ok(f"{D15}/games/podium/choose", randomiser=6)
        twice = await s.post(f"{D15}/games/podium/choose", randomiser=6)
        assert twice.status_code == 409 and twice.json()["reason"] == "refused_by_rules"
        denied = await s.client.post(f"/api/stage/draws/{D15}/games/podium/choose",
                                     json={"command_id": "z", "randomiser": 1},
                                     headers=auth("stage_screen"))  # fmt: skip
        assert denied.status_code == 403
        while (await s.game(D15))["games"][0]["turn"] is not None:
            await s.ok(
                f"{D15}/games/podium/choose", randomiser=(await s.game(D15))["games"][0]["free"][0]
            )
        await s.ok(f"{D15}/games/podium/close")
        screen = await s.client.get(f"/api/stage/screen/{D15}", headers=auth("stage_screen"))
        podium = screen.json()["game"]["games"][0]
        assert podium["contents"]["randomisers"] and podium["seed"]  # revealed at the close


async def test_rules_74_127_139_a_winner_of_the_day_is_barred_from_its_later_draws(
    db_url: str, tmp_path: Path
) -> None:
    """Once per promotional day (the ticket draws decide it, once): the 15:00 winners
    come barred to the 19:00, 21:00 and 21:30 draws, whatever game follows them."""
    async with show(db_url, tmp_path, players=12) as s:
        first = set(await s.draw_all(D15))
        # (the 21:30 draw before the 21:00 one: it may not open while a 21:00 safe is
        # to come, see test_rule_135_...)
        for later in (D19, D2130, D21):
            await s.ok(f"{later}/open")
            opened = (await s.service.journal.session_entries(f"draw:{later}"))[0].record
            barred = opened["data"]["barred"]
            assert {c for c, why in barred.items() if why == f"won_today:{D15}"} == first
        got = (await s.ok(f"{D19}/draw"))["picks"][-1]
        assert got["card"] not in first


async def test_rule_135_the_vault_is_not_shared_under_a_2100_safe_in_play(
    db_url: str, tmp_path: Path
) -> None:
    """The 21:30 draw opened before the 21:00 draw (its opening is refused while a 21:00
    safe is in play, see above): its share still waits while the 21:00 safe is to come
    or open, since sharing under it would close the safe its winners play for, and the
    21:00 draw could never pay them, close or reveal its seed. raps verify names the
    running order: the 21:30 draw did not bar the 21:00 winners (rules 127, 139)."""
    async with show(db_url, tmp_path, players=12) as s:
        games = s.service.games
        await s.draw_all(D2130)
        await s.draw_all(D21)
        await s.podium(D21)  # the podiums closed, the safe still to come
        refused = await s.post(f"{D2130}/vault/share")
        assert refused.status_code == 409 and refused.json()["reason"] == "safe_in_play"
        await s.ok(f"{D21}/games/safe/open")
        assert (await s.post(f"{D2130}/vault/share")).json()["reason"] == "safe_in_play"
        assert games.ledger.safe_value == 10_000_000 and not games.ledger.shared
        for _ in range(5):
            await s.ok(f"{D21}/games/safe/decline")
        await s.ok(f"{D21}/games/safe/close")
        await s.ok(f"{D21}/close")  # its winners paid and its seed revealed
        await s.ok(f"{D2130}/vault/share")
        shares = [e.award.amount for e in games.ledger.entries if e.award.draw_id == D2130]
        assert sum(shares) == 12_000_000  # the 21:00 miss grew it first
        await s.ok(f"{D2130}/close")
        # the safe is closed for good: a later 21:00 draw could never pay its podiums
        late = await s.post(f"{D2115}/open")
        assert late.status_code == 409 and late.json()["reason"] == "vault_shared"
        entries, recs = await read_database(s.cfg.storage.url)
        lines = check(entries, recs, None, from_genesis=True).lines()
        failed = [line for line in lines if "FAILED" in line]
        assert failed == [f"draw {D2130}: FAILED (5 mismatch(es))", "RESULT: FAILED"], lines
        mismatches = [line for line in lines if line.startswith("  ") and "NOTE:" not in line]
        assert len(mismatches) == 5, lines
        assert all("won sat-2100 earlier that day" in line for line in mismatches), lines


async def test_rule_69_a_car_final_with_every_spot_held_draws_none_and_plays_the_holders(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rule 69: the 21:00 finalist draw draws as many finalists as are still needed;
    with every spot won before it, none: the car is played among the spot holders."""
    monkeypatch.setattr(kit, "STAGE", kit.STAGE.replace("finalists = 4", "finalists = 3"))
    async with show(db_url, tmp_path, players=8) as s:
        qualifier = (await s.draw_all(D19))[0]
        await s.paddles(D19)
        await s.ok(f"{D19}/close")
        s.clock.now = s.clock.now.replace(month=5, day=2)  # the car day, 12:05
        for i in range(1, 9):
            if card(i) != qualifier:  # two new holders at 15:00, whoever is drawn
                await s.enter(i, bin_draw=C15)
        await s.draw_all(C15)
        await s.ok(f"{C15}/spots/award")
        await s.ok(f"{C15}/close")
        q = s.service.games.cars[CAR]
        assert len(q.holders()) == 3 and q.finalists_needed() == 0
        assert (await s.ok(f"{C21}/open"))["winners"] == 0
        await s.ok(f"{C21}/games/car/open")
        car = (await s.game(C21))["games"][0]
        assert [f["card"] for f in car["finalists"]] == q.holders()
        await s.ok(f"{C21}/games/car/reveal")
        await s.ok(f"{C21}/games/car/vehicle", vehicle="Hatchback")
        await s.ok(f"{C21}/games/car/close")
        await s.ok(f"{C21}/close")
        lines = await s.verify()
        assert any(line.startswith(f"stage game stage:car:{C21}: OK") for line in lines), lines
