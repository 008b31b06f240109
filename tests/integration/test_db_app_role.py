"""The application role the functions sign in as: data in the tables, never the schema (issue 15)."""

from __future__ import annotations

import importlib.util
import json
import uuid

import boto3
import pytest
from moto import mock_aws
from pg8000.exceptions import DatabaseError

from batchlane.db.migrate import APP_ROLE, ensure_app_role, migrate, scram_verifier

INSUFFICIENT_PRIVILEGE = "42501"


def _sqlstate(exc: DatabaseError) -> str:
    return str(exc.args[0].get("C")) if exc.args and isinstance(exc.args[0], dict) else ""


@pytest.mark.parametrize(
    "ddl",
    [
        "CREATE TABLE intruder (id int)",
        "DROP TABLE files",
        "ALTER TABLE files ADD COLUMN intruder text",
        "TRUNCATE files",
        "INSERT INTO schema_migrations (version) VALUES ('9999_forged')",
    ],
)
def test_the_app_role_cannot_change_the_schema(app_db, ddl):
    with pytest.raises(DatabaseError) as refused:
        app_db.run(ddl)
    assert _sqlstate(refused.value) == INSUFFICIENT_PRIVILEGE, refused.value


def test_the_app_role_reads_and_writes_the_tables(app_db):
    owner = f"owner-{uuid.uuid4()}"
    row = app_db.one("INSERT INTO files (owner_id, name, s3_key) VALUES (:o, 'a.pdf', 'uploads/a.pdf') RETURNING id", o=owner)
    assert row is not None
    app_db.run("UPDATE files SET status = 'converting' WHERE id = :id", id=row["id"])
    assert app_db.one("SELECT status FROM files WHERE owner_id = :o", o=owner) == {"status": "converting"}
    app_db.run("DELETE FROM files WHERE id = :id", id=row["id"])
    assert app_db.run("SELECT 1 FROM files WHERE owner_id = :o", o=owner) == []
    assert app_db.one("SELECT current_user AS who") == {"who": APP_ROLE}


def test_a_later_migrations_tables_are_granted_and_the_role_owns_nothing(db, app_db):
    """ALTER DEFAULT PRIVILEGES: a table the migrator creates later is the app's to use, not to alter."""
    table = f"later_{uuid.uuid4().hex[:8]}"
    db.run(f"CREATE TABLE {table} (id bigserial PRIMARY KEY, note text)")
    try:
        app_db.run(f"INSERT INTO {table} (note) VALUES ('x')")  # the sequence too (USAGE)
        assert app_db.one(f"SELECT count(*) AS n FROM {table}") == {"n": 1}
        with pytest.raises(DatabaseError) as refused:
            app_db.run(f"DROP TABLE {table}")
        assert _sqlstate(refused.value) == INSUFFICIENT_PRIVILEGE
        owned = db.one("SELECT count(*) AS n FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner WHERE r.rolname = :r", r=APP_ROLE)
        assert owned == {"n": 0}
    finally:
        db.run(f"DROP TABLE IF EXISTS {table}")


def test_ensure_app_role_is_idempotent_and_takes_the_new_password(db):
    """Run twice (a redeploy, a rotation): the role keeps its grants and signs in with the latest password."""
    migrate(db, app_password="first-password")
    ensure_app_role(db, "second-password")
    rolpassword = db.one("SELECT rolpassword FROM pg_authid WHERE rolname = :r", r=APP_ROLE)
    assert rolpassword is not None and str(rolpassword["rolpassword"]).startswith("SCRAM-SHA-256$4096:")
    assert "second-password" not in str(rolpassword["rolpassword"])
    flags = db.one("SELECT rolsuper, rolcreatedb, rolcreaterole, rolcanlogin FROM pg_roles WHERE rolname = :r", r=APP_ROLE)
    assert flags == {"rolsuper": False, "rolcreatedb": False, "rolcreaterole": False, "rolcanlogin": True}


def _verifies(rolpassword: str, password: str) -> bool:
    """Recompute the stored SCRAM verifier with its own salt and iterations (RFC 5803 layout)."""
    import base64

    head, _ = rolpassword.split("$", 2)[1:]
    iterations, salt = head.split(":")
    return scram_verifier(password, salt=base64.b64decode(salt), iterations=int(iterations)) == rolpassword


def test_scram_verifier_matches_what_postgresql_computes_from_the_clear_password(db):
    role = f"probe_{uuid.uuid4().hex[:8]}"
    db.run("SET password_encryption = 'scram-sha-256'")
    db.run(f"CREATE ROLE {role} PASSWORD 'clear-text-pw'")
    try:
        stored = db.one("SELECT rolpassword FROM pg_authid WHERE rolname = :r", r=role)
        assert stored is not None and _verifies(str(stored["rolpassword"]), "clear-text-pw")
        assert not _verifies(str(stored["rolpassword"]), "another-pw")
    finally:
        db.run(f"DROP ROLE {role}")


@mock_aws
def test_the_migrate_function_sets_the_app_secrets_current_password(db, migrated_url, monkeypatch):
    """On AWS: migrate's DATABASE_SECRET_ARN is the master's; DATABASE_APP_SECRET_ARN names the app secret."""
    from batchlane.runtime import reset_services
    from batchlane_dev.local.lambda_runtime import LambdaContext
    from deployment.topology import handler_path

    secrets = boto3.client("secretsmanager", region_name="us-east-1")
    arn = secrets.create_secret(Name="batchlane-app", SecretString=json.dumps({"username": APP_ROLE, "password": "pw-v1"}))["ARN"]
    secrets.put_secret_value(SecretId=arn, SecretString=json.dumps({"username": APP_ROLE, "password": "pw-v2"}))  # rotated since
    for key, value in {"DATABASE_URL": migrated_url, "DATABASE_APP_SECRET_ARN": arn, "AWS_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("DATABASE_ADMIN_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    reset_services()
    try:
        spec = importlib.util.spec_from_file_location("migrate_handler_under_test", handler_path("migrate"))
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        handler = module.handler
        result = handler({"RequestType": "Update"}, LambdaContext(function_name="batchlane-migrate"))
    finally:
        reset_services()
    assert result["PhysicalResourceId"] == "batchlane-migrations"
    stored = db.one("SELECT rolpassword FROM pg_authid WHERE rolname = :r", r=APP_ROLE)
    assert stored is not None and _verifies(str(stored["rolpassword"]), "pw-v2")


def test_the_offline_stacks_handlers_sign_in_as_batchlane_app(stack_factory):
    """As on AWS: a handler missing a grant fails offline too, instead of passing as the owner."""
    from batchlane.runtime import admin_database, services

    stack_factory(schedules=False)
    assert services().db.one("SELECT current_user AS who") == {"who": APP_ROLE}
    assert admin_database().one("SELECT current_user AS who") != {"who": APP_ROLE}  # functions/migrate's
