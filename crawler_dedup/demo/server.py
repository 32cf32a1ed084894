"""A small HTTP server on 127.0.0.1 for the demo and the tests: files of a folder, plus fixed routes.

Query strings and `;jsessionid=...` path parameters are ignored when finding the file, the way
many real sites serve the same page under tracking and session URLs.
"""

from __future__ import annotations

import mimetypes
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit


class _Handler(BaseHTTPRequestHandler):
    server: "PageServer"

    def log_message(self, *args):  # quiet: the crawl log is what matters
        pass

    def do_GET(self):
        path = unquote(urlsplit(self.path).path).split(";", 1)[0]
        route = self.server.routes.get(path)
        if route is not None:
            status, headers, body = route
        else:
            status, headers, body = self._file(path)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _file(self, path: str):
        root = self.server.root
        if root is None:
            return 404, {"Content-Type": "text/plain"}, b"not found"
        if path.endswith("/"):
            path += "index.html"
        full = os.path.realpath(os.path.join(root, path.lstrip("/")))
        if not full.startswith(os.path.realpath(root) + os.sep) or not os.path.isfile(full):
            return 404, {"Content-Type": "text/plain"}, b"not found"
        ctype = mimetypes.guess_type(full)[0] or "application/octet-stream"
        if ctype.startswith("text/"):
            ctype += "; charset=utf-8"
        with open(full, "rb") as fh:
            return 200, {"Content-Type": ctype}, fh.read()


class PageServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, root: str | None = None, routes: dict | None = None):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.root, self.routes = root, dict(routes or {})
        self._thread: threading.Thread | None = None

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

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
