"""The `promtool test rules` cases of prometheus/alerts.yml, one AlertCase per alert.

Each case gives the input series, when the alert must stay quiet, when it must fire and
for which labels and value; alerts_tests renders the expected annotations from alerts.yml.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fires:
    """One expected alert: its own labels (site, ...) and the value its annotations print."""

    labels: dict[str, str]
    value: float = 0.0


@dataclass(frozen=True)
class AlertCase:
    """One alert's test: input series, times it stays quiet, the time it fires and how."""

    alert: str
    why: str
    series: dict[str, str]
    quiet_at: tuple[str, ...]
    fires_at: str
    fires: tuple[Fires, ...]


GH = 'site="golden-horse", instance="raps-gh:8080", job="raps"'
SS = 'site="silver-sands", instance="raps-ss:8080", job="raps"'
RV = 'site="river-view", instance="raps-rv:8080", job="raps"'
NO = 'site="night-owl", instance="raps-no:8080", job="raps"'
T0 = "1700000000"
APPLIED, REJECTED = "raps_events_ingested_total", "raps_events_rejected_total"
POOL = "raps_pool_eligible_players"
LAST_EVENT = "raps_source_last_event_timestamp_seconds"
REFUSED, ENTRIES = "raps_ticket_refusals_total", "raps_ticket_entries_total"
GAP = "raps_ingest_gap_messages_total"


def series(metric: str, site: str, **labels: str) -> str:
    extra = "".join(f', {k}="{v}"' for k, v in labels.items())
    return f"{metric}{{{site}{extra}}}"


def _buckets(metric: str, labels: str, per_le: dict[str, str]) -> dict[str, str]:
    return {f'{metric}_bucket{{{labels}, le="{le}"}}': v for le, v in per_le.items()}


ALERT_CASES: tuple[AlertCase, ...] = (
    AlertCase(
        "RapsIngestStalled",
        "Newest-event times in seconds since the test's time 0. golden-horse's sas source "
        "stops at 10m (over 10 minutes old after 20m, firing 2m later); its cms directory "
        "was loaded once. river-view's daemon restarts at 11m: sas never comes back, cms "
        "loads again (one change). silver-sands' sas stays live. Ends 6 hours after sas' "
        "last event.",
        {
            series(LAST_EVENT, GH, source="sas"): "0+60x10 600x400",
            series(LAST_EVENT, GH, source="cms"): "-1200x410",
            series(LAST_EVENT, RV, source="sas"): "0+60x10 stale",
            series(LAST_EVENT, RV, source="cms"): "-1200x10 _ -540x29",
            series(LAST_EVENT, SS, source="sas"): "0+60x410",
        },
        quiet_at=("20m", "22m", "390m"),
        fires_at="26m",
        fires=(
            Fires({"site": "golden-horse", "source": "sas"}, 960.0),
            Fires({"site": "river-view", "source": "sas"}, 960.0),
        ),
    ),
    AlertCase(
        "RapsIngestGap",
        "golden-horse's broker drops 9,000 queued slots messages, seen at 10m (the counters "
        "are exported at 0 from the start); silver-sands loses none. Quiet again once the "
        "gap is 15m old.",
        {
            series(GAP, GH, source="mqtt-slots"): "0x9 9000x30",
            series(GAP, GH, source="mqtt-tables"): "0x39",
            series(GAP, SS, source="mqtt-slots"): "0x39",
        },
        quiet_at=("5m", "30m"),
        fires_at="12m",
        fires=(Fires({"site": "golden-horse", "source": "mqtt-slots"}, 9000.0),),
    ),
    AlertCase(
        "RapsMqttBrokerDown",
        "golden-horse loses its broker at 6m (both connections); silver-sands' outbound link "
        "drops for one minute only.",
        {
            f'raps_source_link_up{{{GH}, kind="mqtt", name="inbound"}}': "1x5 0x10",
            f'raps_source_link_up{{{GH}, kind="mqtt", name="outbound"}}': "1x5 0x10",
            f'raps_source_link_up{{{SS}, kind="mqtt", name="inbound"}}': "1x15",
            f'raps_source_link_up{{{SS}, kind="mqtt", name="outbound"}}': "1x5 0 1x9",
        },
        quiet_at=("7m",),
        fires_at="9m",
        fires=(Fires({"site": "golden-horse"}, 0.0),),
    ),
    AlertCase(
        "RapsSasLinksDown",
        "3 of 4 SAS channels go down at 6m at golden-horse; 1 of 4 at silver-sands; Modbus "
        "links do not count.",
        {
            **{
                f'raps_source_link_up{{{GH}, kind="sas", name="loop{i}"}}': "1x5 0x20"
                for i in (1, 2, 3)
            },
            f'raps_source_link_up{{{GH}, kind="sas", name="loop4"}}': "1x25",
            f'raps_source_link_up{{{GH}, kind="modbus", name="gw1"}}': "1x25",
            f'raps_source_link_up{{{SS}, kind="sas", name="loop1"}}': "1x5 0x20",
            **{
                f'raps_source_link_up{{{SS}, kind="sas", name="loop{i}"}}': "1x25"
                for i in (2, 3, 4)
            },
            **{
                f'raps_source_link_up{{{SS}, kind="modbus", name="gw{i}"}}': "0x25"
                for i in (1, 2, 3)
            },
        },
        quiet_at=("3m", "9m"),
        fires_at="12m",
        fires=(Fires({"site": "golden-horse"}, 0.75),),
    ),
    AlertCase(
        "RapsSourceRejectingMostInput",
        "golden-horse: tables-mqtt has 3 of 4 events rejected, sas-loop2 all (and no applied "
        "series at all); cms rejects everything but too little to matter. silver-sands "
        "rejects 1%.",
        {
            series(APPLIED, GH, source="tables-mqtt"): "0+10x40",
            series(REJECTED, GH, source="tables-mqtt", reason="unknown_table"): "0+30x40",
            series(REJECTED, GH, source="sas-loop2", reason="unknown_machine"): "0+40x40",
            series(REJECTED, GH, source="sas-loop2", reason="duplicate"): "0+20x40",
            series(REJECTED, GH, source="cms", reason="duplicate"): "0+1x40",
            series(APPLIED, SS, source="sas"): "0+600x40",
            series(REJECTED, SS, source="sas", reason="duplicate"): "0+6x40",
        },
        quiet_at=("5m",),
        fires_at="15m",
        fires=(
            Fires({"site": "golden-horse", "source": "tables-mqtt"}, 0.75),
            Fires({"site": "golden-horse", "source": "sas-loop2"}, 1.0),
        ),
    ),
    AlertCase(
        "RapsNoEligiblePlayersAtSessionOpen",
        "Sessions open at 6m. golden-horse's pool series disappear (cleared gauge); "
        "river-view's weekend session has an empty pool while its daily promotion (no open "
        "session) has players; silver-sands' open daily session has players while its "
        "weekend promotion (scheduled) has none; night-owl has no open session.",
        {
            series("raps_sessions", GH, promotion="p", state="scheduled", rehearsal="false"): (
                "1x5 0x20"
            ),
            series("raps_sessions", GH, promotion="p", state="open", rehearsal="false"): (
                "0x5 1x20"
            ),
            series(
                POOL, GH, promotion="p", pool="slots", area="Main Floor", tier="gold"
            ): "12x5 stale",
            series("raps_sessions", RV, promotion="weekend", state="open", rehearsal="true"): (
                "0x5 1x20"
            ),
            series(
                POOL, RV, promotion="weekend", pool="tables", area="Pit 1", tier="gold"
            ): "3x5 0x20",
            series(
                POOL, RV, promotion="daily", pool="slots", area="Main Floor", tier="gold"
            ): "30x25",
            series("raps_sessions", SS, promotion="daily", state="open", rehearsal="false"): (
                "0x5 1x20"
            ),
            series(
                "raps_sessions", SS, promotion="weekend", state="scheduled", rehearsal="false"
            ): "1x25",
            series(
                POOL, SS, promotion="daily", pool="slots", area="Main Floor", tier="gold"
            ): "40x25",
            series(
                POOL, SS, promotion="weekend", pool="slots", area="Main Floor", tier="gold"
            ): "0x25",
            series("raps_sessions", NO, promotion="p", state="closed", rehearsal="false"): "1x25",
        },
        quiet_at=("4m", "7m"),
        fires_at="10m",
        fires=(
            Fires({"site": "golden-horse", "promotion": "p"}, 1.0),
            Fires({"site": "river-view", "promotion": "weekend"}, 1.0),
        ),
    ),
    AlertCase(
        "RapsDrawFoundNoEligiblePlayer",
        "golden-horse's first no_eligible tables draw at 15m takes its counter (exported at "
        "0 from the daemon's start) to 1; river-view's counter goes 3 -> 4 at 15m; "
        "silver-sands' old count does not move. Quiet again once the draws are 10m old.",
        {
            f'raps_draws_total{{{GH}, pool="slots", result="picked"}}': "0+1x30",
            f'raps_draws_total{{{GH}, pool="tables", result="no_eligible"}}': "0x14 1x16",
            f'raps_draws_total{{{RV}, pool="slots", result="no_eligible"}}': "3x14 4x16",
            f'raps_draws_total{{{SS}, pool="slots", result="no_eligible"}}': "2x30",
            f'raps_draws_total{{{SS}, pool="slots", result="picked"}}': "0+1x30",
        },
        quiet_at=("12m", "28m"),
        fires_at="18m",
        fires=(
            Fires({"site": "golden-horse", "pool": "tables"}, 1.0),
            Fires({"site": "river-view", "pool": "slots"}, 1.0),
        ),
    ),
    AlertCase(
        "RapsJournalWriteFailing",
        "Two journal appends fail at golden-horse at 6m and 7m; silver-sands has none.",
        {
            f"raps_journal_write_failures_total{{{GH}}}": "0x5 1 2 2x15",
            f"raps_journal_write_failures_total{{{SS}}}": "0x22",
        },
        quiet_at=("4m", "20m"),
        fires_at="8m",
        fires=(Fires({"site": "golden-horse"}, 2.0),),
    ),
    AlertCase(
        "RapsJournalRewound",
        "golden-horse's daemon finds its journal cut back at 6m (and again after a restart "
        "at 10m: the series is back at 1); silver-sands' holds.",
        {
            f"raps_journal_rewound{{{GH}}}": "0x5 1x3 stale 1x6",
            f"raps_journal_rewound{{{SS}}}": "0x15",
        },
        quiet_at=("4m",),
        fires_at="7m",
        fires=(Fires({"site": "golden-horse"}, 1.0),),
    ),
    AlertCase(
        "RapsSessionRefused",
        "golden-horse restarts at 6m and refuses 2 sessions; silver-sands refuses none.",
        {
            f"raps_sessions_refused{{{GH}}}": "0x5 2x10",
            f"raps_sessions_refused{{{SS}}}": "0x15",
        },
        quiet_at=("4m",),
        fires_at="7m",
        fires=(Fires({"site": "golden-horse"}, 2.0),),
    ),
    AlertCase(
        "RapsFloorLogWriteFailing",
        "golden-horse's floor log fails every minute from 6m to 9m (a full disk); "
        "silver-sands writes fine. Quiet again 5 minutes after the last failure.",
        {
            f"raps_floor_log_write_failures_total{{{GH}}}": "0x5 1 2 3 4 4x15",
            f"raps_floor_log_write_failures_total{{{SS}}}": "0x24",
        },
        quiet_at=("4m", "20m"),
        fires_at="9m",
        fires=(Fires({"site": "golden-horse"}, 4.0),),
    ),
    AlertCase(
        "RapsJournalWriteSlow",
        "Every golden-horse append takes 0.5-1 s (p95 975 ms); silver-sands' take under 5 ms.",
        {
            **_buckets(
                "raps_journal_write_seconds",
                GH,
                {
                    "0.005": "0x20",
                    "0.25": "0x20",
                    "0.5": "0x20",
                    "1.0": "0+10x20",
                    "+Inf": "0+10x20",
                },
            ),
            **_buckets(
                "raps_journal_write_seconds",
                SS,
                {
                    "0.005": "0+10x20",
                    "0.25": "0+10x20",
                    "0.5": "0+10x20",
                    "1.0": "0+10x20",
                    "+Inf": "0+10x20",
                },
            ),
        },
        quiet_at=("3m",),
        fires_at="10m",
        fires=(Fires({"site": "golden-horse"}, 0.975),),
    ),
    AlertCase(
        "RapsTicketRequestIdsReused",
        "golden-horse's kiosk reuses request ids at 10m and 11m (the counter is exported at "
        "0 from the start); silver-sands refuses many entries, none for a reused id. Quiet "
        "again once the reuses are 15m old.",
        {
            series(REFUSED, GH, reason="request_id_reused"): "0x9 1 2 2x25",
            series(REFUSED, GH, reason="nothing_to_enter"): "0+1x35",
            series(REFUSED, SS, reason="request_id_reused"): "0x35",
            series(REFUSED, SS, reason="nothing_to_enter"): "0+5x35",
        },
        quiet_at=("5m", "30m"),
        fires_at="12m",
        fires=(Fires({"site": "golden-horse"}, 2.0),),
    ),
    AlertCase(
        "RapsTicketEntriesOutsideWindow",
        "golden-horse refuses 3 entries a minute as outside the window and enters none "
        "(no entries series at all); silver-sands refuses 1 a minute at a window's end "
        "while entering 10 a minute; river-view refuses only 3 in all.",
        {
            series(REFUSED, GH, reason="outside_entry_window"): "0+3x40",
            series(REFUSED, SS, reason="outside_entry_window"): "0+1x40",
            series(ENTRIES, SS, bin="sat", channel="kiosk"): "0+6x40",
            series(ENTRIES, SS, bin="sat", channel="app"): "0+4x40",
            series(REFUSED, RV, reason="outside_entry_window"): "0x10 1 2 3 3x27",
            series(ENTRIES, RV, bin="evening", channel="kiosk"): "0x40",
        },
        quiet_at=("10m",),
        fires_at="16m",
        fires=(Fires({"site": "golden-horse"}, 1.0),),
    ),
    AlertCase(
        "RapsPrizesOverdue",
        "golden-horse has one prize overdue from 10m; silver-sands has prizes awaiting "
        "collection, none overdue.",
        {
            series("raps_prizes_uncollected", GH, state="overdue"): "0x9 1x80",
            series("raps_prizes_uncollected", GH, state="awaiting"): "2x9 1x80",
            series("raps_prizes_uncollected", SS, state="overdue"): "0x90",
            series("raps_prizes_uncollected", SS, state="awaiting"): "3x90",
        },
        quiet_at=("30m",),
        fires_at="75m",
        fires=(Fires({"site": "golden-horse"}, 1.0),),
    ),
    AlertCase(
        "RapsNotReady",
        "golden-horse turns not ready at 6m; silver-sands stays ready.",
        {f"raps_ready{{{GH}}}": "1x5 0x10", f"raps_ready{{{SS}}}": "1x15"},
        quiet_at=("7m",),
        fires_at="9m",
        fires=(Fires({"site": "golden-horse"}, 0.0),),
    ),
    AlertCase(
        "RapsDaemonDown",
        "golden-horse stops answering after 10m (stale series); silver-sands keeps answering.",
        {
            f"raps_start_time_seconds{{{GH}}}": f"{T0}x10 stale",
            f"raps_start_time_seconds{{{SS}}}": f"{T0}x30",
        },
        quiet_at=("5m", "12m"),
        fires_at="14m",
        fires=(Fires({"site": "golden-horse"}, float(T0)),),
    ),
    AlertCase(
        "RapsRestarting",
        "golden-horse restarts at 2m, 4m and 5m; silver-sands once at 2m.",
        {
            f"raps_process_start_time_seconds{{{GH}}}": "1000 1000 1120 1120 1240 1300 1300x10",
            f"raps_process_start_time_seconds{{{SS}}}": "1000 1000 1120x14",
        },
        quiet_at=("3m",),
        fires_at="6m",
        fires=(Fires({"site": "golden-horse"}, 3.0),),
    ),
)
