#!/usr/bin/env python3
"""A multipart/form-data receiver on werkzeug's own parser (what Flask back offices use), on
127.0.0.1 (a port the OS picks, written to --port-file): each POST is parsed by
werkzeug.formparser, and one JSON line per request is logged: the file parts' names as werkzeug
saw them, their sizes and SHA-256s, and the manifest part(s) it found. Answers 200, or 400 when
the body does not parse. Stops on SIGTERM.
"""
import argparse
import hashlib
import json
import os
import sys
from wsgiref.simple_server import WSGIRequestHandler, make_server

from werkzeug.formparser import parse_form_data

ARGS = None


def app(environ, start_response):
    try:
        _, form, files = parse_form_data(environ)
        entry = {
            "files": [{"filename": f.filename, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
                      for f in files.getlist("files[]") for data in [f.read()]],
            "manifests": form.getlist("manifest"),
        }
        status = "200 OK"
    except Exception as e:  # noqa: BLE001 - any parse failure is the answer
        entry = {"error": str(e)}
        status = "400 Bad Request"
    with open(ARGS.log, "a") as f:
        f.write(json.dumps(entry) + "\n")
    start_response(status, [("Content-Type", "application/json")])
    return [b"{}"]


class Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--port-file", required=True)
    p.add_argument("--log", required=True)
    ARGS = p.parse_args()
    server = make_server("127.0.0.1", 0, app, handler_class=Quiet)
    tmp = ARGS.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_port))
    os.replace(tmp, ARGS.port_file)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
