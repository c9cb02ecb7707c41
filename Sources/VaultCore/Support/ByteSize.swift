/// Byte counts for people.
package enum ByteSize {
    /// Human size in binary units: 1023 B, 1.5 KiB, 12.3 MiB, ...
    package static func text(_ bytes: UInt64) -> String {
        if bytes < 1024 { return "\(bytes) B" }
        let units = ["KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024 && unit < units.count - 1 { value /= 1024; unit += 1 }
        // As "%.1f" below 10 and "%.0f" above print it, without String(format:), which costs
        // microseconds. bytes / 1024^k is exact in a Double, and so is its tenfold: rounding it
        // half to even is what printf does.
        if value < 10 {
            let tenths = Int((value * 10).rounded(.toNearestOrEven))
            return "\(tenths / 10).\(tenths % 10) \(units[unit])"
        }
        return "\(Int(value.rounded(.toNearestOrEven))) \(units[unit])"
    }
}
