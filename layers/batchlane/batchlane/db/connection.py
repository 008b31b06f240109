"""pg8000 connections that survive long work.

A Lambda can spend minutes calling Bedrock between two writes; a connection idle that
long may have been cut by a proxy, a failover or the server. Before any statement on a
connection that has been idle for a while we ping it and reconnect if it is gone, so the
write that follows a long model call never fails for that reason.

Each thread gets its own connection (pg8000 connections are not thread-safe, and the
offline stack runs many handlers in one process).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

import pg8000.native
from pg8000.exceptions import DatabaseError, InterfaceError

from batchlane.domain.errors import StoreUnavailable

Row = dict[str, Any]
_PING_AFTER_IDLE_S = 5.0


@dataclass(frozen=True)
class ConnectParams:
    user: str
    database: str
    host: str | None = None
    port: int = 5432
    password: str | None = None
    unix_sock: str | None = None
    ssl: bool = False

    def redacted(self) -> str:
        where = self.unix_sock or f"{self.host}:{self.port}"
        return f"postgresql://{self.user}@{where}/{self.database}"


def connect_params_from_url(url: str) -> ConnectParams:
    """Parse ``postgresql://user:pass@host:port/db`` (``?host=/dir`` selects a Unix socket)."""
    parsed = urlparse(url)
    if parsed.scheme not in ("postgres", "postgresql"):
        raise ValueError("DATABASE_URL must start with postgresql://")
    query = parse_qs(parsed.query)
    port = parsed.port or 5432
    socket_dir = query.get("host", [None])[0]
    return ConnectParams(
        user=unquote(parsed.username or "postgres"),
        password=unquote(parsed.password) if parsed.password else None,
        host=None if socket_dir else (parsed.hostname or "localhost"),
        port=port,
        database=(parsed.path or "/postgres").lstrip("/") or "postgres",
        unix_sock=f"{socket_dir}/.s.PGSQL.{port}" if socket_dir else None,
        ssl=query.get("sslmode", ["disable"])[0] in ("require", "verify-ca", "verify-full"),
    )


def connect_params_from_secret(secret: dict[str, Any]) -> ConnectParams:
    """The RDS-style secret JSON (host, port, username, password, dbname)."""
    return ConnectParams(
        user=secret["username"],
        password=secret["password"],
        host=secret["host"],
        port=int(secret.get("port", 5432)),
        database=secret.get("dbname", "postgres"),
        ssl=True,
    )


class Database:
    def __init__(self, params: ConnectParams) -> None:
        self.params = params
        self._local = threading.local()
        self._all: list[pg8000.native.Connection] = []
        self._owners: dict[pg8000.native.Connection, threading.Thread] = {}
        self._lock = threading.Lock()

    # -- connections -------------------------------------------------------------------
    def _open(self) -> pg8000.native.Connection:
        p = self.params
        kwargs: dict[str, Any] = {"user": p.user, "database": p.database, "password": p.password, "timeout": 60}
        if p.unix_sock:
            kwargs["unix_sock"] = p.unix_sock
        else:
            kwargs.update(host=p.host, port=p.port)
            if p.ssl:
                import ssl

                kwargs["ssl_context"] = ssl.create_default_context()
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
            return _rows(con, con.run(sql, **_adapt(params)))
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
        return _rows(self._con, self._con.run(sql, **_adapt(params)))

    def one(self, sql: str, **params: Any) -> Row | None:
        rows = self.run(sql, **params)
        return rows[0] if rows else None


def _adapt(params: dict[str, Any]) -> dict[str, Any]:
    """dicts and lists of dicts go to jsonb as JSON text."""
    return {k: json.dumps(v) if isinstance(v, dict) else v for k, v in params.items()}


def _rows(con: pg8000.native.Connection, result: list[list[Any]] | None) -> list[Row]:
    if not result or not con.columns:
        return []
    names = [c["name"] for c in con.columns]
    return [dict(zip(names, row, strict=True)) for row in result]
