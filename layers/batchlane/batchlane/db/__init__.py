"""PostgreSQL through pg8000: connection handling, migrations, repositories."""

from batchlane.db.connection import Database, connect_params_from_url

__all__ = ["Database", "connect_params_from_url"]
