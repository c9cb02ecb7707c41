#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Vault {
    /// Removes documents, holding the writer lock: `remove.pending` names them first,
    /// then the objects go, the index is updated and the removal recorded, and the pending file
    /// goes last. A crash anywhere is finished by the next writer (``finishRemoval``), so the
    /// history never says present what is gone, nor removed what is still there.
    func remove(_ documents: [HistoryRecord.Document], _ lock: WriterLock) throws {
        try withIndex(lock) { index in
            var writer = try historyWriter(index: index, lock)
            if let earlier = writer.log.pendingRemoval() {
                try finishRemoval(earlier, writer: &writer, interrupted: true)
            }
            try prelude(&writer, pending: [])
            try writer.log.writePendingRemoval(documents)
            try finishRemoval(documents, writer: &writer, interrupted: false)
        }
    }

    /// Unlinks whatever of `documents` is left, updates the index, appends the removal record
    /// (for an interrupted removal: unless the index shows it recorded already) and deletes
    /// `remove.pending`.
    func finishRemoval(_ documents: [HistoryRecord.Document], writer: inout HistoryWriter, interrupted: Bool) throws {
        let ids = documents.map(\.id)
        for id in ids where FileSystem.kind(of: store.objectPath(id)) != .missing {
            try FileSystem.remove(store.objectPath(id))
        }
        // A captured document's metadata file goes after its data (a crash between leaves a
        // metadata file alone, which names nothing: no object lists it).
        for id in ids where store.source == nil {
            let sidecar = store.capturedMetadataPath(id)
            if FileSystem.kind(of: sidecar, following: false) != .missing { try FileSystem.remove(sidecar) }
        }
        try FileSystem.syncDirectory(store.objectsPath)
        let index = writer.index
        try index.write(writer.lock) {
            for id in ids { try index.delete(id) }
            try commitIndexState(index, writer.lock)
        }
        var recorded = interrupted && !ids.isEmpty
        for id in ids where recorded { recorded = try index.isRemoved(id) }
        if !recorded {
            try writer.append(
                HistoryRecord(
                    .remove, documents: documents,
                    detail: interrupted ? "finished after the removing command was interrupted" : nil))
        }
        try FileSystem.remove(writer.log.pendingRemovalPath)
        try FileSystem.syncDirectory(store.root)
    }
}
