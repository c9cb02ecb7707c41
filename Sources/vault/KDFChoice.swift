import ArgumentParser
import VaultCore

/// `--kdf LEVEL`: one of the named Argon2id levels (interactive, moderate, sensitive).
///
/// A debug build also takes `insecure-test`: Argon2id's minimum (1 pass, 8 KiB), so that the
/// CLI tests, which start the binary several hundred times, do not pay 64 MiB of Argon2id at
/// each start — the way age's tests lower scrypt's work factor. A release build does not know
/// the word (`make install-check` checks that the installed binary refuses it), and it is never
/// listed in help or the manual.
struct KDFChoice: ExpressibleByArgument, Sendable {
    /// The level's name, as `init --json` and the messages say it.
    let name: String
    let parameters: KDFParameters

    init(_ level: KDFLevel) {
        self.init(name: level.rawValue, parameters: level.parameters)
    }

    private init(name: String, parameters: KDFParameters) {
        self.name = name
        self.parameters = parameters
    }

    init?(argument: String) {
        if let level = KDFLevel(rawValue: argument) {
            self.init(level)
            return
        }
        #if DEBUG
        if argument == Self.testLevel {
            self.init(name: Self.testLevel, parameters: .minimum)
            return
        }
        #endif
        return nil
    }

    static var allValueStrings: [String] { KDFLevel.allCases.map(\.rawValue) }

    /// The level's name in help (`default: moderate`), not the struct's description.
    var defaultValueDescription: String { name }

    /// The name of the debug builds' test level.
    static let testLevel = "insecure-test"

    /// The name of the level `parameters` are, "custom" for none.
    static func name(of parameters: KDFParameters) -> String {
        if let level = KDFLevel.allCases.first(where: { $0.parameters == parameters }) { return level.rawValue }
        #if DEBUG
        if parameters == .minimum { return testLevel }
        #endif
        return "custom"
    }
}
