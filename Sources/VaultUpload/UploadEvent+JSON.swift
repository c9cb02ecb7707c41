import VaultCore

extension UploadEvent: Encodable {
    /// The event as a JSON object (docs/CLI.md, "Progress"); a document-level event is the
    /// export event it carries.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .started(let run, let batches, let docs, let bytes, let confirmed, let resumed):
            try ProgressJSON.write(
                encoder, "started",
                [
                    "runId": run, "batches": batches, "documents": docs, "payloadBytes": bytes,
                    "confirmedBatches": confirmed, "resumed": resumed
                ])
        case .attempt(let b, let n, let attempt, let docs, let bytes):
            try ProgressJSON.write(
                encoder, "attempt", ["batch": b, "of": n, "attempt": attempt, "documents": docs, "payloadBytes": bytes])
        case .sent(let done, let total):
            try ProgressJSON.write(encoder, "sent", ["done": done, "total": total])
        case .retry(let b, let attempt, let delay, let reason):
            try ProgressJSON.write(
                encoder, "retry",
                ["batch": b, "attempt": attempt, "delay": (delay * 1000).rounded() / 1000, "reason": reason])
        case .split(let b, let parts):
            try ProgressJSON.write(encoder, "split", ["batch": b, "into": parts])
        case .resumed(let b, let at):
            try ProgressJSON.write(encoder, "resumed", ["batch": b, "offset": at])
        case .chunkSize(let bytes, let reason):
            try ProgressJSON.write(encoder, "chunkSize", ["bytes": UInt64(bytes), "reason": reason])
        case .confirmed(let b, let n, let status, let duplicate):
            try ProgressJSON.write(
                encoder, "confirmed", ["batch": b, "of": n, "status": status, "duplicate": duplicate])
        case .skipped(let id, let name, let error):
            try ProgressJSON.write(
                encoder, "documentSkipped",
                ["id": id.hex, "name": name, "code": error.code.rawValue, "error": error.message])
        case .document(let inner):
            try inner.encode(to: encoder)
        case .finished(let batches, let docs, let bytes, let retries, let skipped):
            try ProgressJSON.write(
                encoder, "finished",
                [
                    "batches": batches, "documents": docs, "payloadBytes": bytes, "retries": retries,
                    "skipped": skipped
                ])
        }
    }
}
