"""An index on the journal's `session.closed` rows, so a start learns which sessions are
closed without reading their entries: closed sessions are restored after the daemon is
ready (raps.session_loader), and only the open and unopened ones before (issue 20).
On PostgreSQL also an index of the stream ids in bytewise order (COLLATE "C"), so a
start finds the streams of a prefix (the stage's) by a range of it whatever the
database's collation (SQLite's is bytewise already).

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
    if op.get_bind().dialect.name == "postgresql":
        op.execute('CREATE INDEX ix_journal_stream_bytes ON journal ((session_id COLLATE "C"))')


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX ix_journal_stream_bytes")
    op.execute("DROP INDEX ix_journal_closed")
