"""Alembic environment: migrations run on a connection handed in by the daemon."""

from __future__ import annotations

from alembic import context

from raps.store.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through raps.store.database.migrate")
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
