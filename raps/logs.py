"""structlog setup: JSON lines in production, readable console in development.

Every line can carry site, session and pick; card numbers are masked by a
processor so that no call site can leak one by accident.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

from raps.redact import mask_card

_CARD_KEYS = ("card", "card_number")


def _mask_cards(
    _logger: Any, _name: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    for key in _CARD_KEYS:
        value = event.get(key)
        if isinstance(value, str):
            event[key] = mask_card(value)
    return event


def configure(fmt: str = "console", level: str = "info", site: str | None = None) -> None:
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _mask_cards,
        structlog.processors.format_exc_info,
        renderer,
    ]
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=False,
    )
    structlog.contextvars.clear_contextvars()
    if site:
        structlog.contextvars.bind_contextvars(site=site)
    # libraries that log through the standard library stay quiet below warnings
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)


def get_logger(**bound: Any) -> Any:
    return structlog.get_logger("raps").bind(**bound)
