#!/usr/bin/env python3
"""Writes the small sample documents in Fixtures/documents/ (used by `make demo` and the CLI
round-trip tests). Deterministic: a fixed seed and no timestamps. Needs Pillow for the images
(pip install pillow); the outputs are committed, so normal builds do not run this."""
import os, random, zlib
from PIL import Image, ImageDraw

out = os.path.join(os.path.dirname(__file__), "..", "Fixtures", "documents")
os.makedirs(out, exist_ok=True)
rng = random.Random(20261122)

def page(w, h, lines):
    img = Image.new("RGB", (w, h), (250, 250, 245))
    d = ImageDraw.Draw(img)
    for i, text in enumerate(lines):
        d.text((12, 12 + 18 * i), text, fill=(20, 20, 60))
    for _ in range(40):
        x, y = rng.randrange(w), rng.randrange(h)
        d.line((x, y, x + rng.randrange(-30, 30), y + rng.randrange(-30, 30)), fill=(rng.randrange(256), 90, 120))
    return img

page(320, 200, ["RECEIPT #0042", "2 x coffee   7.00", "total        7.00"]).save(os.path.join(out, "receipt.jpg"), quality=85)
page(300, 400, ["SCAN - page 1", "Signed: J. Doe"]).save(os.path.join(out, "scan.png"), optimize=True)
page(120, 80, ["diagram"]).convert("P").save(os.path.join(out, "diagram.gif"))
page(200, 150, ["photo"]).save(os.path.join(out, "photo.tiff"))
page(200, 150, ["webp"]).save(os.path.join(out, "photo.webp"), quality=80)

# A minimal, valid one-page PDF with a text line; xref offsets computed, not guessed.
content = b"BT /F1 18 Tf 40 100 Td (Contract - page 1 of 1) Tj ET"
objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 200] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
pdf = bytearray(b"%PDF-1.4\n")
offsets = []
for i, o in enumerate(objs, 1):
    offsets.append(len(pdf))
    pdf += b"%d 0 obj\n" % i + o + b"\nendobj\n"
xref = len(pdf)
pdf += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
for off in offsets:
    pdf += b"%010d 00000 n \n" % off
pdf += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
open(os.path.join(out, "contract.pdf"), "wb").write(pdf)

open(os.path.join(out, "notes.txt"), "w", encoding="utf-8").write(
    "Meeting notes — Zürich office\n• ship batch 7 to the back office\n• 日本語のメモ\n")
open(os.path.join(out, "empty.txt"), "wb").write(b"")
# Three chunks and a bit: exercises chunk boundaries end to end.
open(os.path.join(out, "archive.bin"), "wb").write(bytes(rng.randrange(256) for _ in range(3 * 65536 + 1234)))
