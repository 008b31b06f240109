"""Apply ``migrations/*.sql`` in name order, each once, under an advisory lock.

Idempotent: running it again applies nothing. Safe to run from several processes at
once (the CloudFormation custom resource, the CLI, the offline stack).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
from importlib import resources

from batchlane.db.connection import Database

_LOCK_KEY = 7_357_201  # arbitrary, constant: the advisory lock that serialises migrators


def migration_files() -> list[tuple[str, str]]:
    folder = resources.files("batchlane.db") / "migrations"
    names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".sql"))
    return [(name.removesuffix(".sql"), (folder / name).read_text()) for name in names]


def migrate(db: Database, *, app_password: str | None = None) -> list[str]:
    """Return the versions applied by this call (empty when already up to date).

    With ``app_password``, then (re)creates the application role with it (:func:`ensure_app_role`).
    """
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
        if app_password is not None:
            ensure_app_role(db, app_password)
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


APP_ROLE = "batchlane_app"  # the functions' database user (docs/deploy.md "Database authentication")
_ROLE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_SCRAM_ITERATIONS = 4096  # PostgreSQL's default scram_iterations


def scram_verifier(password: str, *, salt: bytes | None = None, iterations: int = _SCRAM_ITERATIONS) -> str:
    """The SCRAM-SHA-256 verifier PostgreSQL stores (RFC 7677): sent instead of the password,
    so the clear text never appears in a statement the server could log."""
    salt = salt if salt is not None else os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    stored_key = hashlib.sha256(hmac.new(salted, b"Client Key", hashlib.sha256).digest()).digest()
    server_key = hmac.new(salted, b"Server Key", hashlib.sha256).digest()
    b64 = lambda raw: base64.b64encode(raw).decode()  # noqa: E731
    return f"SCRAM-SHA-256${iterations}:{b64(salt)}${b64(stored_key)}:{b64(server_key)}"


def ensure_app_role(db: Database, password: str, *, role: str = APP_ROLE) -> None:
    """Create (or update) the login role the functions use: DML on the tables and USAGE on the
    sequences of ``public``, now and for later migrations' objects; no DDL, owns nothing. Idempotent.

    Run by ``migrate`` as the owner of the schema objects (the master user).
    """
    if not _ROLE_NAME.match(role):
        raise ValueError(f"not a plain role name: {role!r}")
    verifier = scram_verifier(password).replace("'", "''")  # base64 and '$:': no quote, escaped anyway
    db.run(f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN CREATE ROLE {role}; END IF; END $$")
    db.run(f"ALTER ROLE {role} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT PASSWORD '{verifier}'")
    database = db.one("SELECT current_database() AS name")
    assert database is not None
    name = str(database["name"]).replace('"', '""')
    for statement in (
        f'GRANT CONNECT ON DATABASE "{name}" TO {role}',
        f"GRANT USAGE ON SCHEMA public TO {role}",
        # PostgreSQL 15+ grants PUBLIC no CREATE on public (Aurora here runs 17): the role gets none either.
        f"REVOKE CREATE ON SCHEMA public FROM {role}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}",
        f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}",
        # The migration log is the migrator's: the functions may read it (doctor, status), not write it.
        f"REVOKE INSERT, UPDATE, DELETE ON schema_migrations FROM {role}",
        # Tables and sequences later migrations create (as this same user) are covered too.
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {role}",
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE ON SEQUENCES TO {role}",
    ):
        db.run(statement)
