#!/usr/bin/env python3
"""A load balancer in front of several `vault receive` processes, for the tests of receivers that
share one remote vault (docs/RECEIVE.md, "Several receivers, one store").

It listens on 127.0.0.1 (a port the OS picks, written to --port-file) and hands each request to
the next --upstream in turn (round robin), so a station's consecutive batches reach different
receivers. An upstream that refuses the connection (its process was killed) is passed over for
the next one, as a balancer's passive health check does; one that drops a request it took
answers the client 502, which `vault upload` retries (and the retry goes to the next upstream).
Each request is logged as one JSON line to --log: method, path, upstream port, status.
Bodies are relayed whole (the tests' batches are small).
"""
import argparse
import http.client
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade"}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--upstream", action="append", required=True)
    p.add_argument("--port-file", required=True)
    p.add_argument("--log")
    args = p.parse_args()
    ups = [urlsplit(u) for u in args.upstream]
    lock = threading.Lock()
    state = {"next": 0}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def record(self, port, status):
            if args.log:
                with lock, open(args.log, "a") as f:
                    f.write(json.dumps({"method": self.command, "path": self.path, "upstream": port,
                                        "status": status}) + "\n")

        def reply(self, status, headers, data):
            self.send_response(status)
            for k, v in headers:
                if k.lower() not in HOP and k.lower() != "content-length":
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def relay(self):
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length) if length else b""
            if len(body) < length:
                self.close_connection = True
                return
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
            with lock:
                first = state["next"]
                state["next"] = (first + 1) % len(ups)
            for i in range(len(ups)):
                up = ups[(first + i) % len(ups)]
                conn = http.client.HTTPConnection(up.hostname, up.port, timeout=300)
                try:
                    conn.connect()
                except OSError:
                    self.record(up.port, "refused")
                    continue
                try:
                    conn.request(self.command, self.path, body=body if body else None, headers=headers)
                    r = conn.getresponse()
                    data = r.read()
                except (OSError, http.client.HTTPException):
                    self.record(up.port, 502)
                    self.reply(502, [("Content-Type", "text/plain")], b"upstream went away\n")
                    return
                finally:
                    conn.close()
                self.record(up.port, r.status)
                self.reply(r.status, r.getheaders(), data)
                return
            self.record(None, 503)
            self.reply(503, [("Content-Type", "text/plain"), ("Retry-After", "1")], b"no upstream\n")

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = relay

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
