import Foundation

/// The sizes of the tests that push large amounts of data or documents: cut for `make test`,
/// where the growth they look for already shows, and full under `make long`
/// (`VAULT_LONG_TESTS=1`). The same test code runs in both; only the figures change.
package enum TestSize {
    /// True under `make long`.
    package static let long = ProcessInfo.processInfo.environment["VAULT_LONG_TESTS"] == "1"

    /// `short` in `make test`, `long` in `make long`.
    package static func pick<T>(_ short: T, long full: T) -> T { long ? full : short }
}
