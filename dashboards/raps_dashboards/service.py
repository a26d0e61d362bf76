"""The RAPS service dashboard: the daemon process (readiness, restarts, CPU, memory, files)."""

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
    return dashboard(
        "raps-service",
        "RAPS service",
        "The daemon process: readiness, restarts, CPU, memory and open files.",
        [("Health", top), ("Process", process)],
    )
