#!/usr/bin/env python3
"""The load of `make bench`'s intake figures (scripts/bench-intake.sh), sent from one process.

One asyncio event loop plays every station: each sends its batches one after the other, all
stations at once, each batch a multipart form as `curl -F` sends it (the same parts, the same
headers), over a connection of its own (`Connection: close`). The bodies are built once in
memory and sent from there (a 1 GiB document is sent from its file with sendfile), so the
generator itself costs little more than the kernel's copy of the bytes: the receiver's share of
the two cores is what is measured. (Before, 20 curl processes took about half of them.)

Prints one JSON line: wall seconds, payload bytes (10^9 per GB), batches, the server's CPU
seconds (user + system, from /proc/PID/stat, with its live child processes: PHP's workers) and
the generator's own. Exit 1 unless every answer is 200 (the first other answer is printed).
"""
import argparse
import asyncio
import json
import os
import resource
import sys
import time

BOUNDARY = "------------------------vaultbench7f3a9c2e41d8"


def clock_ticks():
    return os.sysconf("SC_CLK_TCK")


def children(pid):
    """The live child processes of `pid` (PHP's built-in server forks its workers)."""
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return found


def cpu_seconds(pid):
    """User + system CPU seconds of `pid` and its live children (and reaped ones' totals)."""
    total = 0.0
    for p in [pid] + children(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # After the name: state is field 3, utime 14, stime 15, cutime 16, cstime 17 (1-based).
        utime, stime, cutime, cstime = (int(fields[i]) for i in (11, 12, 13, 14))
        total += (utime + stime + (cutime + cstime if p == pid else 0)) / clock_ticks()
    return total


def part_head(name, filename):
    return (
        f"--{BOUNDARY}\r\n"
        f'Content-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()


def form_body(files):
    """A form of `files` (paths) as one bytes object, as curl -F 'files[]=@…' builds it."""
    pieces = []
    for path in files:
        pieces.append(part_head("files[]", os.path.basename(path)))
        with open(path, "rb") as f:
            pieces.append(f.read())
        pieces.append(b"\r\n")
    pieces.append(f"--{BOUNDARY}--\r\n".encode())
    return b"".join(pieces)


class Load:
    def __init__(self, args):
        self.args = args
        self.failures = []
        self.answers = 0

    @staticmethod
    def split(url):
        rest = url.split("://", 1)[1]
        hostport, _, path = rest.partition("/")
        host, _, port = hostport.rpartition(":")
        return host, int(port), "/" + path

    @staticmethod
    def head(url, token, key, length):
        host, port, path = Load.split(url)
        return (
            f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: vault-intake-load\r\n"
            f"Accept: */*\r\nAuthorization: Bearer {token}\r\nIdempotency-Key: {key}\r\n"
            f"Content-Length: {length}\r\nContent-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
            "Connection: close\r\n\r\n"
        ).encode()

    async def send(self, url, token, key, body=None, big=None):
        host, port, _ = self.split(url)
        reader, writer = await asyncio.open_connection(host, port)
        try:
            if body is not None:
                writer.write(self.head(url, token, key, len(body)))
                writer.write(body)
                await writer.drain()
            else:
                path, size = big
                head, tail = part_head("files[]", os.path.basename(path)), f"\r\n--{BOUNDARY}--\r\n".encode()
                writer.write(self.head(url, token, key, len(head) + size + len(tail)) + head)
                await writer.drain()
                with open(path, "rb") as f:
                    await asyncio.get_running_loop().sendfile(writer.transport, f)
                writer.write(tail)
                await writer.drain()
            answer = await reader.read()
        finally:
            writer.close()
        status = answer.split(b" ", 2)[1] if answer.startswith(b"HTTP/") else b"?"
        self.answers += 1
        if status != b"200":
            self.failures.append(answer[:600].decode("utf-8", "replace"))

    async def station(self, number, token, body, big):
        url = self.args.url[(number - 1) % len(self.args.url)]
        for batch in range(1, self.args.batches + 1):
            await self.send(url, token, f"{self.args.run}-station-{number}-batch-{batch}", body, big)

    async def run(self, tokens, body, big):
        await asyncio.gather(*(self.station(n + 1, t, body, big) for n, t in enumerate(tokens)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True, action="append", help="the receivers (stations take them in turn)")
    ap.add_argument("--tokens", required=True, help="a file with one station token a line (one station each)")
    ap.add_argument("--stations", type=int, required=True)
    ap.add_argument("--batches", type=int, required=True, help="batches each station sends in turn")
    ap.add_argument("--files", nargs="*", default=[], help="the documents of every batch")
    ap.add_argument("--big", help="one document sent alone from its file (sendfile)")
    ap.add_argument("--server-pid", type=int, required=True, action="append", help="the servers' processes")
    ap.add_argument("--run", default="run")
    args = ap.parse_args()
    with open(args.tokens) as f:
        tokens = [t.strip() for t in f if t.strip()]
    tokens = [tokens[n % len(tokens)] for n in range(args.stations)]
    body = form_body(args.files) if not args.big else None
    big = (args.big, os.path.getsize(args.big)) if args.big else None
    per_batch = len(body) if body is not None else None
    load = Load(args)
    own0 = resource.getrusage(resource.RUSAGE_SELF)
    cpu0, start = sum(map(cpu_seconds, args.server_pid)), time.monotonic()
    asyncio.run(load.run(tokens, body, big))
    wall, cpu1 = time.monotonic() - start, sum(map(cpu_seconds, args.server_pid))
    own1 = resource.getrusage(resource.RUSAGE_SELF)
    if per_batch is None:
        per_batch = len(part_head("files[]", os.path.basename(args.big))) + big[1] + len(f"\r\n--{BOUNDARY}--\r\n")
    batches = args.stations * args.batches
    print(json.dumps({
        "wall": wall, "bytes": per_batch * batches, "batches": batches, "server_cpu": cpu1 - cpu0,
        "load_cpu": (own1.ru_utime + own1.ru_stime) - (own0.ru_utime + own0.ru_stime),
    }))
    if load.failures or load.answers != batches:
        print(f"intake: {batches - len(load.failures)} of {batches} answers were 200; one of the others:\n"
              f"{load.failures[0] if load.failures else 'none came'}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
