"""`raps witness run|export|key`: the witness process and its operator's tools."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn

from raps.logs import configure, get_logger
from raps.signing import SigningKey, SigningKeyError, create_signing_key_file, load_signing_key
from raps.witness.app import create_witness_app
from raps.witness.config import (
    WitnessConfigError,
    WitnessFile,
    WitnessServerConfig,
    load_witness_config,
)
from raps.witness.log import WitnessLog, describe_key


class _Server(uvicorn.Server):
    """uvicorn without its own signal handlers: `serve` stops it in order."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def witness_server_config(app: Any, w: WitnessServerConfig) -> uvicorn.Config:
    """uvicorn's settings for the witness: no forwarded headers believed (uvicorn's default
    trusts X-Forwarded-For and -Proto from 127.0.0.1; the witness sits behind no proxy of
    ours), as the daemon's raps.daemon.http_server_config."""
    return uvicorn.Config(app, host=w.host, port=w.port, log_level="warning",
                          access_log=False, proxy_headers=False)  # fmt: skip


def _key(cfg: WitnessFile, create: bool) -> SigningKey:
    path = Path(cfg.witness.key_file)
    if create and not path.exists():
        return create_signing_key_file(path)
    return load_signing_key(path, "witness key")


async def serve(cfg: WitnessFile, create_key: bool = False, ready_file: Path | None = None) -> None:
    """Run the witness until SIGTERM/SIGINT; `ready_file` gets {"url", "public_key"}."""
    w = cfg.witness
    key = _key(cfg, create_key)
    log = WitnessLog(Path(w.database), key, w.sites)
    app = create_witness_app(log, w.token_sha256)
    server = _Server(witness_server_config(app, w))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            await task  # failed to start: raise why
            return
        await asyncio.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    url = f"http://{w.host}:{port}"
    get_logger(component="witness").info("witness ready", url=url, key_id=key.key_id)
    if ready_file is not None:
        tmp = ready_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"url": url, "public_key": key.public_hex}), encoding="utf-8")
        tmp.replace(ready_file)
    await stop.wait()
    server.should_exit = True
    await task
    log.close()


def main(args: argparse.Namespace) -> int:
    try:
        cfg = load_witness_config(args.config)
    except WitnessConfigError as e:
        print(f"raps witness: {e}", file=sys.stderr)
        return 2
    configure(cfg.logging.format, cfg.logging.level, "witness")
    try:
        if args.witness_command == "run":
            ready = Path(args.ready_file) if args.ready_file else None
            asyncio.run(serve(cfg, args.create_key, ready))
            return 0
        key = _key(cfg, False)
        if args.witness_command == "key":
            print(json.dumps(describe_key(key)))
            return 0
        log = WitnessLog(Path(cfg.witness.database), key, cfg.witness.sites)
        lines = log.export(args.session, args.site)
        log.close()
    except SigningKeyError as e:
        print(f"raps witness: {e}", file=sys.stderr)
        return 2
    if not lines:
        print(f"raps witness export: the witness never saw {args.session!r}", file=sys.stderr)
        return 1
    text = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text, encoding="utf-8")
    return 0


def add_witness_subcommands(sub: Any) -> None:
    """`raps witness run|export|key` (argparse subparsers of the `raps` command)."""
    w = sub.add_parser("witness", help="the independent witness that signs each draw's request")
    wsub = w.add_subparsers(dest="witness_command", required=True)
    run = wsub.add_parser("run", help="run the witness (HTTP API)")
    run.add_argument(
        "--create-key", action="store_true", help="create the key file if missing (first setup)"
    )
    run.add_argument("--ready-file", help="write the bound URL and public key here as JSON")
    export = wsub.add_parser("export", help="the witness's log of one draw, as JSON lines")
    export.add_argument("session", help="the draw's session id (a ticket draw's: draw:<id>)")
    export.add_argument("--site", help="only this site's draw of that id")
    export.add_argument("-o", "--output", default="-", help="file (default: standard output)")
    key = wsub.add_parser("key", help="print the witness's public key (for inspectors to pin)")
    for p in (run, export, key):
        p.add_argument("--config", required=True, help="the witness's TOML config file")
        p.set_defaults(func=main)
