"""A webhook receiver for tests: a real HTTP server on 127.0.0.1, and the README's verification snippet."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
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

    @property
    def json(self) -> dict[str, Any]:
        return dict(json.loads(self.body))


class Receiver:
    """An HTTP receiver on loopback: answers the scripted status codes in turn, then ``then``."""

    def __init__(self, answers: list[int] | None = None, then: int = 200) -> None:
        self.answers, self.then = list(answers or []), then
        self.received: list[Received] = []
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with lock:
                    outer.received.append(Received({k: v for k, v in self.headers.items()}, body))
                    code = outer.answers.pop(0) if outer.answers else outer.then
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_port}/hooks/batchlane"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def wait_for(self, count: int) -> list[Received]:
        wait_until(lambda: len(self.received) >= count, timeout_s=120, what=f"{count} webhook deliveries")
        return list(self.received)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
