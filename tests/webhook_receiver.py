"""A webhook receiver for tests: a real HTTP (or HTTPS) server on loopback, and the README's verification snippet.

For HTTPS, :func:`make_ca` writes a CA made at test time (never committed) and :meth:`LocalCa.server_context` a
server certificate it signed for a host name; a client trusts that CA through ``SSL_CERT_FILE`` (OpenSSL's own
variable, read by ``ssl.create_default_context``), the way a deployment trusts a private CA: verification stays on.
"""

from __future__ import annotations

import datetime
import json
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from batchlane_dev.local.jobs import wait_until

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_verify() -> Any:
    """The receiver's verification function, exactly as README.md shows it."""
    text = README.read_text()
    block = text.split("<!-- webhook-verify", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(block, namespace)  # our own README, on purpose
    return namespace["verify"]


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    method: str = "POST"
    path: str = ""

    @property
    def json(self) -> dict[str, Any]:
        return dict(json.loads(self.body))


@dataclass
class LocalCa:
    """A certificate authority made at test time: ``ca_file`` (PEM) is what a client trusts."""

    ca_file: Path
    key: Any
    cert: Any
    workdir: Path
    made: list[Path] = field(default_factory=list)

    def server_context(self, dns_name: str) -> ssl.SSLContext:
        """A server-side TLS context holding a certificate this CA signed for ``dns_name`` only."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            _certificate(x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, dns_name)]), self.cert.subject, key.public_key())
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(dns_name)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        path = self.workdir / f"server-{len(self.made)}.pem"
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        path.write_bytes(cert.public_bytes(serialization.Encoding.PEM) + key_pem)
        self.made.append(path)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(path)
        return context


def _certificate(subject: Any, issuer: Any, public_key: Any) -> Any:
    from cryptography import x509

    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
    )


def make_ca(workdir: Path, common_name: str = "batchlane test CA") -> LocalCa:
    """A self-signed CA (EC P-256, a day's validity) written to ``workdir/ca.pem``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, common_name)])
    cert = (
        _certificate(name, name, key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    ca_file = workdir / "ca.pem"
    ca_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return LocalCa(ca_file, key, cert, workdir)


class Receiver:
    """An HTTP receiver on loopback: answers the scripted status codes in turn, then ``then``. With ``tls`` (a server
    context) it speaks HTTPS and records the SNI name each client sent; with ``silent`` it reads a request and answers
    nothing for that many seconds or until it is stopped (a receiver that does not answer in time)."""

    def __init__(
        self, answers: list[int] | None = None, then: int = 200, *, tls: ssl.SSLContext | None = None, silent: float = 0.0, bind: str = "127.0.0.1"
    ) -> None:
        self.answers, self.then = list(answers or []), then
        self.received: list[Received] = []
        self.server_names: list[str | None] = []
        self._stopped = threading.Event()
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 10  # a client that connects and then says nothing does not hold its thread for ever

            def setup(self) -> None:
                if tls is not None:  # the TLS handshake in the connection's own thread: a stalled client never stalls the server
                    self.request.settimeout(self.timeout)
                    self.request.do_handshake()
                super().setup()

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with lock:
                    outer.received.append(Received({k: v for k, v in self.headers.items()}, body, self.command, self.path))
                    code = outer.answers.pop(0) if outer.answers else outer.then
                if silent:
                    outer._stopped.wait(silent)
                self.send_response(code)
                if 300 <= code < 400:
                    self.send_header("Location", f"{outer.scheme}://{bind}:{outer.port}/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST  # a followed redirect would arrive as a GET: recorded, so a test sees it

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer((bind, 0), Handler)
        if tls is not None:
            tls.sni_callback = lambda _sock, name, _ctx: outer.server_names.append(name)  # type: ignore[assignment, misc]
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True, do_handshake_on_connect=False)
            self._server.handle_error = lambda _request, _address: None  # type: ignore[method-assign]  # a refused handshake is the test's point
        self.scheme = "https" if tls is not None else "http"
        self.port = self._server.server_port
        self.url = f"{self.scheme}://{bind}:{self.port}/hooks/batchlane"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def wait_for(self, count: int) -> list[Received]:
        wait_until(lambda: len(self.received) >= count, timeout_s=120, what=f"{count} webhook deliveries")
        return list(self.received)

    def stop(self) -> None:
        self._stopped.set()
        self._server.shutdown()
        self._server.server_close()
