"""Sign-ins are stored, so a daemon restart signs nobody out.

One row per signed-in browser: the SHA-256 of its cookie token (never the token), the
user and role, and the wall-clock time the sign-in expires.  Sign-out deletes the row.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "web_signins",
        sa.Column("token_hash", sa.String(64), primary_key=True),
        sa.Column("user_name", sa.String(64), nullable=False),
        sa.Column("role", sa.String(32), nullable=False),
        sa.Column("expires", sa.Float, nullable=False),
        sa.Column("created", sa.Float, nullable=False),
    )
    op.create_index("ix_web_signins_user_name", "web_signins", ["user_name"])


def downgrade() -> None:
    # the daemon before 0005 keeps sign-ins in memory only: nothing to carry back
    op.drop_index("ix_web_signins_user_name", table_name="web_signins")
    op.drop_table("web_signins")
