"""The RAPS pools dashboard: eligible players by promotion, pool, area and tier, and odds."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as db
from grafana_foundation_sdk.models import dashboard as dm

from .panels import DS, PROMO, SITE, AnyPanel, dashboard, grid, q, single, ts


def build() -> dm.Dashboard:
    eligible = f"raps_pool_eligible_players{{{PROMO}}}"
    promotion = (
        db.QueryVariable("promotion")
        .label("Promotion")
        .description("Promotion ids of the site (its [[promotions]] in the RAPS config).")
        .datasource(DS)
        .query(f"label_values(raps_pool_eligible_players{{{SITE}}}, promotion)")
        .refresh(dm.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(dm.VariableSort.ALPHABETICAL_CASE_INSENSITIVE_ASC)
        .multi(True)
        .include_all(True)
        .all_value(".*")
    )
    now: list[AnyPanel] = [
        single(
            "Eligible players now",
            "Players in each pool now: carded, playing (slots: a game in the idle window; "
            "tables: seated and rated), over the promotion's points threshold, in an included "
            "area and tier, inside its qualifying window. A draw picks one of them.",
            [q(f"sum by (promotion, pool) ({eligible})", "{{promotion}} {{pool}}")],
            w=9,
            h=5,
            steps=[(None, "red"), (1, "green")],
        ),
        single(
            "Implied odds for one entry",
            "The chance that one given eligible player wins the next draw in the pool: "
            "1 / eligible players (one winner per draw, every eligible player equally "
            "likely). Over a session with several draws in the pool it is roughly that many "
            "times higher.",
            [q(f"1 / sum by (promotion, pool) ({eligible})", "{{promotion}} {{pool}}")],
            unit="percentunit",
            w=9,
            h=5,
            decimals=2,
        ),
        single(
            "Tracked players",
            "Players the floor state knows (the directory and everyone seen playing), "
            "eligible or not.",
            [q(f"max(raps_floor_tracked_players{{{SITE}}})")],
            w=6,
            h=5,
        ),
    ]
    history: list[AnyPanel] = [
        ts(
            "Eligible players by pool",
            "Pool sizes over the day. Dips to 0 during a session mean draws answered "
            "'no eligible player'.",
            [q(f"sum by (promotion, pool) ({eligible})", "{{promotion}} {{pool}}")],
            unit="none",
        ),
        ts(
            "Implied odds for one entry over time",
            "1 / eligible players per pool: the chance of one given player winning one draw.",
            [q(f"1 / sum by (promotion, pool) ({eligible})", "{{promotion}} {{pool}}")],
            unit="percentunit",
        ),
        ts(
            "Eligible players by area",
            "Eligible players per floor area (stacked). An area dropping to 0 while it is "
            "open points to its SAS channels or tables feed.",
            [q(f"sum by (pool, area) ({eligible})", "{{pool}} {{area}}")],
            unit="none",
            stack=True,
        ),
        ts(
            "Eligible players by tier",
            "Eligible players per loyalty tier (stacked).",
            [q(f"sum by (pool, tier) ({eligible})", "{{pool}} {{tier}}")],
            unit="none",
            stack=True,
        ),
        ts(
            "Tracked and eligible players",
            "Players the floor knows against those eligible in the selected promotions. "
            "Many tracked and none eligible: the promotion rules (window, threshold, areas, "
            "tiers) exclude everyone.",
            [
                q(f"max(raps_floor_tracked_players{{{SITE}}})", "tracked"),
                q(f"sum({eligible})", "eligible"),
            ],
            unit="none",
        ),
        grid(
            "Eligible players now by pool, area and tier",
            "The current pools broken down, largest first.",
            q(
                f"sum by (promotion, pool, area, tier) ({eligible})",
                instant=True,
                as_table=True,
            ),
            value_name="eligible",
        ),
    ]
    return dashboard(
        "raps-pools",
        "RAPS pools",
        "Eligible players by promotion, pool, area and tier, and the implied odds of one entry.",
        [("Now", now), ("Over time", history)],
        [promotion],
    )
