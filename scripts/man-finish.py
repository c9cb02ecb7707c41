#!/usr/bin/env python3
"""Finishes the manual swift-argument-parser's generate-manual writes (stdin -> stdout).

The generator turns each command's help into mdoc, but leaves the discussion's blank lines and
indented example lines as they are (mandoc warns "Empty input line" and runs the examples
together) and writes a bare EXIT STATUS. This adds what a manual page has and the generator
cannot know: paragraphs and literal example blocks, EXIT STATUS with every code (taken from the
"Exit codes:" block of `vault --help`, the one list in the source), ENVIRONMENT, FILES,
EXAMPLES (README's) and SEE ALSO.
"""
import re
import sys

ENVIRONMENT = [
    ("VAULT_DIR", "The vault folder when --vault is not given (else $XDG_DATA_HOME/vault, else ~/.local/share/vault); an s3:// URL reads a vault in place."),
    ("VAULT_PASSWORD", "The vault password (after --password-file and --password-command). Copied into locked memory and removed from the environment at start."),
    ("VAULT_PASSWORD_FILE", "A file holding the vault password (after VAULT_PASSWORD; one trailing newline is ignored)."),
    ("VAULT_PASSWORD_COMMAND", "A command that prints the vault password, run without a shell (after VAULT_PASSWORD_FILE)."),
    ("VAULT_NEW_PASSWORD, VAULT_NEW_PASSWORD_FILE, VAULT_NEW_PASSWORD_COMMAND", "The new password for passwd (after --new-password-file)."),
    ("VAULT_IMPORT_PASSWORD, VAULT_IMPORT_PASSWORD_FILE, VAULT_IMPORT_PASSWORD_COMMAND", "The RNCryptor password for import (after --from-password-file)."),
    ("VAULT_UPLOAD_TOKEN", "A bearer token for upload."),
    ("VAULT_UPLOAD_USER, VAULT_UPLOAD_PASSWORD", "HTTP basic credentials for upload (both or neither)."),
    ("VAULT_IO_REPORT", "A file to which vault copies its I/O counters at exit (diagnostics)."),
    ("AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN", "Credentials for S3 stores: upload --protocol s3, remote vaults, push, pull, clone."),
    ("AWS_REGION, AWS_DEFAULT_REGION", "The S3 region (default us-east-1)."),
    ("AWS_ENDPOINT_URL", "An S3-compatible endpoint (MinIO, SeaweedFS, ...), path-style."),
    ("XDG_DATA_HOME, HOME", "Where the default vault folder is."),
    ("XDG_CACHE_HOME", "Where vaults read in place keep their sealed index (else ~/.cache/vault)."),
    ("TERM, NO_COLOR", "TERM=dumb or NO_COLOR set: the progress bar is redrawn without escape codes."),
    ("COLUMNS", "The width for the progress bar when the terminal does not say."),
]

FILES = [
    ("vault.json", "The vault's keyring: the vault key wrapped under the password (Argon2id), and earlier key epochs."),
    ("objects/ID.vlt", "One envelope per document: encrypted metadata and 64 KiB chunks, each authenticated."),
    ("index.db", "The sealed index (SQLite) for lookups by id, name and tag; rebuilt from the envelopes when damaged."),
    ("log.vlt, log.head, log.anchor", "The sealed, chained history of every change and delivery."),
    ("uploads/JOB.journal", "Sealed upload journals, so an interrupted upload resumes."),
    ("remotes.vlt, destinations.vlt", "Sealed lists of named S3 remotes and delivery destinations."),
    ("staging/", "Temporary files of commands in progress; swept by the next command that writes to the vault."),
]

SEE_ALSO = ".Xr age 1 ,\n.Xr restic 1\n.Pp\nThe full reference is installed in share/doc/vault: CLI.md, FORMAT.md, UPLOAD.md, REMOTE.md, SECURITY.md, and JSON Schemas for every --json output in schemas/."


def escape(text):
    """Text safe on an mdoc line: no leading dot or quote, backslashes doubled."""
    text = text.replace("\\", "\\e")
    return "\\&" + text if text[:1] in (".", "'") else text


def paragraphs(lines):
    """Blank lines become .Pp; runs of indented lines become literal blocks."""
    out, literal, gap = [], False, False
    for line in lines:
        indented = line.startswith("  ") and not line.startswith(".")
        if indented and not literal:
            out.append(".Bd -literal -offset indent")
            literal, gap = True, False
        elif not indented and literal and line.strip():
            out.append(".Ed")
            if gap and not line.startswith("."):
                out.append(".Pp")
            literal = False
        if line.strip() == "":
            gap = True
            if not literal and out and out[-1] != ".Pp":
                out.append(".Pp")
            continue
        out.append(line.strip() if indented else line)
    if literal:
        out.append(".Ed")
    return [l for i, l in enumerate(out) if not (l == ".Pp" and (i + 1 < len(out) and out[i + 1].startswith((".Sh", ".It", ".El", ".Bl"))))]


def exit_codes(text):
    block = re.search(r"^Exit codes:\n((?:  (?:\d+ | {4}).*\n?)+)", text, re.M)
    # A code's meaning may go on over lines indented past the code (kept under 80 columns).
    joined = re.sub(r"\n {5,}", " ", block.group(1)) if block else ""
    codes = re.findall(r"^  (\d+)\s+(.*)$", joined, re.M)
    if not codes:
        sys.exit("man-finish: no 'Exit codes:' block in the description")
    return codes


def readme_examples(path):
    text = open(path, encoding="utf-8").read()
    block = re.search(r"^## Use\n.*?```sh\n(.*?)```", text, re.S | re.M)
    lines = [l for l in block.group(1).splitlines() if l.strip()] if block else []
    if not lines:
        sys.exit(f"man-finish: no examples in the first sh block after '## Use' in {path}")
    return lines


def main():
    source = sys.stdin.read()
    codes = exit_codes(source)
    head, _, _ = source.partition('.Sh "EXIT STATUS"')
    body = paragraphs(head.rstrip("\n").split("\n"))
    out = body + ['.Sh "EXIT STATUS"', ".Bl -tag -width 4n -compact"]
    for code, meaning in codes:
        out += [f".It {code}", escape(meaning)]
    out += [".El", ".Sh ENVIRONMENT", ".Bl -tag -width 4n"]
    for name, meaning in ENVIRONMENT:
        out += [".It Ev " + name.replace(", ", " , Ev "), escape(meaning)]
    out += [".El", ".Sh FILES", "In the vault folder:", ".Bl -tag -width 4n"]
    for name, meaning in FILES:
        out += [".It Pa " + name.replace(", ", " , Pa "), escape(meaning)]
    out += [".El", ".Sh EXAMPLES", ".Bd -literal -offset indent"]
    out += [escape(l) for l in readme_examples(sys.argv[1] if len(sys.argv) > 1 else "README.md")]
    out += [".Ed", '.Sh "SEE ALSO"', SEE_ALSO]
    sys.stdout.write("\n".join(out) + "\n")


main()
