"""A pick's pool is stored in its own journal row, not in a table beside it.

One insert per pick instead of two: the pick's commit then costs about what a bare
one-row commit does. pool_snapshots keeps the pools written before this revision and
from now on holds only checkpoints (full pools stored after a pick, off its path).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

COLUMNS = (
    sa.Column("pool_digest", sa.String(64), nullable=True),
    sa.Column("pool_size", sa.Integer, nullable=True),
    sa.Column("pool_cards", sa.Text, nullable=True),
    sa.Column("pool_base", sa.String(64), nullable=True),
    sa.Column("pool_delta", sa.Text, nullable=True),
)


def upgrade() -> None:
    for column in COLUMNS:
        op.add_column("journal", column)
    op.create_index(
        "ix_journal_pool_digest",
        "journal",
        ["pool_digest"],
        sqlite_where=sa.text("pool_digest IS NOT NULL"),
        postgresql_where=sa.text("pool_digest IS NOT NULL"),
    )


def downgrade() -> None:
    # the pools go back beside the journal first: dropping them would fail every verify
    op.execute(
        "INSERT INTO pool_snapshots (digest, size, cards, base, delta)"
        " SELECT pool_digest, pool_size, pool_cards, pool_base, pool_delta FROM journal"
        " WHERE pool_digest IS NOT NULL ORDER BY seq ON CONFLICT (digest) DO NOTHING"
    )
    op.drop_index("ix_journal_pool_digest", table_name="journal")
    with op.batch_alter_table("journal") as batch:
        for column in reversed(COLUMNS):
            batch.drop_column(column.name)
