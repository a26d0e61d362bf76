"""The RAPS floor ingest dashboard: floor events in, rejections, lag, and every floor link."""

from __future__ import annotations

from grafana_foundation_sdk.models import dashboard as dm

from .panels import SITE, UP_DOWN, AnyPanel, dashboard, q, single, timeline, ts


def build() -> dm.Dashboard:
    ingested = f"raps_events_ingested_total{{{SITE}}}"
    rejected = f"raps_events_rejected_total{{{SITE}}}"
    rej = f"sum by (source) (rate({rejected}[$__rate_interval]))"
    acc = f"sum by (source) (rate({ingested}[$__rate_interval]))"
    links = "raps_source_link_up"
    last_event = f"raps_source_last_event_timestamp_seconds{{{SITE}}}"
    events = [
        single(
            "Events applied now",
            "Floor events per second applied to the core over the last 5 minutes, all "
            "sources together. 0 on an open floor means ingest has stalled.",
            [q(f"sum(rate({ingested}[5m])) or vector(0)")],
            unit="eps",
            steps=[(None, "red"), (0.001, "green")],
        ),
        single(
            "Events rejected now",
            "Floor events per second rejected by the core over the last 5 minutes. A few "
            "duplicates are normal; a steady stream is a source or layout problem.",
            [q(f"sum(rate({rejected}[5m])) or vector(0)")],
            unit="eps",
            steps=[(None, "green"), (1, "orange")],
        ),
        single(
            "Sources down",
            "Floor sources (SAS channels, Modbus gateways, MQTT, simulator) whose link is "
            "down now.",
            [q(f"count({links}{{{SITE}}} == 0) or vector(0)")],
            steps=[(None, "green"), (1, "red")],
        ),
        single(
            "Floor anomalies",
            "Anomalies the floor state saw since the daemon started (a card in at two places, "
            "...). Each is a data-quality hint, not an outage.",
            [q(f"sum(raps_floor_anomalies{{{SITE}}}) or vector(0)")],
            steps=[(None, "green"), (1, "orange")],
        ),
        ts(
            "Events applied per second by source",
            "Floor events applied to the core, per source (an adapter: SAS, Modbus, table "
            "ratings, the casino system). A source dropping to 0 while the floor is open has "
            "stopped delivering.",
            [q(acc, "{{source}}")],
            unit="eps",
        ),
        ts(
            "Seconds since last event by source",
            "Now minus the time of the newest event each source delivered (the source's "
            "clock). A live source stays at a few seconds; a line climbing steadily is a "
            "stalled source, and above 10 minutes raises RapsIngestStalled. Only the sources "
            "that alert watches are shown: those whose newest event moved more than twice in "
            "6 hours (a one-shot load such as the player directory, cms, is left out). A "
            "line that ends is a source with no event in 6 hours.",
            [
                q(
                    f"(time() - max by (source) (max_over_time({last_event}[6h]))) "
                    f"and on (source) (sum by (source) (changes({last_event}[6h])) > 2)",
                    "{{source}}",
                )
            ],
            unit="s",
        ),
        ts(
            "Rejections per second by source and reason",
            "Floor events refused, by source and reason: duplicate (delivered twice), "
            "unknown_machine / unknown_table / unknown_seat (not in the configured layout), "
            "unknown_event_type, negative_points, span_out_of_range (a span_start too far "
            "before its ts, or before 1970), internal_error (the core failed on that event "
            "alone); source floor-log, refused_at_replay: a logged event today's checks "
            "refuse, skipped at a restart; the MQTT sources' edge reasons are in docs/mqtt.md.",
            [
                q(
                    f"sum by (source, reason) (rate({rejected}[$__rate_interval]))",
                    "{{source}}: {{reason}}",
                )
            ],
            unit="eps",
            stack=True,
        ),
        ts(
            "Rejected share by source",
            "Share of each source's events that were rejected. Above 50% for 10 minutes "
            "raises RapsSourceRejectingMostInput.",
            [q(f"{rej} / ({rej} + ({acc} or {rej} * 0))", "{{source}}")],
            unit="percentunit",
            max_val=1,
        ),
        ts(
            "Ingest lag by source",
            "Age of the newest event of each source when it was applied (event time to "
            "apply time). Only updated when a source applies events: a stalled source keeps "
            "its last value (see Seconds since last event by source for stalls). A one-shot "
            "load (the player directory, source cms) keeps the age it had at start.",
            [q(f"max by (source) (raps_ingest_lag_seconds{{{SITE}}})", "{{source}}")],
            unit="s",
        ),
        ts(
            "Messages missing by source (ingest gaps)",
            "Inbound MQTT messages a publisher numbered (seq) that never reached the daemon, "
            "per source: a broker that dropped what it held while the daemon was down "
            "(Mosquitto's default queue of 1000), a QoS 0 publisher, a lossy bridge. Any "
            "raises RapsIngestGap. A publisher restart (seq back to 1, or a new boot) is "
            "not a gap.",
            [
                q(
                    f"sum by (source) (increase(raps_ingest_gap_messages_total{{{SITE}}}"
                    f"[$__rate_interval]))",
                    "{{source}}",
                )
            ],
            unit="none",
            stack=True,
        ),
        ts(
            "Latest ingest gap by source",
            "Messages missing in the latest gap seen per source since the daemon started "
            "(0: none). One gap of about 9,000 after a restart is a broker queue limit; many "
            "small ones, a lossy publisher.",
            [q(f"max by (source) (raps_ingest_last_gap_messages{{{SITE}}})", "{{source}}")],
            unit="none",
        ),
        ts(
            "Floor anomalies by kind",
            "Anomalies counted since start, by kind. A steep rise after a change on the floor "
            "points to a mapping problem (machines or seats swapped in the layout).",
            [q(f"max by (kind) (raps_floor_anomalies{{{SITE}}})", "{{kind}}")],
            unit="none",
        ),
    ]
    link_panels: list[AnyPanel] = [
        single(
            "SAS channels up",
            "SAS channels (serial loops to slot machines) whose link is up.",
            [q(f'sum({links}{{{SITE}, kind="sas"}}) or vector(0)')],
            w=4,
            steps=[(None, "green")],
        ),
        single(
            "SAS channels down",
            "SAS channels whose link is down. More than half down for 5 minutes raises "
            "RapsSasLinksDown.",
            [q(f'count({links}{{{SITE}, kind="sas"}} == 0) or vector(0)')],
            w=4,
            steps=[(None, "green"), (1, "red")],
        ),
        single(
            "Modbus gateways up",
            "Modbus gateways (slot telemetry through a gateway) whose link is up.",
            [q(f'sum({links}{{{SITE}, kind="modbus"}}) or vector(0)')],
            w=4,
            steps=[(None, "green")],
        ),
        single(
            "Modbus gateways down",
            "Modbus gateways whose link is down.",
            [q(f'count({links}{{{SITE}, kind="modbus"}} == 0) or vector(0)')],
            w=4,
            steps=[(None, "green"), (1, "red")],
        ),
        single(
            "MQTT connection",
            "The daemon's MQTT connections (winner notices out; table ratings in): "
            "CONNECTED when every one is up. Empty when MQTT is not enabled.",
            [q(f'min({links}{{{SITE}, kind="mqtt"}})')],
            w=4,
            mappings={"1": ("CONNECTED", "green"), "0": ("DISCONNECTED", "red")},
            no_value="not enabled",
        ),
        single(
            "Link changes in range",
            "How many times any link went up or down in the selected time range. A high "
            "number with few links down means flapping (cabling, a loose serial connector, "
            "Wi-Fi).",
            [q(f"sum(changes({links}{{{SITE}}}[$__range])) or vector(0)")],
            w=4,
            steps=[(None, "green"), (10, "orange")],
        ),
        timeline(
            "SAS and Modbus links by channel",
            "Each SAS channel and Modbus gateway over time: green up, red down. A column of "
            "red across many channels at once is a shared cause (agent host, switch, power).",
            [
                q(
                    f'max by (kind, name) ({links}{{{SITE}, kind=~"sas|modbus"}})',
                    "{{kind}} {{name}}",
                )
            ],
            mappings=UP_DOWN,
            h=10,
        ),
        timeline(
            "MQTT and other source links",
            "The MQTT connections (name outbound: winner notices; inbound: table ratings) and "
            "any other source (the simulator on a demo) over time.",
            [
                q(
                    f'max by (kind, name) ({links}{{{SITE}, kind!~"sas|modbus"}})',
                    "{{kind}} {{name}}",
                )
            ],
            mappings=UP_DOWN,
            h=5,
        ),
    ]
    return dashboard(
        "raps-floor-ingest",
        "RAPS floor ingest",
        "Floor events in (rate, rejections, lag, time since the last event) and the state of "
        "every floor link.",
        [("Floor events", events), ("Floor links", link_panels)],
    )
