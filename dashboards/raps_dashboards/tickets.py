"""The RAPS tickets dashboard: draw tickets credited and entered per bin, receipts,
entry refusals by reason, what each bin holds by tier (docs/tickets.md), the draws on
stage, and the stage games with the digit safe's value (docs/stagegames.md)."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as db
from grafana_foundation_sdk.models import dashboard as dm

from .panels import DS, SITE, AnyPanel, dashboard, grid, q, sel, single, ts

BIN = 'bin=~"$bin"'


def build() -> dm.Dashboard:
    credited = sel("raps_tickets_credited_total", BIN)
    entered = sel("raps_tickets_entered_total", BIN)
    receipts = sel("raps_ticket_entries_total", BIN)
    refusals = sel("raps_ticket_refusals_total")
    bin_tickets = sel("raps_ticket_bin_tickets", BIN)
    bin_players = sel("raps_ticket_bin_players", BIN)
    bin_var = (
        db.QueryVariable("bin")
        .label("Bin")
        .description(
            "Ticket bins of the site: a draw's id, or the `bin` its [[ticket_draws]] share "
            "(the RAPS config)."
        )
        .datasource(DS)
        .query(f"label_values(raps_tickets_credited_total{{{SITE}}}, bin)")
        .refresh(dm.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(dm.VariableSort.ALPHABETICAL_CASE_INSENSITIVE_ASC)
        .multi(True)
        .include_all(True)
        .all_value(".*")
    )
    now: list[AnyPanel] = [
        single(
            "Tickets entered in range",
            "Draw tickets entered into the selected bins (kiosk and app) in the selected "
            "range. A retried entry (same request id) is not counted twice.",
            [q(f"sum(increase({entered}[$__range])) or vector(0)")],
            decimals=0,
        ),
        single(
            "Receipts in range",
            "Entries made (one receipt each) in the selected bins in the selected range.",
            [q(f"sum(increase({receipts}[$__range])) or vector(0)")],
            decimals=0,
        ),
        single(
            "Entry refusals in range",
            "Ticket entries (and casino-feed credits) refused in the selected range, every "
            "reason, every bin. Some are normal (nothing_to_enter, a closed window); see "
            "Entry refusals by reason.",
            [q(f"sum(increase({refusals}[$__range])) or vector(0)")],
            steps=[(None, "green"), (50, "orange")],
            decimals=0,
        ),
        single(
            "Refused share of entry attempts",
            "Refusals / (receipts + refusals) in the selected range, all bins. Refusals carry "
            "no bin, so the Bin variable does not apply here.",
            [
                q(
                    f"sum(increase({refusals}[$__range])) / (sum(increase("
                    f"{sel('raps_ticket_entries_total')}[$__range])) + "
                    f"sum(increase({refusals}[$__range])))"
                )
            ],
            unit="percentunit",
            steps=[(None, "green"), (0.25, "orange"), (0.5, "red")],
            no_value="no attempts",
        ),
        single(
            "Tickets in the bins now",
            "Tickets entered so far per bin: what its weighted draw will pick from.",
            [q(f"sum by (bin) ({bin_tickets})", "{{bin}}")],
            w=12,
            decimals=0,
            no_value="no entries",
        ),
        single(
            "Players in the bins now",
            "Players (cards) with tickets entered per bin.",
            [q(f"sum by (bin) ({bin_players})", "{{bin}}")],
            w=12,
            decimals=0,
            no_value="no entries",
        ),
    ]
    flow: list[AnyPanel] = [
        ts(
            "Tickets credited by bin and cause",
            "Tickets credited per 5 minutes, by bin and cause: points (play in the bin's "
            "earning period), complimentary and app_bonus (at a card's first entry), "
            "raps_winner (an awarded RAPS pick), external (the casino's ticket feed). Tickets "
            "cannot be bought: there is no other cause.",
            [
                q(
                    f"sum by (bin, cause) (increase({credited}[$__interval]))",
                    "{{bin}} {{cause}}",
                )
            ],
            unit="none",
            bars=True,
            stack=True,
            min_interval="5m",
        ),
        ts(
            "Tickets entered by bin and channel",
            "Tickets entered per 5 minutes, by bin and channel (kiosk: the e-Host kiosks; "
            "app: the casino app, only while the player plays).",
            [
                q(
                    f"sum by (bin, channel) (increase({entered}[$__interval]))",
                    "{{bin}} {{channel}}",
                )
            ],
            unit="none",
            bars=True,
            stack=True,
            min_interval="5m",
        ),
        ts(
            "Receipts by bin and channel",
            "Entries (receipts printed or shown) per 5 minutes, by bin and channel.",
            [
                q(
                    f"sum by (bin, channel) (increase({receipts}[$__interval]))",
                    "{{bin}} {{channel}}",
                )
            ],
            unit="none",
            bars=True,
            stack=True,
            min_interval="5m",
        ),
        ts(
            "Tickets per receipt",
            "Tickets entered / receipts per bin over a sliding hour: how many tickets an "
            "entry activates on average (everything the card has available at that moment).",
            [
                q(
                    f"sum by (bin) (increase({entered}[1h])) "
                    f"/ sum by (bin) (increase({receipts}[1h]))",
                    "{{bin}}",
                )
            ],
            unit="none",
        ),
    ]
    refused: list[AnyPanel] = [
        ts(
            "Entry refusals by reason",
            "Refused entries and credits per 5 minutes, by reason: nothing_to_enter, "
            "outside_entry_window, request_id_reused (a kiosk bug: RapsTicketRequestIdsReused), "
            "unknown_draw, unknown_player, age_not_verified, the exclusions (self_excluded, "
            "refusal_of_entry, staff_or_associate, manual_block), tier_not_in_program, "
            "not_playing (app only), invalid_credit (the casino feed).",
            [q(f"sum by (reason) (increase({refusals}[$__interval]))", "{{reason}}")],
            unit="none",
            bars=True,
            stack=True,
            min_interval="5m",
            w=24,
        ),
    ]
    bins: list[AnyPanel] = [
        ts(
            "Tickets in the bins by tier",
            "Tickets entered per bin and tier over time; they only grow until the draw.",
            [q(f"sum by (bin, tier) ({bin_tickets})", "{{bin}} {{tier}}")],
            unit="none",
            stack=True,
        ),
        ts(
            "Players in the bins by tier",
            "Players with tickets entered per bin and tier over time.",
            [q(f"sum by (bin, tier) ({bin_players})", "{{bin}} {{tier}}")],
            unit="none",
            stack=True,
        ),
        grid(
            "Bins now by tier",
            "Tickets entered per bin and tier now, largest first (the handheld's draw view "
            "shows the same per bin).",
            q(f"sum by (bin, tier) ({bin_tickets})", instant=True, as_table=True),
            value_name="tickets",
            w=24,
            h=8,
        ),
    ]
    stage_records = sel("raps_stage_records_total")
    awaiting = sel("raps_prizes_uncollected", 'state="awaiting"')
    overdue = sel("raps_prizes_uncollected", 'state="overdue"')
    stage: list[AnyPanel] = [
        single(
            "Prizes awaiting collection",
            "Ticket-draw prize letters issued and not collected yet, within their collection "
            "window (15 days by default).",
            [q(f"sum({awaiting}) or vector(0)")],
            decimals=0,
        ),
        single(
            "Prizes overdue",
            "Prize letters past their collection window, never collected: forfeit, listed on "
            "the Rewards desk page (RapsPrizesOverdue).",
            [q(f"sum({overdue}) or vector(0)")],
            steps=[(None, "green"), (1, "orange")],
            decimals=0,
        ),
        ts(
            "Stage draw records",
            "Ticket draws on stage per 5 minutes, by record: draw.picked (winners drawn), "
            "draw.presented, draw.awarded, draw.no_show (redraws follow), draw.voided.",
            [q(f"sum by (type) (increase({stage_records}[$__interval]))", "{{type}}")],
            unit="none",
            bars=True,
            stack=True,
            min_interval="5m",
            w=12,
        ),
    ]
    safe = sel("raps_stage_safe_value_cents")
    game_records = sel("raps_stage_game_records_total")
    games: list[AnyPanel] = [
        single(
            "The digit safe now",
            "The digit safe's progressive value (Saturday 21:00): R100,000, +R20,000 at each "
            "21:00 draw where it was offered and not cracked, back to R100,000 after a crack, "
            "0 once the vault is shared (20 Dec). Derived from the stage prize ledger, so a "
            "restart cannot change it; the stage screen shows the same.",
            [q(f"max({safe}) / 100")],
            unit="currencyZAR",
            decimals=0,
        ),
        ts(
            "The digit safe over time",
            "The safe's value: steps up by R20,000 when a 21:00 draw closes uncracked, drops "
            "to the base when it is cracked, to 0 when the vault is shared.",
            [q(f"max({safe}) / 100", "safe")],
            unit="currencyZAR",
            w=18,
        ),
        ts(
            "Stage game records",
            "The stage games per 5 minutes, by record: stage.opened and stage.closed (a game "
            "and its reveal), the steps (podium.chosen, bonus.box, paddles.reveal, safe.guess, "
            "car.won ...), the stage ledger (stage.prize, stage.safe_offered, stage.safe_draw, "
            "stage.vault_shared) and the car spots (car.qualified, car.extra_spot).",
            [q(f"sum by (type) (increase({game_records}[$__interval]))", "{{type}}")],
            unit="none",
            bars=True,
            stack=True,
            min_interval="5m",
            w=24,
        ),
    ]
    return dashboard(
        "raps-tickets",
        "RAPS tickets",
        "Draw tickets: credited per bin and cause, entered and receipts per bin and channel, "
        "entry refusals by reason, tickets and players per bin and tier, the draws on stage "
        "with their prizes, and the stage games with the digit safe.",
        [
            ("Now", now),
            ("Credits and entries", flow),
            ("Refusals", refused),
            ("Bins", bins),
            ("Draws on stage", stage),
            ("Stage games and the digit safe", games),
        ],
        variables=[bin_var],
    )
