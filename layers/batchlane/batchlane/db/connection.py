"""pg8000 connections that survive long work, verify TLS and outlive a password rotation.

Why each: docs/module-notes.md "batchlane.db.connection" and docs/architecture.md "Database connections on AWS".
"""

from __future__ import annotations

import contextlib
import json
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal, Protocol, cast, get_args
from urllib.parse import parse_qs, unquote, urlparse

import pg8000.native
from pg8000.exceptions import DatabaseError, InterfaceError

from batchlane.db.driver_errors import translated
from batchlane.domain.errors import StoreUnavailable
from batchlane.observability import logger

Row = dict[str, Any]
SslMode = Literal["disable", "verify-ca", "verify-full"]
SSL_MODES: tuple[str, ...] = get_args(SslMode)
_PING_AFTER_IDLE_S = 5.0
_AUTH_FAILED = frozenset({"28P01", "28000"})  # invalid_password, invalid_authorization_specification


class DatabaseTlsError(StoreUnavailable):
    """The server's certificate could not be verified (or the server offers no TLS): not retried here;
    the state machines retry it a few times by its own name (a proxy's certificate may be rotating)."""

    error_id = "DB_TLS_FAILED"


class DatabaseAuthFailed(StoreUnavailable):
    """The server refused the credentials, also after the secret was fetched again."""

    error_id = "DB_AUTH_FAILED"


class SecretSource(Protocol):
    """Where the database secret comes from (Secrets Manager on AWS, a fake in tests).

    ``fetch`` returns the RDS-style secret (username, password, host, port, dbname); it may
    answer from a cache, except with ``force=True``, which must read the current value.
    """

    def fetch(self, *, force: bool = False) -> dict[str, Any]: ...


@dataclass(frozen=True)
class ConnectParams:
    user: str
    database: str
    host: str | None = None
    port: int = 5432
    password: str | None = field(default=None, repr=False)
    unix_sock: str | None = None
    ssl_mode: SslMode = "verify-full"
    ssl_ca_file: str | None = None  # PEM bundle of trusted CAs; None = the system trust store
    # Set when the credentials came from a secret: how to read them again after a rotation.
    credentials: SecretConnection | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.ssl_mode not in SSL_MODES:
            raise ValueError(f"sslmode must be one of {', '.join(SSL_MODES)}, not {self.ssl_mode!r} (unverified TLS is not offered)")

    def redacted(self) -> str:
        where = self.unix_sock or f"{self.host}:{self.port}"
        return f"postgresql://{self.user}@{where}/{self.database}"


@dataclass(frozen=True)
class SecretConnection:
    """Connection details from a secret, with the deployment's overrides.

    ``database`` names the database (CDK's generated cluster secret has no ``dbname``);
    ``host`` replaces the secret's host (the RDS Proxy endpoint instead of the cluster's).
    """

    source: SecretSource
    database: str | None = None
    host: str | None = None
    ssl_mode: SslMode = "verify-full"
    ssl_ca_file: str | None = None

    def params(self, *, force: bool = False) -> ConnectParams:
        secret = self.source.fetch(force=force)
        return ConnectParams(
            user=secret["username"],
            password=secret["password"],
            host=self.host or secret["host"],
            port=int(secret.get("port") or 5432),
            database=self.database or secret.get("dbname") or "postgres",
            ssl_mode=self.ssl_mode,
            ssl_ca_file=self.ssl_ca_file,
            credentials=self,
        )


def connect_params_from_url(url: str, *, ssl_mode: SslMode | None = None, ssl_ca_file: str | None = None) -> ConnectParams:
    """Parse ``postgresql://user:pass@host:port/db`` (``?host=/dir`` selects a Unix socket).

    ``sslmode`` / ``sslrootcert`` in the URL win over the arguments. A Unix socket is plain
    (``disable``); a TCP host defaults to ``ssl_mode`` or else ``verify-full``.
    """
    parsed = urlparse(url)
    if parsed.scheme not in ("postgres", "postgresql"):
        raise ValueError("DATABASE_URL must start with postgresql://")
    query = parse_qs(parsed.query)
    port = parsed.port or 5432
    socket_dir = query.get("host", [None])[0]
    default_mode = "disable" if socket_dir else (ssl_mode or "verify-full")
    return ConnectParams(
        user=unquote(parsed.username or "postgres"),
        password=unquote(parsed.password) if parsed.password else None,
        host=None if socket_dir else (parsed.hostname or "localhost"),
        port=port,
        database=(parsed.path or "/postgres").lstrip("/") or "postgres",
        unix_sock=f"{socket_dir}/.s.PGSQL.{port}" if socket_dir else None,
        ssl_mode=cast(SslMode, query.get("sslmode", [default_mode])[0]),
        ssl_ca_file=query.get("sslrootcert", [ssl_ca_file])[0],
    )


def connect_params_from_secret(secret: dict[str, Any], **overrides: Any) -> ConnectParams:
    """The RDS-style secret JSON (host, port, username, password, dbname), verified TLS."""

    class _Fixed:
        def fetch(self, *, force: bool = False) -> dict[str, Any]:
            return secret

    return SecretConnection(_Fixed(), **overrides).params()


@lru_cache(maxsize=8)
def ssl_context(mode: SslMode, ca_file: str | None) -> ssl.SSLContext:
    """A verifying context: the CAs of ``ca_file`` (or the system store), host name checked in verify-full."""
    try:
        context = ssl.create_default_context(cafile=ca_file)
    except (OSError, ssl.SSLError) as exc:
        raise DatabaseTlsError(f"cannot load the database CA file {ca_file!r}: {exc}") from exc
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.verify_mode = ssl.CERT_REQUIRED
    context.check_hostname = mode == "verify-full"
    return context


def _sqlstate(exc: DatabaseError) -> str | None:
    info = exc.args[0] if exc.args else None
    return info.get("C") if isinstance(info, dict) else None


_TRANSIENT_TLS = (ssl.SSLEOFError, ssl.SSLZeroReturnError, ssl.SSLSyscallError)  # the link dropped mid-handshake


def _tls_problem(exc: BaseException) -> ssl.SSLError | None:
    """The lasting TLS error behind a connection failure (a bad certificate, no common protocol), if any."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLError) and not isinstance(seen, _TRANSIENT_TLS):
            return seen
        seen = seen.__cause__
    return None


class Database:
    def __init__(self, params: ConnectParams) -> None:
        self.params = params
        self._local = threading.local()
        self._all: list[pg8000.native.Connection] = []
        self._owners: dict[pg8000.native.Connection, threading.Thread] = {}
        self._lock = threading.Lock()
        self._refresh_lock = threading.Lock()

    # -- connections -------------------------------------------------------------------
    def _open(self) -> pg8000.native.Connection:
        """A new connection; after an authentication failure, the secret is read again once."""
        used = self.params
        try:
            return self._connect(used)
        except DatabaseError as exc:
            if _sqlstate(exc) not in _AUTH_FAILED:
                raise
            if used.credentials is None:
                raise DatabaseAuthFailed(f"the database refused the credentials of {used.redacted()}") from exc
        with self._refresh_lock:
            if self.params is used:  # no other thread has fetched the secret since
                logger.warning("database authentication failed; fetching the secret again", target=used.redacted())
                self.params = used.credentials.params(force=True)
        try:
            return self._connect(self.params)
        except DatabaseError as exc:
            if _sqlstate(exc) in _AUTH_FAILED:
                raise DatabaseAuthFailed(f"the database refused the credentials of {self.params.redacted()}, also after fetching the secret again") from exc
            raise

    def _connect(self, p: ConnectParams) -> pg8000.native.Connection:
        kwargs: dict[str, Any] = {"user": p.user, "database": p.database, "password": p.password, "timeout": 60}
        if p.unix_sock:
            kwargs.update(unix_sock=p.unix_sock, ssl_context=False)  # a local socket: nothing to encrypt
        else:
            kwargs.update(host=p.host, port=p.port)
            kwargs["ssl_context"] = False if p.ssl_mode == "disable" else ssl_context(p.ssl_mode, p.ssl_ca_file)
        last_error: Exception | None = None
        for attempt in range(5):
            try:
                con = pg8000.native.Connection(**kwargs)
                with self._lock:
                    self._all.append(con)
                    self._owners[con] = threading.current_thread()
                self._close_orphans()
                return con
            except (InterfaceError, OSError) as exc:
                _raise_if_tls(exc, p)  # a certificate that does not verify will not verify on retry
                last_error = exc
                time.sleep(0.2 * 2**attempt)
        raise StoreUnavailable(f"cannot connect to {p.redacted()}") from last_error

    def connection(self) -> pg8000.native.Connection:
        """This thread's live connection, re-established if it died while idle."""
        con = getattr(self._local, "con", None)
        last = getattr(self._local, "last_used", 0.0)
        if con is not None and time.monotonic() - last > _PING_AFTER_IDLE_S:
            try:
                con.run("SELECT 1")
            except (InterfaceError, DatabaseError, OSError):
                self._discard(con)
                con = None
        if con is None:
            con = self._open()
            self._local.con = con
        self._local.last_used = time.monotonic()
        return con

    def check(self) -> None:
        """Ping this thread's connection now, whatever its idle time, and reconnect if it is gone.

        Call it before a write that follows long work: a connection killed seconds ago is
        not caught by the idle ping in :meth:`connection`.
        """
        con = getattr(self._local, "con", None)
        if con is not None:
            try:
                con.run("SELECT 1")
                self._local.last_used = time.monotonic()
                return
            except (InterfaceError, DatabaseError, OSError):
                self._discard(con)
        self.connection()

    def _close_orphans(self) -> None:
        """Close the connections of threads that have ended (the offline stack runs each
        invocation on a fresh thread; without this they would pile up to max_connections)."""
        with self._lock:
            orphans = [con for con, owner in self._owners.items() if not owner.is_alive()]
            for con in orphans:
                del self._owners[con]
                if con in self._all:
                    self._all.remove(con)
        for con in orphans:
            with contextlib.suppress(Exception):  # already dead: nothing to release
                con.close()

    def _discard(self, con: pg8000.native.Connection) -> None:
        try:
            con.close()
        except Exception:  # noqa: S110 - already dead: nothing to release
            pass
        with self._lock:
            if con in self._all:
                self._all.remove(con)
            self._owners.pop(con, None)
        self._local.con = None

    def close(self) -> None:
        with self._lock:
            cons, self._all = self._all, []
            self._owners.clear()
        for con in cons:
            try:
                con.close()
            except Exception:  # noqa: S110 - closing: a dead connection has nothing to release
                pass
        self._local = threading.local()

    # -- statements --------------------------------------------------------------------
    def run(self, sql: str, **params: Any) -> list[Row]:
        """One statement in its own transaction; rows as dicts."""
        con = self.connection()
        try:
            return _execute(con, sql, params)
        except (InterfaceError, OSError):
            self._discard(con)
            raise

    def one(self, sql: str, **params: Any) -> Row | None:
        rows = self.run(sql, **params)
        return rows[0] if rows else None

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        con = self.connection()
        con.run("BEGIN")
        tx = Transaction(con)
        try:
            yield tx
        except BaseException:
            try:
                con.run("ROLLBACK")
            except (InterfaceError, OSError):
                self._discard(con)
            raise
        else:
            con.run("COMMIT")
            self._local.last_used = time.monotonic()

    def execute_script(self, sql: str) -> None:
        self.connection().execute_simple(sql)


class Transaction:
    def __init__(self, con: pg8000.native.Connection) -> None:
        self._con = con

    def run(self, sql: str, **params: Any) -> list[Row]:
        return _execute(self._con, sql, params)

    def one(self, sql: str, **params: Any) -> Row | None:
        rows = self.run(sql, **params)
        return rows[0] if rows else None


def _execute(con: pg8000.native.Connection, sql: str, params: dict[str, Any]) -> list[Row]:
    try:
        return _rows(con, con.run(sql, **_adapt(params)))
    except DatabaseError as exc:
        if (clear := translated(exc)) is not exc:
            raise clear from exc
        raise


def _adapt(params: dict[str, Any]) -> dict[str, Any]:
    """dicts and lists of dicts go to jsonb as JSON text."""
    return {k: json.dumps(v) if isinstance(v, dict) else v for k, v in params.items()}


def _rows(con: pg8000.native.Connection, result: list[list[Any]] | None) -> list[Row]:
    if not result or not con.columns:
        return []
    names = [c["name"] for c in con.columns]
    return [dict(zip(names, row, strict=True)) for row in result]


def _raise_if_tls(exc: BaseException, p: ConnectParams) -> None:
    trust = p.ssl_ca_file or "the system trust store"
    if isinstance(exc, InterfaceError) and "refuses SSL" in str(exc):
        raise DatabaseTlsError(f"{p.host}:{p.port} offers no TLS but sslmode is {p.ssl_mode}; plain text is only for a local socket (sslmode=disable)") from exc
    problem = _tls_problem(exc)
    if problem is None:
        return
    reason = getattr(problem, "verify_message", None) or problem.reason or str(problem)
    raise DatabaseTlsError(f"TLS to the database at {p.host}:{p.port} failed: {reason} (sslmode {p.ssl_mode}, trusted CAs: {trust})") from exc
