"""Run a WSGI app on 127.0.0.1 in a background thread (one thread per request)."""
from __future__ import annotations

import contextlib
import socketserver
import threading
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *args) -> None:  # keep test output clean
        pass


class _ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        # A client that gave up on a slow reply closed its socket; that is the test's point.
        pass


@contextlib.contextmanager
def serve(app):
    """Yield the root URL (``http://127.0.0.1:PORT``) while ``app`` is served."""
    server = make_server("127.0.0.1", 0, app, server_class=_ThreadingWSGIServer,
                         handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
