#!/usr/bin/env python3
"""tus clients of `vault receive` (the tests' peer, not part of vault).

    tus-client.py tuspy URL TOKEN KEY FILE       upload FILE with tuspy (a tus client from PyPI)
    tus-client.py hostile URL TOKEN OTHER_TOKEN  misbehaving tus requests, one JSON line each
    tus-client.py stall URL TOKEN SECRET         a PATCH with Upload-Checksum whose body stops before
                                                 its end (a document holding SECRET): prints {"stalled"}
                                                 and holds the connection for 120 s
    tus-client.py endless URL TOKEN              a PATCH with Content-Length 10^12 past Upload-Length:
                                                 prints {"status", "sent"} (bytes sent before the answer)

Each hostile case prints {"case", "status", "offset"} (the Upload-Offset answered, if any).
"""
import base64
import hashlib
import json
import socket
import sys
import time
import urllib.parse

import requests
from tusclient import client


def tuspy(url, token, key, path):
    c = client.TusClient(url + "/files/", headers={"Authorization": "Bearer " + token, "Idempotency-Key": key})
    uploader = c.uploader(file_path=path, chunk_size=256 * 1024, upload_checksum=True,
                          metadata={"filename": "batch.json"})
    uploader.upload()
    print(json.dumps({"url": uploader.url, "offset": uploader.offset}))


def hostile(url, token, other):
    base = {"Tus-Resumable": "1.0.0", "Authorization": "Bearer " + token}
    body = json.dumps({"Files": []}).encode()
    doc = b"tus hostile"
    payload = ('{"Files":[{"Id":"%032x","Name":"t.txt","ContentType":"text/plain","Size":%d,"SHA256":"%s","Data":"%s"}]}'
               % (1, len(doc), hashlib.sha256(doc).hexdigest(), base64.b64encode(doc).decode())).encode()

    def create(key, length=len(payload)):
        r = requests.post(url + "/files/", headers=dict(base, **{"Upload-Length": str(length), "Idempotency-Key": key}))
        return r, (url + r.headers["Location"]) if r.status_code == 201 else None

    def patch(loc, offset, data, headers=None, auth=base):
        h = dict(auth, **{"Upload-Offset": str(offset), "Content-Type": "application/offset+octet-stream"})
        h.update(headers or {})
        return requests.patch(loc, data=data, headers=h)

    def out(name, r):
        print(json.dumps({"case": name, "status": r.status_code, "offset": r.headers.get("Upload-Offset")}), flush=True)

    r, loc = create("tus-h1")
    out("create", r)
    out("offset-jumps", patch(loc, 10, payload[10:20]))
    out("first-chunk", patch(loc, 0, payload[:20]))
    out("offset-overlaps", patch(loc, 10, payload[10:30]))
    other_auth = dict(base, Authorization="Bearer " + other)
    out("other-station-head", requests.head(loc, headers=other_auth))
    out("other-station-patch", patch(loc, 20, payload[20:30], auth=other_auth))
    bad = base64.b64encode(hashlib.sha1(b"not this").digest()).decode()
    out("checksum-mismatch", patch(loc, 20, payload[20:40], {"Upload-Checksum": "sha1 " + bad}))
    good = base64.b64encode(hashlib.sha1(payload[20:]).digest()).decode()
    out("past-the-end", patch(loc, 20, payload[20:] + b"xx"))
    r2, loc2 = create("tus-h2")
    out("create-again", r2)
    out("head", requests.head(loc2, headers=base))
    out("terminate", requests.delete(loc2, headers=base))
    out("head-after-terminate", requests.head(loc2, headers=base))
    out("too-large", create("tus-h3", 1 << 40)[0])
    out("no-version", requests.post(url + "/files/", headers={"Authorization": base["Authorization"], "Upload-Length": "5"}))
    out("wrong-content-type", requests.patch(loc2, data=b"x", headers=dict(base, **{"Upload-Offset": "0"})))
    r3, loc3 = create("tus-h4")
    out("rest-with-checksum", patch(loc3, 0, payload, {"Upload-Checksum": "sha1 " + base64.b64encode(hashlib.sha1(payload).digest()).decode()}))
    out("head-complete", requests.head(loc3, headers=base))


def raw_patch(url, token, length, checksum=None):
    """Creates an upload of `length` bytes, and opens a PATCH of it on a raw socket (its head sent)."""
    base = {"Tus-Resumable": "1.0.0", "Authorization": "Bearer " + token}
    r = requests.post(url + "/files/", headers=dict(base, **{"Upload-Length": str(length), "Idempotency-Key": "raw-%d" % time.time_ns()}))
    loc = urllib.parse.urlparse(url).path.rstrip("/") + r.headers["Location"]
    u = urllib.parse.urlparse(url)
    c = socket.create_connection((u.hostname, u.port), timeout=30)
    return c, loc, base


def stall(url, token, secret):
    doc = (secret + " ").encode() * 64
    payload = ('{"Files":[{"Id":"%032x","Name":"%s.pdf","ContentType":"text/plain","Size":%d,"SHA256":"%s","Data":"%s"}]}'
               % (7, secret, len(doc), hashlib.sha256(doc).hexdigest(), base64.b64encode(doc).decode())).encode()
    c, loc, base = raw_patch(url, token, len(payload))
    checksum = "sha256 " + base64.b64encode(hashlib.sha256(payload).digest()).decode()
    head = ("PATCH %s HTTP/1.1\r\nHost: x\r\nTus-Resumable: 1.0.0\r\nAuthorization: %s\r\nUpload-Offset: 0\r\n"
            "Content-Type: application/offset+octet-stream\r\nUpload-Checksum: %s\r\nContent-Length: %d\r\n\r\n"
            % (loc, base["Authorization"], checksum, len(payload))).encode()
    c.sendall(head + payload[:-8])
    print(json.dumps({"stalled": True}), flush=True)
    time.sleep(120)


def endless(url, token):
    c, loc, base = raw_patch(url, token, 100)
    head = ("PATCH %s HTTP/1.1\r\nHost: x\r\nTus-Resumable: 1.0.0\r\nAuthorization: %s\r\nUpload-Offset: 0\r\n"
            "Content-Type: application/offset+octet-stream\r\nContent-Length: %d\r\n\r\n"
            % (loc, base["Authorization"], 10 ** 12)).encode()
    c.sendall(head)
    block, sent, status = b"0" * 65536, 0, 0
    c.settimeout(0.0)
    start = time.monotonic()
    while time.monotonic() - start < 60 and sent < 20 << 30:
        try:
            answer = c.recv(4096)
            if answer:
                status = int(answer.split(b" ")[1])
            break
        except BlockingIOError:
            pass
        try:
            sent += c.send(block)
        except BlockingIOError:
            time.sleep(0.001)
        except OSError:
            break
    print(json.dumps({"status": status, "sent": sent}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "tuspy":
        tuspy(*sys.argv[2:6])
    elif sys.argv[1] == "stall":
        stall(*sys.argv[2:5])
    elif sys.argv[1] == "endless":
        endless(*sys.argv[2:4])
    else:
        hostile(*sys.argv[2:5])
