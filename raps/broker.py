"""An in-process MQTT broker (amqtt) for the demo and for machines without Mosquitto."""

from __future__ import annotations

import logging
import socket
from typing import Any

from amqtt.broker import Broker


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


class EmbeddedBroker:
    """amqtt on host:port (port 0 picks a free one); anonymous, loopback by default."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port or free_port(host)
        config: dict[str, Any] = {
            "listeners": {"default": {"type": "tcp", "bind": f"{self.host}:{self.port}"}},
            "plugins": {
                "amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}
            },
        }
        self._broker = Broker(config)
        for name in ("amqtt", "transitions"):
            logging.getLogger(name).setLevel(logging.WARNING)

    async def start(self) -> None:
        await self._broker.start()

    async def stop(self) -> None:
        await self._broker.shutdown()
