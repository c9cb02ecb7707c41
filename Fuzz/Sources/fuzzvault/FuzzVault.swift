// libFuzzer target over the envelope header parser, the metadata decoder and the reader.
//
// Properties checked on every input (a violation traps, which libFuzzer reports as a crash):
//  - parsing never crashes, whatever the bytes;
//  - non-malleability: a header that parses serializes back to exactly the bytes it came from;
//  - metadata that decodes encodes back to exactly the same bytes;
//  - the reader never releases more plaintext than the metadata's size, and releases nothing
//    that did not authenticate (it either ends cleanly having released exactly that size, or
//    throws a VaultError).
// The keyring is the fixture generator's, so mutated fixture vectors reach the payload code.
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

let keyring: Keyring = {
    let pw = Array("vault fixture password".utf8)
    return try! Keyring.create(password: pw.withUnsafeBytes { try! SecretBytes(copying: $0) }, kdf: .minimum,
                               random: DeterministicRandom(seed: "vault fixtures v1 / keyring"))
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let header = try? EnvelopeHeader.parse(bytes) {
        precondition(header.serialized() == Array(bytes.prefix(header.encodedSize)), "header parsing is malleable")
    }
    if let meta = try? DocumentMetadata.decode(bytes) {
        precondition(meta.encoded() == bytes, "metadata decoding is malleable")
    }
    do {
        let reader = try EnvelopeReader(input: MemoryEnvelope(bytes), keyring: keyring, verifyDigest: true)
        var released: UInt64 = 0
        while let batch = try reader.next() {
            released += UInt64(batch.count)
            precondition(released <= reader.metadata.size, "released more than the document's size")
        }
        precondition(released == reader.metadata.size, "ended early without an error")
    } catch is VaultError {
        // Rejected, as it should be for almost every input.
    } catch {
        preconditionFailure("a non-VaultError escaped: \(error)")
    }
    return 0
}

@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt

@main
struct FuzzMain {
    static func main() {
        _ = keyring
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOne(data, size) })
    }
}
