#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where a streamed payload goes: anything that takes bytes in order — standard output, a
/// file an app already holds open (VaultFoundation's `FileHandleSink`), an app's own upload stream. Used by
/// ``ExportOperation``'s writes; each call's bytes are valid only during the call.
public protocol PayloadSink: AnyObject {
    /// Takes the next bytes of the payload, all of them, or throws.
    func write(_ bytes: UnsafeRawBufferPointer) throws
}

extension OpenFile: PayloadSink {}
