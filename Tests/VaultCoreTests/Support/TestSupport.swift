import Foundation
@testable import VaultCore

/// A fresh temporary directory, removed when the value is dropped.
final class TempDir {
    let path: String
    init() {
        var template = Array("\(NSTemporaryDirectory())/vault-test-XXXXXX".utf8CString)
        path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
    func file(_ name: String) -> String { path + "/" + name }
}

enum TestKeys {
    static func password(_ s: String = "correct horse") -> SecretBytes {
        let bytes = Array(s.utf8)
        return bytes.withUnsafeBytes { try! SecretBytes(copying: $0) }
    }

    /// A keyring with the smallest Argon2id parameters, so tests run fast.
    static func keyring(seed: String = "test") -> Keyring {
        try! Keyring.create(password: password(), kdf: .minimum, random: DeterministicRandom(seed: seed))
    }
}

/// Deterministic pseudo-random bytes for test plaintexts.
func testBytes(_ count: Int, seed: UInt64 = 1) -> [UInt8] {
    var state = seed &* 0x9E3779B97F4A7C15 | 1
    return (0..<count).map { _ in
        state ^= state << 13; state ^= state >> 7; state ^= state << 17
        return UInt8(truncatingIfNeeded: state)
    }
}

/// Seals `plaintext` into an in-memory envelope.
func sealEnvelope(
    _ plaintext: [UInt8], keyring: Keyring, name: String = "doc",
    random: any RandomSource = DeterministicRandom(seed: "env"),
    id: DocumentID? = nil, tags: [String] = []
) throws -> [UInt8] {
    let out = MemoryEnvelope()
    let meta = DocumentMetadata(
        name: name, contentType: "application/octet-stream", size: 0,
        sha256: [UInt8](repeating: 0, count: 32), addedAtMillis: 1_700_000_000_000, tags: tags)
    let w = try EnvelopeWriter(
        output: out, keyring: keyring, documentID: id ?? DocumentID.random(using: random),
        metadata: meta, random: random)
    try plaintext.withUnsafeBytes { try w.write($0) }
    _ = try w.finish()
    return out.bytes
}

/// Opens an in-memory envelope and returns all plaintext it released before any error, and the error.
func openEnvelope(
    _ bytes: [UInt8], keyring: Keyring, verifyDigest: Bool = true
) -> (released: [UInt8], error: VaultError?) {
    var released: [UInt8] = []
    do {
        let r = try EnvelopeReader(input: MemoryEnvelope(bytes), keyring: keyring, verifyDigest: verifyDigest)
        while let batch = try r.next() { released += batch }
        return (released, nil)
    } catch {
        return (released, VaultError.from(error))
    }
}

/// A loader of committed test inputs (vectors, fixtures) found nothing: a moved folder or a
/// changed suffix must fail the test that reads them, never let it pass on zero inputs.
struct NothingFound: Error, CustomStringConvertible {
    let what: String
    var description: String { "no \(what) found: a test over them would check nothing" }
}

/// `found`, unless it is empty (``NothingFound``).
func requireSome<C: Collection>(_ found: C, _ what: String) throws -> C {
    guard !found.isEmpty else { throw NothingFound(what: what) }
    return found
}

/// The names of the files in `directory` that end in `suffix`, sorted; ``NothingFound`` for none.
func inputFiles(in directory: String, suffix: String) throws -> [String] {
    let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter {
        $0.hasSuffix(suffix)
    }.sorted()
    return try requireSome(names, "*\(suffix) files in \(directory)")
}
