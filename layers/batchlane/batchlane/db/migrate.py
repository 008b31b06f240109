"""Apply ``migrations/*.sql`` in name order, each once, under an advisory lock.

Idempotent: running it again applies nothing. Safe to run from several processes at
once (the CloudFormation custom resource, the CLI, the offline stack).
"""

from __future__ import annotations

from importlib import resources

from batchlane.db.connection import Database

_LOCK_KEY = 7_357_201  # arbitrary, constant: the advisory lock that serialises migrators


def migration_files() -> list[tuple[str, str]]:
    folder = resources.files("batchlane.db") / "migrations"
    names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".sql"))
    return [(name.removesuffix(".sql"), (folder / name).read_text()) for name in names]


def migrate(db: Database) -> list[str]:
    """Return the versions applied by this call (empty when already up to date)."""
    db.run("CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
    applied_now: list[str] = []
    db.run("SELECT pg_advisory_lock(:key)", key=_LOCK_KEY)
    try:
        done = {row["version"] for row in db.run("SELECT version FROM schema_migrations")}
        for version, sql in migration_files():
            if version in done:
                continue
            db.execute_script(f"BEGIN;\n{sql}\nINSERT INTO schema_migrations (version) VALUES ('{version}');\nCOMMIT;")
            applied_now.append(version)
    finally:
        db.run("SELECT pg_advisory_unlock(:key)", key=_LOCK_KEY)
    return applied_now


def migration_status(db: Database) -> dict[str, object]:
    """What a preflight needs to know without changing anything: migrations applied and pending,
    the database name, and whether this session is encrypted (pg_stat_ssl) or on loopback."""
    present = db.one("SELECT to_regclass('schema_migrations') IS NOT NULL AS present")
    applied = [row["version"] for row in db.run("SELECT version FROM schema_migrations ORDER BY version")] if present and present["present"] else []
    session = db.one(
        "SELECT current_database() AS database, COALESCE(s.ssl, false) AS ssl, host(inet_server_addr()) AS server_addr"
        " FROM (SELECT 1) one LEFT JOIN pg_stat_ssl s ON s.pid = pg_backend_pid()"
    )
    assert session is not None
    address = session["server_addr"]
    return {
        "database": session["database"],
        "applied": applied,
        "pending": [version for version, _ in migration_files() if version not in applied],
        "tls": bool(session["ssl"]),
        "loopback": address is None or address in ("127.0.0.1", "::1"),  # None: a Unix socket
    }
