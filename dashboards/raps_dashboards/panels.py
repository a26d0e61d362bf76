"""Shared helpers of the dashboards: queries, panels, variables, the dashboard frame.

Every query filters on the `site` target label that the scrape config adds
(`{site=~"$site"}`: SITE, sel); every panel reads the `datasource` variable (DS).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from grafana_foundation_sdk.builders import common as cb
from grafana_foundation_sdk.builders import dashboard as db
from grafana_foundation_sdk.builders import heatmap, stat, statetimeline, table, timeseries
from grafana_foundation_sdk.builders import prometheus as pb
from grafana_foundation_sdk.cog.builder import Builder
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common as cm
from grafana_foundation_sdk.models import dashboard as dm
from grafana_foundation_sdk.models import heatmap as hm
from grafana_foundation_sdk.models import prometheus as pm

from . import GENERATED

DS = dm.DataSourceRef(type_val="prometheus", uid="${datasource}")
SITE = 'site=~"$site"'
PROMO = f'{SITE}, promotion=~"$promotion"'

AnyPanel = Builder[dm.Panel]


def sel(metric: str, *matchers: str) -> str:
    """A selector of one site's series: sel("m", 'a="b"') is m{site=~"$site", a="b"}."""
    return f"{metric}{{{', '.join([SITE, *matchers])}}}"


def q(
    expr: str, legend: str = "__auto", *, instant: bool = False, as_table: bool = False
) -> pb.Dataquery:
    """One Prometheus query of a panel (its refId is set by the panel helper)."""
    t = pb.Dataquery().expr(expr).legend_format(legend)
    t = t.instant() if instant else t.range()
    if as_table:
        t = t.format(pm.PromQueryFormat.TABLE)
    return t


def _with_targets(
    panel: timeseries.Panel | stat.Panel | statetimeline.Panel | table.Panel | heatmap.Panel,
    targets: Sequence[pb.Dataquery],
) -> None:
    for i, t in enumerate(targets):
        panel.with_target(t.ref_id(chr(ord("A") + i)))


def thresholds(*steps: tuple[float | None, str]) -> db.ThresholdsConfig:
    return (
        db.ThresholdsConfig()
        .mode(dm.ThresholdsMode.ABSOLUTE)
        .steps([dm.Threshold(value=v, color=c) for v, c in steps])
    )


def value_map(mapping: dict[str, tuple[str, str]]) -> list[dm.ValueMapping]:
    """Value -> (text, colour) mappings, e.g. {"1": ("UP", "green")}."""
    options = {
        k: dm.ValueMappingResult(text=text, color=color, index=i)
        for i, (k, (text, color)) in enumerate(mapping.items())
    }
    return [dm.ValueMap(options=options)]


UP_DOWN = {"1": ("UP", "green"), "0": ("DOWN", "red")}


def ts(
    title: str,
    description: str,
    targets: Sequence[pb.Dataquery],
    *,
    unit: str,
    w: int = 12,
    h: int = 8,
    stack: bool = False,
    bars: bool = False,
    points: bool = False,
    min_interval: str | None = None,
    max_val: float | None = None,
) -> timeseries.Panel:
    p = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(DS)
        .unit(unit)
        .min(0)
        .span(w)
        .height(h)
        .fill_opacity(30 if stack or bars else 10)
        .legend(
            cb.VizLegendOptions()
            .show_legend(True)
            .display_mode(cm.LegendDisplayMode.LIST)
            .placement(cm.LegendPlacement.BOTTOM)
        )
        .tooltip(
            cb.VizTooltipOptions().mode(cm.TooltipDisplayMode.MULTI).sort(cm.SortOrder.DESCENDING)
        )
    )
    if max_val is not None:
        p = p.max(max_val)
    if stack:
        p = p.stacking(cb.StackingConfig().mode(cm.StackingMode.NORMAL))
    if bars:
        p = p.draw_style(cm.GraphDrawStyle.BARS)
    if points:
        p = p.show_points(cm.VisibilityMode.ALWAYS).point_size(6)
    if min_interval is not None:
        p = p.interval(min_interval)
    _with_targets(p, targets)
    return p


def single(
    title: str,
    description: str,
    targets: Sequence[pb.Dataquery],
    *,
    unit: str = "none",
    w: int = 6,
    h: int = 4,
    steps: Sequence[tuple[float | None, str]] = ((None, "text"),),
    mappings: dict[str, tuple[str, str]] | None = None,
    no_value: str | None = None,
    decimals: float | None = None,
) -> stat.Panel:
    p = (
        stat.Panel()
        .title(title)
        .description(description)
        .datasource(DS)
        .unit(unit)
        .span(w)
        .height(h)
        .thresholds(thresholds(*steps))
        .color_scheme(db.FieldColor().mode(dm.FieldColorModeId.THRESHOLDS))
        .color_mode(cm.BigValueColorMode.VALUE)
        .graph_mode(cm.BigValueGraphMode.NONE)
        .text_mode(cm.BigValueTextMode.AUTO)
        .reduce_options(cb.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
    )
    if mappings is not None:
        p = p.mappings(value_map(mappings))
    if no_value is not None:
        p = p.no_value(no_value)
    if decimals is not None:
        p = p.decimals(decimals)
    _with_targets(p, [t.instant() for t in targets])
    return p


def timeline(
    title: str,
    description: str,
    targets: Sequence[pb.Dataquery],
    *,
    mappings: dict[str, tuple[str, str]],
    w: int = 24,
    h: int = 8,
) -> statetimeline.Panel:
    p = (
        statetimeline.Panel()
        .title(title)
        .description(description)
        .datasource(DS)
        .span(w)
        .height(h)
        .mappings(value_map(mappings))
        .thresholds(thresholds((None, "green")))
        .color_scheme(db.FieldColor().mode(dm.FieldColorModeId.THRESHOLDS))
        .show_value(cm.VisibilityMode.NEVER)
        .merge_values(True)
        .fill_opacity(80)
        .row_height(0.9)
    )
    _with_targets(p, targets)
    return p


def histogram_map(
    title: str,
    description: str,
    target: pb.Dataquery,
    *,
    unit: str,
    value_name: str,
    w: int = 24,
    h: int = 8,
    min_interval: str | None = None,
) -> heatmap.Panel:
    """A heatmap of a Prometheus histogram: one row per bucket (le), counts per interval."""
    p = (
        heatmap.Panel()
        .title(title)
        .description(description)
        .datasource(DS)
        .span(w)
        .height(h)
        .calculate(False)
        .rows_frame(heatmap.RowsHeatmapOptions().layout(cm.HeatmapCellLayout.LE).value(value_name))
        .y_axis(heatmap.YAxisConfig().unit(unit).decimals(0))
        .color(
            heatmap.HeatmapColorOptions()
            .mode(hm.HeatmapColorMode.SCHEME)
            .fill("dark-orange")
            .scheme("Oranges")
            .scale(hm.HeatmapColorScale.EXPONENTIAL)
            .exponent(0.5)
            .steps(64)
        )
        .filter_values(heatmap.FilterValueRange().le(1e-9))  # empty cells stay blank
        .cell_values(heatmap.CellValues().decimals(0))
        .show_value(cm.VisibilityMode.AUTO)
        .show_legend()
    )
    if min_interval is not None:
        p = p.interval(min_interval)
    _with_targets(p, [target.format(pm.PromQueryFormat.HEATMAP)])
    return p


def grid(
    title: str,
    description: str,
    target: pb.Dataquery,
    *,
    value_name: str,
    w: int = 12,
    h: int = 10,
) -> table.Panel:
    p = (
        table.Panel()
        .title(title)
        .description(description)
        .datasource(DS)
        .span(w)
        .height(h)
        .with_transformation(
            dm.DataTransformerConfig(
                id_val="organize",
                options={"excludeByName": {"Time": True}, "renameByName": {"Value": value_name}},
            )
        )
        .sort_by([cb.TableSortByFieldState().display_name(value_name).desc(True)])
    )
    _with_targets(p, [target])
    return p


def site_variables() -> list[db.DatasourceVariable | db.QueryVariable]:
    return [
        db.DatasourceVariable("datasource")
        .label("Data source")
        .description("The Prometheus that scrapes the RAPS daemons.")
        .type("prometheus"),
        db.QueryVariable("site")
        .label("Site")
        .description("The casino site: the `site` label the scrape config adds to its daemon.")
        .datasource(DS)
        .query("label_values(raps_start_time_seconds, site)")
        .refresh(dm.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(dm.VariableSort.ALPHABETICAL_CASE_INSENSITIVE_ASC),
    ]


def dashboard(
    uid: str,
    title: str,
    description: str,
    sections: Sequence[tuple[str, Sequence[AnyPanel]]],
    variables: Sequence[db.DatasourceVariable | db.QueryVariable] = (),
) -> dm.Dashboard:
    d = (
        db.Dashboard(title)
        .uid(uid)
        .description(f"{description} {GENERATED}")
        .tags(["raps"])
        .timezone("browser")
        .time("now-6h", "now")
        .refresh("30s")
        .tooltip(dm.DashboardCursorSync.CROSSHAIR)
        .readonly()
        .link(
            db.DashboardLink("RAPS")
            .type(dm.DashboardLinkType.DASHBOARDS)
            .tags(["raps"])
            .as_dropdown(True)
            .include_vars(True)
            .keep_time(True)
        )
        .annotation(
            db.AnnotationQuery()
            .name("RAPS restarts")
            .datasource(DS)
            .enable(True)
            .icon_color("orange")
            .expr(f"changes(raps_process_start_time_seconds{{{SITE}}}[2m]) > 0")
        )
    )
    for v in [*site_variables(), *variables]:
        d = d.with_variable(v)
    for row, panels in sections:
        d = d.with_row(db.Row(row))
        for p in panels:
            d = d.with_panel(p)
    model = d.build()
    for i, built in enumerate(model.panels or [], start=1):
        built.id_val = i
    return model


def dashboard_json(model: dm.Dashboard) -> str:
    return json.dumps(model, cls=JSONEncoder, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
