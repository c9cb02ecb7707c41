import CVaultSystem

/// Finding bytes in bytes: glibc's memmem (vectorized, linear in the haystack), which Swift's
/// Glibc module does not import. What a multipart body's boundary is looked for with.
package enum ByteSearch {
    /// Where `needle` first starts in `haystack`, or nil (also for an empty needle).
    package static func find(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> Int? {
        guard let base = haystack.baseAddress, haystack.count >= needle.count, !needle.isEmpty else { return nil }
        return needle.withUnsafeBytes { n in
            vault_memmem(base, haystack.count, n.baseAddress!, n.count).map { base.distance(to: $0) }
        }
    }
}
