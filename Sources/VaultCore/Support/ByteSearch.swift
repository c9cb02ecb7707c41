/// Finding bytes in bytes: glibc's memmem (vectorized, linear in the haystack), which Swift's
/// Glibc module does not import (``Platform``). What a multipart body's boundary is looked for with.
package enum ByteSearch {
    /// Where `needle` first starts in `haystack`, or nil (also for an empty needle).
    package static func find(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> Int? {
        needle.withUnsafeBytes { Platform.find($0, in: haystack) }
    }
}
