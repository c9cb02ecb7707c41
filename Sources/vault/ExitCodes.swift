import ArgumentParser
import VaultCore

/// The documented exit codes (docs/CLI.md). Each ``VaultError/Code`` maps to one.
enum ExitStatus {
    static let success: Int32 = 0
    static let failure: Int32 = 1
    static let partial: Int32 = 2
    static let notFound: Int32 = 3
    static let ambiguous: Int32 = 4
    static let usage: Int32 = 64
    static let uploadRejected: Int32 = 69
    static let uploadFailed: Int32 = 75
    static let uploadUnauthorized: Int32 = 76
    static let damaged: Int32 = 65
    static let exists: Int32 = 73
    static let io: Int32 = 74
    static let wrongPassword: Int32 = 77
    static let noCredentials: Int32 = 78
    static let interrupted: Int32 = 130

    static func code(for error: VaultError) -> Int32 {
        if error.code.isDamage { return damaged }
        switch error.code {
        case .wrongPassword: return wrongPassword
        case .notFound: return notFound
        case .ambiguous: return ambiguous
        case .alreadyExists, .duplicate: return exists
        case .usage, .singleBatchNeeded: return usage
        case .io: return io
        case .partial: return partial
        case .uploadRejected, .storeRejected: return uploadRejected
        case .uploadFailed, .storeUnavailable, .busy: return uploadFailed
        case .uploadUnauthorized, .storeUnauthorized: return uploadUnauthorized
        case .uploadNoCredentials: return noCredentials
        default: return failure
        }
    }
}
