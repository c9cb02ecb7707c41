/// A reader of a body that arrives in pieces: the payload, form and multipart readers.
package protocol PieceReader {
    /// What the reader reports as it reads.
    associatedtype Event
    /// Reads the next piece, calling `handle` for what it completes.
    mutating func read(_ piece: UnsafeRawBufferPointer, _ handle: (Event) throws -> Void) throws
    /// Checks that the body ended where it should.
    func finish() throws
}

extension PayloadReader: PieceReader {}
extension FormReader: PieceReader {}
extension MultipartReader: PieceReader {}
extension SealedPayloadReader: PieceReader {}

extension PieceReader {
    /// Reads all of `body`, in pieces of `piece` bytes (a body in memory, the tests, the fuzzer),
    /// then checks its end.
    package mutating func read(_ body: [UInt8], inPiecesOf piece: Int, _ handle: (Event) throws -> Void) throws {
        var start = 0
        while start < body.count {
            let end = min(body.count, start + piece)
            try body[start..<end].withUnsafeBytes { try read($0, handle) }
            start = end
        }
        try finish()
    }
}
