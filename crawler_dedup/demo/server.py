"""A small HTTP server on 127.0.0.1 for the demo and the tests: files of a folder, plus fixed routes.

Query strings and `;jsessionid=...` path parameters are ignored when finding the file, the way
many real sites serve the same page under tracking and session URLs.

HTTP/1.1 with keep-alive, and each file read once and then served from memory (read again if it
changes): Scrapy reuses its connections, so a page costs the server little CPU and a benchmark
crawl measures the crawler rather than this server.

`validators` makes it a server of each kind a recrawl meets: `none` sends no ETag nor
Last-Modified; `honour` sends both (a strong ETag of the bytes, the file's time) and answers a
conditional request with a bodiless 304 when nothing changed; `weak` the same with `W/` ETags;
`ignore` sends them and always answers 200; `lie` answers every conditional request with 304;
`refuse` answers every conditional request with 412 (a firewall refusing replayed validators).
`served` counts the answers (200, 304) and the body bytes sent; `asked` lists the conditional
requests (path, If-None-Match, If-Modified-Since, as received).
"""

from __future__ import annotations

import email.utils
import mimetypes
import os
import socket
import stat
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

import xxhash

VALIDATORS = ("none", "honour", "weak", "ignore", "lie", "refuse")


class _Handler(BaseHTTPRequestHandler):
    server: "PageServer"
    protocol_version = "HTTP/1.1"  # keep-alive: every response has a Content-Length

    def log_message(self, *args):  # quiet: the crawl log is what matters
        pass

    def setup(self):
        super().setup()
        with self.server.lock:
            self.server.connections.add(self.connection)

    def finish(self):
        with self.server.lock:
            self.server.connections.discard(self.connection)
        super().finish()

    def do_GET(self):
        path = unquote(urlsplit(self.path).path).split(";", 1)[0]
        route = self.server.routes.get(path)
        match, since = self.headers.get("If-None-Match"), self.headers.get("If-Modified-Since")
        if match is not None or since is not None:
            with self.server.lock:
                self.server.asked.append((path, match, since))
        if route is not None:
            status, headers, body = route
            mtime = self.server.started
        else:
            status, headers, body, mtime = self._file(path)
        if status == 200 and self.server.validators != "none":
            headers, status = self._validated(dict(headers), body, mtime)
            if status in (304, 412):
                body = b""
        with self.server.lock:
            self.server.paths.append(self.path)
            self.server.served[status] = self.server.served.get(status, 0) + 1
            self.server.served["bytes"] = self.server.served.get("bytes", 0) + len(body)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _validated(self, headers: dict, body: bytes, mtime: float) -> tuple[dict, int]:
        """The validators' headers, and 304 when the request's conditions say nothing changed."""
        kind = self.server.validators
        etag = ('W/' if kind == "weak" else "") + '"' + xxhash.xxh64_hexdigest(body) + '"'
        headers["ETag"] = etag
        headers["Last-Modified"] = email.utils.formatdate(int(mtime), usegmt=True)
        match, since = self.headers.get("If-None-Match"), self.headers.get("If-Modified-Since")
        if kind == "ignore" or (match is None and since is None):
            return headers, 200
        if kind == "lie":
            return headers, 304
        if kind == "refuse":
            return {}, 412
        if match is not None:  # (weak comparison, RFC 9110 13.1.2; If-Modified-Since is then ignored)
            tags = {t.strip().removeprefix("W/") for t in match.split(",")}
            return headers, 304 if etag.removeprefix("W/") in tags or "*" in tags else 200
        try:
            when = email.utils.parsedate_to_datetime(since or "").timestamp()
        except (TypeError, ValueError):
            return headers, 200
        return headers, 304 if int(mtime) <= when else 200

    def _file(self, path: str):
        root = self.server.root
        if root is None:
            return 404, {"Content-Type": "text/plain"}, b"not found", 0.0
        if path.endswith("/"):
            path += "index.html"
        full = os.path.realpath(os.path.join(root, path.lstrip("/")))
        if not full.startswith((self.server.real_root or "") + os.sep):
            return 404, {"Content-Type": "text/plain"}, b"not found", 0.0
        try:
            st = os.stat(full)
        except OSError:
            st = None
        if st is None or not stat.S_ISREG(st.st_mode):
            return 404, {"Content-Type": "text/plain"}, b"not found", 0.0
        key = (st.st_mtime_ns, st.st_size)
        cached = self.server.files.get(full)
        if cached is not None and cached[0] == key:
            return (*cached[1], st.st_mtime)
        ctype = mimetypes.guess_type(full)[0] or "application/octet-stream"
        if ctype.startswith("text/"):
            ctype += "; charset=utf-8"
        with open(full, "rb") as fh:
            answer = 200, {"Content-Type": ctype}, fh.read()
        self.server.files[full] = (key, answer)
        return (*answer, st.st_mtime)


class PageServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        import sys

        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return  # a crawler that went away mid-request (stopped, killed): nothing to report
        super().handle_error(request, client_address)

    def __init__(self, root: str | None = None, routes: dict | None = None, validators: str = "none"):
        if validators not in VALIDATORS:
            raise ValueError(f"validators={validators!r}: one of {', '.join(VALIDATORS)}")
        super().__init__(("127.0.0.1", 0), _Handler)
        self.root, self.routes, self.validators = root, dict(routes or {}), validators
        self.started = time.time()
        self.served: dict = {}
        self.paths: list[str] = []  # each request's path and query, as asked
        self.asked: list[tuple[str, str | None, str | None]] = []
        self.real_root = os.path.realpath(root) if root is not None else None
        self.files: dict[str, tuple] = {}  # real path -> ((mtime_ns, size), (status, headers, body))
        self._thread: threading.Thread | None = None
        self.lock = threading.Lock()
        self.connections: set[socket.socket] = set()  # open keep-alive connections, closed by stop()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> "PageServer":
        self._thread = threading.Thread(target=self.serve_forever, name="page-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        with self.lock:
            open_ones = list(self.connections)
        for conn in open_ones:  # a kept-alive connection would go on serving after stop()
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
