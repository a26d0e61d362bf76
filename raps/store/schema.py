"""Tables of the RAPS database; Alembic migrations (raps/migrations) create them."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    text,
)

metadata = MetaData()
# SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL gets 64-bit keys.
BigId = BigInteger().with_variant(Integer(), "sqlite")

journal = Table(
    "journal",
    metadata,
    Column("seq", BigId, primary_key=True, autoincrement=False),
    Column("session_id", String(128), nullable=False, index=True),
    Column("type", String(64), nullable=False),
    Column("at", String(40), nullable=False),
    Column("record", Text, nullable=False),  # canonical JSON, hashed byte for byte
    Column("prev", String(64), nullable=False),
    Column("hash", String(64), nullable=False),
    # the entry of a pick stores the pool it was drawn from (full, or a delta against an
    # earlier stored pool), in the same row: one statement per pick; outside the chain,
    # which holds the pool's digest
    Column("pool_digest", String(64), nullable=True),
    Column("pool_size", Integer, nullable=True),
    Column("pool_cards", Text, nullable=True),  # newline-joined, canonical ('' for a delta)
    Column("pool_base", String(64), nullable=True),  # the pool this one is a delta of
    Column("pool_delta", Text, nullable=True),  # JSON {"add": [...], "del": [...]}
    Index(
        "ix_journal_pool_digest",
        "pool_digest",
        sqlite_where=text("pool_digest IS NOT NULL"),
        postgresql_where=text("pool_digest IS NOT NULL"),
    ),
    # the sessions closed, read at start without their entries (migration 0008)
    Index(
        "ix_journal_closed",
        "session_id",
        "seq",
        sqlite_where=text("type = 'session.closed'"),
        postgresql_where=text("type = 'session.closed'"),
    ),
)

# pools stored on their own: checkpoints (in full, written after a pick, see
# raps.store.pools) and every pool written before revision 0004
pool_snapshots = Table(
    "pool_snapshots",
    metadata,
    Column("digest", String(64), primary_key=True),
    Column("size", Integer, nullable=False),
    Column("cards", Text, nullable=False),  # newline-joined, canonical order ('' for a delta)
    Column("base", String(64), nullable=True),  # the pool this one is a delta of
    Column("delta", Text, nullable=True),  # JSON {"add": [...], "del": [...]}
)

sealed_seeds = Table(
    "sealed_seeds",
    metadata,
    Column("session_id", String(128), primary_key=True),
    Column("commitment", String(64), nullable=False),
    Column("nonce", LargeBinary, nullable=False),
    Column("ciphertext", LargeBinary, nullable=False),
)

floor_event_batches = Table(
    "floor_event_batches",
    metadata,
    Column("last_seq", BigId, primary_key=True, autoincrement=False),
    Column("first_seq", BigInteger, nullable=False),
    Column("received_at", Float, nullable=False),
    Column("body", Text, nullable=False),  # JSON array of adapters.wire.codec events, seq order
)

# the stream marks written with each floor-log flush (raps.store.marks): `gen` orders
# them, `body` is a JSON array of the streams that changed since the previous one
floor_marks = Table(
    "floor_marks",
    metadata,
    Column("gen", BigId, primary_key=True, autoincrement=False),
    Column("body", Text, nullable=False),
)

floor_snapshots = Table(
    "floor_snapshots",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("taken_at", Float, nullable=False),
    Column("last_event_seq", BigInteger, nullable=False),
    # zlib-compressed JSON: {"floor": Floor.snapshot(), "seen": recent event ids,
    # "marks": {"gen": ..., "rows": [...]} every stream mark (raps.store.marks)}
    Column("body", LargeBinary, nullable=False),
)

# signed-in browsers (raps.auth.WebSessions), so that a restart signs nobody out: the
# SHA-256 of the cookie's token (the token itself is never stored), who, and until when
web_signins = Table(
    "web_signins",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("user_name", String(64), nullable=False, index=True),
    Column("role", String(32), nullable=False),
    Column("expires", Float, nullable=False),  # wall clock, seconds since the epoch
    Column("created", Float, nullable=False),
)
