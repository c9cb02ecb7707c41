#!/usr/bin/env python3
"""Slow clients of `vault receive` (the tests' peer, not part of vault).

Opens COUNT connections to HOST:PORT, each sending the head of `POST PATH` with an 8 KiB
Content-Length and then its body one byte every second, as an attacker without a token would to
hold the receiver's connections. Prints {"opened"} once they are open; stops after SECONDS (or when every connection was
closed by the server) and prints {"opened", "closed_by_server", "seconds"}.

    trickle-client.py HOST PORT PATH COUNT SECONDS
"""
import json
import socket
import sys
import time


def main():
    host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    count, seconds = int(sys.argv[4]), float(sys.argv[5])
    head = (
        "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        "Content-Length: 8192\r\n\r\n" % (path, host, port)
    ).encode()
    conns = []
    for _ in range(count):
        try:
            c = socket.create_connection((host, port), timeout=2)
            c.sendall(head)
            conns.append(c)
        except OSError:
            pass  # the server's backlog is full: what matters is what it does with the others
    opened, closed = len(conns), 0
    print(json.dumps({"opened": opened}), flush=True)
    start = time.monotonic()
    while conns and time.monotonic() - start < seconds:
        alive = []
        for c in conns:
            try:
                c.sendall(b"a")
                alive.append(c)
            except OSError:
                closed += 1
                c.close()
        conns = alive
        time.sleep(1)
    for c in conns:
        c.close()
    print(json.dumps({"opened": opened, "closed_by_server": closed, "seconds": round(time.monotonic() - start, 1)}))


if __name__ == "__main__":
    main()
