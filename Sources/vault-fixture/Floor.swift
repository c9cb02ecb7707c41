import CSodium
import Crypto
import Foundation
import VaultCore

/// `vault-fixture --floor BODY OUT`: the CPU floor of a receiver's work on one batch, for `make
/// bench`'s intake figures (scripts/bench-intake.sh). It does only what taking the batch needs
/// and nothing a server adds: reads BODY (a multipart form of one document, as the load sends
/// it) in 1 MiB pieces, finds the document's bytes between the boundaries, hashes the body and
/// the document (SHA-256, swift-crypto as the receiver uses it), encrypts the document in 64 KiB
/// chunks (libsodium's XChaCha20-Poly1305, as the envelope does), writes the chunks to OUT and
/// fsyncs it once. Prints one JSON line: the body's bytes, wall seconds, CPU seconds (user and
/// system, getrusage) and the SHA-256 of the document (to check it found the right bytes).
func floor(body path: String, out: String) throws {
    let input = open(path, O_RDONLY)
    let output = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard input >= 0, output >= 0 else { throw FloorError("cannot open \(path) or \(out)") }
    defer { close(input); close(output) }
    guard sodium_init() >= 0 else { throw FloorError("libsodium did not start") }
    let start = Date()
    let before = cpuSeconds()
    var payload = SHA256()
    var document = SHA256()
    var key = [UInt8](repeating: 0, count: Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES))
    var nonce = [UInt8](repeating: 0, count: Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES))
    randombytes_buf(&key, key.count)
    let chunkSize = 64 << 10
    var chunk = [UInt8](repeating: 0, count: chunkSize)
    var chunkFill = 0
    var sealed = [UInt8](repeating: 0, count: chunkSize + Int(crypto_aead_xchacha20poly1305_ietf_ABYTES))
    func seal(_ count: Int) throws {
        sodium_increment(&nonce, nonce.count)
        var written: UInt64 = 0
        crypto_aead_xchacha20poly1305_ietf_encrypt(&sealed, &written, chunk, UInt64(count), nil, 0, nil, nonce, key)
        guard write(output, sealed, Int(written)) == Int(written) else { throw FloorError("write failed") }
    }
    func take(_ bytes: UnsafeRawBufferPointer) throws {
        document.update(bufferPointer: bytes)
        var at = 0
        while at < bytes.count {
            let n = min(chunkSize - chunkFill, bytes.count - at)
            chunk.withUnsafeMutableBytes { $0.baseAddress!.advanced(by: chunkFill).copyMemory(
                from: bytes.baseAddress!.advanced(by: at), byteCount: n) }
            (chunkFill, at) = (chunkFill + n, at + n)
            if chunkFill == chunkSize {
                try seal(chunkFill)
                chunkFill = 0
            }
        }
    }
    // The first part's head ends at the first blank line; the document at "\r\n--" + boundary.
    var buffer = [UInt8](repeating: 0, count: (1 << 20) + 256)
    var carry = 0
    var total = 0
    var delimiter: [UInt8]?
    var ended = false
    while true {
        let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress! + carry, 1 << 20) }
        guard n >= 0 else { throw FloorError("read failed") }
        if n == 0 { break }
        total += n
        let tail: [UInt8] = try buffer.withUnsafeBytes { all in
            payload.update(bufferPointer: UnsafeRawBufferPointer(rebasing: all[carry..<carry + n]))
            var filled = UnsafeRawBufferPointer(rebasing: all[0..<carry + n])
            if delimiter == nil {
                guard let line = filled.firstIndex(of: 13) else { throw FloorError("no boundary") }
                delimiter = Array("\r\n".utf8) + Array(filled[0..<line])
                guard let head = find(Array("\r\n\r\n".utf8), in: filled) else { throw FloorError("no part head") }
                filled = UnsafeRawBufferPointer(rebasing: filled[(head + 4)...])
            }
            guard !ended else { return [] }
            if let end = find(delimiter!, in: filled) {
                try take(UnsafeRawBufferPointer(rebasing: filled[..<end]))
                ended = true
                return []
            }
            let keep = min(filled.count, delimiter!.count - 1)
            try take(UnsafeRawBufferPointer(rebasing: filled[..<(filled.count - keep)]))
            return Array(filled[(filled.count - keep)...])
        }
        // What may start the delimiter goes in front of the next piece.
        buffer.replaceSubrange(0..<tail.count, with: tail)
        carry = tail.count
    }
    if chunkFill > 0 { try seal(chunkFill) }
    guard ended, fsync(output) == 0 else { throw FloorError("the body has no end boundary, or fsync failed") }
    let digest = document.finalize().map { String(format: "%02x", $0) }.joined()
    _ = payload.finalize()
    let line = #"{"bytes":\#(total),"wall":\#(Date().timeIntervalSince(start)),"cpu":\#(cpuSeconds() - before),"#
        + #""sha256":"\#(digest)"}"#
    print(line)
}

/// Where `needle` first starts in `haystack` (memmem, as the receiver looks).
private func find(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> Int? {
    ByteSearch.find(needle, in: haystack)
}

private func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

struct FloorError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
