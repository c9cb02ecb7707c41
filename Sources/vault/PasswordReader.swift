#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SystemPackage
import VaultCore

/// Gets the vault password without it ever passing through argv or a Swift `String`:
/// `--password-file FILE`, else `--password-command CMD`, else `VAULT_PASSWORD`, else
/// `VAULT_PASSWORD_FILE`, else `VAULT_PASSWORD_COMMAND`, else a no-echo prompt on the terminal.
enum PasswordReader {
    static let maxLength = 4096

    /// Where one password comes from: the vault's, or another (an import's).
    struct Source {
        /// The environment variable.
        var variable: String
        /// The environment variable naming a command that prints the password.
        var commandVariable: String { variable + "_COMMAND" }
        /// The environment variable naming a file that holds the password (restic's `RESTIC_PASSWORD_FILE`).
        var fileVariable: String { variable + "_FILE" }
        /// The option naming a file.
        var fileOption: String
        /// The prompt on the terminal.
        var prompt: String
        /// What it unlocks, for messages.
        var what: String

        static let vault = Source(
            variable: "VAULT_PASSWORD", fileOption: "--password-file", prompt: "Vault password: ", what: "vault")
        static let newPassword = Source(
            variable: "VAULT_NEW_PASSWORD", fileOption: "--new-password-file", prompt: "New vault password: ",
            what: "new")
        /// The password another station changed the vault to (`vault pull`).
        static let changedPassword = Source(
            variable: "VAULT_NEW_PASSWORD", fileOption: "--new-password-file",
            prompt: "The vault's new password (changed at another station): ", what: "new")
        /// An operator's password (`vault receive operator add`): read as a new vault password is.
        static let operatorPassword = Source(
            variable: "VAULT_NEW_PASSWORD", fileOption: "--new-password-file", prompt: "Operator's password: ",
            what: "operator")
        static let rncryptor = Source(
            variable: "VAULT_IMPORT_PASSWORD", fileOption: "--from-password-file",
            prompt: "RNCryptor password: ", what: "RNCryptor")
    }

    /// Where the vault's password came from, for the hint after a wrong one.
    enum Origin { case file(String), command, variable, fileVariable(String), commandVariable, prompt }

    /// Where the vault password of this run came from (set by ``read(file:command:from:confirm:)``).
    // nonisolated(unsafe): set on the main task before the vault is opened, read when its error is printed.
    nonisolated(unsafe) static var vaultOrigin: Origin?

    /// The hint for a wrong vault password, naming where it came from.
    static var wrongPasswordHint: String {
        switch vaultOrigin {
        case .file(let path)?: "check the password file \(Terminal.printable(path))"
        case .command?: "check what --password-command prints"
        case .variable?: "check VAULT_PASSWORD"
        case .fileVariable(let path)?: "check the password file \(Terminal.printable(path)) (VAULT_PASSWORD_FILE)"
        case .commandVariable?: "check what VAULT_PASSWORD_COMMAND prints"
        case .prompt?:
            "the password typed does not open this vault; run the command again to retype it (is Caps Lock on?)"
        case nil: "check VAULT_PASSWORD or the password file"
        }
    }

    /// The password, read from the first source that is present: the file, the environment
    /// variable (taken out of the environment at start), or a no-echo prompt.
    /// - Parameter confirm: ask twice on a terminal (vault creation).
    /// - Parameter command: a command given on the command line (`--password-command`).
    /// Whether ``read(file:command:from:confirm:)`` has anywhere to read `source` from: a file
    /// given, one of its environment variables set, or a terminal to ask on.
    static func canRead(file: String?, from source: Source) -> Bool {
        if file != nil { return true }
        if EnvironmentSecrets.value(source.variable) != nil { return true }
        let environment = ProcessInfo.processInfo.environment
        if [source.fileVariable, source.commandVariable].contains(where: { environment[$0]?.isEmpty == false }) {
            return true
        }
        guard let tty = Platform.openControllingTerminal() else { return false }
        try? tty.close()
        return true
    }

    static func read(
        file: String?, command: String? = nil, from source: Source = .vault, confirm: Bool = false
    ) throws -> SecretBytes {
        let password: SecretBytes
        let origin: Origin
        if file != nil && command != nil {
            throw VaultError(.usage, "give a password file or a password command, not both")
        }
        if let file {
            password = try fromFile(file)
            origin = .file(file)
        } else if let command {
            password = try fromCommand(command, named: "the password command")
            origin = .command
        } else if let env = EnvironmentSecrets.value(source.variable) {
            guard env.count <= maxLength else {
                throw VaultError(.usage, "\(source.variable) is longer than \(maxLength) bytes")
            }
            password = env
            origin = .variable
        } else if let path = ProcessInfo.processInfo.environment[source.fileVariable], !path.isEmpty {
            password = try fromFile(path, named: source.fileVariable)
            origin = .fileVariable(path)
        } else if let command = ProcessInfo.processInfo.environment[source.commandVariable], !command.isEmpty {
            password = try fromCommand(command, named: source.commandVariable)
            origin = .commandVariable
        } else {
            password = try fromTerminal(source, confirm: confirm)
            origin = .prompt
        }
        if source.what == "vault" { vaultOrigin = origin }
        if password.count == 0 {
            throw VaultError(
                .usage, source.what == "vault" ? "the password is empty" : "the \(source.what) password is empty",
                hint: "a \(source.what) password must have at least one character")
        }
        return password
    }

    /// A file's bytes without one trailing newline (LF or CRLF), at most ``maxLength`` of them.
    /// - Parameter what: how the file was named, for messages (`VAULT_PASSWORD_FILE`).
    static func fromFile(_ path: String, named what: String = "password file") throws -> SecretBytes {
        let f: VaultCore.OpenFile
        do { f = try VaultCore.OpenFile.openForReading(path) } catch let e as VaultError {
            // The error's own remedy is about documents (add -r for a folder): not a password's.
            throw VaultError(e.code, "\(what): \(e.message)", hint: e.hint)
        }
        // Room for the longest password, a CRLF, and one byte more that shows the file is longer.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: maxLength + 3, alignment: 1)
        defer { buffer.initializeMemory(as: UInt8.self, repeating: 0); buffer.deallocate() }
        let n = try f.readFully(into: buffer)
        guard let end = passwordEnd(buffer, count: n) else {
            throw VaultError(.usage, "\(what) \(path) is longer than \(maxLength) bytes")
        }
        return try SecretBytes(copying: UnsafeRawBufferPointer(rebasing: buffer[0..<end]))
    }

    /// Where the password ends in the `count` bytes read into `buffer` (``maxLength`` + 3 long):
    /// before one trailing newline (LF or CRLF), which is the file's or the command's, not the
    /// password's. Nil when the password is longer than ``maxLength`` (as `VAULT_PASSWORD` would
    /// be), or the bytes filled the buffer (there is more).
    private static func passwordEnd(_ buffer: UnsafeMutableRawBufferPointer, count n: Int) -> Int? {
        guard n < buffer.count else { return nil }
        var end = n
        if end > 0 && buffer[end - 1] == 0x0A { end -= 1; if end > 0 && buffer[end - 1] == 0x0D { end -= 1 } }
        return end <= maxLength ? end : nil
    }

    /// What a password manager's command prints on standard output, without one trailing
    /// newline. The command line is split into words like a shell's, without one: `'…'` and
    /// `"…"` quote, `\` escapes the next character; nothing is expanded. The program is looked up
    /// on `PATH` unless it holds a `/`. Its standard input and error are vault's (so it can ask on
    /// the terminal); its output goes only into wiped memory, never to a log or a message.
    /// - Parameter unlocks: what a failure leaves undone, for its message.
    static func fromCommand(
        _ command: String, named what: String, unlocks: String = "nothing was unlocked"
    ) throws -> SecretBytes {
        guard let words = splitWords(command),
              let program = words.first else {
            throw VaultError(.usage, "\(what) is empty or has an unmatched quote")
        }
        guard let executable = resolve(program) else {
            throw VaultError(.notFound, "\(what): '\(program)' was not found on PATH")
        }
        let child: (pid: Int32, output: SystemPackage.FileDescriptor)
        do { child = try Platform.spawn(executable, arguments: Array(words.dropFirst())) } catch {
            throw VaultError(.usage, "\(what): cannot run '\(program)': \(error)")
        }
        let reader = child.output
        defer { try? reader.close() }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: maxLength + 3, alignment: 1)
        defer { buffer.initializeMemory(as: UInt8.self, repeating: 0); buffer.deallocate() }
        var n = 0
        while n < buffer.count {
            let k = (try? reader.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[n...]))) ?? 0
            if k == 0 { break }
            n += k
        }
        guard let end = passwordEnd(buffer, count: n) else {
            // Too long, or still printing (`yes` would print for ever): stopped, not waited for.
            Platform.kill(child.pid)
            _ = Platform.wait(for: child.pid)
            throw VaultError(.usage, "\(what) printed more than \(maxLength) bytes")
        }
        let ending = Platform.wait(for: child.pid)
        guard ending == .exited(0) else {
            let how: String
            switch ending {
            case .exited(let status): how = "exit status \(status)"
            case .killed(let signal): how = "killed by signal \(signal)"
            }
            throw VaultError(
                .usage,
                """
                    \(what) failed \
                    (\(how)); \
                    \(unlocks)
                    """
            )
        }
        return try SecretBytes(copying: UnsafeRawBufferPointer(rebasing: buffer[0..<end]))
    }

    /// `command` as words, as a shell would split it without expanding anything; nil for an
    /// unmatched quote. Written by hand: Foundation has no such splitter, and a shell would
    /// expand what the user did not mean to.
    static func splitWords(_ command: String) -> [String]? {
        var words: [String] = []
        var word = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for c in command {
            if escaped { word.append(c); escaped = false; inWord = true; continue }
            if let q = quote {
                if c == q { quote = nil } else if c == "\\" && q == "\"" { escaped = true } else { word.append(c) }
                continue
            }
            switch c {
            case "\\": escaped = true; inWord = true
            case "'", "\"": quote = c; inWord = true
            case " ", "\t", "\n":
                if inWord { words.append(word); word = ""; inWord = false }
            default: word.append(c); inWord = true
            }
        }
        if quote != nil || escaped { return nil }
        if inWord { words.append(word) }
        return words
    }

    /// The program's path: as given when it holds a `/`, else the first executable on `PATH`.
    static func resolve(_ program: String) -> String? {
        if program.contains("/") { return FileManager.default.isExecutableFile(atPath: program) ? program : nil }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(program)" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    private static func fromTerminal(_ source: Source, confirm: Bool) throws -> SecretBytes {
        guard let tty = Platform.openControllingTerminal() else {
            throw VaultError(
                .usage,
                source.what == "vault"
                    ? "no password given and no terminal to ask on"
                    : "no \(source.what) password given and no terminal to ask on",
                hint:
                    """
                        set \(source.variable), \(source.fileVariable) or \(source.commandVariable), or pass \
                        \(source.fileOption) FILE
                        """
            )
        }
        defer { try? tty.close() }
        let first = try prompt(tty, source.prompt)
        // Said at once, not after the repeat.
        if first.count == 0 {
            throw VaultError(
                .usage, source.what == "vault" ? "the password is empty" : "the \(source.what) password is empty",
                hint: "a \(source.what) password must have at least one character")
        }
        if confirm {
            let second = try prompt(tty, "Repeat password: ")
            let same = first.withUnsafeBytes { a in second.withUnsafeBytes { b in a.elementsEqual(b) } }
            guard same else { throw VaultError(.usage, "the passwords do not match") }
        }
        return first
    }

    private static func prompt(_ tty: SystemPackage.FileDescriptor, _ text: String) throws -> SecretBytes {
        // Echo off first, then the prompt: turning it off discards what was typed before
        // (TCSAFLUSH), so an answer typed as soon as the prompt shows must come after it.
        let settings = Platform.disableEcho(tty)
        _ = try? tty.writeAll(text.utf8)
        // An interrupt at the prompt must not leave the terminal without echo.
        let restore = settings.map { saved in
            Interrupts.register {
                Platform.restore(saved, on: tty, now: true)
                _ = try? tty.writeAll("\n".utf8)
            }
        }
        defer {
            if let settings { Platform.restore(settings, on: tty) }
            restore.map(Interrupts.unregister)
            _ = try? tty.writeAll("\n".utf8)
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: maxLength + 1, alignment: 1)
        defer { buffer.initializeMemory(as: UInt8.self, repeating: 0); buffer.deallocate() }
        var n = 0
        // One byte at a time, so nothing after the line is consumed; read() retries EINTR.
        while n < buffer.count, let k = try? tty.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[n..<n + 1])),
            k == 1
        {
            if buffer[n] == 0x0A { break }
            n += 1
        }
        if n > 0 && buffer[n - 1] == 0x0D { n -= 1 }
        return try SecretBytes(copying: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
    }
}
