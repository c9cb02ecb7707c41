#!/usr/bin/env python3
"""A reference presign endpoint for `vault upload --protocol s3 --presign-url URL`.

The back office keeps the S3 credentials; capture stations get presigned part URLs and never
see a secret. The protocol (docs/UPLOAD.md, "Presigned mode") is JSON over POST, behind a
Bearer token:

  POST /create   {"key", "contentType", "metadata", "parts"}       -> {"uploadId", "key", "parts": [{"number", "url", "expires"}]}
  POST /parts    {"key", "uploadId", "numbers"}                     -> {"parts": [...]}   (fresh URLs)
  POST /list     {"key", "uploadId"}                                -> {"parts": [{"number", "etag", "size"}]}  or 404 NoSuchUpload
  POST /head     {"key"}                                            -> {"size", "etag"} or 404
  POST /complete {"key", "uploadId", "parts": [{"number", "etag"}]} -> {"etag"}
  POST /abort    {"key", "uploadId"}                                -> {}

Keys are put under --prefix. URLs expire after --expires seconds (at most 7 days, as S3 allows).
Credentials and the store come from the AWS variables (AWS_ENDPOINT_URL for S3-compatible stores).
Listens on 127.0.0.1 only, on a port the OS picks (written to --port-file).

For testing a client's error handling, --fault makes it a broken back office: `expired` hands out
URLs that have already expired while claiming the full --expires (a back office whose clock is
behind), `tampered` changes one character of each URL's signature, `unresolvable` puts each URL
on https:// to a host no lookup finds (a label of 64 characters, refused before any query leaves the machine).
"""
import argparse
import datetime
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3
import botocore.config
import botocore.exceptions

MAX_EXPIRY = 604_800


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bucket", required=True)
    p.add_argument("--prefix", default="")
    p.add_argument("--token", default=os.environ.get("PRESIGN_TOKEN", ""))
    p.add_argument("--expires", type=int, default=MAX_EXPIRY)
    p.add_argument("--port-file", required=True)
    p.add_argument("--log")
    p.add_argument("--fault", choices=["expired", "tampered", "unresolvable"])
    args = p.parse_args()
    expires = min(args.expires, MAX_EXPIRY)
    s3 = boto3.client("s3", endpoint_url=os.environ.get("AWS_ENDPOINT_URL") or None,
                      config=botocore.config.Config(signature_version="s3v4", s3={"addressing_style": "path"}))
    prefix = args.prefix.strip("/")

    def full(key):
        return f"{prefix}/{key}" if prefix else key

    def part_urls(key, upload_id, numbers):
        at = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=expires)).strftime("%Y-%m-%dT%H:%M:%SZ")
        urls = [{"number": n, "expires": at,
                 "url": s3.generate_presigned_url("upload_part", ExpiresIn=1 if args.fault == "expired" else expires,
                                                  Params={"Bucket": args.bucket, "Key": key, "UploadId": upload_id, "PartNumber": n})}
                for n in numbers]
        if args.fault == "expired":
            time.sleep(2)
        if args.fault == "unresolvable":
            for u in urls:
                rest = u["url"].split("://", 1)[1]
                u["url"] = "https://" + "a" * 64 + ".invalid" + rest[rest.index("/"):]
        if args.fault == "tampered":
            for u in urls:
                head, sig = u["url"].rsplit("X-Amz-Signature=", 1)
                u["url"] = head + "X-Amz-Signature=" + ("0" if sig[0] != "0" else "1") + sig[1:]
        return urls

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def answer(self, status, body):
            # Logged before the answer is sent: a client that has its answer finds it in the log.
            if args.log:
                with open(args.log, "a") as f:
                    f.write(json.dumps({"path": self.path, "status": status}) + "\n")
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            if args.token and self.headers.get("Authorization") != f"Bearer {args.token}":
                return self.answer(401, {"error": "bad or missing token"})
            try:
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                path = self.path.rstrip("/").rsplit("/", 1)[-1]
                if path == "create":
                    key = full(req["key"])
                    r = s3.create_multipart_upload(Bucket=args.bucket, Key=key, ContentType=req.get("contentType", "application/json"),
                                                   Metadata=req.get("metadata", {}))
                    return self.answer(200, {"uploadId": r["UploadId"], "key": key,
                                             "parts": part_urls(key, r["UploadId"], range(1, int(req["parts"]) + 1))})
                if path == "parts":
                    return self.answer(200, {"parts": part_urls(req["key"], req["uploadId"], req["numbers"])})
                if path == "list":
                    parts, marker = {}, 0
                    while True:
                        r = s3.list_parts(Bucket=args.bucket, Key=req["key"], UploadId=req["uploadId"], PartNumberMarker=marker)
                        for q in r.get("Parts", []):
                            parts[q["PartNumber"]] = {"number": q["PartNumber"], "etag": q["ETag"].strip('"'), "size": q["Size"]}
                        if not r.get("IsTruncated"):
                            break
                        marker = r["NextPartNumberMarker"]
                    return self.answer(200, {"parts": [parts[n] for n in sorted(parts)]})
                if path == "head":
                    r = s3.head_object(Bucket=args.bucket, Key=req["key"])
                    return self.answer(200, {"size": r["ContentLength"], "etag": r["ETag"].strip('"')})
                if path == "complete":
                    parts = [{"PartNumber": q["number"], "ETag": f'"{q["etag"]}"'} for q in sorted(req["parts"], key=lambda q: q["number"])]
                    r = s3.complete_multipart_upload(Bucket=args.bucket, Key=req["key"], UploadId=req["uploadId"],
                                                     MultipartUpload={"Parts": parts})
                    return self.answer(200, {"etag": r["ETag"].strip('"')})
                if path == "abort":
                    s3.abort_multipart_upload(Bucket=args.bucket, Key=req["key"], UploadId=req["uploadId"])
                    return self.answer(200, {})
                return self.answer(404, {"error": f"no such call {self.path}"})
            except botocore.exceptions.ClientError as e:
                code = e.response.get("Error", {}).get("Code", "")
                status = 404 if code in ("NoSuchUpload", "NoSuchKey", "404", "NotFound") else 502
                return self.answer(status, {"error": code or str(e)})
            except (KeyError, ValueError) as e:
                return self.answer(400, {"error": f"bad request: {e}"})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(args.port_file + ".tmp", args.port_file)
    print(f"presign endpoint on http://127.0.0.1:{server.server_address[1]}/", file=sys.stderr)
    server.serve_forever()


if __name__ == "__main__":
    main()
