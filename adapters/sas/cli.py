"""`raps sas decode` (the field tool) and `raps sas-agent`, for raps/cli.py to mount.

`raps sas decode POLL [REPLY]` prints the decoded fields of a poll and its
reply as JSON, for a technician reading a serial trace.  `--file` reads a
capture instead, one exchange a line (`POLL REPLY`) or one frame a line with
its direction (`> 01 0F` from the host, `< 01 0F ...` from the machine), and
prints one JSON object a line.  A bad CRC, bad BCD or a cut frame is an error
object naming the byte offset; the exit code is 1 when any frame was bad.
"""

from __future__ import annotations

import argparse
import json
import string
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from adapters.sas import codec
from adapters.sas.codec import SasError

HOST_MARKS = {">", "h", "host", "tx", "poll"}
EGM_MARKS = {"<", "m", "egm", "rx", "reply"}
# configure_logs(format, level, site): the daemon's log set-up (raps.logs.configure)
ConfigureLogs = Callable[[str, str, str], None]
_HEX = set(string.hexdigits)


def parse_hex(text: str) -> bytes:
    """Hex with optional spaces, colons, dashes or a 0x prefix; errors name the character."""
    cleaned = text.strip()
    if cleaned.lower().startswith("0x"):
        cleaned = cleaned[2:]
    digits = []
    for i, ch in enumerate(cleaned):
        if ch in " :-\t":
            continue
        if ch not in _HEX:
            raise ValueError(f"not hex: {ch!r} at character {i + 1} of {text.strip()!r}")
        digits.append(ch)
    if len(digits) % 2:
        raise ValueError(f"odd number of hex digits in {text.strip()!r}")
    return bytes.fromhex("".join(digits))


def _error(which: str, e: SasError | ValueError) -> dict[str, Any]:
    if isinstance(e, SasError):
        return {"frame": which, "reason": e.reason, "offset": e.offset, "message": str(e)}
    return {"frame": which, "reason": "input", "message": str(e)}


def decode_exchange(poll: str, reply: str | None) -> dict[str, Any]:
    """One poll (and its reply) as a JSON-ready dict; problems go in `error`."""
    out: dict[str, Any] = {}
    try:
        pbytes = parse_hex(poll)
        out["poll_hex"] = pbytes.hex(" ")
        req = codec.decode_request(pbytes)
        out["poll"] = codec.to_dict(req)
    except (SasError, ValueError) as e:
        out["error"] = _error("poll", e)
        return out
    if reply is None:
        return out
    try:
        rbytes = parse_hex(reply)
        out["reply_hex"] = rbytes.hex(" ")
        out["reply"] = codec.to_dict(codec.decode_reply(req, rbytes))
    except (SasError, ValueError) as e:
        out["error"] = _error("reply", e)
    return out


def exchanges(lines: Iterable[str]) -> Iterator[tuple[int, str | None, str | None]]:
    """(line number, poll, reply) from a capture; a reply without a poll has poll None."""
    held: tuple[int, str] | None = None
    for n, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        head, _, rest = line.partition(" ")
        mark = head.lower().rstrip(":")
        if mark in HOST_MARKS:
            if held is not None:
                yield held[0], held[1], None
            held = (n, rest)
        elif mark in EGM_MARKS:
            if held is None:
                yield n, None, rest
            else:
                yield held[0], held[1], rest
                held = None
        else:
            parts = line.split()
            if held is not None:
                yield held[0], held[1], None
                held = None
            yield n, parts[0], " ".join(parts[1:]) if len(parts) > 1 else None
    if held is not None:
        yield held[0], held[1], None


def decode_file(path: Path, out: TextIO) -> int:
    bad = 0
    with path.open(encoding="utf-8") as f:
        for n, poll, reply in exchanges(f):
            if poll is None:
                result: dict[str, Any] = {
                    "error": {"frame": "reply", "reason": "input", "message": "reply without poll"}
                }
            else:
                result = decode_exchange(poll, reply)
            bad += "error" in result
            out.write(json.dumps({"line": n, **result}) + "\n")
    return 1 if bad else 0


def cmd_decode(args: argparse.Namespace) -> int:
    if args.file:
        path = Path(args.file)
        if not path.is_file():
            print(f"raps sas decode: no such file: {path}", file=sys.stderr)
            return 2
        return decode_file(path, sys.stdout)
    if not args.poll:
        print("raps sas decode: give POLL [REPLY] in hex, or --file CAPTURE", file=sys.stderr)
        return 2
    result = decode_exchange(args.poll, args.reply)
    print(json.dumps(result, indent=2))
    return 1 if "error" in result else 0


def cmd_agent(args: argparse.Namespace) -> int:
    import asyncio

    from adapters.sas.agent import run_agent
    from adapters.sas.config import AgentConfigError, load_agent_config

    try:
        cfg = load_agent_config(args.config)
    except AgentConfigError as e:
        print("raps sas-agent: the config has problems:", file=sys.stderr)
        print(str(e), file=sys.stderr)
        return 2
    args.configure_logs(cfg.log_format, cfg.log_level, cfg.site)
    asyncio.run(run_agent(cfg))
    return 0


def add_sas_subcommands(subparsers: Any, configure_logs: ConfigureLogs) -> None:
    """Mount `raps sas decode` and `raps sas-agent` on the `raps` parser's subparsers.

    `configure_logs(format, level, site)` sets up structlog for the agent: logging is
    configured by the daemon's CLI (raps.logs), the adapter only logs.
    """
    sas = subparsers.add_parser("sas", help="SAS slot-telemetry tools")
    sas_sub = sas.add_subparsers(dest="sas_command", required=True)
    dec = sas_sub.add_parser(
        "decode",
        help="decode a SAS poll and reply (hex) as JSON",
        description="Decode SAS frames from a serial trace. Examples: "
        "`raps sas decode 81 7E`, `raps sas decode 010F '01 0F 00 00 ...'`, "
        "`raps sas decode --file capture.txt`.",
    )
    dec.add_argument("poll", nargs="?", help="host message in hex, e.g. 81 or 010F")
    dec.add_argument("reply", nargs="?", help="the machine's reply in hex")
    dec.add_argument("--file", help="capture file: 'POLL REPLY' or '> POLL' / '< REPLY' lines")
    dec.set_defaults(func=cmd_decode)

    agent = subparsers.add_parser(
        "sas-agent", help="poll SAS channels and publish FloorEvents to MQTT (edge agent)"
    )
    agent.add_argument("--config", required=True, help="agent TOML file")
    agent.set_defaults(func=cmd_agent, configure_logs=configure_logs)
