"""The `raps` command: one entry point with subcommands."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from selector.verify import verify_session


def _read_records(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Journal records from a JSON-lines file, grouped by session in file order."""
    sessions: dict[str, list[dict[str, Any]]] = {}
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                sid = rec["session_id"]
            except (json.JSONDecodeError, KeyError, TypeError) as e:
                raise SystemExit(f"{path}:{lineno}: not a journal record ({e})") from e
            sessions.setdefault(sid, []).append(rec)
    return sessions


def cmd_verify(args: argparse.Namespace) -> int:
    path = Path(args.journal)
    if not path.is_file():
        print(f"raps verify: no such file: {path}", file=sys.stderr)
        return 2
    sessions = _read_records(path)
    if not sessions:
        print(f"raps verify: {path} holds no records", file=sys.stderr)
        return 1
    bad = 0
    for sid, records in sessions.items():
        mismatches = verify_session(records)
        picks = sum(1 for r in records if r["type"] == "pick.drawn")
        if mismatches:
            bad += 1
            print(f"session {sid}: FAILED ({len(mismatches)} mismatch(es))")
            for m in mismatches:
                print(f"  {m}")
        else:
            print(f"session {sid}: OK ({picks} picks recomputed)")
    return 1 if bad else 0


def cmd_demo(args: argparse.Namespace) -> int:
    from raps.demo import run_demo

    return run_demo(Path(args.out))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="raps", description="RAPS casino floor service")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="simulate a floor and run a provable RAPS session")
    demo.add_argument("--out", default="var/demo", help="folder for the session records")
    demo.set_defaults(func=cmd_demo)
    verify = sub.add_parser("verify", help="recompute every pick of closed sessions")
    verify.add_argument("journal", help="session records as JSON lines")
    verify.set_defaults(func=cmd_verify)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
