"""The `raps` command: one entry point with subcommands."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adapters.sas.cli import add_sas_subcommands
from raps.config import ConfigError, hash_secret, load_config
from raps.logs import configure
from raps.witness.run import add_witness_subcommands

if TYPE_CHECKING:
    from raps.chain import Head


def cmd_run(args: argparse.Namespace) -> int:
    from raps.daemon import run
    from raps.seal import SealError
    from raps.signing import SigningKeyError

    try:
        cfg = load_config(args.config)
    except ConfigError as e:
        print("raps: the config has problems:", file=sys.stderr)
        print(str(e), file=sys.stderr)
        return 2
    ready = Path(args.ready_file) if args.ready_file else None
    try:
        run(cfg, create_key=args.create_key, ready_file=ready)
    except (SealError, SigningKeyError) as e:
        print(
            f"raps: {e} (first setup: raps run --create-key, or see docs/systemd.md)",
            file=sys.stderr,
        )
        return 2
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from raps.demo import main

    return main(Path(args.out), args.duration)


def _heads(args: argparse.Namespace) -> tuple[Head | None, list[tuple[int, Any]] | None]:
    """--head: SEQ:HASH, or a file of signed heads (with --site-key); raises ValueError."""
    from raps.chain import Head
    from raps.heads import read_signed
    from selector.signatures import key_id

    if args.site_key is not None:
        key_id(args.site_key)  # a malformed key is a usage error, named
    if not args.head:
        return None, None
    try:
        return Head.parse(args.head), None
    except ValueError:
        if not Path(args.head).is_file():
            raise ValueError(
                f"--head is SEQ:SHA256HEX or a file of signed heads; {args.head!r} is neither"
            ) from None
    if args.site_key is None:
        raise ValueError("a file of signed heads needs --site-key HEX (raps keys public)")
    return None, list(read_signed(Path(args.head)))


def cmd_verify(args: argparse.Namespace) -> int:
    from raps.audit import (
        check,
        export_focus,
        read_columns,
        read_database,
        read_export,
        read_witness_log,
    )

    try:
        head, signed = _heads(args)
        witness_key = _hex_key(args.witness_key) if args.witness_key else None
        witness_log = read_witness_log(Path(args.witness_log)) if args.witness_log else None
    except (ValueError, OSError) as e:
        print(f"raps verify: {e}", file=sys.stderr)
        return 2
    source = args.journal
    whole = "://" in source  # a database holds the whole journal, from entry 1
    columns, focus = None, None
    try:
        if whole:
            entries, records = asyncio.run(read_database(source))
            columns = asyncio.run(read_columns(source))
        else:
            path = Path(source)
            if not path.is_file():
                print(f"raps verify: no such file: {path}", file=sys.stderr)
                return 2
            entries, records = read_export(path)
            focus = export_focus(path)
    except ValueError as e:
        print(f"raps verify: {e}", file=sys.stderr)
        return 1
    report = check(
        entries,
        records,
        head,
        from_genesis=whole,
        columns=columns,
        focus=focus,
        require_closed=args.require_closed,
        session=args.session,
        signed=signed,
        site_key=args.site_key,
        witness_key=witness_key,
        witness_log=witness_log,
    )
    for line in report.lines():
        print(line)
    return report.exit_code


def cmd_keys(args: argparse.Namespace) -> int:
    """The site's public head key, for the regulator to pin (raps.heads)."""
    from raps.signing import SigningKeyError, load_signing_key

    try:
        cfg = load_config(args.config)
        key = load_signing_key(cfg.credentials.head_key_path(), "head key")
    except ConfigError as e:
        print(f"raps keys: {e}", file=sys.stderr)
        return 2
    except SigningKeyError as e:
        print(f"raps keys: {e} (first setup: raps run --create-key)", file=sys.stderr)
        return 1
    print(key.public_hex)
    print(f"key id {key.key_id}", file=sys.stderr)
    return 0


def _hex_key(text: str) -> str:
    key = text.strip().lower()
    if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
        raise ValueError(f"--witness-key is 64 hex digits (raps witness key), not {text!r}")
    return key


def cmd_export(args: argparse.Namespace) -> int:
    from raps.audit import export_session

    try:
        lines = asyncio.run(export_session(args.database, args.session))
    except KeyError:
        print(f"raps export: no session {args.session!r} in the journal", file=sys.stderr)
        return 1
    out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")  # noqa: SIM115
    with out:
        for line in lines:
            out.write(line + "\n")
    return 0


def cmd_schedule(args: argparse.Namespace) -> int:
    from raps.schedule_toml import export_toml, import_toml, read_document
    from raps.store.daemon_lock import DatabaseBusy
    from selector.schedule import ScheduleError

    try:
        cfg = load_config(args.config)
    except ConfigError as e:  # the daemon's config: exit 2, as `raps run` would
        print(f"raps schedule: {e}", file=sys.stderr)
        return 2
    try:
        if args.schedule_command == "export":
            text = asyncio.run(export_toml(cfg))
            if args.output == "-":
                sys.stdout.write(text)
            else:
                Path(args.output).write_text(text, encoding="utf-8")
            return 0
        doc = read_document(Path(args.file))  # a bad file: exit 1, naming the key
        done = asyncio.run(import_toml(cfg, doc, args.reason, args.user))
    except (ConfigError, ScheduleError, DatabaseBusy, OSError, ValueError) as e:
        print(f"raps schedule {args.schedule_command}: {e}", file=sys.stderr)
        return 1
    for sid in done.opened:
        print(f"raps schedule import: session {sid} has opened; left as it is")
    n = len(done.records)
    approve = "an admin approves them on the calendar page"
    print(
        f"raps schedule import: {n} change(s) proposed; {approve}"
        if n
        else "raps schedule import: nothing differs; nothing journaled"
    )
    return 0


def cmd_hash_password(_args: argparse.Namespace) -> int:
    secret = getpass.getpass("password, PIN or API token: ")
    print(hash_secret(secret))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="raps", description="RAPS casino floor service")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the daemon")
    run.add_argument("--config", required=True, help="TOML config file")
    run.add_argument(
        "--create-key",
        action="store_true",
        help="create the seed key and head key files if they do not exist (first setup)",
    )
    run.add_argument("--ready-file", help="write the bound URL here as JSON once ready")
    run.set_defaults(func=cmd_run)

    demo = sub.add_parser("demo", help="the daemon on embedded defaults with a simulated floor")
    demo.add_argument("--out", default="var/demo", help="folder for the demo database and key")
    demo.add_argument("--duration", type=float, help="stop after this many seconds")
    demo.set_defaults(func=cmd_demo)

    verify = sub.add_parser(
        "verify",
        help="check the journal chain and recompute every pick "
        "(exit 0 valid, 3 valid with anomalies, 1 tampered or mismatched, 2 usage)",
    )
    verify.add_argument("journal", help="database URL, or a file written by `raps export`")
    verify.add_argument(
        "--head",
        help="published journal head SEQ:HASH, or a file of signed heads (JSON lines, as "
        "captured from MQTT or /api/journal/head) to check against, with --site-key",
    )
    verify.add_argument("--site-key", help="the site's public head key (raps keys public)")
    verify.add_argument(
        "--session", help="the session an export is for: fail if its header names another"
    )
    verify.add_argument(
        "--require-closed",
        action="store_true",
        help="fail on a session or draw not closed yet (truncated or abandoned)",
    )
    verify.add_argument(
        "--witness-key", help="the witness's public key (hex) you trust: any other is tampering"
    )
    verify.add_argument(
        "--witness-log",
        help="the witness's log (raps witness export): a request it signed that the journal "
        "lacks is tampering",
    )
    verify.set_defaults(func=cmd_verify)

    keys = sub.add_parser("keys", help="the site's public keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    public = keys_sub.add_parser(
        "public", help="print the public head key (64 hex digits) an inspector pins"
    )
    public.add_argument("--config", required=True, help="TOML config file (its head key file)")
    public.set_defaults(func=cmd_keys)

    export = sub.add_parser("export", help="write a session's journal as JSON lines")
    export.add_argument("database", help="database URL")
    export.add_argument("session", help="session id")
    export.add_argument("-o", "--output", default="-", help="file (default: standard output)")
    export.set_defaults(func=cmd_export)

    sch = sub.add_parser("schedule", help="the schedule (calendars, sessions) as TOML")
    sch_sub = sch.add_subparsers(dest="schedule_command", required=True)
    sch_export = sch_sub.add_parser("export", help="write the schedule as TOML")
    sch_export.add_argument("--config", required=True, help="TOML config file (its database)")
    sch_export.add_argument("-o", "--output", default="-", help="file (default: standard output)")
    sch_import = sch_sub.add_parser(
        "import", help="propose a schedule file's changes for an admin (daemon stopped)"
    )
    sch_import.add_argument("file", help="a file written by `raps schedule export`")
    sch_import.add_argument("--config", required=True, help="TOML config file (its database)")
    sch_import.add_argument("--reason", required=True, help="why: journaled with the change")
    sch_import.add_argument("--user", help="who (default: the login name)")
    for p in (sch_export, sch_import):
        p.set_defaults(func=cmd_schedule)

    hp = sub.add_parser("hash-password", help="hash a password, PIN or token for the config")
    hp.set_defaults(func=cmd_hash_password)

    add_sas_subcommands(sub, configure)  # raps sas decode, raps sas-agent
    add_witness_subcommands(sub)  # raps witness run|export|key
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
