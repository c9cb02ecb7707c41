/// One planned payload: which documents, in which order, and its exact length.
public struct ExportBatch: Sendable {
    /// 1-based position in the run.
    public let index: Int
    /// The documents, in payload order.
    public var records: [DocumentRecord]
    /// The payload's exact length in bytes.
    public var length: UInt64
    /// The payload's file name in an export folder (`batch-0001.json`).
    public var fileName: String { "batch-" + String(repeating: "0", count: max(0, 4 - String(index).count)) + "\(index).json" }

    /// True for names ``fileName`` produces: `batch-` and four or more digits, then `.json`.
    public static func isFileName(_ name: String) -> Bool {
        guard name.hasPrefix("batch-"), name.hasSuffix(".json") else { return false }
        let digits = name.dropFirst(6).dropLast(5)
        return digits.count >= 4 && digits.allSatisfy { $0.isASCII && $0.isNumber }
    }
}

/// How documents are cut into batches.
public struct BatchLimits: Sendable {
    /// Most documents per payload (default 20).
    public var documents: Int
    /// Most bytes per payload, if limited.
    public var bytes: UInt64?

    /// Limits; `documents` must be at least 1.
    public init(documents: Int = 20, bytes: UInt64? = nil) {
        self.documents = documents
        self.bytes = bytes
    }
}

/// Cuts a selection into batches, in order, greedily: a batch takes the next document while
/// it has fewer than `limits.documents` and the payload stays within `limits.bytes`.
public enum BatchPlanner {
    /// The batches for `records`.
    /// - Throws: ``VaultError/Code/usage`` naming the first document whose payload alone
    ///   exceeds the byte limit — before any work starts.
    public static func plan(_ records: [DocumentRecord], limits: BatchLimits, shape: PayloadShape) throws -> [ExportBatch] {
        try plan(records, limits: limits, format: .json(shape))
    }

    /// The batches for `records` in `format`. For a form, lengths are computed with a five-digit
    /// batch number and count in the manifest, so they bound the real ones from above.
    public static func plan(_ records: [DocumentRecord], limits: BatchLimits, format: PayloadFormat) throws -> [ExportBatch] {
        precondition(limits.documents >= 1, "internal error: batch size must be at least 1")
        if case .json(let shape) = format { return try planJSON(records, limits: limits, shape: shape) }
        guard case .form(var form) = format else { preconditionFailure() }
        form.batch = 99_999
        form.of = 99_999
        let bound = PayloadFormat.form(form)
        let base = UInt64(bound.opening([]).count + bound.closing.count)
        func cost(_ r: DocumentRecord, first: Bool) -> UInt64 {
            UInt64(bound.head(r, first: first).count + bound.tail(r).count + form.manifest([r]).count - form.manifest([]).count)
                + bound.dataLength(r.metadata.size) + (first ? 0 : 1)
        }
        if let max = limits.bytes {
            for r in records where base + cost(r, first: true) > max {
                let alone = base + cost(r, first: true)
                throw VaultError(.usage, "document \(r.id.hex.prefix(12)) (\(r.metadata.name)) needs a \(alone)-byte payload, more than the limit of \(max) bytes",
                                 hint: "raise the limit to at least \(alone) bytes, or leave this document out")
            }
        }
        var batches: [ExportBatch] = []
        var current: [DocumentRecord] = []
        var length = base
        for r in records {
            if !current.isEmpty && (current.count >= limits.documents || limits.bytes.map { length + cost(r, first: false) > $0 } == true) {
                batches.append(ExportBatch(index: batches.count + 1, records: current, length: length))
                current = []
                length = base
            }
            length += cost(r, first: current.isEmpty)
            current.append(r)
        }
        if !current.isEmpty || batches.isEmpty {
            batches.append(ExportBatch(index: batches.count + 1, records: current, length: length))
        }
        return batches
    }

    private static func planJSON(_ records: [DocumentRecord], limits: BatchLimits, shape: PayloadShape) throws -> [ExportBatch] {
        if let max = limits.bytes {
            for r in records {
                let alone = PayloadFraming.length(of: [r], shape: shape)
                if alone > max {
                    throw VaultError(.usage, "document \(r.id.hex.prefix(12)) (\(r.metadata.name)) needs a \(alone)-byte payload, more than the limit of \(max) bytes",
                                     hint: "raise the limit to at least \(alone) bytes, or leave this document out")
                }
            }
        }
        var batches: [ExportBatch] = []
        var current: [DocumentRecord] = []
        var length = UInt64(PayloadFraming.open.count + PayloadFraming.close.count)
        for r in records {
            let entry = PayloadEntry(r, shape: shape).length + (current.isEmpty ? 0 : 1)
            if !current.isEmpty && (current.count >= limits.documents || limits.bytes.map { length + entry > $0 } == true) {
                batches.append(ExportBatch(index: batches.count + 1, records: current, length: length))
                current = []
                length = UInt64(PayloadFraming.open.count + PayloadFraming.close.count)
            }
            length += PayloadEntry(r, shape: shape).length + (current.isEmpty ? 0 : 1)
            current.append(r)
        }
        if !current.isEmpty || batches.isEmpty {
            batches.append(ExportBatch(index: batches.count + 1, records: current, length: length))
        }
        return batches
    }
}

/// What the export pipeline reports as it works. Byte counts are plaintext bytes that have
/// authenticated; totals are known before the first payload byte is written.
public enum ExportEvent: Sendable {
    /// The run is planned.
    case started(runID: String, documents: Int, batches: Int, plaintextBytes: UInt64, payloadBytes: UInt64)
    /// A payload begins.
    case batchStarted(index: Int, of: Int, documents: Int, payloadBytes: UInt64)
    /// A document begins (`position` counts from 1 over the whole run).
    case documentStarted(id: DocumentID, name: String, size: UInt64, position: Int, of: Int)
    /// Plaintext bytes authenticated so far, of the total (which shrinks only when a document is skipped).
    case progress(done: UInt64, total: UInt64)
    /// A document is in the payload, whole.
    case documentFinished(id: DocumentID)
    /// A document failed and was cut back out of the payload (`--skip-bad`).
    case documentSkipped(id: DocumentID, name: String, error: VaultError)
    /// A payload is complete.
    case batchFinished(index: Int, of: Int, file: String?, payloadBytes: UInt64, sha256: String?, documents: Int, skipped: Int)
    /// Every batch is done.
    case finished(batches: Int, documents: Int, skipped: Int, payloadBytes: UInt64)
}
