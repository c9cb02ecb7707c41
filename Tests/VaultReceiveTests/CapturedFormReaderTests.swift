import Crypto
import Foundation
import Testing
import VaultCore

@testable import VaultReceive

/// A capture-only station's batch as a form (docs/UPLOAD.md, "From a capture-only station"),
/// written here from the documented layout around real age files, read by the batch reader a
/// receiver without an identity uses: each pair handed out as it came, and each way a form can
/// differ from the layout or from what its manifest declares refused.
@Suite struct CapturedFormReaderTests {
    typealias Entry = CapturedPayloadReaderTests.Entry
    static let boundary = "vault-test-boundary-0123456789"

    static func manifest(_ entries: [Entry], sha: (Entry) -> [UInt8] = \.sha256) -> String {
        let docs = entries.map { #"{"id":"\#($0.id.hex)","sha256":"\#(Hex.encode(sha($0)))","size":\#($0.size)}"# }
        return #"{"batch":1,"captured":"age-encryption.org/v1","documents":["# + docs.joined(separator: ",")
            + #"],"of":1}"#
    }

    static func part(_ filename: String, _ bytes: [UInt8]) -> [UInt8] {
        Array(
            ("--\(boundary)\r\nContent-Disposition: form-data; name=\"files[]\"; filename=\"\(filename)\"\r\n"
                + "Content-Type: application/octet-stream\r\n\r\n").utf8) + bytes + Array("\r\n".utf8)
    }

    /// A form: a text field, the manifest, then `parts` (by default each entry's metadata then data).
    static func form(_ entries: [Entry], manifest: String? = nil, parts: [[UInt8]]? = nil) -> [UInt8] {
        var out = Array(
            ("--\(boundary)\r\nContent-Disposition: form-data; name=\"case\"\r\n\r\n4711\r\n"
                + "--\(boundary)\r\nContent-Disposition: form-data; name=\"manifest\"\r\n"
                + "Content-Type: application/json\r\n\r\n" + (manifest ?? Self.manifest(entries)) + "\r\n").utf8)
        let pairs = entries.flatMap { [part("\($0.id.hex).meta.age", $0.metadata), part("\($0.id.hex).age", $0.data)] }
        for p in parts ?? pairs { out += p }
        return out + Array("--\(boundary)--\r\n".utf8)
    }

    static func read(_ body: [UInt8], piece: Int, requireSealed: Bool = false) throws -> (
        ends: [(UInt64, [UInt8])], data: [[UInt8]], captured: Bool
    ) {
        var reader = try BatchReader(
            contentType: "multipart/form-data; boundary=\(boundary)", maxDocuments: 20, requireSealed: requireSealed,
            digests: false)
        var ends: [(UInt64, [UInt8])] = []
        var data: [[UInt8]] = []
        var metadata: [[UInt8]] = []
        try reader.read(body, inPiecesOf: piece) { event in
            switch event {
            case .begin(_, let header):
                #expect(header.sealed)
                metadata.append(header.captured ?? [])
                data.append([])
            case .data(let bytes): data[data.count - 1] += Array(bytes)
            case .end(_, let size, let sha): ends.append((size, sha))
            }
        }
        try reader.finish()
        return (ends, data, reader.captured)
    }

    @Test(arguments: [1, 7, 4096, 1 << 20])
    func aCapturedFormIsReadAsItCameInPiecesOfAnySize(piece: Int) throws {
        let entries = CapturedPayloadReaderTests.entries([try AgeIdentity.generate(postQuantum: false).recipient])
        let (ends, data, captured) = try Self.read(Self.form(entries), piece: piece, requireSealed: true)
        #expect(captured)
        #expect(ends.map(\.0) == entries.map(\.size))
        #expect(ends.map(\.1) == entries.map(\.sha256))
        #expect(data == entries.map(\.data))
    }

    @Test func aFormThatIsNotTheLayoutOrNotWhatItDeclaresIsRefused() throws {
        let entries = CapturedPayloadReaderTests.entries([try AgeIdentity.generate(postQuantum: true).recipient])
        func refusal(_ body: [UInt8]) -> VaultError? {
            do {
                _ = try Self.read(body, piece: 1000)
                return nil
            } catch { return VaultError.from(error) }
        }
        let (a, b) = (entries[1], entries[2])
        let meta = { (e: Entry) in Self.part("\(e.id.hex).meta.age", e.metadata) }
        let data = { (e: Entry) in Self.part("\(e.id.hex).age", e.data) }
        // Parts out of order: data before metadata, another document's file, a part left out.
        let swapped = refusal(Self.form([a], parts: [data(a), meta(a)]))
        #expect(swapped?.code == .headerMalformed && swapped?.message.contains("metadata part") == true)
        let other = refusal(Self.form([a, b], parts: [meta(a), data(b), meta(b), data(a)]))
        #expect(other?.code == .headerMalformed && other?.message.contains("data part") == true)
        #expect(refusal(Self.form([a, b], parts: [meta(a), data(a), meta(b)]))?.code == .headerMalformed)
        // A manifest not written as vault writes it, or naming a document twice.
        let spaced = Self.manifest([a]).replacingOccurrences(of: ",", with: ", ")
        #expect(refusal(Self.form([a], manifest: spaced))?.code == .headerMalformed)
        #expect(refusal(Self.form([a, a], parts: [meta(a), data(a), meta(a), data(a)]))?.code == .headerMalformed)
        // A batch number that is not one of the run's (found in review: taken).
        for (batch, of) in [(0, 1), (2, 1)] {
            let numbered = Self.manifest([a]).replacingOccurrences(of: #""batch":1"#, with: #""batch":\#(batch)"#)
                .replacingOccurrences(of: #""of":1"#, with: #""of":\#(of)"#)
            #expect(refusal(Self.form([a], manifest: numbered))?.message.contains("batch \(batch) of \(of)") == true)
        }
        // A pair that is not the size and SHA-256 its entry names: one byte of its data changed,
        // its files swapped with another document's, its declared digest another.
        var changed = b
        changed.data[changed.data.count - 1] ^= 1
        let tampered = refusal(Self.form([b], manifest: Self.manifest([b]), parts: [meta(b), data(changed)]))
        #expect(tampered?.code == .digestMismatch, "\(String(describing: tampered))")
        var mixed = b
        mixed.metadata = a.metadata
        #expect(refusal(Self.form([b], manifest: Self.manifest([b]), parts: [meta(mixed), data(b)]))?.code != nil)
        #expect(refusal(Self.form([b], manifest: Self.manifest([b], sha: { _ in a.sha256 })))?.code == .digestMismatch)
        // Files that are not age files vault seals.
        var plain = b
        plain.metadata = Array("not an age file".utf8)
        #expect(refusal(Self.form([plain], manifest: Self.manifest([b]), parts: [meta(plain), data(b)]))?.code != nil)
    }
}
