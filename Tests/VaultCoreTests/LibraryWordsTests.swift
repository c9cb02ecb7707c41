import Foundation
import Testing

/// The libraries speak no CLI: no option, command or environment variable is named in
/// VaultCore, VaultUpload, VaultS3 or VaultRemote, in messages or in their documentation. A
/// library error says what happened and, where a vault operation would set it right, names it
/// as a ``VaultError/Remedy``; the CLI words it (`Hints`).
@Suite struct LibraryWordsTests {
    static let libraries = ["VaultCore", "VaultUpload", "VaultS3", "VaultRemote", "VaultReceive"]

    /// What names a CLI: a long or short option (`--url`, `-r`), a command (`'vault push'`,
    /// `vault audit`), an environment variable of vault's or AWS's.
    static let cliWords = try! NSRegularExpression(
        pattern: #"(--[a-z][a-z0-9-]+)|((?:^|[\s'"(`])-[a-zA-Z](?=[\s'",).`]|$))|"#
            + #"(\bvault (?:init|add|list|get|remove|export|upload|uploads|log|audit|passwd|remote|push|pull|clone|"#
            + #"verify|import|restore)\b)|(\b(?:VAULT|AWS)_[A-Z_]+)"#,
        options: [.anchorsMatchLines])

    /// `path:line: word` for each CLI word in `files`.
    static func offenders(in files: [(String, String)]) -> [String] {
        var found: [String] = []
        for (path, text) in files {
            for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let s = String(line)
                for m in cliWords.matches(in: s, range: NSRange(s.startIndex..., in: s)) {
                    let word = String(s[Range(m.range, in: s)!]).trimmingCharacters(
                        in: CharacterSet(charactersIn: " \t'\"(`"))
                    found.append("\(path):\(n + 1): \(word)")
                }
            }
        }
        return found
    }

    @Test func noLibraryNamesAnOptionACommandOrAVariable() throws {
        let all = try PortabilityTests.swiftFiles()
        let files = all.filter { f in Self.libraries.contains { f.0.hasPrefix($0 + "/") } }
        #expect(files.count > 60, "found only \(files.count) library files")
        let offenders = Self.offenders(in: files)
        #expect(
            offenders.isEmpty,
            """
                CLI words in the libraries (give the error a Remedy, or word it in the library's \
                terms):\n\(offenders.joined(separator: "\n"))
                """
        )
    }

    @Test func theCheckFindsPlantedWords() {
        let planted = [
            ("VaultCore/X.swift", #"throw VaultError(.usage, "x", hint: "use -r to add the files")"#),
            (
                "VaultUpload/Y.swift",
                "/// Extra headers (`--header`).\nlet a = \"x-vault-batch\" // -1, a-b, 1-16 are fine"
            ),
            (
                "VaultRemote/Z.swift",
                #"hint: "push one there first with 'vault push'"; check AWS_ENDPOINT_URL or VAULT_PASSWORD"#
            )
        ]
        #expect(
            Self.offenders(in: planted) == [
                "VaultCore/X.swift:1: -r", "VaultUpload/Y.swift:1: --header", "VaultRemote/Z.swift:1: vault push",
                "VaultRemote/Z.swift:1: AWS_ENDPOINT_URL", "VaultRemote/Z.swift:1: VAULT_PASSWORD"
            ])
    }
}
