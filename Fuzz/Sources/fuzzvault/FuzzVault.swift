// The fuzz targets over every parser of bytes vault did not write itself, one family per
// parser family (Fuzz/README.md lists them and their properties; each file here says its own).
// A property that does not hold traps, which libFuzzer reports as a crash.
//
// A target of the main package, so it reaches the parsers, which are `package`. Built by
// `make fuzz` with `-sanitize=fuzzer,address -DFUZZING`, it is libFuzzer's driver:
//     fuzzvault FAMILY [libFuzzer options] [corpus folders]
// In a normal build it replays files (or folders of files) through the same properties:
//     fuzzvault FAMILY PATH...
// which is how `make test` (`make fuzz-replay`) replays Fuzz/regressions/FAMILY/ and the seeds
// with the debug build it has anyway; it fails when it finds no input.
import Foundation
import VaultCore

struct Family: Sendable {
    let name: String
    let check: @Sendable ([UInt8]) -> Void
}

let families: [Family] = [
    Family(name: "envelope", check: EnvelopeFamily.check),
    Family(name: "history", check: HistoryFamily.check),
    Family(name: "state", check: StateFamily.check),
    Family(name: "config", check: ConfigFamily.check),
    Family(name: "rncryptor", check: RNCryptorFamily.check),
    Family(name: "s3", check: S3Family.check),
    Family(name: "upload", check: UploadFamily.check),
    Family(name: "payload", check: PayloadFamily.check),
    Family(name: "multipart", check: MultipartFamily.check),
    Family(name: "receipt", check: ReceiptFamily.check),
    Family(name: "tus", check: TusFamily.check),
    Family(name: "age", check: AgeFamily.check)
]

nonisolated(unsafe) var selected: Family?
// nonisolated(unsafe): set once in main before libFuzzer or the replay calls the target.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    selected!.check(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
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
        let args = CommandLine.arguments
        guard args.count >= 2,
              let family = families.first(where: { $0.name == args[1] }) else {
            FileHandle.standardError.write(
                Data(
                    """
                        usage: fuzzvault FAMILY [inputs or libFuzzer options]; families: \
                        \(families.map(\.name).joined(separator: ", "))\n
                        """
                        .utf8))
            exit(64)
        }
        selected = family
        if args.count == 4, args[2] == "--make-seeds" {
            print(
                """
                    fuzzvault \(family.name): \(Seeds.make(family.name, into: args[3])) seeds written by vault into \
                    \(args[3])
                    """
            )
            exit(0)
        }
        #if FUZZING
        // libFuzzer sees the arguments after the family.
        var argv: [UnsafeMutablePointer<CChar>?] = [strdup(args[0])] + args.dropFirst(2).map { strdup($0) } + [nil]
        var argc = CInt(argv.count - 1)
        exit(
            argv.withUnsafeMutableBufferPointer { p in
                var base = p.baseAddress!
                return LLVMFuzzerRunDriver(&argc, &base) { data, size in fuzzOne(data, size) }
            })
        #else
        var count = 0
        for arg in args.dropFirst(2) {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: arg, isDirectory: &isFolder) else {
                FileHandle.standardError.write(Data("fuzzvault: no such file: \(arg)\n".utf8))
                exit(66)
            }
            let files =
                isFolder.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: arg)) ?? []).sorted().map { arg + "/" + $0 }
                : [arg]
            for file in files where !file.hasSuffix("/README.md") {
                guard let data = FileManager.default.contents(atPath: file) else { continue }
                family.check(Array(data))
                count += 1
            }
        }
        // A replay of nothing proves nothing: an empty folder or no path at all is a failure.
        guard count > 0 else {
            FileHandle.standardError.write(Data("fuzzvault \(family.name): no input to replay\n".utf8))
            exit(66)
        }
        print("fuzzvault \(family.name): \(count) inputs replayed, every property held")
        #endif
    }
}
