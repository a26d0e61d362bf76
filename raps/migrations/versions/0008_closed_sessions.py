"""An index on the journal's `session.closed` rows, so a start learns which sessions are
closed without reading their entries: closed sessions are restored after the daemon is
ready (raps.session_loader), and only the open and unopened ones before (issue 20).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # partial: a few rows per session; (session_id, seq) so the query reads the index only
    op.execute(
        "CREATE INDEX ix_journal_closed ON journal (session_id, seq) WHERE type = 'session.closed'"
    )


def downgrade() -> None:
    op.execute("DROP INDEX ix_journal_closed")
