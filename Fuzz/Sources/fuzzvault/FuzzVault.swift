// The fuzz target over the envelope header parser, the metadata decoder and the reader.
//
// Properties checked on every input (a violation traps, which libFuzzer reports as a crash):
//  - parsing never crashes, whatever the bytes;
//  - non-malleability: a header that parses serializes back to exactly the bytes it came from;
//  - metadata that decodes encodes back to exactly the same bytes;
//  - the reader never releases more plaintext than the metadata's size, and releases nothing
//    that did not authenticate (it either ends cleanly having released exactly that size, or
//    throws a VaultError).
// The keyring is the fixture generator's, so mutated fixture vectors reach the payload code.
//
// A target of the main package, so it reaches the parsers, which are `package`. Built by
// `make fuzz` with `-sanitize=fuzzer,address -DFUZZING`, it is libFuzzer's driver; in a normal
// build it replays the files (or folders of files) it is given through the same properties,
// which is how `make test` replays Fuzz/regressions/.
import Foundation
import VaultCore

let keyring: Keyring = {
    let pw = Array("vault fixture password".utf8)
    return try! Keyring.create(password: pw.withUnsafeBytes { try! SecretBytes(copying: $0) }, kdf: .minimum,
                               random: DeterministicRandom(seed: "vault fixtures v1 / keyring"))
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    check(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

func check(_ bytes: [UInt8]) {
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
}

#if FUZZING
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt
#endif

@main
struct FuzzMain {
    static func main() {
        _ = keyring
        #if FUZZING
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOne(data, size) })
        #else
        // Replay: every file named, or in a folder named, once through the properties.
        var count = 0
        for arg in CommandLine.arguments.dropFirst() {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: arg, isDirectory: &isFolder) else {
                FileHandle.standardError.write(Data("fuzzvault: no such file: \(arg)\n".utf8))
                exit(66)
            }
            let files = isFolder.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: arg)) ?? []).sorted().map { arg + "/" + $0 } : [arg]
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else { continue }
                check(Array(data))
                count += 1
            }
        }
        print("fuzzvault: \(count) inputs replayed, every property held")
        #endif
    }
}
