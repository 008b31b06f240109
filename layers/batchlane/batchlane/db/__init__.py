"""PostgreSQL through pg8000: connection handling, migrations, repositories."""

from batchlane.db.connection import Database, SecretConnection, SecretSource, connect_params_from_url

__all__ = ["Database", "SecretConnection", "SecretSource", "connect_params_from_url"]
