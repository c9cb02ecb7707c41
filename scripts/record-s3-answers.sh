#!/usr/bin/env bash
# Records real S3 answers from SeaweedFS (the test peer, `make peers`) as seeds of the `s3`
# fuzz family: a ListObjectsV2 listing in two pages, a multipart creation, ListParts in two
# pages, a completion, and error answers. Run once by hand (curl signs with --aws-sigv4, which
# in curl 7.88 needs the query's parameters in sorted order); the
# answers are committed in Fuzz/seeds/s3/ and framed as the family reads them.
set -euo pipefail
cd "$(dirname "$0")/.."
weed=.build-peers/venv/bin/weed
[ -x "$weed" ] || { echo "vault: SeaweedFS is not installed (make peers)" >&2; exit 1; }
dir=$(mktemp -d)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ports=(); for i in $(seq 0 12); do ports+=("$(port)"); done
echo '{"identities":[{"name":"r","credentials":[{"accessKey":"recordkey","secretKey":"recordsecret"}],"actions":["Admin","Read","Write","List"]}]}' > "$dir/s3.json"
mkdir -p "$dir/data"
HOME=$dir "$weed" mini -dir="$dir/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 -master.telemetry=false -admin.ui=false -webdav=false \
    -s3.config="$dir/s3.json" -master.volumeSizeLimitMB=64 -s3.port.iceberg=0 -s3.port.lance=0 \
    -s3.port="${ports[0]}" -s3.port.grpc="${ports[1]}" -master.port="${ports[2]}" -master.port.grpc="${ports[3]}" \
    -volume.port="${ports[4]}" -volume.port.grpc="${ports[5]}" -filer.port="${ports[6]}" -filer.port.grpc="${ports[7]}" \
    -admin.port="${ports[8]}" -admin.port.grpc="${ports[9]}" > "$dir/log" 2>&1 &
pid=$!; [ -n "${DEBUG_RECORD:-}" ] && echo "$dir" >&2
trap 'kill -9 $pid 2>/dev/null; rm -rf "$dir"' EXIT
base="http://127.0.0.1:${ports[0]}"
for _ in $(seq 600); do curl -s -o /dev/null "$base" && break; sleep 0.1; done
s3() { curl -s --aws-sigv4 "aws:amz:us-east-1:s3" --user "${user:-recordkey:recordsecret}" "$@"; }
# A request with a body: SeaweedFS wants the payload's SHA-256 in x-amz-content-sha256.
s3body() { local f=$1; shift; s3 --data-binary @"$f" -H "x-amz-content-sha256: $(sha256sum < "$f" | cut -d' ' -f1)" "$@"; }
until s3 -X PUT "$base/rec" -o /dev/null -w '%{http_code}' | grep -q 200; do sleep 0.5; done
# The volume server may come up after the S3 gateway: the first PUT is retried until it lands.
for k in p/a p/b p/c 'p/sp ace' q/x; do
    printf 'object %s' "$k" > "$dir/object"
    for _ in $(seq 120); do s3body "$dir/object" -X PUT "$base/rec/${k// /%20}" -o /dev/null -w '%{http_code}' | grep -q 200 && break; sleep 0.5; done
done
out=Fuzz/seeds/s3; mkdir -p "$out"
page1=$(s3 "$base/rec?list-type=2&max-keys=2&prefix=p%2F")
token=$(printf '%s' "$page1" | python3 -c 'import sys,re; print(re.search(r"<NextContinuationToken>(.*?)</", sys.stdin.read()).group(1))')
page2=$(s3 "$base/rec?continuation-token=$(python3 -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$token")&list-type=2&max-keys=2&prefix=p%2F")
rs=$'\x1e'
printf '\x00p/%s%s%s%s' "$rs" "$page1" "$rs" "$page2" > "$out/seaweedfs-listing-two-pages"
printf '\x00p/%s%s%s%s' "$rs" "$page1" "$rs" "$page1" > "$out/seaweedfs-listing-same-token-twice"
printf '\x00q/%s%s' "$rs" "$page1" > "$out/seaweedfs-listing-other-prefix"
created=$(s3 -X POST "$base/rec/m?uploads=")
printf '\x02%s' "$created" > "$out/seaweedfs-create-multipart"
upload=$(printf '%s' "$created" | python3 -c 'import sys,re; print(re.search(r"<UploadId>(.*?)</", sys.stdin.read()).group(1))')
head -c 5242880 /dev/zero > "$dir/part"
printf 'last' > "$dir/last"
s3body "$dir/part" -X PUT "$base/rec/m?partNumber=1&uploadId=$upload" -o /dev/null
s3body "$dir/last" -X PUT "$base/rec/m?partNumber=2&uploadId=$upload" -o /dev/null
parts1=$(s3 "$base/rec/m?max-parts=1&uploadId=$upload")
parts2=$(s3 "$base/rec/m?max-parts=1&part-number-marker=1&uploadId=$upload")
printf '\x01%s%s%s' "$parts1" "$rs" "$parts2" > "$out/seaweedfs-list-parts-two-pages"
printf '\x01%s%s%s' "$parts1" "$rs" "$parts1" > "$out/seaweedfs-list-parts-same-marker-twice"
etags=$(printf '%s\n%s' "$parts1" "$parts2" | python3 -c 'import sys,re; print("".join("<Part><PartNumber>%s</PartNumber><ETag>%s</ETag></Part>" % (re.search(r"<PartNumber>(\d+)<", p).group(1), re.search(r"<ETag>(.*?)<", p).group(1)) for p in re.findall(r"<Part>(.*?)</Part>", sys.stdin.read(), re.S)))')
printf '<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"0"</ETag></Part></CompleteMultipartUpload>' > "$dir/complete"
printf '\x02%s' "$(s3body "$dir/complete" -X POST "$base/rec/m?uploadId=$upload")" > "$out/seaweedfs-error-invalid-part"
printf '<CompleteMultipartUpload>%s</CompleteMultipartUpload>' "${etags//&#34;/\"}" > "$dir/complete"
done=$(s3body "$dir/complete" -X POST "$base/rec/m?uploadId=$upload")
printf '\x02%s' "$done" > "$out/seaweedfs-complete-multipart"
printf '\x02%s' "$(s3 "$base/rec/missing")" > "$out/seaweedfs-error-no-such-key"
printf '\x02%s' "$(s3 "$base/nobucket?list-type=2")" > "$out/seaweedfs-error-no-such-bucket"
printf '\x02%s' "$(user=recordkey:wrong s3 "$base/rec?list-type=2")" > "$out/seaweedfs-error-signature"
ls -l "$out"
