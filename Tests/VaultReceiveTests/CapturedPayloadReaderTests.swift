import Crypto
import Foundation
import Testing
import VaultCore

@testable import VaultReceive

/// The captured payload's reader (what a receiver checks of a capture-only station's batch without
/// a key), fed payloads made of real age files in pieces of every size, and each way a payload can
/// differ from what the station declared or from vault's layout.
@Suite struct CapturedPayloadReaderTests {
    struct Entry {
        var id: DocumentID
        var metadata: [UInt8]
        var data: [UInt8]
        var size: UInt64 { UInt64(metadata.count + data.count) }
        var sha256: [UInt8] {
            var h = SHA256()
            h.update(data: data)
            return CapturedDocument.digest(data: h, metadata: metadata)
        }
    }

    /// Entries sealed to `recipients` as a station seals them (a data file and a metadata file).
    static func entries(_ recipients: [AgeRecipient], sizes: [Int] = [0, 1, 70_000]) -> [Entry] {
        sizes.enumerated().map { n, size in
            let id = DocumentID.random(using: SystemRandom())
            let sealing = PayloadSealing(recipients: recipients)
            let bytes = [UInt8](repeating: UInt8(n), count: size)
            let metadata = sealing.sealWhole(
                PayloadSealing.padded(
                    PayloadSealing.metadataJSON(
                        id: id, name: "doc \(n).bin", contentType: "application/octet-stream", size: UInt64(size),
                        sha256: Array(SHA256.hash(data: bytes)))), slot: .metadata(id))
            return Entry(id: id, metadata: metadata, data: sealing.sealWhole(bytes, slot: .data(id)))
        }
    }

    static func payload(_ entries: [Entry], size: (Entry) -> UInt64 = \.size, sha: (Entry) -> [UInt8] = \.sha256)
        -> [UInt8]
    {
        let files = entries.map { e in
            #"{"Id":"\#(e.id.hex)","Size":\#(size(e)),"SHA256":"\#(Hex.encode(sha(e)))","#
                + #""Metadata":"\#(Data(e.metadata).base64EncodedString())","#
                + #""Data":"\#(Data(e.data).base64EncodedString())"}"#
        }
        return Array((#"{"Captured":"age-encryption.org/v1","Files":["# + files.joined(separator: ",") + "]}").utf8)
    }

    /// Reads `body` in pieces of `piece`; returns the events as (index, size, sha) of each end
    /// and the bytes of each document's data.
    static func read(_ body: [UInt8], piece: Int) throws -> (ends: [(UInt64, [UInt8])], data: [[UInt8]]) {
        var reader = CapturedPayloadReader(maxDocuments: 20)
        var ends: [(UInt64, [UInt8])] = []
        var data: [[UInt8]] = []
        try reader.read(body, inPiecesOf: piece) { event in
            switch event {
            case .begin(_, let header):
                #expect(header.captured != nil && header.sealed)
                data.append([])
            case .data(let bytes): data[data.count - 1] += Array(bytes)
            case .end(_, let size, let sha): ends.append((size, sha))
            }
        }
        return (ends, data)
    }

    @Test(arguments: [1, 7, 4096, 1 << 20])
    func aStationsPayloadIsReadAsItCameInPiecesOfAnySize(piece: Int) throws {
        let entries = Self.entries([try AgeIdentity.generate(postQuantum: false).recipient])
        let (ends, data) = try Self.read(Self.payload(entries), piece: piece)
        #expect(ends.map(\.0) == entries.map(\.size))
        #expect(ends.map(\.1) == entries.map(\.sha256))
        #expect(data == entries.map(\.data))
    }

    @Test func whatIsNotWhatTheStationDeclaredIsRefused() throws {
        let r = [try AgeIdentity.generate(postQuantum: false).recipient]
        let entries = Self.entries(r)
        func refusal(_ body: [UInt8]) -> VaultError? {
            do { _ = try Self.read(body, piece: 4096) } catch { return VaultError.from(error) }
            return nil
        }
        #expect(refusal(Self.payload(entries, sha: { _ in [UInt8](repeating: 1, count: 32) }))?.code == .digestMismatch)
        #expect(refusal(Self.payload(entries, size: { $0.size + 1 }))?.code == .digestMismatch)
        #expect(refusal(Self.payload(entries, size: { $0.size - 1 }))?.code == .digestMismatch)
        // A byte moved from the data file to the metadata file keeps the sizes and the bytes in
        // order, but not the digest.
        var moved = entries
        moved[2].metadata.append(moved[2].data.removeLast())
        #expect(refusal(Self.payload(moved, size: \.size, sha: { _ in entries[2].sha256 }))?.code == .digestMismatch)
        // A data file that is not an age file, or sealed to other kinds of recipients than its
        // metadata file: header-malformed.
        var notAge = entries
        notAge[1].data = Array("not an age file at all, but long enough to be read".utf8)
        #expect(refusal(Self.payload(notAge))?.code == .headerMalformed)
        var otherKind = entries
        let pq = Self.entries([try AgeIdentity.generate(postQuantum: true).recipient], sizes: [70_000])[0]
        otherKind[2].data = pq.data
        #expect(refusal(Self.payload(otherKind))?.code == .headerMalformed)
        // Layout: trailing bytes, a document named twice, a size with a leading zero.
        #expect(refusal(Self.payload(entries) + [0x20])?.code == .trailingData)
        #expect(refusal(Self.payload([entries[0], entries[0]]))?.code == .headerMalformed)
        let text = String(decoding: Self.payload(entries), as: UTF8.self)
            .replacingOccurrences(of: #""Size":\#(entries[0].size),"#, with: #""Size":0\#(entries[0].size),"#)
        #expect(refusal(Array(text.utf8))?.code == .headerMalformed)
        #expect(refusal(Array(Self.payload(entries).dropLast()))?.code == .truncated)
    }
}
