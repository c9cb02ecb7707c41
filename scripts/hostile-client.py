#!/usr/bin/env python3
"""Hostile clients of `vault receive` (the tests' peer, not part of vault).

Each case sends one misbehaving request to URL (http://127.0.0.1:PORT) with the station token
TOKEN and prints one JSON line: {"case", "status" (0 when the connection closed without an
answer), "body" (first 300 characters), "seconds"}. Bodies are sent with Python `requests` where
a client library can send them, and over a raw socket where the point is to break HTTP itself.

    hostile-client.py URL TOKEN CASE...
"""
import base64
import hashlib
import json
import socket
import sys
import threading
import time
import urllib.parse

import requests


def entry(i, name, data, sha=None, size=None, id_=None):
    return (
        '{"Id":"%s","Name":%s,"ContentType":"text/plain","Size":%d,"SHA256":"%s","Data":"%s"}'
        % (
            id_ or ("%032x" % (i + 1)),
            json.dumps(name),
            len(data) if size is None else size,
            sha or hashlib.sha256(data).hexdigest(),
            base64.b64encode(data).decode(),
        )
    )


def payload(entries):
    return ('{"Files":[' + ",".join(entries) + "]}").encode()


class Raw:
    """One TCP connection, for requests that are not HTTP a library would send."""

    def __init__(self, url, timeout=60):
        u = urllib.parse.urlparse(url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=timeout)

    def send(self, data):
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            return False

    def answer(self):
        """The status of the answer, and its body; status 0 when the server closed without one."""
        data = b""
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    break
                data += chunk
                if b"\r\n\r\n" in data:
                    head, _, rest = data.partition(b"\r\n\r\n")
                    length = 0
                    for line in head.split(b"\r\n")[1:]:
                        k, _, v = line.partition(b":")
                        if k.strip().lower() == b"content-length":
                            length = int(v.strip())
                    if len(rest) >= length:
                        break
        except OSError:
            pass
        finally:
            self.sock.close()
        if not data.startswith(b"HTTP/1.1 "):
            return 0, ""
        head, _, rest = data.partition(b"\r\n\r\n")
        return int(head[9:12]), rest.decode("utf-8", "replace")


def read_to_close(sock):
    """Everything the server sends until it closes (or resets) the connection."""
    data = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    return data


def head(url, token, key, extra="", length=None, chunked=False):
    u = urllib.parse.urlparse(url)
    lines = [
        "POST /batches HTTP/1.1",
        "Host: %s:%d" % (u.hostname, u.port),
        "Authorization: Bearer %s" % token,
        "Idempotency-Key: %s" % key,
        "Content-Type: application/json",
    ]
    if length is not None:
        lines.append("Content-Length: %d" % length)
    if chunked:
        lines.append("Transfer-Encoding: chunked")
    return ("\r\n".join(lines) + "\r\n" + extra + "\r\n").encode()


def post(url, token, key, body, **kw):
    headers = {"Authorization": "Bearer " + token, "Idempotency-Key": key, "Content-Type": "application/json"}
    try:
        r = requests.post(url + "/batches", data=body, headers=headers, timeout=120, **kw)
        return r.status_code, r.text
    except requests.exceptions.ConnectionError:
        return 0, ""


def case(url, token, name):
    good = entry(0, "a.txt", b"hello")
    if name == "slow-headers":
        # One byte of headers every 0.4 s: never idle long enough for an idle timeout alone.
        raw = Raw(url)
        for b in head(url, token, "slow-headers", length=10):
            if not raw.send(bytes([b])):
                break
            time.sleep(0.4)
        return raw.answer()
    if name == "slow-body":
        body = payload([entry(0, "a.txt", b"x" * 4000)])
        raw = Raw(url)
        raw.send(head(url, token, "slow-body", length=len(body)))
        for i in range(0, len(body), 40):
            if not raw.send(body[i:i + 40]):
                break
            time.sleep(0.25)
        return raw.answer()
    if name == "endless-chunked":
        def forever():
            yield b'{"Files":[{"Id":"00000000000000000000000000000001","Name":"a","ContentType":"text/plain",'
            yield b'"Size":999999999999,"SHA256":"' + b"0" * 64 + b'","Data":"'
            while True:
                yield b"QUFB" * 16384
        return post(url, token, "endless-chunked", forever())
    if name == "huge-headers":
        raw = Raw(url)
        raw.send(head(url, token, "huge-headers", extra="X-Filler: " + "a" * (200 << 10) + "\r\n", length=2))
        raw.send(b"{}")
        return raw.answer()
    if name == "length-lies-long":
        # Says 1 MB, sends a few bytes, and hangs up: the body never completes.
        raw = Raw(url)
        raw.send(head(url, token, "length-lies-long", length=1 << 20) + payload([good])[:30])
        raw.sock.shutdown(socket.SHUT_WR)
        return raw.answer()
    if name == "length-lies-short":
        body = payload([good])
        raw = Raw(url)
        raw.send(head(url, token, "length-lies-short", length=len(body) - 10) + body)
        return raw.answer()
    if name == "length-and-chunked":
        body = payload([good])
        raw = Raw(url)
        chunk = b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"
        raw.send(head(url, token, "length-and-chunked", length=len(body), chunked=True) + chunk)
        return raw.answer()
    if name == "malformed-json":
        return post(url, token, "malformed-json", b'{"Files":[{"Id":1}]}')
    if name == "malformed-base64":
        bad = entry(0, "a.txt", b"hello").replace("aGVsbG8=", "a$Vs*G8=")
        return post(url, token, "malformed-base64", payload([bad]))
    if name == "name-with-slash":
        return post(url, token, "name-with-slash", payload([good, entry(1, "../etc/passwd", b"x")]))
    if name == "name-with-control":
        return post(url, token, "name-with-control", payload([good, entry(1, "bell\u0007.txt", b"y")]))
    if name == "duplicate-ids":
        same = "%032x" % 7
        return post(url, token, "duplicate-ids", payload([entry(0, "a", b"1", id_=same), entry(1, "b", b"2", id_=same)]))
    if name == "twenty-one":
        return post(url, token, "twenty-one", payload([entry(i, "d%d" % i, b"doc %d" % i) for i in range(21)]))
    if name == "refused-body-read-on":
        # A wrong token and a body of 1 TB, sent for up to 15 s: the 401 closes the connection,
        # so the sender is stopped after what the socket buffers hold (before: read on at line
        # rate until the idle timeout, which a sender that never pauses never meets).
        raw = Raw(url, timeout=20)
        got = {}

        def reader():
            got["data"] = read_to_close(raw.sock)

        t = threading.Thread(target=reader)
        t.start()
        raw.send(head(url, "not-a-token", "read-on", length=1 << 40))
        sent, chunk, started = 0, b"QUFB" * 16384, time.monotonic()
        while time.monotonic() - started < 15:
            try:
                raw.sock.sendall(chunk)
            except OSError:
                break
            sent += len(chunk)
        try:
            raw.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        t.join(30)
        raw.sock.close()
        data = got.get("data", b"")
        return (int(data[9:12]) if data.startswith(b"HTTP/1.1 ") else 0), "sent=%d" % sent
    if name in ("pipelined-after-refusal", "pipelined-after-400"):
        # A refused request (no token; or, with the token, a body that is not a payload) and, in
        # the same write, one that would be answered: only the refusal is answered (it says
        # Connection: close), then the connection closes.
        u = urllib.parse.urlparse(url)
        raw = Raw(url, timeout=20)
        who = "not-a-token" if name == "pipelined-after-refusal" else token
        raw.send(head(url, who, name, length=5) + b"hello"
                 + ("GET /healthz HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (u.hostname, u.port)).encode())
        data = read_to_close(raw.sock)
        raw.sock.close()
        status = int(data[9:12]) if data.startswith(b"HTTP/1.1 ") else 0
        return status, "answers=%d" % data.count(b"HTTP/1.1 ")
    raise SystemExit("unknown case " + name)


def main():
    url, token = sys.argv[1], sys.argv[2]
    for name in sys.argv[3:]:
        started = time.monotonic()
        status, body = case(url, token, name)
        print(json.dumps({"case": name, "status": status, "body": body[:300],
                          "seconds": round(time.monotonic() - started, 2)}), flush=True)


if __name__ == "__main__":
    main()
