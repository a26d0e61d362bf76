"""The RAPS draws dashboard: sessions, draws, picks, claims and claim time, latency."""

from __future__ import annotations

from grafana_foundation_sdk.builders import prometheus as pb
from grafana_foundation_sdk.models import dashboard as dm

from .panels import SITE, AnyPanel, dashboard, histogram_map, q, sel, single, ts


def build() -> dm.Dashboard:
    picks = sel("raps_picks_resolved_total")
    no_shows = sel("raps_picks_resolved_total", 'outcome="no_show"')
    verified = sel("raps_picks_resolved_total", 'outcome="verified"')
    claimed = sel("raps_picks_resolved_total", 'outcome=~"verified|no_show"')
    claims = sel("raps_claim_timer_total")
    presented = sel("raps_claim_timer_total", 'result="presented"')
    no_eligible = sel("raps_draws_total", 'result="no_eligible"')
    claim_b = sel("raps_claim_seconds_bucket")
    sessions: list[AnyPanel] = [
        single(
            "Open sessions",
            "Draw sessions open now (rehearsals included).",
            [q(f'sum(raps_sessions{{{SITE}, state="open"}}) or vector(0)')],
            steps=[(None, "text")],
        ),
        single(
            "Sessions by state",
            "Configured draw sessions by state (scheduled, open, closed) and whether they are "
            "rehearsals.",
            [
                q(
                    f"sum by (state, rehearsal) (raps_sessions{{{SITE}}})",
                    "{{state}} rehearsal={{rehearsal}}",
                )
            ],
            w=12,
        ),
        single(
            "Draws with no eligible player",
            "Draw commands in the selected range that found the pool empty.",
            [q(f"sum(increase({no_eligible}[$__range])) or vector(0)")],
            steps=[(None, "green"), (1, "orange")],
            decimals=0,
        ),
        ts(
            "Sessions by state over time",
            "When sessions opened and closed.",
            [q(f"sum by (state) (raps_sessions{{{SITE}}})", "{{state}}")],
            unit="none",
        ),
        ts(
            "Draws by pool and result",
            "Draw commands per 5 minutes: picked (a winner was drawn) or no_eligible (the pool "
            "was empty). Replayed commands (a handheld retry) are not counted.",
            [
                q(
                    f"sum by (pool, result) (increase(raps_draws_total{{{SITE}}}[$__interval]))",
                    "{{pool}} {{result}}",
                )
            ],
            unit="none",
            bars=True,
            stack=True,
            min_interval="5m",
        ),
    ]
    claim_panels: list[AnyPanel] = [
        single(
            "No-show rate",
            "Share of drawn winners who did not present, in the selected range: no-shows / "
            "(verified + no-shows), both pools. No-shows include the claim timer running out "
            "and marketing marking one by hand.",
            [q(f"sum(increase({no_shows}[$__range])) / sum(increase({claimed}[$__range]))")],
            unit="percentunit",
            steps=[(None, "green"), (0.2, "orange"), (0.4, "red")],
            no_value="no picks",
        ),
        single(
            "Claims presented in time",
            "Claim windows that ended with the winner presenting, out of all that ended "
            "(presented + expired), in the selected range.",
            [q(f"sum(increase({presented}[$__range])) / sum(increase({claims}[$__range]))")],
            unit="percentunit",
            steps=[(None, "red"), (0.6, "orange"), (0.8, "green")],
            no_value="no claims",
        ),
        single(
            "Picks by outcome",
            "Picks resolved in the selected range: verified (winner presented and checked), "
            "awarded (prize recorded), no_show, void.",
            [q(f"sum by (outcome) (increase({picks}[$__range]))", "{{outcome}}")],
            w=12,
            decimals=0,
        ),
        ts(
            "Picks by outcome over time",
            "Resolved picks per 5 minutes by pool and outcome.",
            [q(f"sum by (pool, outcome) (increase({picks}[$__interval]))", "{{pool}} {{outcome}}")],
            unit="none",
            bars=True,
            stack=True,
            min_interval="5m",
        ),
        ts(
            "Claim windows ended",
            "Claim windows (default 90 s) that ended per 5 minutes: presented (the winner "
            "reached the spot and was verified) or expired (the timer turned the pick into a "
            "no-show and a redraw is due). How long the presented ones took: Claim time by "
            "pool.",
            [q(f"sum by (result) (increase({claims}[$__interval]))", "{{result}}")],
            unit="none",
            bars=True,
            stack=True,
            min_interval="5m",
        ),
        ts(
            "No-show rate by pool",
            "No-shows / (verified + no-shows) per pool over a sliding hour.",
            [
                q(
                    f"(sum by (pool) (increase({no_shows}[1h])) "
                    f"or sum by (pool) (increase({verified}[1h])) * 0) "
                    f"/ sum by (pool) (increase({claimed}[1h]))",
                    "{{pool}}",
                )
            ],
            unit="percentunit",
            max_val=1,
        ),
        ts(
            "Claim time by pool",
            "Time from a pick being drawn to the winner being verified at the spot, p50 and "
            "p90 per pool over a sliding 30 minutes (no-shows are not in it). Close to the "
            "claim window (default 90 s) means winners barely make it: lengthen the window or "
            "improve the floor announcement. Buckets end at 120 s.",
            [
                q(
                    f"histogram_quantile({p}, sum by (pool, le) (rate({claim_b}[30m])))",
                    f"{{{{pool}}}} p{label}",
                )
                for p, label in (("0.5", "50"), ("0.9", "90"))
            ],
            unit="s",
        ),
        histogram_map(
            "Claim time distribution",
            "Verified claims per 5 minutes by how long the winner took to present (both "
            "pools): each row is a claim-time bucket, darker cells hold more claims.",
            q(f"sum by (le) (increase({claim_b}[$__interval]))", "{{le}}"),
            unit="s",
            value_name="claims",
            min_interval="5m",
        ),
    ]
    pick_b = f"raps_pick_latency_seconds_bucket{{{SITE}}}"
    journal_b = f"raps_journal_write_seconds_bucket{{{SITE}}}"

    def quantiles(bucket: str) -> list[pb.Dataquery]:
        return [
            q(
                f"histogram_quantile({p}, sum by (le) (rate({bucket}[$__rate_interval])))",
                f"p{label}",
            )
            for p, label in (("0.5", "50"), ("0.95", "95"), ("0.99", "99"))
        ]

    latency: list[AnyPanel] = [
        single(
            "Pick latency p99",
            "99th percentile, over the selected range, of the time from a draw command to a "
            "durable pick (core draw plus journal commit).",
            [q(f"histogram_quantile(0.99, sum by (le) (increase({pick_b}[$__range])))")],
            unit="s",
            steps=[(None, "green"), (0.5, "orange"), (1, "red")],
            no_value="no draws",
        ),
        single(
            "Journal write p99",
            "99th percentile, over the selected range, of a durable journal append (commit "
            "included).",
            [q(f"histogram_quantile(0.99, sum by (le) (increase({journal_b}[$__range])))")],
            unit="s",
            steps=[(None, "green"), (0.25, "orange"), (1, "red")],
            no_value="no writes",
        ),
        single(
            "Journal write failures",
            "Journal appends that failed in the selected range. Any failure raises "
            "RapsJournalWriteFailing.",
            [
                q(
                    f"sum(increase({sel('raps_journal_write_failures_total')}[$__range])) "
                    "or vector(0)"
                )
            ],
            steps=[(None, "green"), (1, "red")],
            decimals=0,
        ),
        single(
            "Journal head",
            "Sequence number of the newest journal entry. It only grows; compare it with the "
            "head published on MQTT and with `raps verify --head`.",
            [q(f"max(raps_journal_head_seq{{{SITE}}})")],
        ),
        ts(
            "Pick latency",
            "Draw command to durable pick, percentiles over short windows (points appear when "
            "draws happen).",
            quantiles(pick_b),
            unit="s",
            points=True,
        ),
        ts(
            "Journal write latency",
            "Durable journal append (commit included), percentiles over short windows. p95 "
            "above 250 ms for 5 minutes raises RapsJournalWriteSlow.",
            quantiles(journal_b),
            unit="s",
            points=True,
        ),
    ]
    return dashboard(
        "raps-draws",
        "RAPS draws",
        "Draw sessions, picks by outcome, claims, claim time and no-shows, pick and journal "
        "latency.",
        [
            ("Sessions and draws", sessions),
            ("Picks and claims", claim_panels),
            ("Latency and journal", latency),
        ],
    )
