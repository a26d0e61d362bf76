"""The RAPS service dashboard: the daemon process (readiness, restarts, CPU, memory, files)
and its storage (outages by path, floor-log and journal write failures, the backlog)."""

from __future__ import annotations

from grafana_foundation_sdk.models import dashboard as dm

from .panels import SITE, AnyPanel, dashboard, q, single, timeline, ts


def build() -> dm.Dashboard:
    start = f"raps_process_start_time_seconds{{{SITE}}}"
    top: list[AnyPanel] = [
        single(
            "Ready",
            "The daemon's own readiness (same as GET /readyz): storage writable and every "
            "floor source up. 'daemon down?' means Prometheus has no data from it.",
            [q(f"max(raps_ready{{{SITE}}})")],
            w=4,
            mappings={"1": ("READY", "green"), "0": ("NOT READY", "red")},
            no_value="daemon down?",
        ),
        single(
            "Started",
            "When the running daemon started.",
            [q(f"max(raps_start_time_seconds{{{SITE}}}) * 1000")],
            unit="dateTimeFromNow",
            w=4,
            no_value="down",
        ),
        single(
            "Restarts in range",
            "Process starts in the selected range (systemd restarts after a failure, deployments).",
            [q(f"sum(changes({start}[$__range])) or vector(0)")],
            w=4,
            steps=[(None, "green"), (1, "orange"), (3, "red")],
            decimals=0,
        ),
        single(
            "CPU now",
            "CPU used by the daemon over the last 5 minutes; 100% is one full core.",
            [q(f"sum(rate(raps_process_cpu_seconds_total{{{SITE}}}[5m]))")],
            unit="percentunit",
            w=4,
            steps=[(None, "green"), (0.7, "orange"), (0.9, "red")],
        ),
        single(
            "Memory now",
            "Resident memory of the daemon.",
            [q(f"sum(raps_process_resident_memory_bytes{{{SITE}}})")],
            unit="bytes",
            w=4,
        ),
        single(
            "Open files",
            "Open file descriptors as a share of the limit (LimitNOFILE in the unit).",
            [q(f"max(raps_process_open_fds{{{SITE}}}) / max(raps_process_max_fds{{{SITE}}})")],
            unit="percentunit",
            w=4,
            steps=[(None, "green"), (0.8, "orange"), (0.9, "red")],
        ),
        timeline(
            "Readiness over time",
            "Green ready, red not ready; gaps are times Prometheus got nothing from the daemon.",
            [q(f"max(raps_ready{{{SITE}}})", "ready")],
            mappings={"1": ("READY", "green"), "0": ("NOT READY", "red")},
            h=4,
        ),
    ]
    process: list[AnyPanel] = [
        ts(
            "CPU",
            "CPU seconds per second; 100% is one full core. The floor ingest and the gauges "
            "refresh are the steady load; draws are short spikes.",
            [
                q(
                    f"rate(raps_process_cpu_seconds_total{{{SITE}}}[$__rate_interval])",
                    "{{instance}}",
                )
            ],
            unit="percentunit",
        ),
        ts(
            "Memory",
            "Resident (in RAM) and virtual memory. Resident grows with the number of players "
            "the floor tracks; a steady climb on a constant floor is a leak.",
            [
                q(f"raps_process_resident_memory_bytes{{{SITE}}}", "resident {{instance}}"),
                q(f"raps_process_virtual_memory_bytes{{{SITE}}}", "virtual {{instance}}"),
            ],
            unit="bytes",
        ),
        ts(
            "Restarts",
            "Process starts per 5 minutes.",
            [q(f"sum(changes({start}[$__interval]))", "starts")],
            unit="none",
            bars=True,
            min_interval="5m",
        ),
        ts(
            "Open file descriptors",
            "Open files and sockets against the limit.",
            [
                q(f"max(raps_process_open_fds{{{SITE}}})", "open"),
                q(f"max(raps_process_max_fds{{{SITE}}})", "limit"),
            ],
            unit="none",
        ),
    ]
    outages = f"raps_storage_outages_total{{{SITE}}}"
    floor_failures = f"raps_floor_log_write_failures_total{{{SITE}}}"
    journal_failures = f"raps_journal_write_failures_total{{{SITE}}}"
    backlog = f"raps_floor_log_backlog_events{{{SITE}}}"
    storage: list[AnyPanel] = [
        single(
            "Storage outages in range",
            "Times a storage path went down in the selected range: the database (its "
            "probe), the floor log, the floor snapshots, the journal. Each is one 'down' "
            "line in the daemon log.",
            [q(f"sum(increase({outages}[$__range])) or vector(0)")],
            w=6,
            steps=[(None, "green"), (1, "red")],
            decimals=0,
        ),
        single(
            "Floor log backlog now",
            "Floor events applied but not yet written to the floor log. Near 0 normally; "
            "it grows while the floor log cannot be written, and at "
            "storage.max_unflushed_events the MQTT ingest stops taking messages.",
            [q(f"max({backlog}) or vector(0)")],
            w=6,
            steps=[(None, "green"), (1000, "orange"), (50000, "red")],
        ),
        single(
            "Floor log write failures in range",
            "Floor-log writes that failed in the selected range (their events are kept and "
            "written again). Any raises RapsFloorLogWriteFailing.",
            [q(f"sum(increase({floor_failures}[$__range])) or vector(0)")],
            w=6,
            steps=[(None, "green"), (1, "red")],
            decimals=0,
        ),
        single(
            "Journal write failures in range",
            "Journal appends that failed in the selected range (a command refused, a claim "
            "timer or ticket credit waiting for the retry). Any raises "
            "RapsJournalWriteFailing.",
            [q(f"sum(increase({journal_failures}[$__range])) or vector(0)")],
            w=6,
            steps=[(None, "green"), (1, "red")],
            decimals=0,
        ),
        ts(
            "Storage outages by path",
            "Outages that began per 5 minutes, by storage path: database (the probe), "
            "floor_log, snapshot, journal. A database outage usually shows on every path.",
            [q(f"sum by (path) (increase({outages}[$__interval]))", "{{path}}")],
            unit="none",
            bars=True,
            min_interval="5m",
        ),
        ts(
            "Storage write failures",
            "Failed writes per second: the floor log (every flush that could not be "
            "written) and the journal (commands, claim timers, ticket credits, stage "
            "draws). While a path is down the daemon retries with backoff (5 s at most).",
            [
                q(f"sum(rate({floor_failures}[$__rate_interval]))", "floor log"),
                q(f"sum(rate({journal_failures}[$__rate_interval]))", "journal"),
            ],
            unit="ops",
        ),
        ts(
            "Floor log backlog",
            "Floor events applied but not yet written, per daemon. A climb is a floor log "
            "that cannot be written: a restart now would lose the SAS and Modbus events in "
            "it (MQTT ones the broker delivers again).",
            [q(f"max by (instance) ({backlog})", "{{instance}}")],
            unit="none",
        ),
    ]
    return dashboard(
        "raps-service",
        "RAPS service",
        "The daemon process: readiness, restarts, CPU, memory and open files; storage "
        "outages, write failures and the floor log's backlog.",
        [("Health", top), ("Storage", storage), ("Process", process)],
    )
