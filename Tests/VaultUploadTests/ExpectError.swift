import Testing
import VaultCore

/// Expects `body` to fail with a ``VaultError`` of `code`: a test never passes on an error of
/// another kind.
func expectError(
    _ code: VaultError.Code, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) {
    let e = #expect(throws: VaultError.self, comment, sourceLocation: sourceLocation) { try body() }
    #expect(e?.code == code, comment, sourceLocation: sourceLocation)
}
