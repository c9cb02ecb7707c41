/// Progress events as JSON objects (docs/CLI.md, "Progress"): `{"event":"<name>", …fields}`,
/// a field left out when it has no value. Export, upload and import events are `Encodable`
/// through this one writer, so every front end encodes them the same way.
package enum ProgressJSON {
    /// A key of an event object.
    package struct Key: CodingKey {
        package let stringValue: String
        package init(_ s: String) { stringValue = s }
        package init?(stringValue: String) { self.stringValue = stringValue }
        package var intValue: Int? { nil }
        package init?(intValue: Int) { nil }
    }

    /// Writes event `name` and its `fields` (nil ones left out).
    package static func write(
        _ encoder: any Encoder, _ name: String, _ fields: KeyValuePairs<String, (any Encodable)?>
    ) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(name, forKey: Key("event"))
        for (key, value) in fields {
            if let value { try c.encode(value, forKey: Key(key)) }
        }
    }
}

extension ExportEvent: Encodable {
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .started(let run, let docs, let batches, let plain, let payload):
            try ProgressJSON.write(
                encoder, "started",
                [
                    "runId": run, "documents": docs, "batches": batches, "plaintextBytes": plain,
                    "payloadBytes": payload
                ])
        case .batchStarted(let i, let n, let docs, let bytes):
            try ProgressJSON.write(
                encoder, "batchStarted", ["batch": i, "of": n, "documents": docs, "payloadBytes": bytes])
        case .documentStarted(let id, let name, let size, let position, let of):
            try ProgressJSON.write(
                encoder, "documentStarted", ["id": id.hex, "name": name, "size": size, "position": position, "of": of])
        case .progress(let done, let total):
            try ProgressJSON.write(encoder, "progress", ["done": done, "total": total])
        case .documentFinished(let id):
            try ProgressJSON.write(encoder, "documentFinished", ["id": id.hex])
        case .documentSkipped(let id, let name, let error):
            try ProgressJSON.write(
                encoder, "documentSkipped",
                ["id": id.hex, "name": name, "code": error.code.rawValue, "error": error.message])
        case .batchFinished(let i, let n, let file, let bytes, let sha256, let docs, let skipped):
            try ProgressJSON.write(
                encoder, "batchFinished",
                [
                    "batch": i, "of": n, "file": file, "payloadBytes": bytes, "sha256": sha256,
                    "documents": docs, "skipped": skipped
                ])
        case .finished(let batches, let docs, let skipped, let bytes):
            try ProgressJSON.write(
                encoder, "finished", ["batches": batches, "documents": docs, "skipped": skipped, "payloadBytes": bytes])
        }
    }
}

extension Importer.Event: Encodable {
    package func encode(to encoder: any Encoder) throws {
        switch self {
        case .started(let files, let bytes):
            try ProgressJSON.write(encoder, "started", ["files": files, "bytes": bytes])
        case .fileStarted(let position, let of, let name):
            try ProgressJSON.write(encoder, "fileStarted", ["position": position, "of": of, "name": name])
        case .progress(let done, let total):
            try ProgressJSON.write(encoder, "progress", ["done": done, "total": total])
        case .imported(let path, let record):
            try ProgressJSON.write(encoder, "imported", ["path": path, "id": record.id.hex])
        case .fileSkipped(let path, let error):
            try ProgressJSON.write(
                encoder, "fileSkipped", ["path": path, "code": error.code.rawValue, "error": error.message])
        case .fileFailed(let path, let error):
            try ProgressJSON.write(
                encoder, "fileFailed", ["path": path, "code": error.code.rawValue, "error": error.message])
        case .finished(let imported, let failed, let skipped):
            try ProgressJSON.write(encoder, "finished", ["imported": imported, "failed": failed, "skipped": skipped])
        }
    }
}
