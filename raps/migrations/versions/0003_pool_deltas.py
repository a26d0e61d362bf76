"""Pool snapshots may be deltas: the cards added to and removed from a base pool.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("pool_snapshots") as batch:
        batch.add_column(sa.Column("base", sa.String(64), nullable=True))
        batch.add_column(sa.Column("delta", sa.Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("pool_snapshots") as batch:
        batch.drop_column("delta")
        batch.drop_column("base")
