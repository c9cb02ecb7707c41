// Family `age`: age v1 files (`vault import --age`, `vault receive --identity`) and sealed JSON
// payloads. The first byte picks:
//  0  the input as an age file, opened with the test identities (the X25519 and the hybrid one
//     of the C2SP CCTV vectors) by the pull reader (37-byte reads) and by the push opener (the
//     receiver's; fed in pieces of 1 + byte / 4 bytes);
//  1  the input as plaintext, sealed by vault to both test recipients and opened again;
//  2  the input as a sealed JSON payload, read by the receiver's sealed payload reader.
// Properties: only `AgeFailure` (the files) or the readers' documented `VaultError` codes; the
// reader and the opener agree on every file — the same category of failure, or the same
// plaintext; what vault seals opens to its plaintext; a sealed payload accepted gives each
// document with the size and SHA-256 its metadata named.
import Crypto
import Foundation
import VaultCore
import VaultReceive

enum AgeFamily {
    static let identities = [
        try! AgeIdentity(parsing: "AGE-SECRET-KEY-1EGTZVFFV20835NWYV6270LXYVK2VKNX2MMDKWYKLMGR48UAWX40Q2P2LM0"),
        try! AgeIdentity(parsing: "AGE-SECRET-KEY-PQ-1HZLGZUPT4ETPKDEV8HSGFDCYZ4E522W0A7PU2LHT8EH9W6YLNC3SW78XKG")
    ]
    /// The sealed payload reader's documented failures (its comment), and the age ones it maps.
    static let payloadCodes: Set<VaultError.Code> = [
        .headerMalformed, .digestMismatch, .trailingData, .truncated, .tooManyDocuments, .wrongPassword,
        .headerAuthenticationFailed, .chunkAuthenticationFailed
    ]

    static func check(_ bytes: [UInt8]) {
        guard let mode = bytes.first else { return }
        let rest = Array(bytes.dropFirst())
        switch mode % 4 {
        case 1:
            let sealing = PayloadSealing(recipients: identities.map(\.recipient))
            let file = sealing.sealWhole(rest, slot: .manifest)
            for identity in identities {
                expect(
                    open(file, [identity], piece: 1 + Int(mode / 4)).plain == rest,
                    "a sealed file opens to its plaintext")
            }
        case 2:
            payload(rest, piece: 1 + Int(mode / 4))
        default:
            let pulled = open(rest, identities, piece: 0)
            let pushed = open(rest, identities, piece: 1 + Int(mode / 4))
            expect(
                pulled.failure == pushed.failure,
                "reader and opener disagree: \(pulled.failure ?? "ok") / \(pushed.failure ?? "ok")")
            if pulled.failure == nil {
                expect(pulled.plain == pushed.plain, "reader and opener give the same plaintext")
            }
        }
    }

    /// Opens `file`: pulled (piece 0) or pushed in pieces; the plaintext, or the failure's category.
    static func open(_ file: [UInt8], _ identities: [AgeIdentity], piece: Int) -> (plain: [UInt8], failure: String?) {
        var plain: [UInt8] = []
        do {
            if piece == 0 {
                let reader = try AgeReader(input: BytesSource(file), identities: identities)
                var buffer = [UInt8](repeating: 0, count: 37)
                while true {
                    let n = try buffer.withUnsafeMutableBytes { try reader.read(into: $0) }
                    if n == 0 { break }
                    plain += buffer[..<n]
                }
            } else {
                var opener = AgeOpener(identities: identities)
                var at = 0
                while at < file.count {
                    let n = min(piece, file.count - at)
                    try file[at..<at + n].withUnsafeBytes { try opener.feed($0) { plain += $0 } }
                    at += n
                }
                try opener.finish { plain += $0 }
            }
            return (plain, nil)
        } catch let f as AgeFailure {
            return (plain, f.kind.rawValue)
        } catch {
            preconditionFailure("property violated: only AgeFailure from an age file: \(error)")
        }
    }

    static func payload(_ body: [UInt8], piece: Int) {
        var reader = SealedPayloadReader(identities: identities, maxDocuments: 20)
        var headers: [PayloadReader.Header] = []
        var documents: [[UInt8]] = []
        let done = onlyVaultErrors("a sealed payload", codes: payloadCodes) {
            try reader.read(body, inPiecesOf: piece) { event in
                switch event {
                case .begin(_, let header):
                    headers.append(header)
                    documents.append([])
                case .data(let b): documents[documents.count - 1] += Array(b)
                case .end(_, let size, let sha):
                    expect(size == UInt64(documents.last!.count), "the end's size is the bytes given")
                    expect(sha == Array(SHA256.hash(data: documents.last!)), "the end's digest is the bytes'")
                }
            }
        }
        guard done != nil else { return }
        for (h, d) in zip(headers, documents) {
            expect(
                h.size == UInt64(d.count) && h.sha256 == Array(SHA256.hash(data: d)), "the metadata's size and digest")
        }
    }
}
