#!/usr/bin/env python3
"""serve.py: serve a directory on localhost (make web-serve, and the browser test).

    python3 tests/web/serve.py DIR [PORT]     PORT 0 picks a free one

Loopback only; prints the URL on its first line. The page is static, with relative paths: any
static host serves it the same way (the .wasm as application/wasm)."""
import functools
import http.server
import sys


class Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".wasm": "application/wasm", ".js": "text/javascript", ".data": "application/octet-stream",
                      ".jsonl": "application/x-ndjson"}

    def log_message(self, fmt, *args):   # quiet: the test prints what matters
        pass


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: serve.py DIR [PORT]")
    port = int(sys.argv[2]) if len(sys.argv) == 3 else 8765
    handler = functools.partial(Handler, directory=sys.argv[1])
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as srv:
        print(f"flashstep: serving {sys.argv[1]} at http://127.0.0.1:{srv.server_address[1]}/ (Ctrl-C stops)", flush=True)
        try:
            srv.serve_forever()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
