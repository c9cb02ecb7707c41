import Foundation
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// Gets the vault password without it ever passing through argv or a Swift `String`:
/// `--password-file FILE`, else `VAULT_PASSWORD`, else a no-echo prompt on the terminal.
enum PasswordReader {
    static let maxLength = 4096

    /// The password, read from the first source that is present.
    /// - Parameter confirm: ask twice on a terminal (vault creation).
    static func read(file: String?, confirm: Bool = false) throws -> SecretBytes {
        let password: SecretBytes
        if let file {
            password = try fromFile(file)
        } else if let env = EnvironmentSecrets.value("VAULT_PASSWORD") {
            guard env.count <= maxLength else { throw VaultError(.usage, "VAULT_PASSWORD is longer than \(maxLength) bytes") }
            password = env
        } else {
            password = try fromTerminal(confirm: confirm)
        }
        if password.count == 0 {
            throw VaultError(.usage, "the password is empty", hint: "a vault password must have at least one character")
        }
        return password
    }

    private static func fromFile(_ path: String) throws -> SecretBytes {
        let f: FileDescriptor
        do { f = try FileDescriptor.openForReading(path) } catch let e as VaultError {
            throw VaultError(e.code, "password file: \(e.message)", hint: e.hint)
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

    private static func fromTerminal(confirm: Bool) throws -> SecretBytes {
        let tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard tty >= 0 else {
            throw VaultError(.usage, "no password given and no terminal to ask on",
                             hint: "set VAULT_PASSWORD or pass --password-file FILE")
        }
        defer { close(tty) }
        let first = try prompt(tty, "Vault password: ")
        if confirm {
            let second = try prompt(tty, "Repeat password: ")
            let same = first.withUnsafeBytes { a in second.withUnsafeBytes { b in a.elementsEqual(b) } }
            guard same else { throw VaultError(.usage, "the passwords do not match") }
        }
        return first
    }

    private static func prompt(_ tty: Int32, _ text: String) throws -> SecretBytes {
        _ = text.withCString { Glibc.write(tty, $0, strlen($0)) }
        var old = termios()
        let hasTermios = tcgetattr(tty, &old) == 0
        var restore: Interrupts.Token?
        if hasTermios {
            var noEcho = old
            noEcho.c_lflag &= ~tcflag_t(ECHO)
            // An interrupt at the prompt must not leave the terminal without echo.
            let saved = old
            restore = Interrupts.register {
                var t = saved
                tcsetattr(tty, TCSANOW, &t)
                _ = Glibc.write(tty, "\n", 1)
            }
            tcsetattr(tty, TCSAFLUSH, &noEcho)
        }
        defer {
            if hasTermios { tcsetattr(tty, TCSAFLUSH, &old) }
            restore.map(Interrupts.unregister)
            _ = Glibc.write(tty, "\n", 1)
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: maxLength + 1, alignment: 1)
        defer { buffer.initializeMemory(as: UInt8.self, repeating: 0); buffer.deallocate() }
        var n = 0
        while n < buffer.count {
            let k = Glibc.read(tty, buffer.baseAddress! + n, 1)
            if k < 0 && errno == EINTR { continue }
            if k <= 0 || buffer[n] == 0x0A { break }
            n += 1
        }
        if n > 0 && buffer[n - 1] == 0x0D { n -= 1 }
        return try SecretBytes(copying: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
    }
}
