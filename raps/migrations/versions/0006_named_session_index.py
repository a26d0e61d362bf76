"""An index on the session each journal record names, so the daemon can check, session
by session at start, that the rows filed under a session (its `session_id` column, which
the hash chain does not cover) are exactly the rows whose chained record names it: an
edit of that column can then neither hide a session's close nor move a record in.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# the same expression as raps.store.journal.named_session(), or the index is not used
SQLITE = "json_extract(record, '$.session_id')"
POSTGRESQL = "((record::json) ->> 'session_id')"


def upgrade() -> None:
    expr = SQLITE if op.get_bind().dialect.name == "sqlite" else POSTGRESQL
    op.execute(f"CREATE INDEX ix_journal_named_session ON journal (({expr}))")


def downgrade() -> None:
    op.execute("DROP INDEX ix_journal_named_session")
