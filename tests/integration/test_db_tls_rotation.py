"""TLS to PostgreSQL and password rotation, against a real server (issue 10, points 2 and 3).

A real server (PostgreSQL built with OpenSSL, see local/postgres.start_tls) listens on 127.0.0.1 with TLS and scram passwords, like Aurora behind
RDS Proxy. Its certificate comes from a CA this module generates (never committed).
"""

from __future__ import annotations

import datetime
import shutil
import socket
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from batchlane.db.connection import (
    ConnectParams,
    Database,
    DatabaseAuthFailed,
    DatabaseTlsError,
    SecretConnection,
    connect_params_from_url,
)
from batchlane_dev.local import postgres

T = TypeVar("T")


# -- certificates, made at test time --------------------------------------------------------
def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _ca(common_name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _server_cert(ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate, dns_name: str) -> tuple[bytes, bytes]:
    """A server certificate valid for ``dns_name`` only (not for 127.0.0.1)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(dns_name))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(dns_name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


@dataclass
class TlsPostgres:
    port: int
    ca_file: str  # the CA that signed the server's certificate
    other_ca_file: str  # a CA that did not
    admin: Database
    admin_url: str  # the superuser over the Unix socket, in the postgres database

    def role(self, password: str) -> str:
        """A fresh login role owning nothing, allowed into the ``batchlane`` database."""
        name = f"app_{uuid.uuid4().hex[:8]}"
        self.admin.execute_script(f"CREATE ROLE {name} LOGIN PASSWORD '{password}'; GRANT CONNECT ON DATABASE batchlane TO {name}")
        return name

    def set_password(self, role: str, password: str) -> None:
        self.admin.execute_script(f"ALTER ROLE {role} PASSWORD '{password}'")

    def params(self, role: str, password: str, **overrides: Any) -> ConnectParams:
        fields: dict[str, Any] = dict(user=role, password=password, host="localhost", port=self.port, database="batchlane", ssl_ca_file=self.ca_file)
        return ConnectParams(**{**fields, **overrides})


@pytest.fixture(scope="module")
def tls_pg() -> Iterator[TlsPostgres]:
    workdir = Path(tempfile.mkdtemp(prefix="batchlane-test-tls-"))
    ca_key, ca_cert = _ca("batchlane test CA")
    _, other_ca = _ca("some other CA")
    (workdir / "ca.pem").write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    (workdir / "other-ca.pem").write_bytes(other_ca.public_bytes(serialization.Encoding.PEM))
    cert_pem, key_pem = _server_cert(ca_key, ca_cert, "localhost")
    pgdata = workdir / "pgdata"
    server = postgres.start_tls(pgdata, cert_pem=cert_pem, key_pem=key_pem)
    admin = Database(connect_params_from_url(server.admin_url))
    admin.execute_script("CREATE DATABASE batchlane")
    try:
        yield TlsPostgres(
            port=server.port, ca_file=str(workdir / "ca.pem"), other_ca_file=str(workdir / "other-ca.pem"), admin=admin, admin_url=server.admin_url
        )
    finally:
        admin.close()
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def in_new_thread(work: Callable[[], T]) -> T:
    """Run ``work`` on a thread of its own: a Database gives each thread its own connection."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = work()
        except BaseException as exc:  # handed to the caller
            out["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


class FakeSecretsManager:
    """A SecretSource like Secrets Manager behind a cache: unforced reads may be stale."""

    def __init__(self, secret: dict[str, Any]) -> None:
        self.current = dict(secret)
        self._cached = dict(secret)
        self.fetches: list[bool] = []  # the force flag of every fetch

    def fetch(self, *, force: bool = False) -> dict[str, Any]:
        self.fetches.append(force)
        if force:
            self._cached = dict(self.current)
        return dict(self._cached)

    def rotate(self, password: str) -> None:
        self.current = {**self.current, "password": password}


# -- point 2: TLS ---------------------------------------------------------------------------
def test_connection_with_the_configured_ca_is_encrypted_and_verified(tls_pg: TlsPostgres) -> None:
    role = tls_pg.role("pw-1")
    db = Database(tls_pg.params(role, "pw-1"))  # verify-full is the default
    try:
        row = db.one("SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        assert row is not None and row["ssl"] is True and row["version"].startswith("TLSv1.")
        assert db.params.ssl_mode == "verify-full"
    finally:
        db.close()


def test_a_tcp_url_verifies_tls_by_default_with_the_ca_given_by_setting(tls_pg: TlsPostgres) -> None:
    role = tls_pg.role("pw-1")
    params = connect_params_from_url(f"postgresql://{role}:pw-1@localhost:{tls_pg.port}/batchlane", ssl_ca_file=tls_pg.ca_file)
    assert params.ssl_mode == "verify-full"
    db = Database(params)
    try:
        assert db.one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()") == {"ssl": True}
    finally:
        db.close()


@pytest.mark.parametrize("trust", ["other_ca", "system_store"])
def test_a_server_certificate_from_another_ca_is_refused_with_a_clear_error(tls_pg: TlsPostgres, trust: str) -> None:
    role = tls_pg.role("pw-1")
    ca_file = tls_pg.other_ca_file if trust == "other_ca" else None
    db = Database(tls_pg.params(role, "pw-1", ssl_ca_file=ca_file))
    with pytest.raises(DatabaseTlsError) as caught:
        db.one("SELECT 1")
    message = str(caught.value)
    assert "certificate verify failed" in message or "unable to get local issuer certificate" in message
    assert f"localhost:{tls_pg.port}" in message
    assert (tls_pg.other_ca_file if ca_file else "the system trust store") in message
    assert caught.value.error_id == "DB_TLS_FAILED"
    db.close()


def test_the_host_name_is_verified(tls_pg: TlsPostgres) -> None:
    role = tls_pg.role("pw-1")
    # The certificate names "localhost"; 127.0.0.1 is the same server under a name it does not carry.
    wrong_name = Database(tls_pg.params(role, "pw-1", host="127.0.0.1"))
    with pytest.raises(DatabaseTlsError, match="mismatch"):
        wrong_name.one("SELECT 1")
    wrong_name.close()
    ca_only = Database(tls_pg.params(role, "pw-1", host="127.0.0.1", ssl_mode="verify-ca"))
    try:
        assert ca_only.one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()") == {"ssl": True}
    finally:
        ca_only.close()


def test_a_server_without_tls_is_refused_not_used_in_plain_text() -> None:
    """A listener that answers PostgreSQL's SSLRequest with 'N' (no TLS), as a server without ssl does."""
    with socket.create_server(("127.0.0.1", 0)) as listener:

        def answer_no_tls() -> None:
            con, _ = listener.accept()
            with con:
                con.recv(8)  # Int32 length 8, Int32 80877103
                con.sendall(b"N")

        server = threading.Thread(target=answer_no_tls)
        server.start()
        db = Database(ConnectParams(user="app", password="pw", host="127.0.0.1", port=listener.getsockname()[1], database="batchlane"))
        with pytest.raises(DatabaseTlsError, match="offers no TLS"):
            db.one("SELECT 1")
        server.join()
        db.close()


def test_unverified_tls_modes_are_refused_at_configuration() -> None:
    for mode in ("require", "prefer", "allow"):
        with pytest.raises(ValueError, match="unverified TLS is not offered"):
            connect_params_from_url(f"postgresql://u:p@db.example.com/batchlane?sslmode={mode}")


# -- point 3: rotation ----------------------------------------------------------------------
def test_after_a_rotation_the_secret_is_fetched_again_once_and_the_new_connection_succeeds(tls_pg: TlsPostgres) -> None:
    role = tls_pg.role("before-rotation")
    # Like CDK's generated cluster secret: no dbname; DATABASE_NAME names the database.
    secrets = FakeSecretsManager({"username": role, "password": "before-rotation", "host": "localhost", "port": tls_pg.port, "engine": "postgres"})
    db = Database(SecretConnection(secrets, database="batchlane", ssl_ca_file=tls_pg.ca_file).params())
    try:
        assert db.one("SELECT current_database() AS name") == {"name": "batchlane"}  # this thread's session
        assert secrets.fetches == [False]

        tls_pg.set_password(role, "after-rotation")  # what the rotation Lambda does ...
        secrets.rotate("after-rotation")  # ... then it stores the new version

        assert in_new_thread(lambda: db.one("SELECT current_user AS who")) == {"who": role}
        assert secrets.fetches == [False, True]  # one forced re-fetch
        assert db.one("SELECT 1 AS alive") == {"alive": 1}  # the session opened before the rotation lives on
        assert in_new_thread(lambda: db.one("SELECT 1 AS alive")) == {"alive": 1}
        assert secrets.fetches == [False, True]  # later connections use the new password without fetching
    finally:
        db.close()


def test_credentials_still_refused_after_the_re_fetch_raise_a_clear_error(tls_pg: TlsPostgres) -> None:
    role = tls_pg.role("stored-password")
    secrets = FakeSecretsManager({"username": role, "password": "stored-password", "host": "localhost", "port": tls_pg.port})
    db = Database(SecretConnection(secrets, database="batchlane", ssl_ca_file=tls_pg.ca_file).params())
    tls_pg.set_password(role, "changed-but-never-stored")
    with pytest.raises(DatabaseAuthFailed) as caught:
        db.one("SELECT 1")
    assert secrets.fetches == [False, True]  # exactly one forced re-fetch, then the error
    assert role in str(caught.value) and "stored-password" not in str(caught.value)
    assert caught.value.error_id == "DB_AUTH_FAILED"
    db.close()


# -- issue 15: the application role, signed in with its password over TLS --------------------
def test_migrate_gives_batchlane_app_the_secrets_password_and_single_user_rotation_works(tls_pg: TlsPostgres) -> None:
    """What the deployed pieces do in order: migrate (master) sets the app secret's password on
    batchlane_app; a function signs in with it (scram, TLS); the hosted single-user rotation signs
    in as batchlane_app and changes its own password; a later migrate run sets the secret's current one."""
    from batchlane.db.migrate import APP_ROLE, ensure_app_role, migrate

    owner = Database(connect_params_from_url(tls_pg.admin_url.replace("/postgres?", "/batchlane?")))
    try:
        migrate(owner, app_password="app-pw-1")
        app = Database(tls_pg.params(APP_ROLE, "app-pw-1"))
        try:
            assert app.one("SELECT current_user AS who, count(*) AS n FROM files") == {"who": APP_ROLE, "n": 0}
            app.run(f"ALTER ROLE {APP_ROLE} PASSWORD 'app-pw-2'")  # the rotation Lambda, signed in as the role
        finally:
            app.close()
        with pytest.raises(DatabaseAuthFailed):
            Database(tls_pg.params(APP_ROLE, "app-pw-1")).one("SELECT 1")
        ensure_app_role(owner, "app-pw-3")  # a redeploy: migrate sets the secret's current password again
        again = Database(tls_pg.params(APP_ROLE, "app-pw-3"))
        try:
            assert again.one("SELECT current_user AS who") == {"who": APP_ROLE}
        finally:
            again.close()
    finally:
        owner.close()
