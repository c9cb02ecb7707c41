import ArgumentParser
import VaultCore

/// How export and upload cut documents into payloads.
struct BatchOptions: ParsableArguments {
    // .unconditional: "--batch-size -1" is a value to refuse, not a missing value.
    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "Most documents per payload (default 20, the payload contract; more only for back offices that take more).",
            valueName: "n"))
    var batchSize: Int = 20

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "Most bytes per payload: bytes, or K, M, G (512K, 1.5M, 300MB; powers of 1024).", valueName: "size"),
        transform: ByteCount.option)
    var maxBytes: ByteCount?

    @Option(
        help:
            """
                objects: {\"Id\",\"Name\",\"ContentType\",\"Size\",\"SHA256\",\"Data\"} per document; strings: bare \
                base64 strings.
                """
    )
    var shape: PayloadShape = .objects

    func validate() throws {
        if batchSize < 1 { throw ValidationError("--batch-size must be at least 1, not \(batchSize).") }
    }

    /// The limits for the batch planner.
    var limits: BatchLimits { BatchLimits(documents: batchSize, bytes: maxBytes?.value) }
}
