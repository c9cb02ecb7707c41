import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore
import VaultReceive

/// The documents a back office took, by station and time (`list` and `get` at the office): the
/// office's records say which batch brought each document, from which station, when.
struct ReceivedOptions: ParsableArguments {
    @Option(help: ArgumentHelp("At the office: only documents taken from this station.", valueName: "name"))
    var station: String?

    @Option(
        name: .customLong("received-since"),
        help: ArgumentHelp(
            "At the office: only documents taken at or after a date (2026-11-01), a time or an age (24h, 7d).",
            valueName: "when"))
    var since: String?

    @Option(
        name: .customLong("received-before"),
        help: ArgumentHelp("At the office: only documents taken before a date, a time or an age.", valueName: "when"))
    var before: String?

    /// Whether any of these options was given.
    var isGiven: Bool { station != nil || since != nil || before != nil }

    func validate() throws {
        for (option, value) in [("--received-since", since), ("--received-before", before)] {
            if let value, VaultCommand.Log.parseTime(value) == nil {
                throw ValidationError(
                    """
                        \(option) needs a date (2026-11-01), an ISO 8601 time (2026-11-01T09:30:00Z) or an age \
                        (24h, 7d), not '\(value)'.
                        """)
            }
        }
    }

    /// The filter these options ask for, in `book`, among the documents `among` names (all when
    /// nil).
    /// - Throws: ``VaultError/Code/notFound`` for a station the office never knew.
    func filter(in book: OfficeBook, among: Set<DocumentID>?, now: Date = Date()) throws -> OfficeBook.Filter {
        if let station, book.stations[station] == nil, !book.batches.contains(where: { $0.station == station }) {
            throw VaultError(
                .notFound, "there is no station named '\(Terminal.printable(station))' and no batch of one",
                hint: "'vault receive station list' shows the stations")
        }
        func millis(_ text: String?) -> Int64? {
            text.flatMap { VaultCommand.Log.parseTime($0, now: now) }.map { UTCTime($0).millis }
        }
        return OfficeBook.Filter(
            station: station, sinceMillis: millis(since), beforeMillis: millis(before), among: among)
    }
}

extension GlobalOptions {
    /// The vault these options name, unlocked once, with what its office's records say (checked
    /// as ``officeBook()`` checks them).
    func openOffice() async throws -> (VaultCore.Vault, OfficeBook) {
        let home: any OfficeHome
        if let store = try await openStore() {
            home = StoreHome(log: SharedReceiverLog(vault: store.vault, client: store.client, location: store.location))
        } else {
            home = FolderHome(vault: try unlock())
        }
        let (records, problems) = try await home.records()
        if !problems.isEmpty { throw Receiver.untrusted(problems) }
        guard try await home.identity(create: false) != nil else {
            throw VaultError(
                .usage, "this vault is not a back office: it has taken no batch and has no receiver key",
                hint: "--station, --received-since and --received-before ask an office's records")
        }
        return (home.vault, OfficeBook(records))
    }
}
