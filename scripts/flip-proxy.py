#!/usr/bin/env python3
"""A faulty network path between a client and an S3 store, for tests of `vault upload --protocol s3`.

It relays every request on 127.0.0.1 (a port the OS picks, written to --port-file) to --upstream
unchanged (Host header included, so SigV4 signatures stay valid), except:

  --flip N      the body of each of the first N PUTs has one byte changed on the way (-1: every PUT),
                so the store's Content-MD5 check (BadDigest) is what catches it;
  --slowdown N  the first N PUTs are answered 503 SlowDown without reaching the store;
  --lose-answers TEXT:N  the first PUT or POST whose path holds TEXT reaches the store (or a
                receiver), but its answer is replaced by 500 InternalError (the write landed; the
                client cannot know), and the next N - 1 such requests are answered 500 without
                reaching it;
  An upstream that does not answer (nothing listening) gets the client a 502, logged as fault
  "upstream-unreachable": with --keep-bodies, a hop that holds every request back.
  --keep-bodies DIR  every request body is kept as DIR/NNNN.body (from 0001, in arrival order), and
                its log line names the file and the request's Idempotency-Key: what a
                TLS-terminating hop sees, for tests of what such a hop can do with it.
  --delay TEXT:S  every PUT whose path holds TEXT is held S seconds before it is relayed, and
                dropped (logged "client-gone") if its client went away meanwhile: a test can kill
                the client while it waits, and nothing of that request reaches the store.

Each request is logged as one JSON line to --log when the store has answered: method, path,
fault, status, the Range asked for and the body bytes sent back. A request given a fault is
logged when the fault is applied (status 503 for a slowdown, null for a flip, which the store
answers later): a client that gave up waiting and went on cannot outrun its log line, so a test
that reads the log once the client has exited sees every fault. A request whose body did not
arrive whole (the client went away) is logged as fault "client-gone" and not relayed.
The number of requests in flight is kept in LOG.busy, so a test can wait until the path is
idle (a request of a killed client may still be on its way to the store and into the log). The store decides everything
else; this script only changes bytes the way a broken middlebox would. Tests of remote vaults
use it with no fault, to count requests and bytes.
"""
import argparse
import http.client
import json
import os
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-authorization", "proxy-authenticate"}
SLOWDOWN = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
            b"<Message>Please reduce your request rate.</Message></Error>")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--upstream", required=True)
    p.add_argument("--port-file", required=True)
    p.add_argument("--flip", type=int, default=0)
    p.add_argument("--slowdown", type=int, default=0)
    p.add_argument("--lose-answers")
    p.add_argument("--delay")
    p.add_argument("--log")
    p.add_argument("--keep-bodies")
    args = p.parse_args()
    lose_text, lose_count = (args.lose_answers.rsplit(":", 1) if args.lose_answers else ("", "0"))
    lose_count = int(lose_count)
    delay_text, delay_seconds = (args.delay.rsplit(":", 1) if args.delay else ("", "0"))
    delay_seconds = float(delay_seconds)
    up = urlsplit(args.upstream)
    lock = threading.Lock()
    state = {"puts": 0, "busy": 0, "lost": 0, "bodies": 0}
    INTERNAL = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code>'
                b"<Message>We encountered an internal error.</Message></Error>")

    def busy(change):
        if not args.log:
            return
        with lock:
            state["busy"] += change
            with open(args.log + ".busy.tmp", "w") as f:
                f.write(str(state["busy"]))
            os.replace(args.log + ".busy.tmp", args.log + ".busy")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        kept = None

        def record(self, fault, status, sent=0):
            if args.log:
                with lock, open(args.log, "a") as f:
                    f.write(json.dumps({"method": self.command, "path": self.path, "fault": fault, "status": status,
                                        "range": self.headers.get("Range"), "bytes": sent, "body": self.kept,
                                        "key": self.headers.get("Idempotency-Key")}) + "\n")

        def relay(self):
            busy(+1)
            try:
                self.relay_counted()
            finally:
                busy(-1)

        def relay_counted(self):
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length) if length else b""
            fault = None
            if len(body) < length:
                self.record("client-gone", None)
                self.close_connection = True
                return
            self.kept = None
            if args.keep_bodies and body:
                with lock:
                    state["bodies"] += 1
                    self.kept = os.path.join(args.keep_bodies, "%04d.body" % state["bodies"])
                with open(self.kept, "wb") as f:
                    f.write(body)
            if self.command == "PUT" and delay_text and delay_text in self.path:
                time.sleep(delay_seconds)
                try:
                    ready, _, _ = select.select([self.connection], [], [], 0)
                    gone = bool(ready) and self.connection.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    gone = True
                if gone:
                    self.record("client-gone", None)
                    self.close_connection = True
                    return
            lose = None
            if self.command in ("PUT", "POST") and lose_text and lose_text in self.path:
                with lock:
                    if state["lost"] < lose_count:
                        state["lost"] += 1
                        lose = state["lost"]
            if lose is not None and lose > 1:
                self.record("lost-answer", 500)
                self.internal_error()
                return
            if self.command == "PUT":
                with lock:
                    state["puts"] += 1
                    n = state["puts"]
                if n <= args.slowdown:
                    self.record("slowdown", 503)
                    self.send_response(503)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(SLOWDOWN)))
                    self.end_headers()
                    self.wfile.write(SLOWDOWN)
                    return
                if body and (args.flip < 0 or n - args.slowdown <= args.flip):
                    changed = bytearray(body)
                    changed[len(changed) // 2] ^= 0x01
                    body = bytes(changed)
                    fault = "flip"
                    self.record(fault, None)
            conn = http.client.HTTPConnection(up.hostname, up.port, timeout=120)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
            try:
                conn.request(self.command, self.path, body=body if (body or self.command in ("PUT", "POST")) else None, headers=headers)
                r = conn.getresponse()
                data = r.read()
            except OSError:
                # Nothing answers upstream: the client gets a 502, and the log says so.
                self.record("upstream-unreachable", 502)
                self.send_response(502)
                self.send_header("Content-Length", "0")
                self.end_headers()
                self.close_connection = True
                return
            if lose is not None:
                conn.close()
                self.record("lost-answer", r.status)
                self.internal_error()
                return
            if fault is None:
                self.record(fault, r.status, 0 if self.command == "HEAD" else len(data))
            self.send_response(r.status, r.reason)
            for k, v in r.getheaders():
                if k.lower() not in HOP and k.lower() != "content-length":
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
            conn.close()

        def internal_error(self):
            self.send_response(500)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(INTERNAL)))
            self.end_headers()
            self.wfile.write(INTERNAL)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = relay

    busy(0)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
