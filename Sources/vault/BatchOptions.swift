import ArgumentParser
import VaultCore

/// How export and upload cut documents into payloads.
struct BatchOptions: ParsableArguments {
    @Option(help: "Most documents per payload (default 20, the payload contract; more only for back offices that take more).")
    var batchSize: Int = 20

    @Option(help: ArgumentHelp("Most bytes per payload; K, M and G suffixes are powers of 1024.", valueName: "n"))
    var maxBytes: ByteCount?

    @Option(help: "objects: {\"Id\",\"Name\",\"ContentType\",\"Size\",\"SHA256\",\"Data\"} per document; strings: bare base64 strings.")
    var shape: PayloadShape = .objects

    func validate() throws {
        if batchSize < 1 { throw ValidationError("--batch-size must be at least 1.") }
    }

    /// The limits for the batch planner.
    var limits: BatchLimits { BatchLimits(documents: batchSize, bytes: maxBytes?.value) }
}
