"""The tickets benchmark's fixed set-up: targets, the ticket plan (shaped like the seeds'),
the Service config of part 1 and the daemon config of part 2."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from bench.core import MACHINES, PROMO, TABLES

TZ_NAME = "Africa/Johannesburg"
TZ = ZoneInfo(TZ_NAME)

TARGET_INGEST_RATIO = 0.85  # ingest with tickets on >= 0.85 x off (at most 15% dearer)
TARGET_KIOSK_P99_MS = 20.0
KIOSKS = 50


def _draw(draw_id: str, program: str, at: str, opens: str, closes: str, bin_id: str = "") -> str:
    bin_line = f'bin = "{bin_id}"\n' if bin_id else ""
    return (
        f'\n[[ticket_draws]]\nid = "{draw_id}"\nprogram = "{program}"\nat = "{at}"\n'
        f'opens = "{opens}"\ncloses = "{closes}"\n{bin_line}'
    )


def ticket_plan_toml() -> str:
    """Three programs like the seeds' (003 TEEDS, 000 Saturday cash, 000 Queen Thursday);
    the core benchmark's events (Sat 25 Apr 2026 from 08:00 SAST) earn in all three.

    - teeds: 7-day fixed windows from Sat 18 Apr 00:00, no roll-over, each draw earning
      from the window before its day (config/seeds/golden-horse.toml's shape, the tier
      groups in one program): Ten & Jack 50 points a ticket, Queen 100, King & Ace 200.
      The 2 May draw earns from 25 Apr 00:00 to 2 May 00:00: the benchmark's 7-day period.
    - saturday-cash: day_to_draw from 08:00, 50 points a ticket for all tiers, the
      complimentary tickets of 000 (Ace 50 ... Ten 10); the 15:00, 19:00 and 21:00 draws
      of 25 Apr share one bin.
    - queen-thursday: month_to_draw from the 1st at 08:00, Queen only, 100 points a
      ticket, 10 complimentary; every Thursday of April 2026 (a group of five intervals
      from 1 Apr 08:00: the events fall after the 23 Apr draw and before the 30 Apr one).
    """
    parts = [
        f"""
[[ticket_programs]]
id = "teeds"
promotion = "{PROMO}"
name = "TEEDS electronic draws"
rates = {{ ten = 50, jack = 50, queen = 100, king = 200, ace = 200 }}
app_bonus = {{ ten = 1, jack = 2, queen = 3, king = 4, ace = 5 }}
raps_winner_bonus = {{ ten = 5, jack = 5, queen = 10, king = 20, ace = 20 }}

[ticket_programs.period]
kind = "fixed_windows"
start = "2026-04-18 00:00"
days = 7
use = "previous"
last_end = "2026-06-28 00:00"

[[ticket_programs]]
id = "saturday-cash"
promotion = "{PROMO}"
name = "Saturday cash draws"
rates = {{ ten = 50, jack = 50, queen = 50, king = 50, ace = 50 }}
complimentary = {{ ace = 50, king = 40, queen = 30, jack = 20, ten = 10 }}

[ticket_programs.period]
kind = "day_to_draw"
start_time = "08:00"

[[ticket_programs]]
id = "queen-thursday"
promotion = "{PROMO}"
name = "Queen Thursdays"
tiers = ["queen"]
rates = {{ queen = 100 }}
complimentary = {{ queen = 10 }}

[ticket_programs.period]
kind = "month_to_draw"
start_time = "08:00"
"""
    ]
    for day in ("2026-04-25", "2026-05-02"):
        parts.append(_draw(f"teeds-{day}", "teeds", f"{day} 20:00", f"{day} 08:00",
                           f"{day} 19:55"))  # fmt: skip
    for hour in (15, 19, 21):
        parts.append(
            _draw(f"saturday-2026-04-25-{hour}00", "saturday-cash", f"2026-04-25 {hour}:00",
                  "2026-04-25 08:00", f"2026-04-25 {hour - 1}:55", bin_id="saturday-2026-04-25")
        )  # fmt: skip
    for day in ("02", "09", "16", "23", "30"):
        d = f"2026-04-{day}"
        parts.append(_draw(f"queen-{d}", "queen-thursday", f"{d} 20:00", f"{d} 08:00",
                           f"{d} 19:55"))  # fmt: skip
    return "".join(parts)


def service_config(url: str, key_file: Path, players: int, tickets: bool) -> str:
    """Part 1's daemon config: the core benchmark's floor (the layout only: the Service is
    fed prebuilt events), one promotion, and the ticket plan when `tickets`."""
    text = f"""
[site]
id = "bench"
name = "RAPS tickets benchmark"
timezone = "{TZ_NAME}"

[storage]
url = "{url}"

[credentials]
seed_key_file = "{key_file}"

[http]
host = "127.0.0.1"
port = 0

[floor.simulate]
machines = {MACHINES}
tables = {TABLES}
players = {players}

[[promotions]]
id = "{PROMO}"
name = "Bonus jackpot session (RAPS), benchmark"
threshold_points = 50

[logging]
format = "json"
level = "info"
"""
    return text + (ticket_plan_toml() if tickets else "")


def local(dt: datetime) -> str:
    return dt.astimezone(TZ).isoformat(timespec="seconds")


def daemon_config(
    url: str,
    folder: Path,
    players: int,
    seed: int,
    events_per_second: float,
    kiosk_hashes: list[tuple[str, str]],
    now: datetime,
    warmup_seconds: float = 30.0,
) -> str:
    """Part 2's daemon: a simulated floor of the core benchmark's size (its directory gives
    the players and their tiers), one program with complimentary tickets for every tier
    (so every directory card has tickets to enter at once) and points tickets (so the
    simulated play credits tickets in the background, as a live floor does), one draw
    whose entry window is open now (the daemon reads the real clock), and the kiosks."""
    start = now - timedelta(hours=2)
    opens = now - timedelta(minutes=10)
    closes = now + timedelta(hours=3)
    at = now + timedelta(hours=4)
    users = "".join(
        f'\n[[users]]\nname = "{name}"\nrole = "kiosk"\napi_token_hash = \'{h}\'\n'
        for name, h in kiosk_hashes
    )
    return f"""
[site]
id = "bench-kiosk"
name = "RAPS kiosk benchmark"
timezone = "{TZ_NAME}"

[storage]
url = "{url}"

[credentials]
seed_key_file = "{folder / "seed.key"}"

[http]
host = "127.0.0.1"
port = 0

[floor.simulate]
machines = {MACHINES}
tables = {TABLES}
players = {players}
events_per_second = {events_per_second}
seed = {seed}
warmup_seconds = {warmup_seconds:g}

[[promotions]]
id = "{PROMO}"
name = "Bonus jackpot session (RAPS), benchmark"
threshold_points = 50
window = {{ start = "00:00", end = "24:00" }}

[[ticket_programs]]
id = "kiosk-bench"
promotion = "{PROMO}"
name = "Kiosk benchmark draw"
rates = {{ ten = 50, jack = 50, queen = 100, king = 200, ace = 200 }}
complimentary = {{ ace = 50, king = 40, queen = 30, jack = 20, ten = 10 }}

[ticket_programs.period]
kind = "fixed_start_to_draw"
start = "{local(start)}"

[[ticket_draws]]
id = "kiosk-draw"
program = "kiosk-bench"
name = "Kiosk benchmark draw"
at = "{local(at)}"
opens = "{local(opens)}"
closes = "{local(closes)}"

[logging]
format = "json"
level = "info"
{users}"""
