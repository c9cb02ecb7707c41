import Foundation
import SystemPackage
import VaultCore

/// Gets the vault password without it ever passing through argv or a Swift `String`:
/// `--password-file FILE`, else `VAULT_PASSWORD`, else a no-echo prompt on the terminal.
enum PasswordReader {
    static let maxLength = 4096

    /// Where one password comes from: the vault's, or another (an import's).
    struct Source {
        /// The environment variable.
        var variable: String
        /// The option naming a file.
        var fileOption: String
        /// The prompt on the terminal.
        var prompt: String
        /// What it unlocks, for messages.
        var what: String

        static let vault = Source(variable: "VAULT_PASSWORD", fileOption: "--password-file", prompt: "Vault password: ", what: "vault")
        static let newPassword = Source(variable: "VAULT_NEW_PASSWORD", fileOption: "--new-password-file", prompt: "New vault password: ",
                                        what: "new")
        static let rncryptor = Source(variable: "VAULT_IMPORT_PASSWORD", fileOption: "--from-password-file",
                                      prompt: "RNCryptor password: ", what: "RNCryptor")
    }

    /// The password, read from the first source that is present: the file, the environment
    /// variable (taken out of the environment at start), or a no-echo prompt.
    /// - Parameter confirm: ask twice on a terminal (vault creation).
    static func read(file: String?, from source: Source = .vault, confirm: Bool = false) throws -> SecretBytes {
        let password: SecretBytes
        if let file {
            password = try fromFile(file)
        } else if let env = EnvironmentSecrets.value(source.variable) {
            guard env.count <= maxLength else { throw VaultError(.usage, "\(source.variable) is longer than \(maxLength) bytes") }
            password = env
        } else {
            password = try fromTerminal(source, confirm: confirm)
        }
        if password.count == 0 {
            throw VaultError(.usage, source.what == "vault" ? "the password is empty" : "the \(source.what) password is empty",
                             hint: "a \(source.what) password must have at least one character")
        }
        return password
    }

    /// A file's bytes without one trailing newline (LF or CRLF), at most ``maxLength`` of them.
    static func fromFile(_ path: String) throws -> SecretBytes {
        let f: VaultCore.FileDescriptor
        do { f = try VaultCore.FileDescriptor.openForReading(path) } catch let e as VaultError {
            throw VaultError(e.code, "password file: \(e.message)", hint: e.hint, remedy: e.remedy)
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: maxLength + 2, alignment: 1)
        defer { buffer.initializeMemory(as: UInt8.self, repeating: 0); buffer.deallocate() }
        let n = try f.readFully(into: buffer)
        guard n <= maxLength + 1 else { throw VaultError(.usage, "password file \(path) is longer than \(maxLength) bytes") }
        var end = n
        // One trailing newline (LF or CRLF) is the file's, not the password's.
        if end > 0 && buffer[end - 1] == 0x0A { end -= 1; if end > 0 && buffer[end - 1] == 0x0D { end -= 1 } }
        return try SecretBytes(copying: UnsafeRawBufferPointer(rebasing: buffer[0..<end]))
    }

    private static func fromTerminal(_ source: Source, confirm: Bool) throws -> SecretBytes {
        guard let tty = Platform.openControllingTerminal() else {
            throw VaultError(.usage, source.what == "vault" ? "no password given and no terminal to ask on"
                                                             : "no \(source.what) password given and no terminal to ask on",
                             hint: "set \(source.variable) or pass \(source.fileOption) FILE")
        }
        defer { try? tty.close() }
        let first = try prompt(tty, source.prompt)
        if confirm {
            let second = try prompt(tty, "Repeat password: ")
            let same = first.withUnsafeBytes { a in second.withUnsafeBytes { b in a.elementsEqual(b) } }
            guard same else { throw VaultError(.usage, "the passwords do not match") }
        }
        return first
    }

    private static func prompt(_ tty: SystemPackage.FileDescriptor, _ text: String) throws -> SecretBytes {
        _ = try? tty.writeAll(text.utf8)
        let settings = Platform.disableEcho(tty)
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
        while n < buffer.count, let k = try? tty.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[n..<n + 1])), k == 1 {
            if buffer[n] == 0x0A { break }
            n += 1
        }
        if n > 0 && buffer[n - 1] == 0x0D { n -= 1 }
        return try SecretBytes(copying: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
    }
}
