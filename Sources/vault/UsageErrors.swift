import ArgumentParser
import VaultCore

/// Errors argument-parser finds on the command line, said the way vault says every error:
/// `vault: message`, then `vault: hint: …` (the command that was probably meant, and where
/// the help is; argument-parser suggests options itself). argument-parser's own report (`Error: …` and a usage line) is
/// kept for
/// help and `--version` only.
extension VaultCommand {
    static func exitReporting(_ error: Error, arguments: [String]) -> Never {
        let code = exitCode(for: error)
        let full = fullMessage(for: error)
        if code == .success {  // --help, help, --version
            if !full.isEmpty { print(full) }
            Platform.exit(0)
        }
        let message = self.message(for: error)
        guard !message.isEmpty else { Platform.exit(code.rawValue) }  // a command that reported its own error
        let help = helpCommand(in: full)
        var hints: [String] = []
        // `vault ad`, `vault ad x`, `vault lst --json`: the first word is not a command (with
        // arguments after it argument-parser says "2 unexpected arguments", with an option
        // "unknown option": either way it parsed at the top, where no command was found).
        if let word = firstWord(arguments), !commandNames.contains(word), help == "vault --help" {
            Terminal.err("vault: '\(Terminal.printable(word))' is not a vault command")
            // An alias counts as its command: 'lst' is near 'ls' and 'list', both of them list.
            let aliasOf = Dictionary(commands, uniquingKeysWith: { a, _ in a })
            let near = nearest(word, among: commandNames, sameAs: { aliasOf[$0] ?? $0 })
            if let near { hints.append("did you mean 'vault \(near)'?") }
            hints.append("'vault --help' lists the commands")
        } else {
            Terminal.err("vault: " + sentence(Terminal.printable(message).replacing("\\n", with: "; ")))
            if let help { hints.append("see '\(help)'") }
        }
        if !hints.isEmpty {
            Terminal.err("vault: hint: " + hints.joined(separator: hints[0].hasSuffix("?") ? " " : "; "))
        }
        Platform.exit(code.rawValue)
    }

    /// The first word of `arguments` that is not an option or the value of one of the options
    /// every command takes (`--vault DIR`): the command, when there is one.
    static func firstWord(_ arguments: [String]) -> String? {
        let valued: Set<String> = ["--vault", "--password-file", "--password-command", "--cache-size"]
        var i = 0
        while i < arguments.count {
            let a = arguments[i]
            if a == "--" { return i + 1 < arguments.count ? arguments[i + 1] : nil }
            if valued.contains(a) { i += 2; continue }
            if !a.hasPrefix("-") { return a }
            i += 1
        }
        return nil
    }

    /// A message in vault's manner: lower case first (unless it starts with an option, a
    /// variable or an acronym), no closing period.
    static func sentence(_ text: String) -> String {
        var text = text.hasSuffix(".") ? String(text.dropLast()) : text
        if let first = text.first, first.isUppercase, let second = text.dropFirst().first, second.isLowercase {
            text = first.lowercased() + text.dropFirst()
        }
        return text
    }

    /// `vault get --help` from the "See 'vault get --help' for more information." line.
    private static func helpCommand(in full: String) -> String? {
        quoted(after: "See '", in: full)
    }

    private static func quoted(after prefix: String, in text: String) -> String? {
        guard let start = text.firstRange(of: prefix)?.upperBound,
              let end = text[start...].firstIndex(of: "'") else {
            return nil
        }
        return String(text[start..<end])
    }

    /// The subcommands' names and aliases.
    private static var commandNames: [String] { commands.map(\.name) }

    /// Each name a subcommand answers to, with its own name (`ls` → `list`).
    private static var commands: [(name: String, command: String)] {
        // A command without a commandName is named after its type (Add → add), as argument-parser names it.
        configuration.subcommands.flatMap { c in
            let name = c.configuration.commandName ?? String(describing: c).lowercased()
            return ([name] + c.configuration.aliases).map { ($0, name) }
        }
    }

    /// The candidate closest to `word` (at most two edits away, or one it starts), if exactly one is.
    /// - Parameter sameAs: what a candidate stands for (candidates that stand for the same one are one).
    static func nearest(_ word: String, among candidates: [String], sameAs: (String) -> String = { $0 }) -> String? {
        let scored = candidates.map { (sameAs($0), distance(word, $0)) }.filter {
            $0.1 <= 2 || (word.count >= 3 && $0.0.hasPrefix(word))
        }
        guard let best = scored.min(by: { $0.1 < $1.1 }) else { return nil }
        return Set(scored.filter { $0.1 == best.1 }.map(\.0)).count == 1 ? best.0 : nil
    }

    /// Levenshtein distance (transpositions count as two edits).
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        var previous = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...max(b.count, 1) where !b.isEmpty {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return a.isEmpty ? b.count : previous[b.count]
    }
}
