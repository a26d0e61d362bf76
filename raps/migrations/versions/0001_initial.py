"""Initial schema: journal, pool snapshots, sealed seeds, floor events and snapshots.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "journal",
        sa.Column("seq", BigId, primary_key=True, autoincrement=False),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("at", sa.String(40), nullable=False),
        sa.Column("record", sa.Text, nullable=False),
        sa.Column("prev", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
    )
    op.create_index("ix_journal_session_id", "journal", ["session_id"])
    op.create_table(
        "pool_snapshots",
        sa.Column("digest", sa.String(64), primary_key=True),
        sa.Column("size", sa.Integer, nullable=False),
        sa.Column("cards", sa.Text, nullable=False),
    )
    op.create_table(
        "sealed_seeds",
        sa.Column("session_id", sa.String(128), primary_key=True),
        sa.Column("commitment", sa.String(64), nullable=False),
        sa.Column("nonce", sa.LargeBinary, nullable=False),
        sa.Column("ciphertext", sa.LargeBinary, nullable=False),
    )
    op.create_table(
        "floor_events",
        sa.Column("seq", BigId, primary_key=True, autoincrement=True),
        sa.Column("received_at", sa.Float, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
    )
    op.create_table(
        "floor_snapshots",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("taken_at", sa.Float, nullable=False),
        sa.Column("last_event_seq", sa.BigInteger, nullable=False),
        sa.Column("body", sa.LargeBinary, nullable=False),
    )


def downgrade() -> None:
    for table in ("floor_snapshots", "floor_events", "sealed_seeds", "pool_snapshots"):
        op.drop_table(table)
    op.drop_index("ix_journal_session_id", "journal")
    op.drop_table("journal")
