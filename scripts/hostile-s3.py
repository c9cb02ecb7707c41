#!/usr/bin/env python3
"""A hostile S3-compatible store for the tests, on 127.0.0.1 (a port the OS picks, written to
--port-file). It signs nothing and checks nothing; it answers as a store that wants to exhaust
its client would, one behaviour per --mode:

  log              every request is logged (method, path, whether it carried credentials) and
                   answered 404: a destination nobody should send to
  endless-config   GET of PREFIX/vault.json streams bytes without end
  endless-listing  a listing streams XML without end
  tokens           listings are truncated pages whose continuation tokens alternate A, B, A, ...
  endless-object   lists one object of 467 bytes under objects/ and serves it without end
  slow             every answer trickles one byte every --interval seconds (a slow loris)

Bucket checks (a GET of the bucket with max-keys=1) are answered with an empty listing, and
GET of PREFIX/vault.json with --config's bytes (in the modes that get past it), so the client
reaches the behaviour under test. Every endless answer stops by itself after --cap bytes or when
the client goes away; the server stops on SIGTERM.
"""
import argparse
import json
import os
import socketserver
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlsplit

ARGS = None
OBJECT_ID = "0123456789abcdef0123456789abcdef"


def log(entry):
    if ARGS.log:
        with open(ARGS.log, "a") as f:
            f.write(json.dumps(entry) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def handle_any(self):
        url = urlsplit(self.path)
        query = parse_qs(url.query, keep_blank_values=True)
        log({"method": self.command, "path": url.path, "query": url.query,
             "authorization": "Authorization" in self.headers})
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        parts = url.path.lstrip("/").split("/", 1)
        key = parts[1] if len(parts) > 1 else ""
        mode = ARGS.mode
        if mode == "log":
            return self.send_fixed(404, b"")
        if mode == "slow":
            return self.trickle()
        if self.command == "GET" and key == "" and query.get("max-keys") == ["1"]:
            return self.send_fixed(200, b'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>')
        if self.command == "GET" and key.endswith("vault.json"):
            if mode == "endless-config":
                return self.endless(b'{"format":"vault/2",' + b" " * 65536)
            return self.send_fixed(200, open(ARGS.config, "rb").read())
        if self.command == "GET" and key == "" and "list-type" in query:
            prefix = query.get("prefix", [""])[0]
            if mode == "endless-listing":
                return self.endless(b"<ListBucketResult>", b"<Contents><Key>" + prefix.encode() + b"x</Key><Size>1</Size></Contents>" * 64)
            if mode == "tokens":
                token = query.get("continuation-token", [""])[0]
                following = "B" if token == "A" else "A"
                body = ('<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>%s</NextContinuationToken>'
                        '</ListBucketResult>' % following).encode()
                return self.send_fixed(200, body)
            if mode == "endless-object" and prefix.endswith("objects/"):
                body = ('<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>%s%s.vlt</Key><Size>467</Size>'
                        '<ETag>"x"</ETag></Contents></ListBucketResult>' % (prefix, OBJECT_ID)).encode()
                return self.send_fixed(200, body)
            return self.send_fixed(200, b"<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>")
        if self.command == "GET" and mode == "endless-object" and key.endswith(OBJECT_ID + ".vlt"):
            return self.endless(b"VAULTENV", b"\0" * 65536)
        return self.send_fixed(404, b"<Error><Code>NoSuchKey</Code></Error>")

    do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = do_OPTIONS = handle_any

    def do_HEAD(self):
        url = urlsplit(self.path)
        log({"method": "HEAD", "path": url.path, "query": url.query, "authorization": "Authorization" in self.headers})
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def send_fixed(self, status, body):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def endless(self, head, repeat=None):
        """A 200 whose body never ends (chunked), up to --cap bytes or until the client leaves."""
        repeat = repeat or head
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sent = 0
        try:
            for piece in [head] + [repeat] * (ARGS.cap // max(1, len(repeat))):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                sent += len(piece)
                if sent >= ARGS.cap:
                    break
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def trickle(self):
        """A 200 that promises a body and sends it one byte at a time, --interval seconds apart."""
        body = b"<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            for i in range(len(body)):
                self.wfile.write(body[i:i + 1])
                self.wfile.flush()
                time.sleep(ARGS.interval)
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True


class Server(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port-file", required=True)
    p.add_argument("--log")
    p.add_argument("--mode", required=True,
                   choices=["log", "endless-config", "endless-listing", "tokens", "endless-object", "slow"])
    p.add_argument("--config", help="the vault.json to serve")
    p.add_argument("--cap", type=int, default=4 << 30, help="bytes after which an endless answer stops (default 4 GiB)")
    p.add_argument("--interval", type=float, default=20.0, help="seconds between the bytes of a slow answer")
    ARGS = p.parse_args()
    server = Server(("127.0.0.1", 0), Handler)
    tmp = ARGS.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, ARGS.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
