"""The strict settings base shared by the daemon's config and the adapters' own sections.

A config on a casino floor must refuse a typo rather than fall back to a default, so
every settings model is strict (no coercion), frozen and closed (an unknown key is an
error).  A cross-field check reports each problem under its own key through
`key_problems`, which the daemon's config loader (raps.config) unfolds into one line per
key, ``FILE: mqtt.port: message``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

# the pydantic error type of a key_problems error (raps.config unfolds it)
KEY_PROBLEMS = "raps_config"


class StrictModel(BaseModel):
    """Strict, frozen, closed: an unknown key is a typo to report, not to ignore."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    @model_validator(mode="before")
    @classmethod
    def _lists_to_tuples(cls, data: Any) -> Any:
        # TOML arrays arrive as lists; the models hold tuples so that a Config is immutable
        if isinstance(data, dict):
            return {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return data


def key_problems(items: Sequence[tuple[str, str]]) -> PydanticCustomError:
    """Several problems found by one cross-field check, each with a path relative to it.

    pydantic gives a model validator's error the model's own location; this carries finer
    paths (``machines[3].id``) through to the message without losing the others.
    """
    summary = "; ".join(f"{k}: {m}" if k else m for k, m in items)
    return PydanticCustomError(KEY_PROBLEMS, "{summary}", {"summary": summary, "problems": items})
