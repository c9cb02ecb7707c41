#!/usr/bin/env python3
"""Crash safety: kill `vault add`, `vault remove` and `vault export` with SIGKILL at random
moments, and after each kill check that

  - the vault opens, and its index (`index.db`), read first, lists exactly the objects on disk
    (reconciled with `objects/` when a kill left it behind);
  - `verify` passes (every chunk of every document, and the index);
  - `list` shows exactly the documents that were there before, plus the new one only if its add
    reached its commit point (then it verifies like any other), minus the removed one only if
    the remove reached its commit point — nothing else appears or disappears;
  - every `batch-*.json` in the export folder is complete: valid JSON whose documents decode to
    their recorded SHA-256, and whose length matches the manifest when the manifest lists it;
  - `audit` finds nothing but, after a killed add, the documents it committed without recording
    them (`unlogged-object`); and once the next change has recorded those, nothing at all;
  - the vault still takes a new document afterwards (no stale lock).

Usage: crash_test.py --vault-bin PATH [--runs N] [--seed S]. Prints one line per run and a
summary; exits non-zero on the first broken invariant.
"""
import argparse
import base64
import glob
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--vault-bin", required=True)
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--seed", type=int, default=int(time.time()))
    args = p.parse_args()
    rng = random.Random(args.seed)
    vault_bin = os.path.abspath(args.vault_bin)
    work = tempfile.mkdtemp(prefix="vault-crash-")
    env = dict(os.environ, VAULT_DIR=os.path.join(work, "vault"), VAULT_PASSWORD="crash test password")
    env.pop("VAULT_UPLOAD_TOKEN", None)

    def run(*cmd, stdin=None):
        return subprocess.run([vault_bin, *cmd], env=env, input=stdin, capture_output=True)

    def listed():
        r = run("list", "--json")
        if r.returncode != 0:
            fail(f"list failed after a kill: {r.stderr.decode()}")
        return {d["id"]: d for d in json.loads(r.stdout)}

    def fail(message):
        print(f"FAILED (seed {args.seed}): {message}", file=sys.stderr)
        sys.exit(1)

    try:
        if run("init", "--kdf", "interactive").returncode != 0:
            fail("init failed")
        big = os.path.join(work, "big.bin")
        with open(big, "wb") as f:
            block = rng.randbytes(1 << 20)
            for _ in range(48):
                f.write(block)
        for i in range(3):
            run("add", "-", "--name", f"seed {i}", stdin=rng.randbytes(100_000 + i))
        killed = {"add": 0, "remove": 0, "export": 0}
        finished = dict(killed)
        # Victims of killed removals: the removal may have been journaled (remove.pending) before
        # the kill, and then the next writer finishes it, whatever that writer was asked to do.
        pending = set()
        for n in range(1, args.runs + 1):
            before = listed()
            pending &= set(before)
            op = rng.choice(["add", "remove", "export"]) if before else "add"
            out = os.path.join(work, f"export-{n}")
            if op == "add":
                cmd, delay = ["add", big, "--name", f"big {n}", "--allow-duplicate"], rng.uniform(0, 0.8)
            elif op == "remove":
                victim = rng.choice(sorted(before))
                cmd, delay = ["remove", victim], rng.uniform(0, 0.25)
            else:
                cmd, delay = ["export", "--out", out, "--batch-size", "2"], rng.uniform(0, 0.8)
            child = subprocess.Popen([vault_bin, *cmd], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            time.sleep(delay)
            child.send_signal(signal.SIGKILL)
            child.communicate()
            was_killed = child.returncode == -signal.SIGKILL
            (killed if was_killed else finished)[op] += 1

            # The index, read first after the kill (reconciled with objects/ if it must be),
            # lists exactly the objects on disk.
            first = listed()
            objects = {f[:-4] for f in os.listdir(os.path.join(work, "vault", "objects")) if f.endswith(".vlt")}
            if set(first) != objects:
                fail(f"run {n} ({op}): the index lists {sorted(set(first) ^ objects)} differently from objects/")
            v = run("verify")
            if v.returncode != 0:
                fail(f"run {n} ({op}): verify failed: {v.stdout.decode()}{v.stderr.decode()}")
            after = listed()
            if op == "add":
                new = set(after) - set(before)
                if (set(before) - set(after)) - pending or len(new) > 1:
                    fail(f"run {n} (add): documents changed: {sorted(set(before) ^ set(after))}")
                if new and after[new.pop()]["name"] != f"big {n}":
                    fail(f"run {n} (add): an unexpected document appeared")
            elif op == "remove":
                if set(after) - set(before) or (set(before) - set(after)) - {victim} - pending:
                    fail(f"run {n} (remove): documents changed beyond the removed one")
                if was_killed and victim in after:
                    pending.add(victim)
            else:
                if set(after) - set(before) or (set(before) - set(after)) - pending:
                    fail(f"run {n} (export): the export changed the vault")
                manifest = {}
                mpath = os.path.join(out, "manifest.json")
                if os.path.exists(mpath):
                    manifest = {b["file"]: b for b in json.load(open(mpath))["batches"] if b["status"] == "complete"}
                for path in glob.glob(os.path.join(out, "batch-*.json")):
                    raw = open(path, "rb").read()
                    try:
                        files = json.loads(raw)["Files"]
                    except ValueError:
                        fail(f"run {n} (export): {os.path.basename(path)} claims to be complete but is not JSON")
                    for d in files:
                        if hashlib.sha256(base64.b64decode(d["Data"])).hexdigest() != d["SHA256"]:
                            fail(f"run {n} (export): a document in {os.path.basename(path)} is corrupt")
                    m = manifest.get(os.path.basename(path))
                    if m and (m["bytes"] != len(raw) or m["sha256"] != hashlib.sha256(raw).hexdigest()):
                        fail(f"run {n} (export): {os.path.basename(path)} disagrees with the manifest")
                shutil.rmtree(out, ignore_errors=True)
            a = run("audit", "--json")
            codes = {f["code"] for f in json.loads(a.stdout or b'{"findings":[]}')["findings"]}
            if a.returncode not in (0, 65) or codes - {"unlogged-object"}:
                fail(f"run {n} ({op}): audit after the kill: {a.stdout.decode()}{a.stderr.decode()}")
            print(f"run {n:3}: {op:6} {'killed' if was_killed else 'finished':8} after {delay * 1000:5.0f} ms: "
                  f"vault verifies, {len(after)} documents listed, audit {'clean' if not codes else 'finds only unrecorded commits'}")
            # Keep the vault small: an extra big document goes again.
            if len(after) > 8:
                run("remove", *[i for i, d in after.items() if d["name"].startswith("big")][:3])
        check = run("add", "-", "--name", "after the crashes", stdin=b"still works")
        if check.returncode != 0:
            fail(f"the vault no longer takes documents: {check.stderr.decode()}")
        a = run("audit", "--deep")
        if a.returncode != 0:
            fail(f"the audit after the crashes is not clean: {a.stdout.decode()}{a.stderr.decode()}")
        print(f"{args.runs} runs (seed {args.seed}): killed add {killed['add']}, remove {killed['remove']}, "
              f"export {killed['export']}; finished before the kill add {finished['add']}, remove {finished['remove']}, "
              f"export {finished['export']}; every invariant held, and the final audit is clean")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
