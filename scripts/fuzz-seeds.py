#!/usr/bin/env python3
"""Seeds of a fuzz family from the fixtures and the official vectors, framed as the family reads
its input (its first byte picks the mode; parts are split at 0x1E). Usage: fuzz-seeds.py FAMILY DIR."""
import glob, os, re, sys

family, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
count = 0

def seed(name, data):
    global count
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
    count += 1

def vectors(path):
    """Records of the RNCryptor vector files: `name: value` lines, blank-line separated."""
    text = open(path, encoding="utf-8").read()
    for block in re.split(r"\n\s*\n", text):
        fields = dict(re.findall(r"^(\w+):[ \t]*(.*)$", block, re.M))
        if "title" in fields:
            yield fields

def unhex(v):
    return bytes.fromhex(v.replace(" ", ""))

def vector_body(path):
    """The bytes after a fixture vector's header block."""
    return open(path, "rb").read().partition(b"\n\n")[2]

if family == "envelope":
    for p in sorted(glob.glob("Fixtures/envelope/*.vector")):
        seed(os.path.basename(p), vector_body(p))
elif family == "rncryptor":
    for i, v in enumerate(vectors("Fixtures/rncryptor/key")):
        c = unhex(v["ciphertext_hex"])
        seed(f"key-{i}", b"\x00" + c)
        seed(f"key-{i}-body", b"\x02" + c[:-32])
        seed(f"key-{i}-plaintext", b"\x03" + unhex(v.get("plaintext_hex", "")))
    for i, v in enumerate(vectors("Fixtures/rncryptor/password")):
        seed(f"password-{i}", b"\x01" + unhex(v["ciphertext_hex"]))
elif family == "config":
    for p in sorted(glob.glob("Fixtures/legacy/*/vault.json")):
        name = p.split("/")[2]
        seed(f"{name}-vault-json", b"\x00" + open(p, "rb").read())
elif family == "history":
    for p in sorted(glob.glob("Fixtures/legacy/*/log.vlt")):
        seed(p.split("/")[2] + "-log", b"\x00" + open(p, "rb").read())
    for p in sorted(glob.glob("Fixtures/legacy/*/log.head")):
        seed(p.split("/")[2] + "-head", b"\x03\x00" + open(p, "rb").read())
elif family == "state":
    # Sealed state vectors (Fixtures/state): whole files, written raw as each kind of file.
    for p in sorted(glob.glob("Fixtures/state/*.vector")):
        for k in range(7):
            seed(f"{os.path.basename(p)}-{k}", bytes([k << 1]) + vector_body(p))
elif family == "age":
    # The C2SP CCTV vectors (Fixtures/age): each age file (inflated when compressed), mode 0.
    import zlib
    for p in sorted(glob.glob("Fixtures/age/testdata/*")):
        head, _, body = open(p, "rb").read().partition(b"\n\n")
        if b"compressed: zlib" in head:
            body = zlib.decompress(body)
        seed(os.path.basename(p), b"\x00" + body)
print(f"{family}: {count} seeds from the fixtures and vectors")
