// Family `s3`: S3 answers (S3XMLReader, written by hand to replace Foundation's XMLParser over
// libxml2, and what vault makes of them).
// The first byte picks:
//  0  a ListObjectsV2 listing: the first part is the prefix asked for, the others the pages, in
//     order. No key outside the prefix is ever listed; the listing asks for no continuation
//     token twice (a token seen before is an error, not another page) and ends;
//  1  ListParts pages: part numbers are listed once each, in order, and the next marker only
//     goes up (one that does not is an error);
//  2  one answer of any kind: an S3 error, a multipart creation (UploadId), a completion (ETag);
//  3  the reader alone, on the whole input: what it reads is balanced (every element closed, in
//     order, one root) and reads back the same once written out again with its text escaped.
// Errors are VaultErrors (vault-damaged). Memory stays bounded by libFuzzer's RSS limit, which
// the seeds' entity bombs test. The inputs that crashed XMLParser are regressions/s3/.
import Foundation
import VaultCore
import VaultS3

enum S3Family {
    static func check(_ bytes: [UInt8]) {
        guard let mode = bytes.first else { return }
        let p = parts(bytes.dropFirst(), limit: 12)
        switch mode % 4 {
        case 0:
            let prefix = String(decoding: p[0], as: UTF8.self)
            var listing = S3XML.ObjectListing(prefix: prefix, what: "ListObjectsV2 fuzz/\(prefix)")
            var tokens: [String] = []
            for page in p.dropFirst() where !listing.done {
                guard
                    let objects = onlyVaultErrors("a listing page", codes: [.vaultDamaged], { try listing.read(page) })
                else {
                    return
                }
                expect(
                    objects.allSatisfy { $0.key.hasPrefix(prefix) }, "a key outside the prefix '\(prefix)' was listed")
                if !listing.done {
                    let token = listing.token!
                    expect(!tokens.contains(token), "the listing asks for continuation token '\(token)' a second time")
                    tokens.append(token)
                }
            }
        case 1:
            var list = S3XML.PartListing(what: "ListParts fuzz")
            var markers: [Int] = [0]
            for page in p where !list.done {
                guard onlyVaultErrors("a part list page", codes: [.vaultDamaged], { try list.read(page) }) != nil else {
                    return
                }
                if !list.done {
                    expect(list.marker > markers.last!, "the part marker went from \(markers.last!) to \(list.marker)")
                    markers.append(list.marker)
                }
            }
            let numbers = list.parts.map(\.number)
            expect(numbers == Array(Set(numbers)).sorted(), "parts listed twice or out of order")
        case 3:
            let body = Array(bytes.dropFirst())
            guard let events = S3XMLReader.events(body) else { return }
            var open: [String] = [], written = "", roots = 0
            for e in events {
                switch e {
                case .start(let name):
                    if open.isEmpty { roots += 1 }
                    open.append(name)
                    written += "<\(name)>"
                case .text(let t):
                    expect(!open.isEmpty, "text outside the root")
                    written += t.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(
                        "\r", with: "&#13;")
                case .end(let name):
                    expect(open.popLast() == name, "</\(name)> closes another element")
                    written += "</\(name)>"
                }
            }
            expect(open.isEmpty && roots == 1, "\(open.count) elements left open, \(roots) roots")
            let again = S3XMLReader.events(Array(written.utf8))
            expect(
                again.map(S3XMLReader.joiningTexts) == S3XMLReader.joiningTexts(events),
                "read back otherwise: \(written.debugDescription)")
        default:
            let body = Array(bytes.dropFirst())
            if let e = S3XML.error(body) { _ = S3ServiceError(status: 400, code: e.code, message: e.message).vaultCode }
            _ = S3XML.values("UploadId", in: body)
            _ = S3XML.values("ETag", in: body).first.map(S3Client.unquote)
        }
    }
}

