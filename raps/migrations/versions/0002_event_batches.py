"""Floor events stored a batch per row: one insert per flush instead of one per event.

The event log only holds what came after the newest floor snapshot, so the upgrade
takes no data across: stop the daemon (its stop takes a snapshot), upgrade, start.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.drop_table("floor_events")
    op.create_table(
        "floor_event_batches",
        sa.Column("last_seq", BigId, primary_key=True, autoincrement=False),
        sa.Column("first_seq", sa.BigInteger, nullable=False),
        sa.Column("received_at", sa.Float, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("floor_event_batches")
    op.create_table(
        "floor_events",
        sa.Column("seq", BigId, primary_key=True, autoincrement=True),
        sa.Column("received_at", sa.Float, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
    )
