"""A prediction service over HTTP/JSON, on the standard library's threading HTTP server.

``POST /predict`` (a trace as the body, plain JSON or gzip; ``?hardware=KEY``
to choose a target, which also says that a CPU trace ran on it; ``?mode=auto|hybrid|structure``, the
pricing) answers what ``itercast predict --json`` prints;
``GET /health``; ``GET /model`` (targets and training summaries). The body
is streamed into the native scanner as it arrives, never held whole; its
size and its uncompressed size are capped, and at most ``concurrency``
requests read and predict at once, so memory stays bounded.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from itercast.errors import ItercastError, TraceTooLargeError
from itercast.online.feed import TraceFeed
from itercast.online.targets import Target
from itercast.predict import Predictor
from itercast.predict.hybrid import MODES

log = logging.getLogger("itercast.online.serve")

DEFAULT_MAX_BYTES = 256 << 20
READ_CHUNK = 1 << 20
# Seconds a client may stall while sending: a slow sender cannot hold a thread forever.
SOCKET_TIMEOUT_S = 60


class HTTPError(Exception):
    def __init__(self, status: HTTPStatus, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


class PredictionServer(ThreadingHTTPServer):
    """Serves one Predictor. ``max_bytes`` caps a trace, as sent and uncompressed."""

    daemon_threads = True

    def __init__(self, predictor: Predictor, host: str = "127.0.0.1", port: int = 8080,
                 max_bytes: int = DEFAULT_MAX_BYTES, concurrency: int | None = None, model_path: str | None = None):
        self.predictor, self.max_bytes, self.model_path = predictor, max_bytes, model_path
        self.slots = threading.BoundedSemaphore(concurrency or os.cpu_count() or 1)
        super().__init__((host, port), PredictionHandler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def model_metadata(self) -> dict:
        p = self.predictor
        return {"path": self.model_path, "hardware": p.hardware, "width": p.width, "stride": p.stride,
                "objective": p.objective, "rounds": p.rounds,
                "targets": {key: {"summary": m.summary, "vocabulary": len(m.vocabulary)}
                            for key, m in sorted(p.models.items())}}

    def predict(self, body, length: int, hardware: str | None, mode: str = "auto") -> dict:
        """Streams ``length`` bytes of ``body`` into the scanner and predicts for ``hardware``, priced by
        ``mode``; a named ``hardware`` also says where a trace that names none (a CPU trace) ran, as
        ``itercast predict --hardware`` does."""
        try:
            key = self.predictor.model_for(hardware).hardware
            if mode not in MODES:
                raise ItercastError(f"unknown mode {mode!r}: choose one of {', '.join(MODES)}")
            target = Target(self.predictor, key, mode, key if hardware else None)
            feed = TraceFeed([target], name="request body", max_bytes=self.max_bytes)
            remaining = length
            while remaining:
                chunk = body.read(min(READ_CHUNK, remaining))
                if not chunk:
                    raise HTTPError(HTTPStatus.BAD_REQUEST, f"body ended after {length - remaining} of the "
                                                            f"{length} bytes announced")
                feed.feed(chunk)
                remaining -= len(chunk)
            return feed.predict()[target.hardware].to_dict()
        except TraceTooLargeError as error:
            raise HTTPError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, str(error)) from None
        except ItercastError as error:
            raise HTTPError(HTTPStatus.BAD_REQUEST, str(error)) from None


class PredictionHandler(BaseHTTPRequestHandler):
    server: PredictionServer
    protocol_version = "HTTP/1.1"
    timeout = SOCKET_TIMEOUT_S
    routes = {"/health": "GET", "/model": "GET", "/predict": "POST"}

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        try:
            allowed = self.routes.get(url.path)
            if allowed is None:
                raise HTTPError(HTTPStatus.NOT_FOUND, f"no such endpoint {url.path}: use "
                                                      f"{', '.join(f'{m} {p}' for p, m in self.routes.items())}")
            if method != allowed:
                raise HTTPError(HTTPStatus.METHOD_NOT_ALLOWED, f"{url.path} takes {allowed}, not {method}",
                                {"Allow": allowed})
            if url.path == "/health":
                self._reply(HTTPStatus.OK, {"status": "ok"})
            elif url.path == "/model":
                self._reply(HTTPStatus.OK, self.server.model_metadata())
            else:
                self._reply(HTTPStatus.OK, self._predict(parse_qs(url.query)))
        except HTTPError as error:
            self._reply(error.status, {"error": error.message, "status": int(error.status)}, error.headers)
        except Exception:
            log.exception("request %s %s failed", method, self.path)
            self._reply(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": "internal error", "status": 500})

    def _predict(self, query: dict) -> dict:
        length = self._content_length()
        hardware = query.get("hardware", [None])[-1]
        mode = query.get("mode", ["auto"])[-1]
        with self.server.slots:
            return self.server.predict(self.rfile, length, hardware, mode)

    def _content_length(self) -> int:
        if self.headers.get("Transfer-Encoding"):
            raise HTTPError(HTTPStatus.LENGTH_REQUIRED, "send the trace with a Content-Length, not chunked")
        text = self.headers.get("Content-Length")
        if text is None:
            raise HTTPError(HTTPStatus.LENGTH_REQUIRED, "Content-Length is required")
        if not text.isdigit():
            raise HTTPError(HTTPStatus.BAD_REQUEST, f"bad Content-Length {text!r}")
        length = int(text)
        if length == 0:
            raise HTTPError(HTTPStatus.BAD_REQUEST, "empty body: send a trace (JSON or gzip)")
        if length > self.server.max_bytes:
            raise HTTPError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                            f"body of {length:,} bytes; this service accepts at most {self.server.max_bytes:,}")
        return length

    def _reply(self, status: HTTPStatus, document: dict, headers: dict | None = None) -> None:
        if status >= 400:
            # A body may be partly unread: the connection cannot carry another request.
            self.close_connection = True
        data = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args) -> None:
        log.info("%s %s", self.address_string(), format % args)
