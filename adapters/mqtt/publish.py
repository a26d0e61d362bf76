"""Publishing through one bounded queue and one client task that reconnects with backoff.

Both publishers of the house use it: the daemon's draw notices (raps.mqtt_out) and the
SAS edge agent's FloorEvents (adapters.sas.agent).  A draw or a poll loop never waits on
the broker: it puts a message on the queue and goes on.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import Any, Protocol

import aiomqtt
from pydantic import SecretStr


class BrokerSettings(Protocol):
    """What a client needs to reach and sign in to a broker (MqttConfig, the agent's)."""

    @property
    def username(self) -> str | None: ...
    @property
    def password(self) -> SecretStr | None: ...
    @property
    def tls(self) -> bool: ...
    @property
    def ca_file(self) -> str | None: ...


def broker_options(cfg: BrokerSettings) -> dict[str, Any]:
    """aiomqtt.Client keyword arguments for the sign-in and TLS of `cfg`."""
    return {
        "username": cfg.username,
        "password": cfg.password.get_secret_value() if cfg.password else None,
        "tls_context": ssl.create_default_context(cafile=cfg.ca_file) if cfg.tls else None,
    }


Outbound = tuple[str, bytes, bool]  # topic, body, retain


async def publish_queue(
    make_client: Callable[[], aiomqtt.Client],
    queue: asyncio.Queue[Outbound],
    log: Any,
    on_link: Callable[[bool], None],
) -> None:
    """Publish a queue's messages at QoS 1 until cancelled, reconnecting with backoff
    (0.5 s, doubling to 30 s); the message in hand when the link drops goes first after."""
    backoff = 0.5
    pending: Outbound | None = None
    while True:
        try:
            async with make_client() as client:
                on_link(True)
                backoff = 0.5
                while True:
                    if pending is None:
                        pending = await queue.get()
                    topic, body, retain = pending
                    await client.publish(topic, body, qos=1, retain=retain)
                    pending = None
        except aiomqtt.MqttError as e:
            on_link(False)
            log.warning("broker unreachable; retrying", error=str(e), retry_in=backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 30.0)
