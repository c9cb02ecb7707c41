/// One planned payload: which documents, in which order, and its exact length.
package struct ExportBatch: Sendable {
    /// 1-based position in the run.
    package let index: Int
    /// The documents, in payload order.
    package var records: [DocumentRecord]
    /// The payload's exact length in bytes.
    package var length: UInt64
    /// The payload's file name in an export folder (`batch-0001.json`).
    package var fileName: String { Self.fileName(index: index) }

    /// The name of batch `index` (1-based), wherever a batch is a file or an object:
    /// `batch-` and the index in four or more digits, then `.json`. The one spelling of it.
    package static func fileName(index: Int) -> String {
        "batch-" + String(repeating: "0", count: max(0, 4 - String(index).count)) + "\(index).json"
    }

    /// True for names ``fileName`` produces: `batch-` and four or more digits, then `.json`.
    package static func isFileName(_ name: String) -> Bool {
        guard name.hasPrefix("batch-"),
              name.hasSuffix(".json") else { return false }
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
package enum BatchPlanner {
    /// The batches for `records`.
    /// - Throws: ``VaultError/Code/usage`` naming the first document whose payload alone
    ///   exceeds the byte limit — before any work starts.
    package static func plan(
        _ records: [DocumentRecord], limits: BatchLimits, shape: PayloadShape
    ) throws -> [ExportBatch] {
        try plan(records, limits: limits, format: .json(shape))
    }

    /// The batches for `records` in `format`: the plan an export makes (``CompactPlan``), with
    /// each batch's records. For a raw framing, lengths are computed with its widest fields (a
    /// form's five-digit batch number), so they bound the real ones from above.
    package static func plan(
        _ records: [DocumentRecord], limits: BatchLimits, format: PayloadFormat
    ) throws -> [ExportBatch] {
        let plan = try CompactPlan(records, limits: limits, format: format)
        return (0..<plan.batchCount).map { i in
            ExportBatch(
                index: i + 1, records: Array(records[plan.bounds[i]..<plan.bounds[i + 1]]), length: plan.lengths[i])
        }
    }
}

/// The batch planner's rule, one document at a time, so a plan can be made while the
/// selection is read (nothing but the batch being cut is kept).
struct BatchCutter {
    private let limits: BatchLimits
    private let base: UInt64
    /// A document's bytes in a payload: its entry, and the separator before it unless first.
    private let cost: (DocumentRecord, _ first: Bool) -> UInt64
    private var documents = 0
    private var length: UInt64

    init(limits: BatchLimits, format: PayloadFormat) {
        precondition(limits.documents >= 1, "internal error: batch size must be at least 1")
        self.limits = limits
        // The parts the producer writes, at their widest (a form's batch number is not known
        // yet), and what one more document adds to the opening (a manifest's entry).
        let bound = format.widest
        base = UInt64(bound.openingLength([]) + bound.closing.count)
        cost = { r, first in
            let opening = bound.openingLength(first ? [r] : [r, r]) - bound.openingLength(first ? [] : [r])
            return UInt64(opening + bound.headLength(r, first: first) + bound.tail(r).count)
                + bound.dataLength(r)
        }
        length = base
    }

    /// Takes the next document. Returns the length of the batch it closes, when it starts a new one.
    /// - Throws: ``VaultError/Code/usage`` when the document's payload alone exceeds the byte limit.
    mutating func add(_ r: DocumentRecord) throws -> UInt64? {
        if let max = limits.bytes {
            let alone = base + cost(r, true)
            if alone > max {
                throw VaultError(
                    .usage,
                    """
                        document \(r.id.hex.prefix(12)) (\(r.metadata.name)) needs a payload of \
                        \(ByteSize.text(alone)), more than the limit of \(ByteSize.text(max))
                        """,
                    remedy: .raiseByteLimit(alone))
            }
        }
        var closed: UInt64?
        if documents > 0 && (documents >= limits.documents || limits.bytes.map { length + cost(r, false) > $0 } == true)
        {
            closed = length
            documents = 0
            length = base
        }
        length += cost(r, documents == 0)
        documents += 1
        return closed
    }

    /// The length of the last batch (an empty one when no document came).
    func finish() -> UInt64 { length }
}

/// An export's plan without its records: each document's id, packed, and where each batch
/// ends. A plan of 100,000 documents holds 2 MB; the records of a batch are read from the index
/// when it is produced (``Vault/records(_:)``).
struct CompactPlan {
    /// 16 bytes per document, in payload order.
    private var idBytes: [UInt8] = []
    /// The number of documents before each batch, and at the end.
    private(set) var bounds: [Int] = [0]
    /// Each batch's payload length.
    private(set) var lengths: [UInt64] = []
    /// Plaintext bytes of every document.
    private(set) var plaintextBytes: UInt64 = 0
    private var cutter: BatchCutter

    init(limits: BatchLimits, format: PayloadFormat) { cutter = BatchCutter(limits: limits, format: format) }

    /// Plans `records` at once.
    init(_ records: [DocumentRecord], limits: BatchLimits, format: PayloadFormat) throws {
        self.init(limits: limits, format: format)
        for r in records { try add(r) }
        finish()
    }

    /// Takes the next document.
    mutating func add(_ r: DocumentRecord) throws {
        if let closed = try cutter.add(r) {
            lengths.append(closed)
            bounds.append(documents)
        }
        idBytes += r.id.bytes
        plaintextBytes += r.metadata.size
    }

    /// Closes the last batch (an empty plan has one empty batch).
    mutating func finish() {
        lengths.append(cutter.finish())
        bounds.append(documents)
    }

    var documents: Int { idBytes.count / EnvelopeFormat.documentIDSize }
    var batchCount: Int { lengths.count }
    var payloadBytes: UInt64 { lengths.reduce(0, +) }

    /// The ids of batch `i` (0-based), in order.
    func ids(ofBatch i: Int) -> [DocumentID] {
        (bounds[i]..<bounds[i + 1]).map { id(at: $0) }
    }

    /// The id of document `n` (0-based) of the run.
    func id(at n: Int) -> DocumentID {
        let size = EnvelopeFormat.documentIDSize
        return DocumentID(bytes: Array(idBytes[n * size..<(n + 1) * size]))
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
    /// A document failed and was cut back out of the payload (skipping was asked for).
    case documentSkipped(id: DocumentID, name: String, error: VaultError)
    /// A payload is complete.
    case batchFinished(
        index: Int, of: Int, file: String?, payloadBytes: UInt64, sha256: String?, documents: Int, skipped: Int)
    /// Every batch is done.
    case finished(batches: Int, documents: Int, skipped: Int, payloadBytes: UInt64)
}
