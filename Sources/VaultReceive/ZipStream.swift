import CZlib
import VaultCore

/// A zip archive (PKWARE APPNOTE 6.3.10) written front to back as its documents are read, for
/// an HTTP response: entries are stored (documents are mostly PDFs and images, which deflate
/// does not shrink), each followed by a data descriptor with its CRC-32, then the central
/// directory; ZIP64 records only where a size or an offset needs them. The sizes are known
/// before the first byte (they are the documents' plaintext sizes), so the archive's length
/// is too: a response that stops short of it (a document that does not authenticate) is a
/// failed download, never a smaller archive.
///
/// Written by hand: ZIPFoundation (the zip library on this machine's list) writes an archive
/// into a seekable file or into memory, and so cannot stream one of a gigabyte to a browser
/// with memory that does not grow. CRC-32 is zlib's.
struct ZipStream {
    /// An entry: its path in the archive (UTF-8, `/` between folders), size and time.
    struct Entry: Sendable {
        var path: String
        var size: UInt64
        var millis: Int64
    }

    private struct Written {
        var path: [UInt8]
        var size: UInt64
        var crc: UInt32
        var offset: UInt64
        var dosTime: UInt16
        var dosDate: UInt16
    }

    private var written: [Written] = []
    private var offset: UInt64 = 0
    private var current: (entry: Entry, crc: UInt32, done: UInt64)?

    /// The archive's length in bytes for `entries`, as ``begin(_:)``, ``data(_:)``, ``end()``
    /// and ``finish()`` will write it.
    static func length(of entries: [Entry]) -> UInt64 {
        var at: UInt64 = 0
        var central: UInt64 = 0
        var zip64 = entries.count >= 0xFFFF
        for e in entries {
            let name = UInt64(e.path.utf8.count), big = e.size >= 0xFFFF_FFFF
            if big || at >= 0xFFFF_FFFF { zip64 = true }
            central += 46 + name + extraLength(size: e.size, offset: at)
            at += 30 + name + (big ? 20 : 0) + e.size + (big ? 24 : 16)
        }
        if central >= 0xFFFF_FFFF || at >= 0xFFFF_FFFF { zip64 = true }
        // The ZIP64 end record (56 bytes) and its locator (20) when finish writes them; the end record (22).
        return at + central + (zip64 ? 76 : 0) + 22
    }

    /// The bytes that start `entry`: its local header.
    mutating func begin(_ entry: Entry) -> [UInt8] {
        precondition(current == nil, "internal error: an entry begun before the last ended")
        current = (entry, 0, 0)
        let name = Array(entry.path.utf8)
        let big = entry.size >= 0xFFFF_FFFF
        var out: [UInt8] = []
        out.le32(0x0403_4b50)
        out.le16(big ? 45 : 20)
        out.le16(0x0808)  // a data descriptor follows; the name is UTF-8
        out.le16(0)  // stored
        let (time, date) = Self.dos(entry.millis)
        out.le16(time)
        out.le16(date)
        out.le32(0)
        out.le32(big ? 0xFFFF_FFFF : 0)
        out.le32(big ? 0xFFFF_FFFF : 0)
        out.le16(UInt16(name.count))
        out.le16(big ? 20 : 0)
        out += name
        if big {
            out.le16(1)
            out.le16(16)
            out.le64(0)
            out.le64(0)
        }
        written.append(Written(path: name, size: entry.size, crc: 0, offset: offset, dosTime: time, dosDate: date))
        offset += UInt64(out.count)
        return out
    }

    /// Notes `bytes` of the current entry (written by the caller as they are).
    mutating func data(_ bytes: UnsafeRawBufferPointer) {
        guard var c = current, let base = bytes.baseAddress else { return }
        c.crc = UInt32(crc32(UInt(c.crc), base.assumingMemoryBound(to: UInt8.self), UInt32(bytes.count)))
        c.done += UInt64(bytes.count)
        current = c
        offset += UInt64(bytes.count)
    }

    /// The bytes that end the current entry: its data descriptor.
    /// - Throws: when the entry's bytes were not as many as its size said.
    mutating func end() throws -> [UInt8] {
        guard let c = current else { preconditionFailure("internal error: no entry to end") }
        current = nil
        guard c.done == c.entry.size else {
            throw VaultError(.vaultDamaged, "\(c.entry.path) held \(c.done) bytes, not \(c.entry.size)")
        }
        written[written.count - 1].crc = c.crc
        let big = c.entry.size >= 0xFFFF_FFFF
        var out: [UInt8] = []
        out.le32(0x0807_4b50)
        out.le32(c.crc)
        if big {
            out.le64(c.entry.size)
            out.le64(c.entry.size)
        } else {
            out.le32(UInt32(c.entry.size))
            out.le32(UInt32(c.entry.size))
        }
        offset += UInt64(out.count)
        return out
    }

    /// The central directory and the end records.
    func finish() -> [UInt8] {
        var out: [UInt8] = []
        let start = offset
        for w in written {
            let bigSize = w.size >= 0xFFFF_FFFF, bigOffset = w.offset >= 0xFFFF_FFFF
            let extra = Self.extraLength(size: w.size, offset: w.offset)
            out.le32(0x0201_4b50)
            out.le16(0x031E)  // made by: Unix, APPNOTE 3.0
            out.le16(extra > 0 ? 45 : 20)
            out.le16(0x0808)
            out.le16(0)
            out.le16(w.dosTime)
            out.le16(w.dosDate)
            out.le32(w.crc)
            out.le32(bigSize ? 0xFFFF_FFFF : UInt32(w.size))
            out.le32(bigSize ? 0xFFFF_FFFF : UInt32(w.size))
            out.le16(UInt16(w.path.count))
            out.le16(UInt16(extra))
            out.le16(0)
            out.le16(0)
            out.le16(0)
            out.le32(0o100600 << 16)  // a regular file, mode 0600
            out.le32(bigOffset ? 0xFFFF_FFFF : UInt32(w.offset))
            out += w.path
            if extra > 0 {
                out.le16(1)
                out.le16(UInt16(extra - 4))
                if bigSize {
                    out.le64(w.size)
                    out.le64(w.size)
                }
                if bigOffset { out.le64(w.offset) }
            }
        }
        let size = UInt64(out.count)
        let zip64 = written.count >= 0xFFFF || size >= 0xFFFF_FFFF || start >= 0xFFFF_FFFF
            || written.contains { $0.size >= 0xFFFF_FFFF || $0.offset >= 0xFFFF_FFFF }
        if zip64 {
            let record = start + size
            out.le32(0x0606_4b50)
            out.le64(44)
            out.le16(0x031E)
            out.le16(45)
            out.le32(0)
            out.le32(0)
            out.le64(UInt64(written.count))
            out.le64(UInt64(written.count))
            out.le64(size)
            out.le64(start)
            out.le32(0x0706_4b50)
            out.le32(0)
            out.le64(record)
            out.le32(1)
        }
        out.le32(0x0605_4b50)
        out.le16(0)
        out.le16(0)
        out.le16(UInt16(min(written.count, 0xFFFF)))
        out.le16(UInt16(min(written.count, 0xFFFF)))
        out.le32(UInt32(min(size, 0xFFFF_FFFF)))
        out.le32(UInt32(min(start, 0xFFFF_FFFF)))
        out.le16(0)
        return out
    }

    private static func extraLength(size: UInt64, offset: UInt64) -> UInt64 {
        let fields = (size >= 0xFFFF_FFFF ? 16 : 0) + (offset >= 0xFFFF_FFFF ? 8 : 0)
        return fields == 0 ? 0 : UInt64(4 + fields)
    }

    /// `millis` as an MS-DOS time and date (UTC; 1980 at the earliest, as the format allows).
    static func dos(_ millis: Int64) -> (time: UInt16, date: UInt16) {
        let c = UTCTime(millis: max(millis, 315_532_800_000))
        let time = UInt16(c.hour << 11 | c.minute << 5 | c.second / 2)
        let date = UInt16((c.year - 1980) << 9 | c.month << 5 | c.day)
        return (time, date)
    }
}

extension [UInt8] {
    fileprivate mutating func le16(_ v: UInt16) { append(UInt8(v & 0xFF)); append(UInt8(v >> 8)) }
    fileprivate mutating func le32(_ v: UInt32) { for i in 0..<4 { append(UInt8(truncatingIfNeeded: v >> (8 * i))) } }
    fileprivate mutating func le64(_ v: UInt64) { for i in 0..<8 { append(UInt8(truncatingIfNeeded: v >> (8 * i))) } }
}
