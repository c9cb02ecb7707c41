import Foundation
import Testing

/// The loaders of committed test inputs fail when they find none, so a vector test cannot pass
/// on an empty or moved folder.
@Suite struct GuardTests {
    @Test func aLoaderOfVectorsThatFindsNoneFails() throws {
        let empty = TempDir()
        #expect(throws: NothingFound.self) { try inputFiles(in: empty.path, suffix: ".vector") }
        #expect(throws: NothingFound.self) { try VectorTests.load(from: empty.path) }
        #expect(throws: NothingFound.self) { try inputFiles(in: empty.path + "/missing", suffix: ".vector") }
        #expect(throws: NothingFound.self) { try RNCryptorTests.records("# only a comment\n\n", of: "key") }
        #expect(try VectorTests.load().count >= 30)
        #expect(try RNCryptorTests.vectors("key").count >= 3)
    }
}
