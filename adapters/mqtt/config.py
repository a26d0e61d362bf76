"""The daemon's `[mqtt]` settings: the broker that carries floor messages in and draw
notices out.  The daemon's config (raps.config) composes this section; the adapter owns it
because the ingest and the publisher are what read it."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator, model_validator

from adapters.wire.settings import StrictModel, key_problems


class MqttConfig(StrictModel):
    """The MQTT broker for table ratings in and winner notices out."""

    enabled: bool = False
    host: str = Field(default="127.0.0.1", min_length=1)
    port: int = Field(default=1883, ge=0, le=65535)
    client_id: str = ""  # filled with "raps-{site.id}" when not given
    username: str | None = None
    password: SecretStr | None = None
    tls: bool = False
    ca_file: str | None = None
    topic_prefix: str = "raps/v1"
    embedded: bool = False

    @field_validator("topic_prefix")
    @classmethod
    def _plain_prefix(cls, v: str) -> str:
        if not v or v.startswith("/") or v.endswith("/") or "//" in v:
            raise ValueError("must be topic levels separated by '/', like 'raps/v1'")
        if any(c in v for c in "#+\0"):
            raise ValueError("must not contain MQTT wildcards '#' or '+'")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> MqttConfig:
        problems: list[tuple[str, str]] = []
        if self.port == 0 and not self.embedded:
            problems.append(("port", "0 (a free port) is only allowed with embedded = true"))
        if self.embedded and not self.enabled:
            problems.append(("embedded", "an embedded broker needs enabled = true"))
        if self.ca_file is not None and not self.tls:
            problems.append(("ca_file", "is only used with tls = true"))
        if self.password is not None and self.username is None:
            problems.append(("password", "is given without a username"))
        if problems:
            raise key_problems(problems)
        return self
