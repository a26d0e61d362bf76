"""Stream marks beside the floor log: where each numbered MQTT stream was (its last
`seq` and `boot`), written with every floor-log flush, so an ingest gap that straddles
a restart is still counted (adapters.mqtt.gaps; raps.store.marks).

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "floor_marks",
        sa.Column("gen", BigId, primary_key=True, autoincrement=False),
        sa.Column("body", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("floor_marks")
