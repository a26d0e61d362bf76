"""`raps verify` and `raps export`: check a journal offline, from a database or a file.

Checks, in order: the hash chain (and the published head, when given); then every
closed session in it is recomputed pick by pick from its revealed seed and pool
snapshots (selector.verify), every closed ticket draw is recomputed pick by pick from
its stored bin, changes and revealed seed (selector.tickets.draw_verify, derivation v3 or
v2), each witness signature against the key committed at open (and the witness's own log,
when given),
with the once-per-day limit across a day's draws, every prize letter is matched to the
award it pays, every ticket bin's credits and entries are recomputed from its
records (selector.tickets.recompute), and the stage games, the stage prize ledger and
the car spots are recomputed and cross-checked with the draws (raps.games.audit).  The
first broken entry is named; so is every mismatching pick.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from raps.audit_files import (
    CONTEXT,
    export_focus,
    read_columns,
    read_database,
    read_export,
    read_witness_log,
)
from raps.chain import Entry, Head, check_chain
from raps.games.audit import StageReport, belongs, check_stage, is_stage
from raps.heads import HeadReport, check_signed
from raps.store.database import open_engine
from raps.store.journal import JournalStore, session_export
from raps.tickets.desk import STREAM_PREFIX
from raps.tickets.stage import DRAW_PREFIX, PRIZE_STREAM
from selector.anomalies import draw_report, session_report
from selector.records import Record
from selector.schedule import STREAM as SCHEDULE_STREAM
from selector.schedule import Schedule, Status
from selector.schedule_checks import rehearsal_credits, window_findings
from selector.tickets import recompute
from selector.tickets.day_verify import verify_day
from selector.tickets.draw_verify import verify_draw
from selector.verify import verify_lifecycle, verify_session
from selector.witness_log import compare_log

__all__ = [  # the readers live in raps.audit_files; the CLI, the demo and tests use them here
    "CONTEXT", "Report", "check", "export_focus", "export_session", "read_columns",
    "read_database", "read_export", "read_witness_log",
]  # fmt: skip


@dataclass
class Report:
    entries: int = 0
    first_seq: int = 0
    last: Head | None = None
    chain_error: str | None = None
    sessions: dict[str, list[str]] = field(default_factory=dict)  # closed: mismatches
    # journaled overrides (a live session opened or drawn outside its window): not
    # mismatches, but exceptions the inspector is shown, each with who and why
    exceptions: dict[str, list[str]] = field(default_factory=dict)
    open_sessions: list[str] = field(default_factory=list)
    picks: int = 0
    # ticket bins: the rules their records break (recomputed from the records alone)
    tickets: dict[str, list[str]] = field(default_factory=dict)
    ticket_totals: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    # ticket draws on stage: closed draws' mismatches, open ones, and the prize letters
    draws: dict[str, list[str]] = field(default_factory=dict)
    open_draws: list[str] = field(default_factory=list)
    draw_picks: dict[str, int] = field(default_factory=dict)
    prizes: list[str] = field(default_factory=list)
    prize_letters: int = 0
    # the stage games, the stage ledger (the safe) and the car spots (raps.games.audit)
    stage: StageReport | None = None
    # the schedule: its changes (people's, with who and why) and what breaks its rules
    schedule_changes: int = 0
    schedule_log: list[str] = field(default_factory=list)
    schedule_problems: list[str] = field(default_factory=list)
    schedule_exceptions: list[str] = field(default_factory=list)  # sessions off the calendar
    # every RAPS session's notes (voids, no-shows: who and why) and anomalies (what an
    # honest session does not show: selector.anomalies); open sessions' illegal steps
    notes: dict[str, list[str]] = field(default_factory=dict)
    anomalies: dict[str, list[str]] = field(default_factory=dict)
    open_problems: dict[str, list[str]] = field(default_factory=dict)
    # columns the daemon reads back that disagree with the chained record (raps verify
    # reads them from the database: an edit outside the daemon)
    column_errors: list[str] = field(default_factory=list)
    require_closed: bool = False
    # an export of one session: that session (`focus`) verified, the rest of the range
    # (other sessions' entries between its first and last) checked as chain only
    focus: str | None = None
    context: list[str] = field(default_factory=list)
    export_problems: list[str] = field(default_factory=list)  # the header, withheld entries
    heads: HeadReport | None = None  # signed heads and commitments held to the journal
    # the witness's log against the journal (--witness-log): each a sign of tampering
    witness_problems: list[str] = field(default_factory=list)
    witness_signed: int | None = None  # signatures in that log (None: no log given)

    @property
    def ok(self) -> bool:
        """Not tampered with: the chain holds and every recomputation agrees."""
        broken = any(self.sessions.values()) or any(self.tickets.values())
        broken = broken or any(self.draws.values()) or bool(self.prizes)
        broken = broken or bool(self.schedule_problems) or any(self.open_problems.values())
        broken = broken or bool(self.column_errors) or bool(self.unclosed)
        broken = broken or (self.stage is not None and not self.stage.ok)
        broken = broken or bool(self.export_problems) or bool(self.heads and self.heads.problems)
        broken = broken or bool(self.witness_problems)
        return self.chain_error is None and not broken and self.entries > 0

    @property
    def unclosed(self) -> list[str]:
        """With --require-closed: the sessions and draws that are still open (a failure)."""
        if not self.require_closed:
            return []
        return [f"session {s}" for s in self.open_sessions] + [f"draw {d}" for d in self.open_draws]

    @property
    def anomaly_count(self) -> int:
        return sum(len(a) for a in self.anomalies.values())

    @property
    def exception_count(self) -> int:
        """Window overrides, sessions off the calendar: allowed, with who and why; shown."""
        return sum(len(e) for e in self.exceptions.values()) + len(self.schedule_exceptions)

    @property
    def exit_code(self) -> int:
        """0 valid; 3 valid with anomalies or exceptions; 1 tampered, mismatched or (with
        --require-closed) not closed."""
        if not self.ok:
            return 1
        return 3 if self.anomaly_count or self.exception_count else 0

    def lines(self) -> list[str]:
        out = []
        if self.entries:
            out.append(f"journal: {self.entries} entries, seq {self.first_seq}..{self.last}")
        else:
            out.append("journal: no entries")
        out.append(f"chain: {'FAILED: ' + self.chain_error if self.chain_error else 'OK'}")
        out += self._head_lines()
        out += [f"EXPORT: {p}" for p in self.export_problems]
        for sid, problems in self.sessions.items():
            if problems:
                out.append(f"session {sid}: FAILED ({len(problems)} mismatch(es))")
                out += [f"  {p}" for p in problems]
            else:
                out.append(f"session {sid}: OK (every pick recomputed)")
            out += self._session_lines(sid)
        for sid in self.open_sessions:
            out.append(f"session {sid}: not closed yet; seed unrevealed, its steps checked only")
            out += self._session_lines(sid)
        for draw_id, problems in self.draws.items():
            if problems:
                out.append(f"draw {draw_id}: FAILED ({len(problems)} mismatch(es))")
                out += [f"  {p}" for p in problems]
            else:
                out.append(
                    f"draw {draw_id}: OK ({self.draw_picks.get(draw_id, 0)} pick(s) "
                    "recomputed from the stored bin)"
                )
            out += self._session_lines(DRAW_PREFIX + draw_id)
        for draw_id in self.open_draws:
            out.append(f"draw {draw_id}: not closed yet; seed unrevealed, chain checked only")
        if self.prize_letters or self.prizes:
            if self.prizes:
                out.append(f"prizes: FAILED ({len(self.prizes)} problem(s))")
                out += [f"  {p}" for p in self.prizes]
            else:
                out.append(f"prizes: OK ({self.prize_letters} letter(s), each paying an award)")
        if self.stage is not None:
            out += self.stage.lines()
        if self.schedule_changes or self.schedule_problems:
            if self.schedule_problems:
                out.append(f"schedule: FAILED ({len(self.schedule_problems)} problem(s))")
                out += [f"  {p}" for p in self.schedule_problems]
            else:
                out.append(f"schedule: OK ({self.schedule_changes} change(s) replayed)")
            out += [f"  CHANGE: {c}" for c in self.schedule_log]
            out += [f"  EXCEPTION: {e}" for e in self.schedule_exceptions]
        for bin_id, problems in self.tickets.items():
            if problems:
                out.append(f"tickets {bin_id}: FAILED ({len(problems)} problem(s))")
                out += [f"  {p}" for p in problems]
            else:
                credited, entered, receipts = self.ticket_totals[bin_id]
                out.append(
                    f"tickets {bin_id}: OK ({credited} credited, {entered} entered on "
                    f"{receipts} receipt(s), recomputed from the records)"
                )
        out += [f"COLUMN: {c}" for c in self.column_errors]
        if self.witness_signed is not None and not self.witness_problems:
            out.append(f"witness log: OK ({self.witness_signed} signed request(s), each in "
                       "the journal as signed)")  # fmt: skip
        out += [f"WITNESS LOG: {w}" for w in self.witness_problems]
        out += [f"NOT CLOSED: {u} (--require-closed)" for u in self.unclosed]
        if self.context:
            out.append(
                f"context: {len(self.context)} other stream(s) in the exported range, "
                "chain checked only: " + ", ".join(self.context)
            )
        if not self.ok:
            out.append("RESULT: FAILED")
        elif self.anomaly_count:
            out.append(f"RESULT: OK, WITH {self.anomaly_count} ANOMALY(IES) (see ANOMALY above)")
        elif n := self.exception_count:
            out.append(f"RESULT: OK, WITH {n} EXCEPTION(S) (see EXCEPTION above)")
        else:
            out.append("RESULT: OK")
        return out

    def _head_lines(self) -> list[str]:
        h = self.heads
        if h is None:
            return []
        if h.problems:
            out = [f"heads: FAILED ({len(h.problems)} problem(s) in {h.checked} signed)"]
            out += [f"  {p}" for p in h.problems]
        else:
            site = ", ".join(sorted(h.sites))
            out = [f"heads: OK ({h.checked} signed by site {site}, each in the journal)"]
        return out + [f"  NOTE: {n}" for n in h.notes]

    def _session_lines(self, sid: str) -> list[str]:
        out = [f"  EXCEPTION: {e}" for e in self.exceptions.get(sid, [])]
        out += [f"  PROBLEM: {p}" for p in self.open_problems.get(sid, [])]
        out += [f"  NOTE: {n}" for n in self.notes.get(sid, [])]
        return out + [f"  ANOMALY: {a}" for a in self.anomalies.get(sid, [])]


def check(
    entries: list[Entry],
    records: list[dict[str, Any]],
    head: Head | None,
    from_genesis: bool = False,
    *,
    require_closed: bool = False,
    focus: str | None = None,
    columns: list[tuple[int, str, str]] | None = None,
    session: str | None = None,
    signed: list[tuple[int, Any]] | None = None,
    site_key: str | None = None,
    witness_key: str | None = None,
    witness_log: list[dict[str, Any]] | None = None,
) -> Report:
    """Verify entries (with their records, pools included) against an optional head.

    `from_genesis`: the entries are a whole journal (a database), which must start at
    entry 1; an export may be any contiguous range of it. `focus`: the session an
    export's header names; `session`: the one the inspector asked for (a header naming
    another fails). `signed`: a capture of signed heads, checked with `site_key`.
    `witness_key`: the witness's public key an inspector pinned; `witness_log`: the
    witness's own log of the draws (`raps witness export`), which every signed request
    must agree with.
    """
    problems = []
    if session is not None:
        if focus is not None and focus != session:
            problems.append(f"the export's header names session {focus!r}, not {session!r}")
        focus = session
    rep = Report(entries=len(entries), require_closed=require_closed, focus=focus)
    rep.export_problems = problems + _withheld(records, focus)
    if signed is not None and site_key is not None:
        rep.heads = check_signed(signed, site_key, entries, records)
    if columns is not None:
        rep.column_errors = _column_errors(entries, columns)
    if entries:
        rep.first_seq = entries[0].seq
        rep.last = Head(entries[-1].seq, entries[-1].hash)
    rep.chain_error = check_chain(entries, head, from_genesis)
    if head is not None and not entries:
        rep.chain_error = f"journal is empty, but the published head is {head.seq}"
    by_session: dict[str, list[dict[str, Any]]] = {}
    seqs: dict[str, list[tuple[int, str]]] = {}  # each record's (seq, entry hash)
    for e, r in zip(entries, records, strict=True):
        if r.get("type") == "damaged":
            continue  # its entry fails the chain check, which names it
        by_session.setdefault(str(r.get("session_id")), []).append(r)
        seqs.setdefault(str(r.get("session_id")), []).append((e.seq, e.hash))
    pinned: dict[str, Any] = {"witness_key": witness_key}
    closed_draws: dict[str, list[dict[str, Any]]] = {}
    windows, journal_end = _windows(by_session.get(SCHEDULE_STREAM, [])), _last_time(records)
    for sid, recs in by_session.items():
        if focus is not None and sid != focus and not belongs(sid, focus):
            rep.context.append(sid)
            continue
        if is_stage(sid):
            continue  # the stage games, checked together below
        if sid.startswith(STREAM_PREFIX):
            _check_tickets(rep, sid.removeprefix(STREAM_PREFIX), recs)
            rep.tickets[sid.removeprefix(STREAM_PREFIX)] += rehearsal_credits(recs, by_session)
        elif sid.startswith(DRAW_PREFIX):
            draw_id = sid.removeprefix(DRAW_PREFIX)
            _note_draw(rep, sid, recs)
            if any(r.get("type") == "draw.closed" for r in recs):
                closed_draws[draw_id] = recs
                rep.draws[draw_id] = _guarded(
                    lambda recs=recs, sid=sid: verify_draw(recs, entries=seqs[sid], **pinned)
                )
                rep.draw_picks[draw_id] = sum(1 for r in recs if r.get("type") == "draw.picked")
            else:
                rep.open_draws.append(draw_id)
        elif sid == PRIZE_STREAM:
            try:
                rep.prizes, rep.prize_letters = _check_prizes(recs, by_session)
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                rep.prizes = [f"records cannot be read: {e!r}"]
        elif sid.startswith("proxies:"):
            continue  # nominations: what they bar is checked in each draw's open
        elif sid == SCHEDULE_STREAM:
            _check_schedule(rep, recs, by_session)
        elif any(r.get("type") == "session.closed" for r in recs):
            _note_overrides(rep, sid, recs)
            _note_report(rep, sid, recs, windows.get(sid), journal_end)
            try:
                rep.sessions[sid] = [
                    str(m) for m in verify_session(recs, entries=seqs[sid], **pinned)
                ]
            except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
                rep.sessions[sid] = [f"records cannot be read: {e!r}"]
            rep.picks += sum(1 for r in recs if r.get("type") == "pick.drawn")
        else:
            _note_overrides(rep, sid, recs)
            _note_report(rep, sid, recs, windows.get(sid), journal_end)
            rep.open_problems[sid] = _guarded(lambda recs=recs: verify_lifecycle(recs))
            rep.open_sessions.append(sid)
    _check_days(rep, closed_draws)
    stage = {
        s: r for s, r in by_session.items() if focus is None or s == focus or belongs(s, focus)
    }
    rep.stage = check_stage(stage)
    if witness_log is not None:
        rep.witness_problems = compare_log(witness_log, by_session, seqs)
        rep.witness_signed = sum(1 for line in witness_log if line.get("log") == "signature")
    return rep


def _note_draw(rep: Report, stream: str, recs: list[dict[str, Any]]) -> None:
    found = draw_report(recs)
    if found.notes:
        rep.notes[stream] = found.notes
    if found.anomalies:
        rep.anomalies[stream] = found.anomalies


def _check_schedule(
    rep: Report, recs: list[dict[str, Any]], by_session: dict[str, list[dict[str, Any]]]
) -> None:
    """Replay the schedule's changes; list those people made (who, when, why), and refuse
    a session opened that the schedule never approved."""
    try:
        schedule = Schedule.replay({}, [Record.from_dict(r) for r in recs])
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        rep.schedule_problems.append(f"records cannot be read: {e!r}")
        return
    rep.schedule_changes = len(schedule.records)
    for rec in schedule.records:
        if rec.actor.role == "config":
            continue  # seeded from the config file: the file is the record of why
        d = rec.data
        what = d.get("session_id") or (d.get("session") or {}).get("session_id")
        what = what or d.get("promotion_id") or d.get("ticket_calendar")
        rep.schedule_log.append(
            f"{rec.at.isoformat()} {rec.type.removeprefix('schedule.')} "
            f"{what} by {rec.actor.user} ({rec.actor.role}): {d.get('reason')!r}"
        )
    for sid, plan in schedule.sessions.items():
        opened = any(r.get("type") == "session.opened" for r in by_session.get(sid, []))
        if opened and plan.status != Status.APPROVED:
            rep.schedule_problems.append(
                f"session {sid} opened, but the schedule has it {plan.status}"
            )
    rep.schedule_problems += (found := window_findings(schedule, by_session))[0]
    rep.schedule_exceptions += found[1]  # windows outside, sessions off the calendar


def export_belongs(focus: str) -> Callable[[str], bool]:
    """The streams an export of `focus` carries whole besides its own: a draw's games."""
    return lambda stream: belongs(stream, focus)


def _withheld(records: list[dict[str, Any]], focus: str | None) -> list[str]:
    """Entries an export gives as chain fields only must be other sessions': the one it
    is for (and what belongs to it) must be there whole, and such an export must name it."""
    out = []
    for r in records:
        if r.get("type") != CONTEXT:
            continue
        if focus is None:
            return ["entries given as chain fields only, but no header names the session"]
        stream = str(r.get("session_id"))
        if stream == focus or belongs(stream, focus):
            out.append(f"entry {r.get('seq')} of {stream} is withheld (chain fields only)")
    if focus is not None and not any(r.get("session_id") == focus for r in records):
        out.append(f"no entry of session {focus!r}")
    return out


def _note_report(
    rep: Report,
    sid: str,
    recs: list[dict[str, Any]],
    ends: datetime | None,
    journal_end: datetime | None,
) -> None:
    try:
        found = session_report(recs, ends=ends, journal_end=journal_end)
    except (KeyError, TypeError, ValueError, AttributeError) as e:  # a record verify names
        rep.anomalies[sid] = [f"the records cannot be read for the report: {e!r}"]
        return
    if found.notes:
        rep.notes[sid] = found.notes
    if found.anomalies:
        rep.anomalies[sid] = found.anomalies


def _windows(schedule: list[dict[str, Any]]) -> dict[str, datetime]:
    """The end of each session's scheduled window, as the schedule stream last set it
    (an unreadable schedule is named by _check_schedule; here it gives no windows)."""
    try:
        plans = Schedule.replay({}, [Record.from_dict(r) for r in schedule]).sessions
    except (KeyError, TypeError, ValueError, AttributeError):
        return {}
    return {sid: p.ends for sid, p in plans.items() if p.ends is not None}


def _last_time(records: list[dict[str, Any]]) -> datetime | None:
    """The newest record time of the journal (or export) read."""
    times = []
    for r in records:
        try:
            at = datetime.fromisoformat(str(r.get("at")))
        except ValueError:
            continue
        if at.tzinfo is not None:  # the daemon writes aware times only
            times.append(at)
    return max(times, default=None)


def _column_errors(entries: list[Entry], columns: list[tuple[int, str, str]]) -> list[str]:
    """Entries whose session_id or type column is not what their chained record says:
    the daemon reads a session back by its column, so an edit there (outside the hash)
    could move a record out of its session; verify names every one."""
    chained = {e.seq: e for e in entries}
    newest = max(chained, default=0)
    out = []
    for seq, session_id, type_ in columns:
        if seq > newest:
            continue  # appended after the entries were read (a live daemon): the next verify's
        e = chained.get(seq)
        try:
            rec = e.record if e is not None else {}
        except ValueError:
            continue  # a damaged record: the chain names it
        if (rec.get("session_id"), rec.get("type")) != (session_id, type_):
            out.append(
                f"entry {seq}: its columns say session {session_id!r}, {type_!r}; its "
                f"chained record says {rec.get('session_id')!r}, {rec.get('type')!r}"
            )
    return out


def _note_overrides(rep: Report, sid: str, recs: list[dict[str, Any]]) -> None:
    """A session's window overrides, as exceptions the report shows with who and why."""
    for r in recs:
        if r.get("type") != "session.override":
            continue
        d, actor = r.get("data", {}), r.get("actor", {})
        window = d.get("window") or ["?", "?"]
        rep.exceptions.setdefault(sid, []).append(
            f"{d.get('action', '?')} at {r.get('at')} outside its window {window[0]} - "
            f"{window[1]} by {actor.get('user')} ({actor.get('role')}): {d.get('reason')!r}"
        )


def _guarded(run: Any) -> list[str]:
    try:
        return [str(m) for m in run()]
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        return [f"records cannot be read: {e!r}"]


def _check_days(rep: Report, draws: dict[str, list[dict[str, Any]]]) -> None:
    """The once-per-day limit across each day's closed draws that have it."""
    days: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for draw_id, recs in draws.items():
        opened: dict[str, Any] = next(
            (r.get("data", {}) for r in recs if r.get("type") == "draw.opened"), {}
        )
        if opened.get("rules", {}).get("win_limit") == "per_day":
            key = f"{opened.get('promotion_id', '')}|{opened.get('day')}"
            days.setdefault(key, {})[draw_id] = recs
    for group in days.values():
        if len(group) < 2:
            continue
        try:
            found = [(draw_id, str(m)) for draw_id, m in verify_day(group)]
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
            found = [(next(iter(group)), f"records cannot be read: {e!r}")]
        for draw_id, m in found:
            rep.draws.setdefault(draw_id, []).append(f"per-day limit: {m}")


def _check_prizes(
    recs: list[dict[str, Any]], by_session: dict[str, list[dict[str, Any]]]
) -> tuple[list[str], int]:
    """Every letter pays one award of a draw (its card and prize), once; every
    collection is of a letter, by the winner, within its window."""
    problems: list[str] = []
    letters: dict[str, dict[str, Any]] = {}
    paid: set[tuple[str, int]] = set()
    for i, r in enumerate(recs, start=1):
        d = r.get("data", {})
        if r.get("type") == "prize.letter":
            key = (str(d.get("session_id")), int(d.get("pick", 0)))
            if is_stage(key[0]):  # the car's letter, checked against its game (stage)
                letters[str(d.get("letter_no"))] = d
                continue
            if key in paid:
                problems.append(f"record {i}: a second letter for {key[0]} pick {key[1]}")
            paid.add(key)
            letters[str(d.get("letter_no"))] = d
            award = next(
                (
                    a.get("data", {})
                    for a in by_session.get(key[0], [])
                    if a.get("type") == "draw.awarded" and a.get("data", {}).get("pick") == key[1]
                ),
                None,
            )
            if award is None:
                problems.append(f"record {i}: letter {d.get('letter_no')} pays no award")
            elif award.get("card") != d.get("winner_card"):
                problems.append(f"record {i}: letter {d.get('letter_no')} names another card")
        elif r.get("type") == "prize.forfeited":
            letter = letters.get(str(d.get("letter_no")))
            if letter is None:
                problems.append(f"record {i}: forfeit of an unknown letter")
            elif datetime.fromisoformat(r["at"]) <= datetime.fromisoformat(letter["collect_by"]):
                problems.append(
                    f"record {i}: letter {d.get('letter_no')} closed before its window ended"
                )
        elif r.get("type") == "prize.collected":
            letter = letters.get(str(d.get("letter_no")))
            if letter is None:
                problems.append(f"record {i}: collection of an unknown letter")
            elif datetime.fromisoformat(r["at"]) > datetime.fromisoformat(letter["collect_by"]):
                problems.append(f"record {i}: letter {d.get('letter_no')} collected too late")
    return problems, len(letters)


def _check_tickets(rep: Report, bin_id: str, recs: list[dict[str, Any]]) -> None:
    """A bin's credits and entries recomputed from its records: every entry covered by
    credits before it, receipts in sequence, every record in the bin it is filed under."""
    data = [r.get("data", {}) for r in recs]
    problems = [
        f"record {i}: filed under tickets:{bin_id} but names bin {d.get('bin_id')!r}"
        for i, d in enumerate(data, start=1)
        if d.get("bin_id") != bin_id
    ]
    result = recompute(data)
    problems += list(result["errors"])
    rep.tickets[bin_id] = problems
    totals = result["bins"].get(bin_id, {})
    rep.ticket_totals[bin_id] = (
        totals.get("tickets_credited", 0),
        totals.get("tickets_entered", 0),
        totals.get("receipts", 0),
    )


async def export_session(url: str, session_id: str) -> list[str]:
    """The session's export lines (raps.store.journal.session_export)."""
    engine = open_engine(url)
    try:
        lines = await session_export(JournalStore(engine), session_id, export_belongs(session_id))
    finally:
        await engine.dispose()
    if lines is None:
        raise KeyError(session_id)
    return lines
