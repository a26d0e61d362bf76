"""Alembic migrations of the RAPS database (run by `raps.store.database.migrate`)."""
