"""The TOML config: every bad config names the file and the key, good ones reach the core."""

from __future__ import annotations

import hashlib
import re
import typing
from datetime import datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from pydantic import BaseModel

from raps.config import (
    ROLES,
    Config,
    ConfigError,
    PromotionConfig,
    TierName,
    check_secret,
    hash_secret,
    load_config,
    parse_config,
)
from selector.calendar_spec import SpecError
from selector.events import PoolKind, Tier
from selector.promotion import EarnRules, Promotion, SessionRules
from selector.promotion_spec import read_definition, write_definition

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "config" / "raps.example.toml"
DOCS = ROOT / "docs" / "configuration.md"

# a real argon2id hash (of a random secret), so user tables pass the hash check
HASH = (
    "$argon2id$v=19$m=65536,t=3,p=4$1aVHtb5r+PoI+nSrkJOmug"
    "$IcFD7CBCi6gWleowc1VUJKEc30mZdoztJNavSAD3RUo"
)

SITE = '[site]\nid = "gh"\n'
FLOOR = "[floor.simulate]\nmachines = 10\ntables = 4\nplayers = 20\n"
PROMO = '[[promotions]]\nid = "raps"\n'
SESSION = (
    '[[sessions]]\nid = "s1"\npromotion = "raps"\nstarts = "2026-04-25 18:00"\n'
    'ends = "2026-04-25 19:00"\n'
)
USER = f'[[users]]\nname = "thandi"\nrole = "marketing"\npassword_hash = \'{HASH}\'\n'


def toml(*parts: str) -> str:
    """A config from TOML fragments, each starting with its own table header."""
    return "\n".join(parts)


def minimal(*extra: str) -> str:
    return toml(SITE, FLOOR, PROMO, *extra)


def load_text(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> Config:
    path = tmp_path / "raps.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path, env=env if env is not None else {})


def config_error(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        load_text(tmp_path, text, env)
    return str(info.value)


# (case id, config text, a fragment the message must contain: file name and key path)
BAD_CONFIGS: list[tuple[str, str, str]] = [
    ("unknown top-level key", minimal("[server]\nport = 1\n"), "raps.toml: server: unknown key"),
    (
        "unknown nested key, with a suggestion",
        minimal('[storage]\nurll = "sqlite:///x.db"\n'),
        "raps.toml: storage.urll: unknown key (did you mean 'url'?)",
    ),
    (
        "unknown key in an array entry",
        toml(SITE, FLOOR, PROMO + "thresold = 50\n"),
        "raps.toml: promotions[0].thresold: unknown key (did you mean 'threshold_points'?)",
    ),
    ("missing site.id", toml('[site]\nname = "GH"\n', FLOOR, PROMO), "raps.toml: site.id: missing"),
    ("missing [site]", toml(FLOOR, PROMO), "raps.toml: site: missing"),
    (
        "site id unfit for MQTT topics",
        toml('[site]\nid = "Golden Horse"\n', FLOOR, PROMO),
        "raps.toml: site.id: must be lower-case letters, digits and '-' only",
    ),
    (
        "unknown time zone",
        toml(SITE + 'timezone = "Africa/Joburg"\n', FLOOR, PROMO),
        "raps.toml: site.timezone: unknown time zone 'Africa/Joburg'",
    ),
    (
        "unsupported storage url",
        minimal('[storage]\nurl = "mysql://raps@db/raps"\n'),
        "raps.toml: storage.url: unsupported database URL (scheme 'mysql')",
    ),
    (
        "sqlite url without a path",
        minimal('[storage]\nurl = "sqlite://"\n'),
        "raps.toml: storage.url: unsupported database URL",
    ),
    (
        "zero flush interval",
        minimal("[storage]\nevent_flush_seconds = 0\n"),
        "raps.toml: storage.event_flush_seconds: must be > 0",
    ),
    (
        "negative threshold",
        toml(SITE, FLOOR, PROMO + "threshold_points = -5\n"),
        "raps.toml: promotions[0].threshold_points: must be >= 0",
    ),
    (
        "unknown tier",
        toml(SITE, FLOOR, PROMO + 'tiers = ["ten", "joker"]\n'),
        "raps.toml: promotions[0].tiers[1]: must be 'ten', 'jack', 'queen', 'king' or 'ace', "
        "not 'joker'",
    ),
    (
        "no tier at all",
        toml(SITE, FLOOR, PROMO + "tiers = []\n"),
        "raps.toml: promotions[0].tiers: must not be empty",
    ),
    (
        "session naming an unknown promotion",
        minimal(SESSION.replace('promotion = "raps"', 'promotion = "rapz"')),
        "raps.toml: sessions[0].promotion: no promotion has id 'rapz' (ids: 'raps')",
    ),
    (
        "duplicate promotion id",
        minimal(PROMO),
        "raps.toml: promotions[1].id: duplicate id 'raps' (see promotions[0])",
    ),
    (
        "duplicate session id",
        minimal(SESSION, SESSION),
        "raps.toml: sessions[1].id: duplicate id 's1' (see sessions[0])",
    ),
    (
        "window hour 25",
        toml(SITE, FLOOR, PROMO + 'window = { start = "25:00", end = "19:00" }\n'),
        'raps.toml: promotions[0].window.start: must be a time "HH:MM" from 00:00 to 23:59, '
        "not '25:00'",
    ),
    (
        "window without leading zero",
        toml(SITE, FLOOR, PROMO + 'window = { start = "8:00" }\n'),
        'raps.toml: promotions[0].window.start: must be a time "HH:MM"',
    ),
    (
        "window end before start",
        toml(SITE, FLOOR, PROMO + 'window = { start = "19:00", end = "08:00" }\n'),
        'raps.toml: promotions[0].window.end: must be after start 19:00 (use "24:00" for midnight)',
    ),
    (
        "plain-text password",
        minimal(USER.replace(f"'{HASH}'", '"hunter2"')),
        "raps.toml: users[0].password_hash: looks like a plain-text secret, not a hash; store "
        "the output of `raps hash-password` instead",
    ),
    (
        "argon2i instead of argon2id",
        minimal(USER.replace("$argon2id$", "$argon2i$")),
        "raps.toml: users[0].password_hash: only argon2id hashes are accepted",
    ),
    (
        "plain-text api token",
        minimal(USER + 'api_token_hash = "tok-123"\n'),
        "raps.toml: users[0].api_token_hash: looks like a plain-text secret",
    ),
    (
        "unknown role",
        minimal(USER.replace('"marketing"', '"boss"')),
        "raps.toml: users[0].role: must be 'marketing', 'security', 'ops', 'admin', "
        "'auditor', 'stage_host', 'rewards_desk', 'kiosk', 'app' or 'stage_screen', not 'boss'",
    ),
    (
        "duplicate user name",
        minimal(USER, USER),
        "raps.toml: users[1].name: duplicate name 'thandi' (see users[0])",
    ),
    (
        "floor with neither simulate nor machines",
        toml(SITE, "[floor]\nidle_seconds = 120\n", PROMO),
        "raps.toml: floor: give either floor.simulate or floor.machines/floor.tables",
    ),
    (
        "floor with both simulate and machines",
        minimal('[[floor.machines]]\nid = "M1"\narea = "Main Floor"\nbank = "A"\nnumber = 1\n'),
        "raps.toml: floor: give either floor.simulate or floor.machines/floor.tables",
    ),
    (
        "no floor at all",
        toml(SITE, PROMO),
        "raps.toml: floor: missing (give either floor.simulate or floor.machines/floor.tables)",
    ),
    (
        "duplicate machine id",
        toml(
            SITE,
            '[[floor.machines]]\nid = "M1"\narea = "Main"\nbank = "A"\nnumber = "1"\n',
            '[[floor.machines]]\nid = "M1"\narea = "Main"\nbank = "A"\nnumber = "2"\n',
            PROMO,
        ),
        "raps.toml: floor.machines[1].id: duplicate id 'M1' (see floor.machines[0])",
    ),
    (
        "table without seats",
        toml(SITE, '[[floor.tables]]\nid = "T1"\narea = "Pit"\nseats = 0\n', PROMO),
        "raps.toml: floor.tables[0].seats: must be >= 1",
    ),
    (
        "bad TOML syntax",
        toml(SITE, FLOOR, '[[promotions]]\nid = "raps\n'),
        "raps.toml:10:11: TOML syntax error: ",
    ),
    (
        "no promotion",
        toml(SITE, FLOOR),
        "raps.toml: promotions: missing (give at least one [[promotions]] table)",
    ),
    (
        "all quotas zero",
        minimal(SESSION + "quotas = { slots = 0, tables = 0 }\n"),
        "raps.toml: sessions[0].quotas: at least one of slots, tables must be > 0",
    ),
    (
        "negative quota",
        minimal(SESSION + "quotas = { slots = -1, tables = 4 }\n"),
        "raps.toml: sessions[0].quotas.slots: must be >= 0",
    ),
    (
        "misspelt quota",
        minimal(SESSION + "quotas = { slot = 6 }\n"),
        "raps.toml: sessions[0].quotas.slot: unknown key (did you mean 'slots'?)",
    ),
    (
        "quota for a pool the promotion lacks",
        toml(SITE, FLOOR, PROMO + 'pool_kinds = ["slots"]\n', SESSION),
        "raps.toml: sessions[0].quotas.tables: promotion 'raps' has no tables pool",
    ),
    (
        "unreadable session start",
        minimal(SESSION.replace("2026-04-25 18:00", "Saturday 6pm")),
        "raps.toml: sessions[0].starts: must be an ISO 8601 date and time",
    ),
    (
        "session start without a time",
        minimal(SESSION.replace('"2026-04-25 18:00"', "2026-04-25")),
        "raps.toml: sessions[0].starts: needs a time of day too",
    ),
    (
        "session id with a space",
        minimal(SESSION.replace('"s1"', '"s 1"')),
        "raps.toml: sessions[0].id: must be letters, digits, '.', '_' and '-' only",
    ),
    (
        "http port out of range",
        minimal("[http]\nport = 70000\n"),
        "raps.toml: http.port: must be <= 65535",
    ),
    (
        "port given as a string",
        minimal('[mqtt]\nport = "1883"\n'),
        "raps.toml: mqtt.port: must be an integer, not a string",
    ),
    (
        "boolean given as a number",
        minimal("[mqtt]\nenabled = 1\n"),
        "raps.toml: mqtt.enabled: must be true or false, not an integer",
    ),
    (
        "embedded broker while MQTT is off",
        minimal("[mqtt]\nembedded = true\n"),
        "raps.toml: mqtt.embedded: an embedded broker needs enabled = true",
    ),
    (
        "free MQTT port without an embedded broker",
        minimal("[mqtt]\nenabled = true\nport = 0\n"),
        "raps.toml: mqtt.port: 0 (a free port) is only allowed with embedded = true",
    ),
    (
        "MQTT wildcard in the topic prefix",
        minimal('[mqtt]\ntopic_prefix = "raps/#"\n'),
        "raps.toml: mqtt.topic_prefix: must not contain MQTT wildcards",
    ),
    (
        "short metrics token",
        minimal('[http]\nmetrics_token = "abc"\n'),
        "raps.toml: http.metrics_token: must be at least 16 characters",
    ),
    (
        "CREDENTIALS_DIRECTORY not set",
        minimal('[credentials]\nseed_key_file = "${CREDENTIALS_DIRECTORY}/seed-key"\n'),
        "raps.toml: credentials.seed_key_file: environment variable CREDENTIALS_DIRECTORY is "
        "not set",
    ),
    (
        "unknown points source",
        minimal('[earn]\npoints_source = "cms"\n'),
        "raps.toml: earn.points_source: must be 'computed' or 'events', not 'cms'",
    ),
    (
        "override key without area: or game:",
        minimal("[earn.slot_overrides]\nbank = 500\n"),
        "raps.toml: earn.slot_overrides.bank: override keys look like 'area:NAME' or 'game:TYPE'",
    ),
    (
        "override rate zero",
        minimal('[earn.slot_overrides]\n"area:Main Floor" = 0\n'),
        'raps.toml: earn.slot_overrides."area:Main Floor": must be > 0',
    ),
    (
        "override for an area not on the floor",
        minimal('[earn.table_overrides]\n"area:Pit 9" = 500\n'),
        "raps.toml: earn.table_overrides.\"area:Pit 9\": no machine or table is in area 'Pit 9'",
    ),
    (
        "misspelt excluded area",
        toml(SITE, FLOOR, PROMO + 'areas_excluded = ["Salon Privee"]\n'),
        "raps.toml: promotions[0].areas_excluded[0]: no machine or table is in area 'Salon Privee'",
    ),
    (
        "idle limit given as a boolean",
        toml(SITE, "[floor]\nidle_seconds = true\n", FLOOR, PROMO),
        "raps.toml: floor.idle_seconds: must be a number, not a boolean",
    ),
    (
        "naive start inside a DST gap",
        toml(
            SITE + 'timezone = "Europe/London"\n',
            FLOOR,
            PROMO,
            SESSION.replace("2026-04-25 18:00", "2026-03-29 01:30"),
        ),
        "raps.toml: sessions[0].starts: 2026-03-29 01:30 does not exist in Europe/London",
    ),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [pytest.param(text, expected, id=case) for case, text, expected in BAD_CONFIGS],
)
def test_bad_config_is_refused_naming_file_and_key(
    tmp_path: Path, text: str, expected: str
) -> None:
    message = config_error(tmp_path, text)
    assert expected in message
    # every line names the file, so a long list can be read line by line
    assert all(line.startswith(str(tmp_path / "raps.toml")) for line in message.splitlines())


def test_every_problem_is_listed_one_per_line(tmp_path: Path) -> None:
    text = toml(
        '[site]\nid = "gh"\ntimezone = "Mars/Olympus"\n',
        '[storage]\nurll = "x"\n',
        FLOOR,
        PROMO + "threshold_points = -1\n",
        USER.replace("marketing", "boss"),
    )
    lines = config_error(tmp_path, text).splitlines()
    keys = [line.split(": ")[1] for line in lines]
    assert keys == [
        "site.timezone",
        "storage.urll",
        "promotions[0].threshold_points",
        "users[0].role",
    ]


def test_secrets_never_appear_in_messages(tmp_path: Path) -> None:
    text = minimal(
        '[storage]\nurl = "mysql://raps:s3cr3t-db@db/raps"\n',
        USER.replace(f"'{HASH}'", '"s3cr3t-pw"'),
    )
    message = config_error(tmp_path, text)
    assert "storage.url" in message
    assert "users[0].password_hash" in message
    assert "s3cr3t" not in message


def test_parse_config_names_its_source() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config("[site]\n", source="inline.toml")
    assert "inline.toml: site.id: missing" in str(info.value)
    assert info.value.source == "inline.toml"
    assert ("site.id", "missing") in info.value.problems


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.toml: no such file"):
        load_config(tmp_path / "nope.toml")


def test_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_text(tmp_path, "[site]\nid = 'gh'\nid = 'again'\n")
    assert info.value.line == 3
    assert str(info.value).startswith(f"{tmp_path / 'raps.toml'}:3:")


# --- good configs -----------------------------------------------------------------------


def test_example_config_loads_and_builds_the_core(monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_config(EXAMPLE)
    assert config.source == str(EXAMPLE)
    assert config.site.id == "golden-horse"
    assert config.mqtt.client_id == "raps-golden-horse"

    (promo,) = config.promotions()
    assert isinstance(promo, Promotion)
    assert promo.promotion_id == "raps-golden-horse"
    assert promo.threshold_points == 50
    assert promo.window.tz == "Africa/Johannesburg"
    assert (promo.window.start, promo.window.end) == (time(8, 0), time(19, 0))
    assert promo.tiers == frozenset(Tier)
    assert promo.areas_excluded == frozenset({"Salon Prive"})
    assert not promo.area_allowed("Salon Prive")

    earn = config.earn_rules()
    assert isinstance(earn, EarnRules)
    assert earn.slot_overrides == {"area:High Limit": 2000}

    layout = config.layout()
    assert len(layout.machines) == 500
    assert len(layout.tables) == 40

    assert len(config.sessions) == 4
    for s in config.sessions:
        rules = config.session_rules(s)
        assert isinstance(rules, SessionRules)
        assert rules.quotas == {PoolKind.SLOTS: 6, PoolKind.TABLES: 4}
        assert rules.claim_seconds == 90
        start = config.session_start(s)
        assert (start.hour, start.utcoffset()) == (18, timedelta(hours=2))
    assert config.session_start("gh-2026-04-25-1800") == datetime(
        2026, 4, 25, 16, 0, tzinfo=ZoneInfo("UTC")
    )
    assert {u.role for u in config.users} <= set(ROLES)


def test_example_comments_every_key() -> None:
    """Each key of the models appears in the example, active or commented out."""
    text = EXAMPLE.read_text(encoding="utf-8")
    models: list[type[BaseModel]] = [Config, *_nested_models(Config)]
    for model in models:
        for name, field in model.model_fields.items():
            key = field.alias or name
            pattern = rf"(?:^#?\s*|[{{,]\s*){key}\s*=|[\[.]{key}\]"
            assert re.search(pattern, text, re.M), f"{model.__name__}.{key} not in the example"


def _nested_models(model: type[BaseModel]) -> list[type[BaseModel]]:
    out: list[type[BaseModel]] = []
    for field in model.model_fields.values():
        for tp in [field.annotation, *_all_args(field.annotation)]:
            if isinstance(tp, type) and issubclass(tp, BaseModel) and tp not in out:
                out.append(tp)
                out += [m for m in _nested_models(tp) if m not in out]
    return out


def _all_args(tp: object) -> list[object]:
    args = list(typing.get_args(tp))
    return args + [a for arg in args for a in _all_args(arg)]


def test_production_example_in_the_docs_loads() -> None:
    """The production config in docs/configuration.md stays valid."""
    text = DOCS.read_text(encoding="utf-8")
    block = re.search(r"<!-- production example -->\s*```toml\n(.*?)```", text, re.S)
    assert block is not None
    config = parse_config(
        block[1], "docs/configuration.md", env={"CREDENTIALS_DIRECTORY": "/run/credentials/raps"}
    )
    assert config.credentials.seed_key_file == "/run/credentials/raps/seed-key"
    assert config.storage.url.startswith("postgresql+asyncpg://")
    layout = config.layout()
    assert set(layout.machines) == {m.id for m in config.floor.machines}
    assert config.promotions()
    assert config.mqtt.password is not None
    assert "broker-pw-9f2c" not in repr(config)


def test_defaults_of_a_minimal_config() -> None:
    config = parse_config(minimal())
    assert config.site.name == "gh"
    assert config.site.timezone == "Africa/Johannesburg"
    assert config.storage.url == "sqlite:///var/raps.db"
    assert config.http.port == 8080
    assert config.http.metrics_token is None
    assert config.mqtt.client_id == "raps-gh"
    assert not config.mqtt.enabled
    assert config.floor.idle_seconds == 120
    assert config.logging.level == "info"
    assert config.sessions == ()
    promo = config.promotion_entries[0]
    assert promo.threshold_points == 50
    assert promo.pool_kinds == ("slots", "tables")
    assert config.earn_rules() == EarnRules()


def test_window_until_midnight() -> None:
    for end in ("24:00", "00:00"):
        config = parse_config(
            toml(SITE, FLOOR, PROMO + f'window = {{ start = "18:00", end = "{end}" }}\n')
        )
        assert config.promotions()[0].window.end == time(0, 0)


def test_naive_session_start_is_site_local_time() -> None:
    config = parse_config(
        toml(SITE + 'timezone = "Europe/London"\n', FLOOR, PROMO, SESSION),
    )
    start = config.session_start(config.sessions[0])
    assert start == datetime(2026, 4, 25, 18, 0, tzinfo=ZoneInfo("Europe/London"))
    assert start.utcoffset() == timedelta(hours=1)  # British Summer Time


def test_session_start_with_offset_is_kept() -> None:
    session = SESSION.replace('"2026-04-25 18:00"', "2026-04-25T18:00:00+02:00")
    config = parse_config(toml(SITE + 'timezone = "Europe/London"\n', FLOOR, PROMO, session))
    assert config.session_start("s1") == datetime(2026, 4, 25, 16, 0, tzinfo=ZoneInfo("UTC"))


def test_seed_key_file_expands_credentials_directory() -> None:
    text = minimal('[credentials]\nseed_key_file = "${CREDENTIALS_DIRECTORY}/seed-key"\n')
    config = parse_config(text, env={"CREDENTIALS_DIRECTORY": "/run/credentials/raps.service"})
    assert config.credentials.seed_key_file == "/run/credentials/raps.service/seed-key"


def test_listed_floor_builds_the_layout() -> None:
    config = parse_config(
        toml(
            SITE,
            "[floor]\nidle_seconds = 90\n",
            '[[floor.machines]]\nid = "M1"\narea = "Main"\nbank = 3\nnumber = 12\n',
            '[[floor.tables]]\nid = "T1"\narea = "Pit 1"\ngame_type = "blackjack"\n',
            PROMO + 'areas_included = ["Main", "Pit 1"]\n',
            '[earn.table_overrides]\n"game:blackjack" = 20000\n',
        )
    )
    layout = config.layout()
    machine = layout.machines["M1"]
    assert (machine.area, machine.bank, machine.number, machine.game_type) == (
        "Main", "3", "12", "slot",
    )  # fmt: skip
    assert layout.tables["T1"].seats == 7
    assert config.promotions()[0].areas_included == frozenset({"Main", "Pit 1"})
    assert config.earn_rules().table_rate(layout.tables["T1"]) == 20000


def test_core_refusal_is_reported_as_config_error() -> None:
    """A value the core refuses (here smuggled past validation) still names the key."""
    config = parse_config(minimal(), source="raps.toml")
    bad = config.promotion_entries[0].model_copy(update={"threshold_points": -1.0})
    broken = config.model_copy(update={"promotion_entries": (bad,)})
    broken._source = "raps.toml"
    with pytest.raises(ConfigError, match=r"raps\.toml: promotions\[0\]: threshold_points"):
        broken.promotions()


def test_config_is_immutable() -> None:
    config = parse_config(minimal())
    with pytest.raises(ValueError, match="frozen"):
        config.site.__setattr__("id", "other")
    assert isinstance(config.promotion_entries, tuple)
    assert isinstance(config.promotion_entries[0], PromotionConfig)


def test_tier_names_match_the_core() -> None:
    assert set(typing.get_args(TierName)) == {t.value for t in Tier}


# --- secrets ----------------------------------------------------------------------------


def test_hash_secret_round_trip() -> None:
    hashed = hash_secret("correct horse battery staple")
    assert hashed.startswith("$argon2id$")
    assert check_secret("correct horse battery staple", hashed)
    assert not check_secret("correct horse battery stapler", hashed)
    assert hash_secret("same") != hash_secret("same")  # salted
    parse_config(minimal(USER.replace(HASH, hashed)))  # accepted by the config


def test_check_secret_scrypt_and_junk() -> None:
    salt = "Ab12Cd34Ef56Gh78"
    derived = hashlib.scrypt(b"pw", salt=salt.encode(), n=16384, r=8, p=1, dklen=64, maxmem=2**26)
    hashed = f"scrypt:16384:8:1${salt}${derived.hex()}"
    assert check_secret("pw", hashed)
    assert not check_secret("pw2", hashed)
    parse_config(minimal(USER.replace(f"'{HASH}'", f"'{hashed}'")))
    assert not check_secret("pw", "pw")
    assert not check_secret("pw", "$argon2id$v=19$m=65536,t=3,p=4$broken")


def test_a_session_says_when_its_claim_countdown_starts(tmp_path: Path) -> None:
    """Issue 15 item 6: [[sessions]] claim_starts ("draw" by default, or "absent") and
    max_en_route_seconds (120 by default, 0: never) reach the session's rules."""
    plain = load_text(tmp_path, minimal(SESSION)).session_rules("s1")
    assert (plain.claim_starts, plain.max_en_route_seconds) == ("draw", 120)
    text = minimal(SESSION + 'claim_starts = "absent"\nmax_en_route_seconds = 0\n')
    rules = load_text(tmp_path, text).session_rules("s1")
    assert (rules.claim_starts, rules.max_en_route_seconds) == ("absent", None)
    bad = config_error(tmp_path, minimal(SESSION + 'claim_starts = "arrival"\n'))
    assert "sessions[0].claim_starts" in bad


def test_a_promotion_may_set_its_own_witness_fallback() -> None:
    """`witness_fallback`: absent (the site's `[witness] fallback`), true or false; the
    same in a definition the calendar page sends, refused unless a bool, written back
    only when set (definitions journaled before it read back unchanged)."""
    config = parse_config(minimal())
    assert config.promotion_entries[0].witness_fallback is None
    assert config.promotions()[0].witness_fallback is None
    own = parse_config(toml(SITE, FLOOR, PROMO + "witness_fallback = true\n"))
    promo = own.promotions()[0]
    assert promo.witness_fallback is True
    doc = write_definition(promo)
    assert doc["witness_fallback"] is True
    assert read_definition("raps", doc, "Africa/Johannesburg") == promo
    assert "witness_fallback" not in write_definition(config.promotions()[0])
    with pytest.raises(SpecError, match="witness_fallback"):
        read_definition("raps", {**doc, "witness_fallback": "yes"}, "Africa/Johannesburg")
