"""Storage through SQLAlchemy 2: SQLite (WAL) embedded, PostgreSQL in production."""
