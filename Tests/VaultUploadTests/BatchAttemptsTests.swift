import Foundation
import Testing
import VaultCore
@testable import VaultUpload

/// The upload's steering, without sockets: sequences of attempt outcomes fed to
/// ``BatchAttempts``, and the actions it answers with, step by step.
@Suite struct BatchAttemptsTests {
    static let failure = DocumentFailure(
        record: DocumentRecord(
            id: DocumentID(bytes: [UInt8](repeating: 7, count: 16)),
            metadata: DocumentMetadata(
                name: "scan.pdf", contentType: "application/pdf", size: 9, sha256: [UInt8](repeating: 7, count: 32),
                addedAtMillis: 0, tags: [])),
        error: VaultError(.chunkAuthenticationFailed, "chunk 3 fails authentication"), startOffset: 0)

    /// An action as a short word for the tables.
    static func word(_ action: BatchAttempts.Action) -> String {
        switch action {
        case .send(let attempt): "send \(attempt)"
        case .confirm(let status, let duplicate, let body):
            "confirm \(status)\(duplicate ? " duplicate" : "") \(String(decoding: body, as: UTF8.self))"
        case .split(let reason, _): "split (\(reason))"
        case .skip(let f): "skip \(f.record.metadata.name)"
        case .leaveOut(let place, _, _, _): "leave out \(place)"
        case .wait(let attempt, let after, let reason, let at):
            "wait \(attempt)\(after.map { " after \($0)" } ?? "")\(at.map { " at \($0)" } ?? "") (\(reason))"
        case .refuse(let e): "refuse \(e.code)"
        case .giveUp(let attempts, let reason): "give up after \(attempts) (\(reason))"
        case .done(let retries, let left): left ? "left after \(retries) retries" : "done after \(retries) retries"
        }
    }

    /// Feeds `events` after the start and returns every action, the first included.
    static func run(_ events: [BatchAttempts.Event], maxAttempts: Int = 3) -> [String] {
        var machine = BatchAttempts(maxAttempts: maxAttempts)
        var actions = [word(machine.take(.start))]
        for event in events { actions.append(word(machine.take(event))) }
        return actions
    }

    static let retry = BatchAttempts.Event.answered(.retry(reason: "503", retryAfter: nil))

    @Test func aConfirmationEndsTheBatch() {
        let confirmed = BatchAttempts.Event.answered(.confirmed(status: 201, duplicate: false, body: Array("ok".utf8)))
        #expect(
            Self.run([confirmed, .handled(left: false)]) == ["send 1", "confirm 201 ok", "done after 0 retries"])
    }

    @Test func retriesWaitThenGiveUpAfterTheBudget() {
        #expect(
            Self.run([Self.retry, .waited, .answered(.retry(reason: "timeout", retryAfter: 2)), .waited, Self.retry])
                == [
                    "send 1", "wait 1 (503)", "send 2", "wait 2 after 2.0 (timeout)", "send 3",
                    "give up after 3 (503)",
                ])
        #expect(Self.run([Self.retry], maxAttempts: 1) == ["send 1", "give up after 1 (503)"])
    }

    @Test func aRetryThatSucceedsCountsItsWaits() {
        #expect(
            Self.run([Self.retry, .waited, .answered(.confirmed(status: 200, duplicate: true)), .handled(left: false)])
                == ["send 1", "wait 1 (503)", "send 2", "confirm 200 duplicate ", "done after 1 retries"])
    }

    @Test func progressResumesWithAFreshBudget() {
        // two failures, then the server acknowledged more: the next attempt is the second again
        let resume = BatchAttempts.Event.answered(.resume(at: 4096, reason: "connection reset"))
        #expect(
            Self.run([Self.retry, .waited, Self.retry, .waited, resume, .waited, Self.retry, .waited, Self.retry])
                == [
                    "send 1", "wait 1 (503)", "send 2", "wait 2 (503)", "send 3", "wait 1 at 4096 (connection reset)",
                    "send 2", "wait 2 (503)", "send 3", "give up after 3 (503)",
                ])
    }

    @Test func aSmallerBatchStartsItsCountAgain() {
        let split = BatchAttempts.Event.answered(.split(reason: "413", serverSays: "too large"))
        let refused = BatchAttempts.Event.answered(
            .refusedDocument(place: 2, reason: "(400) bad name", otherwise: VaultError(.uploadRejected, "400")))
        #expect(
            Self.run([
                Self.retry, .waited, split, .handled(left: false), Self.retry, .waited, refused, .handled(left: false),
            ]) == [
                    "send 1", "wait 1 (503)", "send 2", "split (413)", "send 1", "wait 1 (503)", "send 2",
                    "leave out 2", "send 1",
                ])
        #expect(Self.run([split, .handled(left: true)]) == ["send 1", "split (413)", "left after 0 retries"])
        #expect(Self.run([refused, .handled(left: true)]) == ["send 1", "leave out 2", "left after 0 retries"])
    }

    @Test func aSkippedDocumentDoesNotCountAsAnAttempt() {
        #expect(
            Self.run([Self.retry, .waited, .answered(.skip(Self.failure)), .handled(left: false), Self.retry])
                == ["send 1", "wait 1 (503)", "send 2", "skip scan.pdf", "send 2", "wait 2 (503)"])
    }

    @Test func aRefusalEndsTheRun() {
        #expect(
            Self.run([.answered(.refused(VaultError(.uploadUnauthorized, "401")))])
                == ["send 1", "refuse \(VaultError.Code.uploadUnauthorized)"])
    }
}
