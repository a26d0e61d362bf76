"""The crash-recovery invariants (docs/crash-recovery.md): the database as a kill -9
left it, what the restarted daemon shows, the handheld's retries, the offline
verification of a closed session, and the daemon logs."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from datetime import datetime
from typing import Any

from bench.harness import raps_command
from bench.soak_handheld import Handheld
from bench.soak_model import (
    EXPIRES_WHILE_DOWN,
    FILLED,
    KEEPS_DEADLINE,
    MASKED_CARD,
    TARGET_STATE,
    Command,
    mask,
    poll,
    same_pick,
    utc_now,
)
from raps.chain import Head, check_chain
from raps.seal import SeedSealer, load_key
from selector.fairness import commitment as commit_to
from selector.session import DRAW_FIRST_HALF

# raps verify's exit codes for a journal that verifies (3: with anomalies, such as a
# staff no-show before the claim window ran out, which the soak's handheld makes)
VALID = (0, 3)
RESOLUTIONS = frozenset({"pick.verified", "pick.awarded", "pick.no_show", "pick.voided"})


class RecoveryChecks(Handheld):
    """Every invariant checked while the daemon is down and after it restarts."""

    # ----------------------------------------------------------- while down

    def check_while_down(self, first: bool = True) -> None:
        """The database as the crash left it: the chain, every acknowledged record, the seed."""
        m = self.model
        entries = self.db.entries()
        error = check_chain(entries, self.head if self.head.seq else None)
        self.check("journal chain intact at the kill", error is None, str(error))
        records = [e.record for e in entries]
        mine = [r for r in records if r["session_id"] == m.session_id]
        journaled = {r["data"]["command_id"] for r in mine if "command_id" in r["data"]}
        missing = m.acknowledged - journaled
        self.check(
            "every acknowledged command is in the journal",
            not missing,
            f"answered but not journaled: {sorted(missing)}",
        )
        allowed = m.acknowledged | ({self.in_flight.command_id} if self.in_flight else set())
        phantom = journaled - allowed
        self.check(
            "the journal holds no command nobody sent", not phantom, f"unknown: {sorted(phantom)}"
        )
        drawn = [r["data"] for r in mine if r["type"] == "pick.drawn"]
        numbers = [d["pick"] for d in drawn]
        self.check(
            "journaled pick numbers are 1..n",
            numbers == list(range(1, len(numbers) + 1)),
            str(numbers),
        )
        cards = [d["card"] for d in drawn]
        # 003: a player may be selected again after a no-show, but never while pending,
        # never after a win (or a void: voided winners stay barred by default)
        ended = {r["data"]["pick"]: r["type"] for r in mine if r["type"] in RESOLUTIONS}
        again = [
            d["card"]
            for i, d in enumerate(drawn)
            for earlier in drawn[:i]
            if earlier["card"] == d["card"] and ended.get(earlier["pick"]) != "pick.no_show"
        ]
        self.check(
            "no player drawn again unless every earlier pick of theirs was a no-show",
            not again,
            lambda: str(Counter(cards).most_common(3)),
        )
        for d in drawn:
            known = m.picks.get(d["pick"])
            if known is not None:
                self.check(
                    "journaled pick matches what the handheld was shown",
                    known["deadline"] == d["deadline"]
                    and known["card"] == mask(d["card"])
                    and (known["slot"], known["attempt"]) == (d["slot"], d["attempt"]),
                    lambda d=d, known=known: f"{d} / {known}",  # type: ignore[misc]
                )
        self.winners.update(cards)
        # a draw is answered once its winner is journaled: its pool alone (pick.requested,
        # the first of its two commits) leaves the command to run again on the retry
        answered = {
            r["data"]["command_id"]
            for r in mine
            if "command_id" in r["data"] and r["type"] not in DRAW_FIRST_HALF
        }
        self.in_flight_committed = self.in_flight is not None and (
            self.in_flight.command_id in answered
        )
        if first:
            snapshots = self.db.floor_snapshots()
            self.report.kills[f"down_with{'' if snapshots else 'out'}_floor_snapshot"] += 1
        if self.in_flight is not None and first:
            self.report.kills[
                "in_flight_committed" if self.in_flight_committed else "in_flight_lost"
            ] += 1
        self.check_seed_at_rest(mine)

    def check_seed_at_rest(self, records: list[dict[str, Any]]) -> None:
        """While a session is open its seed exists only sealed; after close, only revealed."""
        m = self.model
        sealed = self.db.sealed(m.session_id)
        opened = [r for r in records if r["type"] == "session.opened"]
        if not opened:
            self.check("no sealed seed before open", sealed is None, "a seed is sealed already")
            return
        self.check("one session.opened record", len(opened) == 1, str(len(opened)))
        self.check("the opened session's seed is sealed", sealed is not None, "no sealed seed")
        assert sealed is not None
        if self.sealer is None:
            self.sealer = SeedSealer(load_key(self.folder / "seed.key"))
        seed = self.sealer.unseal(m.session_id, *sealed)
        committed = opened[0]["data"]["commitment"]
        self.check("the sealed seed is the committed seed", commit_to(seed) == committed, committed)
        if m.commitment is not None:
            self.check(
                "the commitment never changes",
                committed == m.commitment,
                f"{committed} != {m.commitment}",
            )
        closed = any(r["type"] == "session.closed" for r in records)
        places = self.db.seed_places(seed, raw_files=not closed)
        if closed:
            allowed = [p for p in places if p.endswith("(session.closed)")]
            self.check(
                "after close the seed is only in the session.closed record",
                len(allowed) == 1 and len(places) == 1,
                str(places),
            )
        else:
            self.check(
                "an open session's seed is nowhere in the database in plain text",
                not places,
                str(places),
            )

    # ----------------------------------------------------------- after restart

    def check_after_restart(self) -> None:
        d = self.d
        m = self.model
        started = [e for e in d.log_events() if e.get("event") == "service started"]
        if started:
            key = "replayed" if started[0].get("floor_events_replayed") else "not_replayed"
            self.report.kills[f"restart_floor_events_{key}"] += 1
        head = d.get("/api/journal/head")
        self.see_head(head, "GET /api/journal/head after restart")
        summary = self.settled_summary()
        extra = self.compare(summary, allow_extra=self.in_flight is not None)
        self.note_timers(summary)
        self.check_pools()
        if self.in_flight is not None:
            self.retry_in_flight(self.in_flight, extra, summary)
            self.in_flight = None
        draws = [cid for cid, n in m.draws.items() if n in m.picks]
        if draws:
            self.retry_draw(self.rng.choice(draws))

    def compare(self, summary: dict[str, Any], allow_extra: bool) -> dict[str, Any] | None:
        """The restarted daemon's session against the model; returns an extra pick, if any."""
        m = self.model
        picks = summary["picks"]
        numbers = [p["pick"] for p in picks]
        self.check(
            "pick numbers are 1..n with no gap or duplicate",
            numbers == list(range(1, len(picks) + 1)),
            str(numbers),
        )
        self.check(
            "no acknowledged pick is lost, and at most the in-flight draw is added",
            len(m.picks) <= len(picks) <= len(m.picks) + (1 if allow_extra else 0),
            f"{len(picks)} picks, {len(m.picks)} acknowledged",
        )
        expected_state = m.state
        if self.in_flight is not None and self.in_flight.action == "open":
            expected_state = summary["state"] if summary["state"] in ("scheduled", "open") else "?"
        self.check(
            "the session state survives",
            summary["state"] == expected_state,
            f"{summary['state']} != {expected_state}",
        )
        if m.commitment is None:  # only our own open can have made one
            m.commitment = summary["commitment"]
        if m.commitment is not None:
            self.check(
                "the commitment is unchanged",
                summary["commitment"] == m.commitment,
                f"{summary['commitment']} != {m.commitment}",
            )
        now = utc_now()
        for p in picks:
            self.check("API shows masked cards only", bool(MASKED_CARD.fullmatch(p["card"])),
                       p["card"])  # fmt: skip
            known = m.picks.get(p["pick"])
            if known is None:
                continue
            self.check(
                "an acknowledged pick keeps its card, slot, attempt, pool and deadline",
                same_pick(known, p),
                lambda p=p, known=known: f"{known} / {p}",  # type: ignore[misc]
            )
            self.check_state(known, p, now)
        for kind, quota in summary["quotas"].items():
            filled = [p["slot"] for p in picks if p["kind"] == kind and p["state"] in FILLED]
            self.check(
                "quotas are never exceeded",
                len(filled) <= quota and len(set(filled)) == len(filled),
                f"{kind}: slots {filled}, quota {quota}",
            )
        return picks[len(m.picks)] if len(picks) > len(m.picks) else None

    def check_state(self, known: dict[str, Any], actual: dict[str, Any], now: datetime) -> None:
        """A pick's state is what was acknowledged, or a no-show its claim timer made."""
        n = actual["pick"]
        deadline = datetime.fromisoformat(known["deadline"])
        in_flight = self.in_flight
        if in_flight is not None and in_flight.pick == n:
            allowed = {known["state"], TARGET_STATE[in_flight.action]}
        else:
            allowed = {known["state"]}
        if "pending" in allowed:
            allowed.add("no_show")
        self.check(
            "a pick's state is what was acknowledged (or its timer's no-show)",
            actual["state"] in allowed,
            f"pick {n}: {actual['state']}, expected one of {sorted(allowed)}",
        )
        if actual["state"] == known["state"]:
            self.check(
                "an envelope prize and a void reason survive",
                (actual["prize"], actual["void_reason"])
                == (known.get("prize"), known.get("void_reason")),
                lambda: f"pick {n}: {actual} / {known}",
            )
        if (
            actual["state"] == "no_show"
            and "no_show" not in {known["state"]}
            and (in_flight is None or in_flight.action != "no_show" or in_flight.pick != n)
        ):
            self.check(
                "a claim timer never fires before the deadline",
                deadline <= now,
                f"pick {n}: no_show at {now.isoformat()}, deadline {known['deadline']}",
            )

    def settled_summary(self) -> dict[str, Any]:
        """The session once the restarted claim timer has caught up with the clock.

        Pending picks whose deadline passed while the daemon was down must become
        no-shows (the daemon's tick runs every 0.2 s); waiting for that is a poll with a
        deadline, and a pick still pending well after its deadline is a violation.
        """
        m = self.model

        def settled() -> dict[str, Any] | None:
            summary: dict[str, Any] = self.d.get(f"/api/sessions/{m.session_id}")
            # no slack: a pick whose deadline passed just before the kill, between two
            # ticks, is still pending until the restarted daemon's first tick; wait for it
            now = utc_now().timestamp()
            overdue = [
                p["pick"]
                for p in summary["picks"]
                if p["state"] == "pending"
                and datetime.fromisoformat(p["deadline"]).timestamp() < now
            ]
            return None if overdue else summary

        summary: dict[str, Any] = poll(
            "pending picks past their deadline become no_show after a restart", settled, 10.0
        )
        return summary

    def note_timers(self, summary: dict[str, Any]) -> None:
        """Timers across the restart: kept when not due, fired when due while down."""
        m = self.model
        for p in summary["picks"]:
            known = m.picks.get(p["pick"])
            if known is None or known["state"] != "pending":
                continue
            deadline = datetime.fromisoformat(known["deadline"])
            if p["state"] == "no_show":
                if self.killed_at <= deadline <= self.d.ready_at:
                    self.report.checks[EXPIRES_WHILE_DOWN] += 1
                known["state"] = "no_show"
            elif p["state"] == "pending":
                self.check(
                    KEEPS_DEADLINE,
                    p["deadline"] == known["deadline"] and deadline > self.killed_at,
                    f"{p} / {known}",
                )

    def check_pools(self) -> None:
        """The floor is back (snapshot + replayed events): both pools have players."""

        def filled() -> bool:
            pools = self.d.get("/api/pools")
            totals = Counter[str]()
            for row in pools:
                totals[row["pool"]] += row["eligible"]
            return totals["slots"] > 0 and totals["tables"] > 0

        poll("both pools have eligible players after a restart", filled, 10.0)
        self.report.checks["both pools have eligible players after a restart"] += 1

    def retry_in_flight(
        self, cmd: Command, extra: dict[str, Any] | None, summary: dict[str, Any]
    ) -> None:
        """The handheld retries the command it never heard back about: exactly once."""
        committed = self.in_flight_committed
        status, body = self.d.post(cmd.path, cmd.body)
        if status == 409:
            self.check(
                "a refused retry had not committed before the kill",
                not committed,
                f"{cmd.command_id} is journaled, yet the retry was refused: {body}",
            )
            self.model.refused.add(cmd.command_id)
            self.report.checks["in-flight command retried: refused now"] += 1
            return
        self.check("in-flight retry answered", status == 200, f"{status} {body}")
        self.check(
            "an in-flight command that committed replays, one that did not runs now",
            body["replayed"] == committed,
            f"{cmd.action} {cmd.command_id}: journaled={committed}, answer {body}",
        )
        if cmd.action == "draw":
            pick = body["pick"]
            if committed and pick is not None:
                self.check(
                    "the committed in-flight draw is the extra pick",
                    extra is not None and same_pick(extra, pick),
                    f"extra {extra}, retry {pick}",
                )
            else:
                self.check(
                    "an in-flight draw that did not commit left no pick",
                    extra is None,
                    str(extra),
                )
        self.acknowledge(cmd, status, body)
        again_status, again = self.d.post(cmd.path, cmd.body)
        self.check(
            "a second retry replays the same outcome",
            again_status == 200
            and again["replayed"]
            and (again["pick"] or {}).get("pick") == (body["pick"] or {}).get("pick"),
            f"{again_status} {again} after {body}",
        )
        name = "replayed" if committed else "performed once"
        self.report.checks[f"in-flight command retried: {name}"] += 1
        after = self.d.get(f"/api/sessions/{self.model.session_id}")
        grown = len(after["picks"]) - len(summary["picks"])
        self.check(
            "retrying never creates a second pick",
            grown == (1 if cmd.action == "draw" and not committed and body["pick"] else 0),
            f"{grown} new pick(s) after retrying {cmd.action}",
        )

    def retry_draw(self, command_id: str) -> None:
        m = self.model
        n = m.draws[command_id]
        known = m.picks[n]
        body = {"command_id": command_id, "kind": known["kind"]}
        status, answer = self.d.post(f"/api/sessions/{m.session_id}/draw", body)
        self.check(
            "retrying an acknowledged draw replays the same pick",
            status == 200 and answer["replayed"] and same_pick(known, answer["pick"]),
            lambda: f"{command_id} (pick {n}): {status} {answer}",
        )

    def wait_pools(self) -> None:
        self.check_pools()

    # ------------------------------------------------------- offline and logs

    def verify_offline(self, head: Head) -> None:
        """`raps verify` on the database, and on an export checked against the head."""
        sid = self.model.session_id
        raps = raps_command()
        done = subprocess.run(
            [*raps, "verify", self.db_url], capture_output=True, text=True, timeout=120
        )
        self.check(
            "raps verify DB_URL passes",
            done.returncode in VALID and "RESULT: OK" in done.stdout
            and f"session {sid}: OK" in done.stdout,
            f"exit {done.returncode}\n{done.stdout}{done.stderr}",
        )  # fmt: skip
        export = self.folder / f"{sid}.jsonl"
        done = subprocess.run(
            [*raps, "export", self.db_url, sid, "-o", str(export)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        self.check("raps export", done.returncode == 0, done.stderr)
        done = subprocess.run(
            [*raps, "verify", str(export), "--head", str(head)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        self.check(
            "raps verify EXPORT --head SEQ:HASH passes",
            done.returncode in VALID and "RESULT: OK" in done.stdout,
            f"exit {done.returncode}\n{done.stdout}{done.stderr}",
        )
        lines = export.read_text().splitlines()[1:]  # after the header naming the session
        records = [json.loads(line)["record"] for line in lines]
        self.winners.update(r["data"]["card"] for r in records if r["type"] == "pick.drawn")
        self.check_logs()

    def check_logs(self) -> None:
        """No daemon log line ever holds a seed or a winner's full card number."""
        logs = sorted((self.folder / "logs").glob("daemon-*.log"))
        text = "\n".join(p.read_text(errors="replace") for p in logs)
        seeds = [
            json.loads(r[0])["data"]["seed"]
            for r in self.db.rows("SELECT record FROM journal WHERE type = 'session.closed'")
        ]
        leaked = [s for s in seeds if s in text or s.upper() in text]
        self.check("no seed in the daemon logs", not leaked, f"{len(leaked)} seed(s) logged")
        cards = [c for c in self.winners if c in text]
        self.check("no winner's full card number in the logs", not cards,
                   f"{len(cards)} card(s), e.g. {mask(cards[0]) if cards else ''}")  # fmt: skip
