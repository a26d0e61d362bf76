"""The daemon's TOML configuration: parsed, validated and turned into the core's settings.

One module per group of sections; the adapters' own sections (`[mqtt]`, the SAS channels
and Modbus gateways of `[sources]`) are the adapters' models, composed here.  Secrets
never appear in an error message: values are echoed only where they cannot be secret
(enum choices, time zones, ids).  See docs/configuration.md for every key.
"""

from __future__ import annotations

from adapters.mqtt.config import MqttConfig
from raps.config.errors import ConfigError, Problem
from raps.config.floor import (
    AreaConfig,
    FloorConfig,
    MachineConfig,
    SimulateConfig,
    SourcesConfig,
    TableConfig,
)
from raps.config.model import Config, load_config, parse_config
from raps.config.promotions import (
    EarnConfig,
    PromotionConfig,
    QuotasConfig,
    SessionConfig,
    TierName,
    WindowConfig,
)
from raps.config.site import (
    CredentialsConfig,
    HttpConfig,
    LoggingConfig,
    SiteConfig,
    StorageConfig,
)
from raps.config.users import (
    DEVICE_ROLES,
    ROLES,
    STAFF_ROLES,
    UserConfig,
    check_secret,
    hash_secret,
)

__all__ = [
    "DEVICE_ROLES",
    "ROLES",
    "STAFF_ROLES",
    "AreaConfig",
    "Config",
    "ConfigError",
    "CredentialsConfig",
    "EarnConfig",
    "FloorConfig",
    "HttpConfig",
    "LoggingConfig",
    "MachineConfig",
    "MqttConfig",
    "Problem",
    "PromotionConfig",
    "QuotasConfig",
    "SessionConfig",
    "SimulateConfig",
    "SiteConfig",
    "SourcesConfig",
    "StorageConfig",
    "TableConfig",
    "TierName",
    "UserConfig",
    "WindowConfig",
    "check_secret",
    "hash_secret",
    "load_config",
    "parse_config",
]
