#!/usr/bin/env python3
"""A batch receiver for `vault upload`: the test peer and the demo's back office.

Loopback only. It speaks the {"Files":[...]} contract (docs/UPLOAD.md) and injects faults:

  - 411 without Content-Length (or with chunked transfer encoding);
  - 401 without credentials, 403 with wrong ones (Bearer token, or Basic user/password);
  - 413 above --max-bytes, without reading the body;
  - in --mode verify (default): parses each payload, decodes every document, checks its size
    and SHA-256 (422 otherwise); in --mode sink: streams the body through SHA-256 only;
  - deduplicates by Idempotency-Key: the same key with the same body is answered 200 with
    "duplicate": true and not stored again; the same key with another body is 409;
  - follows a fault plan (--fault-plan FILE, a JSON list consumed one entry per request):
      {"action": "drop", "after": N}                 read N body bytes, then reset the connection
      {"action": "status", "status": 503, "retryAfter": 1}   answer that status (body read first)
      {"action": "status", "status": 400, "error": {...}}     ... with {"error": that value} as its body
      {"action": "endless", "status": 400, "rate": N}  answer that status with a body that never ends
      {"action": "slow", "rate": BYTES_PER_SECOND}   read the body slowly, then answer normally
      {"action": "ok"}                               answer normally

Every request is logged as one JSON object per line (--log FILE); accepted documents are
written to --store DIR as <Id> (objects) or <key>-<n> (strings). The port is chosen by the OS
(--port 0) and written to --port-file once listening.
"""
import argparse
import base64
import binascii
import hashlib
import json
import os
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.plan = json.load(open(args.fault_plan)) if args.fault_plan else []
        self.requests = 0
        self.keys = {}  # Idempotency-Key -> SHA-256 of the accepted body
        self.key_locks = {}  # Idempotency-Key -> the lock its requests take in turn
        self.log = open(args.log, "a", buffering=1) if args.log else None

    def next_fault(self):
        with self.lock:
            self.requests += 1
            n = self.requests
            fault = self.plan.pop(0) if self.plan else {"action": "ok"}
        return n, fault

    def record(self, **entry):
        entry["time"] = round(time.time(), 3)
        if self.log:
            with self.lock:
                self.log.write(json.dumps(entry, sort_keys=True) + "\n")
        if not self.state_quiet():
            print(json.dumps(entry, sort_keys=True), file=sys.stderr, flush=True)

    def state_quiet(self):
        return self.args.quiet


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "vault-test-receiver/1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.handle_upload()

    def do_PUT(self):
        self.handle_upload()

    def reply(self, status, body, close=False, headers=None):
        data = json.dumps(body, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    def authorized(self):
        a = self.server.state.args
        given = self.headers.get("Authorization")
        if a.token:
            expected = "Bearer " + a.token
        elif a.user:
            expected = "Basic " + base64.b64encode(f"{a.user}:{a.password}".encode()).decode()
        else:
            return None
        if given is None:
            return 401
        return None if given == expected else 403

    def read_body(self, length, rate=None, drop_after=None):
        digest = hashlib.sha256()
        chunks = [] if self.server.state.args.mode == "verify" else None
        remaining, got = length, 0
        start = time.monotonic()
        while remaining > 0:
            want = min(remaining, 65536)
            if drop_after is not None:
                want = min(want, drop_after - got)
                if want <= 0:
                    return None, None
            piece = self.rfile.read(want)
            if not piece:
                return None, None
            digest.update(piece)
            if chunks is not None:
                chunks.append(piece)
            got += len(piece)
            remaining -= len(piece)
            if rate:
                ahead = got / rate - (time.monotonic() - start)
                if ahead > 0:
                    time.sleep(ahead)
        return (b"".join(chunks) if chunks is not None else None), digest.hexdigest()

    def reset(self):
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()

    def handle_upload(self):
        st = self.server.state
        n, fault = st.next_fault()
        key = self.headers.get("Idempotency-Key")
        batch = self.headers.get("X-Vault-Batch")
        base = dict(n=n, method=self.command, path=self.path, key=key, batch=batch, fault=fault.get("action"),
                    head=self.headers.get("X-Vault-Log-Head"))
        length = self.headers.get("Content-Length")
        if length is None or "chunked" in (self.headers.get("Transfer-Encoding") or ""):
            st.record(status=411, **base)
            return self.reply(411, {"error": "Content-Length required"}, close=True)
        length = int(length)
        auth = self.authorized()
        if auth:
            st.record(status=auth, **base)
            return self.reply(auth, {"error": "unauthorized" if auth == 401 else "forbidden"}, close=True,
                              headers={"WWW-Authenticate": "Bearer"} if auth == 401 else None)
        if st.args.max_bytes and length > st.args.max_bytes:
            st.record(status=413, bytes=length, **base)
            return self.reply(413, {"error": f"payload of {length} bytes is larger than the limit of {st.args.max_bytes} bytes",
                                    "limit": st.args.max_bytes}, close=True)
        if fault.get("action") == "drop":
            self.read_body(length, drop_after=fault.get("after", 0))
            st.record(status="reset", after=fault.get("after", 0), **base)
            return self.reset()
        body, digest = self.read_body(length, rate=fault.get("rate") if fault.get("action") == "slow" else None)
        if digest is None:
            st.record(status="incomplete", **base)
            self.close_connection = True
            return
        if fault.get("action") == "endless":
            # An answer that never ends: a status, then body bytes until the client hangs up
            # (at `rate` bytes a second when given, else as fast as the client reads).
            st.record(status=fault["status"], bytes=length, endless=True, **base)
            self.send_response(fault["status"])
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(1 << 40))
            self.end_headers()
            rate = fault.get("rate")
            piece = b"x" * (1 if rate else 65536)
            try:
                while True:
                    self.wfile.write(piece)
                    self.wfile.flush()
                    if rate:
                        time.sleep(1 / rate)
            except OSError:
                pass
            self.close_connection = True
            return
        if fault.get("action") == "status":
            headers = {"Retry-After": fault["retryAfter"]} if "retryAfter" in fault else None
            st.record(status=fault["status"], bytes=length, **base)
            error = fault["error"] if "error" in fault else fault.get("message", "injected fault")
            return self.reply(fault["status"], {"error": error}, headers=headers)
        if not key:
            st.record(status=400, **base)
            return self.reply(400, {"error": "Idempotency-Key required"})
        # One request per key at a time, from the check to the record: two requests under the
        # same key (a resend while the interrupted first one is still being read) must not both
        # be accepted, as a real back office's idempotency would not allow.
        with st.lock:
            key_lock = st.key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with st.lock:
                seen = st.keys.get(key)
            if seen is not None:
                status = 200 if seen == digest else 409
                st.record(status=status, duplicate=True, bytes=length, sha256=digest, **base)
                return self.reply(status, {"duplicate": True} if status == 200 else {"error": "key reused with another body"})
            ids = []
            if body is not None:
                try:
                    payload = json.loads(body)
                    files = payload["Files"]
                    assert isinstance(files, list) and list(payload) == ["Files"]
                    for i, f in enumerate(files):
                        if isinstance(f, str):
                            data = base64.b64decode(f, validate=True)
                            ids.append(f"{key}-{i}")
                        else:
                            keys = ["Id", "Name", "ContentType", "Size", "SHA256", "Data"]
                            if "Tags" in f:  # only for a document with tags, before Data
                                keys.insert(5, "Tags")
                                assert f["Tags"] and all(isinstance(t, str) and t for t in f["Tags"]), f["Tags"]
                            assert list(f) == keys, list(f)
                            data = base64.b64decode(f["Data"], validate=True)
                            assert len(data) == f["Size"], f"{f['Id']}: size"
                            assert hashlib.sha256(data).hexdigest() == f["SHA256"], f"{f['Id']}: SHA-256"
                            ids.append(f["Id"])
                        if st.args.store:
                            with open(os.path.join(st.args.store, ids[-1]), "wb") as out:
                                out.write(data)
                except (ValueError, KeyError, AssertionError, TypeError, binascii.Error) as e:
                    st.record(status=422, error=str(e), **base)
                    return self.reply(422, {"error": f"invalid payload: {e}"})
            with st.lock:
                st.keys[key] = digest
            st.record(status=200, accepted=ids, bytes=length, sha256=digest, **base)
            self.reply(200, {"accepted": len(ids)})


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file")
    p.add_argument("--store")
    p.add_argument("--token")
    p.add_argument("--user")
    p.add_argument("--password")
    p.add_argument("--max-bytes", type=int)
    p.add_argument("--fault-plan")
    p.add_argument("--log")
    p.add_argument("--mode", choices=["verify", "sink"], default="verify")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args()
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("receiver: loopback addresses only")
    if args.store:
        os.makedirs(args.store, exist_ok=True)
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    server.state = State(args)
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(port))
        os.rename(tmp, args.port_file)
    print(f"receiver listening on http://{args.host}:{port}/", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
