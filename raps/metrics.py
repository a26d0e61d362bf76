"""Prometheus metrics of the daemon; every name starts with `raps_`.

One registry per daemon (not the process-global default), so tests can run several
daemons side by side and /metrics shows exactly what this service measures.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Iterable, Sequence
from typing import Protocol

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)

from selector.events import Tier
from selector.floor import Floor
from selector.records import Record
from selector.session import DrawSession, SessionState
from selector.tickets import Cause, Channel, RefusalReason


class Counted(Protocol):
    """What raps_sessions counts of a session (a DrawSession, or a closed one a start
    has not restored yet: raps.session_loader.ClosedSession)."""

    @property
    def promotion_id(self) -> str: ...
    @property
    def state(self) -> SessionState: ...
    @property
    def rehearsal(self) -> bool: ...


STAGE_RECORDS = (
    "draw.opened",
    "draw.picked",
    "draw.no_eligible",
    "draw.presented",
    "draw.add_on",
    "draw.awarded",
    "draw.no_show",
    "draw.voided",
    "draw.closed",
)
GAME_RECORDS = (  # selector.stagegames: the games, the car spots and the stage ledger
    "stage.opened", "stage.closed", "podium.chosen", "bonus.decided", "bonus.box",
    "paddles.paddle", "paddles.reveal", "paddles.stopped", "safe.declined", "safe.attempted",
    "safe.guess", "safe.spin", "car.won", "car.vehicle", "car.rules", "car.qualified",
    "car.extra_spot", "stage.prize", "stage.safe_base", "stage.safe_offered", "stage.safe_draw",
    "stage.vault_shared",
)  # fmt: skip
LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class Metrics:
    def __init__(self) -> None:
        self._session_counts: Tally[tuple[str, str, str]] = Tally()
        r = self.registry = CollectorRegistry(auto_describe=True)
        # the process's CPU, memory and open files, as raps_process_*
        ProcessCollector(namespace="raps", registry=r)
        self.events_ingested = Counter(
            "raps_events_ingested_total",
            "Floor events applied to the core",
            ["source"],
            registry=r,
        )
        self.events_rejected = Counter(
            "raps_events_rejected_total",
            "Floor events rejected, by source and reason",
            ["source", "reason"],
            registry=r,
        )
        self.floor_anomalies = Gauge(
            "raps_floor_anomalies",
            "Floor anomalies seen since start (card in elsewhere, ...)",
            ["kind"],
            registry=r,
        )
        self.ingest_lag = Gauge(
            "raps_ingest_lag_seconds",
            "Age of the newest applied event when it was applied",
            ["source"],
            registry=r,
        )
        self.link_up = Gauge(
            "raps_source_link_up",
            "1 when a floor source (SAS channel, Modbus gateway, "
            "MQTT broker, simulator) is connected",
            ["kind", "name"],
            registry=r,
        )
        self.pool_size = Gauge(
            "raps_pool_eligible_players",
            "Eligible players by promotion, pool, area and tier",
            ["promotion", "pool", "area", "tier"],
            registry=r,
        )
        self.tracked_players = Gauge(
            "raps_floor_tracked_players", "Players the floor state knows", registry=r
        )
        self.sessions = Gauge(
            "raps_sessions",
            "Draw sessions by promotion and state",
            ["promotion", "state", "rehearsal"],
            registry=r,
        )
        self.draws = Counter(
            "raps_draws_total",
            "Draw commands, by pool and result (picked, no_eligible)",
            ["pool", "result"],
            registry=r,
        )
        self.picks = Counter(
            "raps_picks_resolved_total",
            "Picks by outcome (verified, awarded, no_show, void)",
            ["pool", "outcome"],
            registry=r,
        )
        self.claim_timer = Counter(
            "raps_claim_timer_total",
            "Claim windows that ended, by how (presented, expired)",
            ["result"],
            registry=r,
        )
        self.claim_seconds = Histogram(
            "raps_claim_seconds",
            "From a pick being drawn to the winner being verified",
            ["pool"],
            buckets=(5, 10, 15, 20, 30, 45, 60, 75, 90, 120),
            registry=r,
        )
        self.source_last_event = Gauge(
            "raps_source_last_event_timestamp_seconds",
            "Unix time of the newest event applied from a source (stalls show here)",
            ["source"],
            registry=r,
        )
        self.pick_latency = Histogram(
            "raps_pick_latency_seconds",
            "From draw command to a durable pick",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.journal_write = Histogram(
            "raps_journal_write_seconds",
            "Durable journal append (commit included)",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.journal_failures = Counter(
            "raps_journal_write_failures_total", "Journal appends that failed", registry=r
        )
        self.journal_head = Gauge(
            "raps_journal_head_seq", "Sequence number of the journal head", registry=r
        )
        self.journal_rewound = Gauge(
            "raps_journal_rewound",
            "1 when the journal was found behind (or other than) the head this daemon last "
            "committed: it takes no new entry",
            registry=r,
        )
        self.sessions_refused = Gauge(
            "raps_sessions_refused",
            "Sessions the daemon refused to run: their journal records fail its checks "
            "(RAPS sessions, ticket draws and the prize letters' stream)",
            registry=r,
        )
        self._refused: dict[str, int] = {}  # by who refused them: "sessions", "stage"
        self.floor_log_failures = Counter(
            "raps_floor_log_write_failures_total",
            "Floor event log writes that failed (their events are kept and written again)",
            registry=r,
        )
        self.floor_log_backlog = Gauge(
            "raps_floor_log_backlog_events",
            "Floor events applied but not yet written to the floor log",
            registry=r,
        )
        self.storage_outages = Counter(
            "raps_storage_outages_total",
            "Times a storage path went down (database: the probe; floor_log, snapshot: their "
            "writes; journal: commits by the claim timers, commands and desks)",
            ["path"],
            registry=r,
        )
        self.tickets_credited = Counter(
            "raps_tickets_credited_total",
            "Draw tickets credited, by draw bin and cause (points, complimentary, app_bonus, "
            "raps_winner, external)",
            ["bin", "cause"],
            registry=r,
        )
        self.tickets_entered = Counter(
            "raps_tickets_entered_total",
            "Draw tickets entered into a bin, by channel (kiosk, app)",
            ["bin", "channel"],
            registry=r,
        )
        self.ticket_entries = Counter(
            "raps_ticket_entries_total",
            "Entries (receipts) made, by bin and channel",
            ["bin", "channel"],
            registry=r,
        )
        self.ticket_refusals = Counter(
            "raps_ticket_refusals_total",
            "Ticket entries and credits refused, by reason",
            ["reason"],
            registry=r,
        )
        self.ticket_bin_tickets = Gauge(
            "raps_ticket_bin_tickets",
            "Tickets entered in a bin, by tier",
            ["bin", "tier"],
            registry=r,
        )
        self.ticket_bin_players = Gauge(
            "raps_ticket_bin_players",
            "Players with tickets entered in a bin, by tier",
            ["bin", "tier"],
            registry=r,
        )
        self.stage_records = Counter(
            "raps_stage_records_total",
            "Ticket draw records committed on stage (draw.picked, draw.no_show, ...)",
            ["type"],
            registry=r,
        )
        self.stage_pick_latency = Histogram(
            "raps_stage_pick_seconds",
            "Time to draw a ticket-draw winner, commit included",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.stage_game_records = Counter(
            "raps_stage_game_records_total",
            "Stage game records committed (stage.opened, podium.chosen, safe.guess, "
            "stage.prize, car.qualified, ...)",
            ["type"],
            registry=r,
        )
        self.stage_safe_value = Gauge(
            "raps_stage_safe_value_cents",
            "The digit safe's progressive value in cents, from the stage prize ledger "
            "(the configured base until the ledger's first record)",
            registry=r,
        )
        self.prizes_uncollected = Gauge(
            "raps_prizes_uncollected",
            "Ticket-draw prizes not collected: awaiting (within the collection window) "
            "or overdue (past it)",
            ["state"],
            registry=r,
        )
        self.ingest_gap_messages = Counter(
            "raps_ingest_gap_messages_total",
            "Inbound messages a publisher numbered (seq) that never arrived, by source",
            ["source"],
            registry=r,
        )
        self.ingest_last_gap = Gauge(
            "raps_ingest_last_gap_messages",
            "Messages missing in the latest gap seen, by source (0: none since start)",
            ["source"],
            registry=r,
        )
        self.ingest_last_gap_time = Gauge(
            "raps_ingest_last_gap_timestamp_seconds",
            "Unix time the latest gap was seen, by source (0: none since start)",
            ["source"],
            registry=r,
        )
        self.ready = Gauge("raps_ready", "1 when storage and sources are up", registry=r)
        self.start_time = Gauge(
            "raps_start_time_seconds", "Unix time the daemon started", registry=r
        )

    def start_at_zero(self, ticket_bins: Sequence[str] = ()) -> None:
        """Create labelled series at 0, so increase() also counts their first event.

        Ticket refusals exist for every reason from the start; the per-bin ticket series
        for every bin in `ticket_bins` (the plan's bin ids), each cause, channel and tier.
        """
        for pool in ("slots", "tables"):
            for result in ("picked", "no_eligible"):
                self.draws.labels(pool, result)
            for outcome in ("verified", "awarded", "no_show", "void"):
                self.picks.labels(pool, outcome)
        for result in ("presented", "expired"):
            self.claim_timer.labels(result)
        for reason in RefusalReason:
            self.ticket_refusals.labels(reason.value)
        for kind in STAGE_RECORDS:
            self.stage_records.labels(kind)
        for kind in GAME_RECORDS:
            self.stage_game_records.labels(kind)
        for state in ("awaiting", "overdue"):
            self.prizes_uncollected.labels(state)
        for path in ("database", "floor_log", "snapshot", "journal"):
            self.storage_outages.labels(path)
        for bin_id in ticket_bins:
            for cause in Cause:
                self.tickets_credited.labels(bin_id, cause.value)
            for channel in Channel:
                self.tickets_entered.labels(bin_id, channel.value)
                self.ticket_entries.labels(bin_id, channel.value)
            for tier in Tier:
                self.ticket_bin_tickets.labels(bin_id, tier.value)
                self.ticket_bin_players.labels(bin_id, tier.value)

    def count_gap(self, source: str, missing: int) -> None:
        """A gap in a publisher's sequence numbers (0: create the source's series)."""
        self.ingest_gap_messages.labels(source).inc(missing)
        if missing:
            self.ingest_last_gap.labels(source).set(missing)
            self.ingest_last_gap_time.labels(source).set_to_current_time()
        else:
            self.ingest_last_gap.labels(source)
            self.ingest_last_gap_time.labels(source)

    def count_floor(self, floor: Floor, promotions: Iterable[str]) -> None:
        """Pool sizes by promotion, kind, area and tier; tracked players; floor anomalies."""
        self.pool_size.clear()
        for promo in promotions:
            for (kind, area, tier), n in floor.eligible_counts(promo).items():
                self.pool_size.labels(promo, kind, area, tier).set(n)
        self.tracked_players.set(floor.tracked_players)
        self.floor_anomalies.clear()
        for kind, n in floor.anomalies.items():
            self.floor_anomalies.labels(kind).set(n)

    def count_outcomes(self, s: DrawSession, records: Sequence[Record]) -> None:
        """Pick outcomes and claim times of a session's newly committed records."""
        outcome_of = {
            "pick.verified": "verified",
            "pick.awarded": "awarded",
            "pick.no_show": "no_show",
            "pick.voided": "void",
        }
        for r in records:
            outcome = outcome_of.get(r.type)
            if outcome:
                self.picks.labels(r.data.get("kind", ""), outcome).inc()
            if r.type == "pick.verified":
                self.claim_timer.labels("presented").inc()
                pick = s.picks[r.data["pick"] - 1]
                waited = (r.at - pick.drawn_at).total_seconds()
                self.claim_seconds.labels(pick.kind).observe(waited)
            elif r.type == "pick.no_show" and r.data.get("by") == "claim_timer":
                self.claim_timer.labels("expired").inc()

    def refused(self, who: str, count: int) -> None:
        """raps_sessions_refused: the service's refused sessions plus the stage's draws."""
        self._refused[who] = count
        self.sessions_refused.set(sum(self._refused.values()))

    def count_sessions(self, sessions: Iterable[Counted]) -> None:
        """raps_sessions by promotion, state and rehearsal. Only the series that changed
        are set: clearing and rebuilding every series cost every pick 0.1 ms."""
        counts: Tally[tuple[str, str, str]] = Tally(
            (s.promotion_id, s.state.value, str(s.rehearsal).lower()) for s in sessions
        )
        if counts == self._session_counts:
            return
        for labels in self._session_counts.keys() - counts.keys():
            self.sessions.labels(*labels).set(0)
        for labels, n in counts.items():
            self.sessions.labels(*labels).set(n)
        self._session_counts = counts

    def render(self) -> bytes:
        return generate_latest(self.registry)
