#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An instant's calendar fields in UTC, and the fixed formats vault writes and reads: ISO 8601
/// (`2026-11-26T09:05:03Z`), HTTP dates (`Thu, 26 Nov 2026 09:05:03 GMT`), S3's signing time
/// (`20261126T090503Z`).
///
/// Written by hand: Foundation's date formatters need ICU (about 30 MB of a static binary) for
/// what is, in UTC with fixed English names, the proleptic Gregorian calendar: two functions
/// (Howard Hinnant's `days_from_civil` and `civil_from_days`). Tests compare every format and
/// parser with Foundation's on many instants.
package struct UTCTime: Equatable, Sendable {
    package var year: Int
    package var month: Int  // 1...12
    package var day: Int  // 1...31
    package var hour: Int
    package var minute: Int
    package var second: Int
    /// Milliseconds within the second, 0...999.
    package var millisecond: Int
    /// 0 for Sunday ... 6 for Saturday.
    package var weekday: Int

    /// The fields of `date`, to the millisecond below (as Foundation's formatters write it). The
    /// time is first taken to the nearest microsecond: a time made from milliseconds
    /// (`millis / 1000`) is a hair below them in binary, and must not lose one.
    /// A time outside years 1 to 9999 (an expiry a day count far in the future made, infinity)
    /// is taken as that range's nearest end, not a trap.
    package init(_ date: Date) {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, seconds > Self.earliest, seconds < Self.latest else {
            self.init(millis: seconds > 0 ? Self.latestMillis : Self.earliestMillis)  // NaN: the earliest
            return
        }
        let micros = Int64((seconds * 1_000_000).rounded())
        self.init(millis: micros >= 0 ? micros / 1000 : (micros - 999) / 1000)
    }

    /// 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z.
    static let earliestMillis: Int64 = -62_135_596_800_000
    static let latestMillis: Int64 = 253_402_300_799_999
    private static let earliest = Double(earliestMillis) / 1000
    private static let latest = Double(latestMillis) / 1000

    /// The fields of `millis` milliseconds since 1970-01-01T00:00:00Z.
    package init(millis: Int64) {
        let (days, inDay) = Self.floorDivide(millis, 86_400_000)
        (year, month, day) = Self.civil(fromDays: days)
        hour = Int(inDay / 3_600_000)
        minute = Int(inDay / 60000 % 60)
        second = Int(inDay / 1000 % 60)
        millisecond = Int(inDay % 1000)
        weekday = Int(Self.floorDivide(days + 4, 7).1)  // 1970-01-01 was a Thursday
    }

    /// Milliseconds since 1970-01-01T00:00:00Z of these fields (weekday ignored).
    package var millis: Int64 {
        let days = Self.days(fromCivil: year, month, day)
        return ((days * 24 + Int64(hour)) * 60 + Int64(minute)) * 60_000 + Int64(second) * 1000 + Int64(millisecond)
    }

    /// `2026-11-26T09:05:03Z`.
    package var iso8601: String { days("-") + "T" + time(":") + "Z" }

    /// `2026-11-26T09:05:03.042Z`.
    package var iso8601Millis: String { days("-") + "T" + time(":") + "." + zeroPadded(millisecond, 3) + "Z" }

    /// `20261126T090503Z` (SigV4's `X-Amz-Date`); its first 8 characters are the signing day.
    package var compact: String { days("") + "T" + time("") + "Z" }

    /// `2026-11-26 09:05` (`list`'s column).
    package var minutes: String { days("-") + " " + zeroPadded(hour) + ":" + zeroPadded(minute) }

    /// `Thu, 26 Nov 2026 09:05:03 GMT` (RFC 9110's IMF-fixdate).
    package var httpDate: String {
        Self.weekdays[weekday] + ", " + zeroPadded(day) + " " + Self.months[month - 1] + " " + zeroPadded(year, 4) + " "
            + time(":") + " GMT"
    }

    /// `2026-11-26 09:05:03 UTC`.
    package var readable: String { days("-") + " " + time(":") + " UTC" }

    private func days(_ separator: String) -> String {
        zeroPadded(year, 4) + separator + zeroPadded(month) + separator + zeroPadded(day)
    }

    private func time(_ separator: String) -> String {
        zeroPadded(hour) + separator + zeroPadded(minute) + separator + zeroPadded(second)
    }

    static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    // MARK: Reading

    /// An ISO 8601 internet date-time: `YYYY-MM-DDTHH:MM:SS`, then `.` and 1 to 9 digits when
    /// `fraction` allows them (read to the millisecond), then `Z` or an offset `±HH:MM`.
    package static func parseISO8601(_ text: String, fraction: Bool = false) -> Date? {
        millis(iso8601: text, fraction: fraction).map { Date(timeIntervalSince1970: Double($0) / 1000) }
    }

    /// ``parseISO8601(_:fraction:)``'s instant in milliseconds since 1970, exactly.
    package static func millis(iso8601 text: String, fraction: Bool = false) -> Int64? {
        var s = Scanner(text)
        guard let year = s.digits(4), s.take("-"), let month = s.digits(2), s.take("-"), let day = s.digits(2),
              s.take("T"), let hour = s.digits(2), s.take(":"), let minute = s.digits(2), s.take(":"),
              let second = s.digits(2) else { return nil }
        var millisecond = 0
        if fraction {
            guard s.take(".") else { return nil }
            var digits = 0
            while let d = s.digits(1) {
                if digits < 3 { millisecond = millisecond * 10 + d }
                digits += 1
            }
            guard (1...9).contains(digits) else { return nil }
            if digits < 3 { for _ in digits..<3 { millisecond *= 10 } }
        }
        var offset = 0
        if s.take("Z") {
        } else if let sign = s.sign(), let h = s.digits(2), s.take(":"), let m = s.digits(2), h < 24, m < 60 {
            offset = sign * (h * 60 + m)
        } else {
            return nil
        }
        guard s.atEnd else { return nil }
        return make(year, month, day, hour, minute, second, millisecond, offsetMinutes: offset)
    }

    /// A calendar day `YYYY-MM-DD`, at midnight UTC.
    package static func parseDay(_ text: String) -> Date? {
        var s = Scanner(text)
        guard let year = s.digits(4), s.take("-"), let month = s.digits(2), s.take("-"), let day = s.digits(2),
              s.atEnd else { return nil }
        return make(year, month, day, 0, 0, 0, 0, offsetMinutes: 0).map(date)
    }

    /// An HTTP date in IMF-fixdate form, `Thu, 26 Nov 2026 09:05:03 GMT`: the weekday is read
    /// but not checked against the date, as Foundation's parser did not.
    package static func parseHTTPDate(_ text: String) -> Date? {
        var s = Scanner(text)
        guard let weekday = s.word(3), weekdays.contains(weekday), s.take(","), s.take(" "),
              let day = s.digits(2), s.take(" "), let monthName = s.word(3),
              let month = months.firstIndex(of: monthName), s.take(" "), let year = s.digits(4), s.take(" "),
              let hour = s.digits(2), s.take(":"), let minute = s.digits(2), s.take(":"), let second = s.digits(2),
              s.take(" "), s.take("G"), s.take("M"), s.take("T"), s.atEnd else { return nil }
        return make(year, month + 1, day, hour, minute, second, 0, offsetMinutes: 0).map(date)
    }

    private static func date(_ millis: Int64) -> Date { Date(timeIntervalSince1970: Double(millis) / 1000) }

    private static func make(
        _ year: Int, _ month: Int, _ day: Int, _ hour: Int, _ minute: Int, _ second: Int, _ millisecond: Int,
        offsetMinutes: Int
    ) -> Int64? {
        guard (1...12).contains(month), day >= 1, day <= daysIn(month, year), hour < 24, minute < 60,
              second < 60 else { return nil }
        let t = UTCTime(
            year: year, month: month, day: day, hour: hour, minute: minute, second: second,
            millisecond: millisecond, weekday: 0)
        return t.millis - Int64(offsetMinutes) * 60000
    }

    private init(
        year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int, millisecond: Int, weekday: Int
    ) {
        (self.year, self.month, self.day, self.hour, self.minute) = (year, month, day, hour, minute)
        (self.second, self.millisecond, self.weekday) = (second, millisecond, weekday)
    }

    private static func daysIn(_ month: Int, _ year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // MARK: The calendar

    /// Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's `days_from_civil`).
    static func days(fromCivil year: Int, _ month: Int, _ day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * Int64(month > 2 ? month - 3 : month + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146097 + dayOfEra - 719_468
    }

    /// The proleptic Gregorian date `days` after 1970-01-01 (Hinnant's `civil_from_days`).
    static func civil(fromDays days: Int64) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let dayOfEra = z - era * 146097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (Int(yearOfEra + era * 400 + (month <= 2 ? 1 : 0)), Int(month), Int(day))
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        let q = a / b
        let r = a % b
        return r < 0 ? (q - 1, r + b) : (q, r)
    }

    /// A cursor over the UTF-8 of a date being read.
    private struct Scanner {
        let bytes: [UInt8]
        var at = 0
        init(_ text: String) { bytes = Array(text.utf8) }
        var atEnd: Bool { at == bytes.count }

        mutating func take(_ c: Character) -> Bool {
            guard at < bytes.count, bytes[at] == c.asciiValue else { return false }
            at += 1
            return true
        }

        mutating func digits(_ n: Int) -> Int? {
            guard at + n <= bytes.count else { return nil }
            var v = 0
            for b in bytes[at..<at + n] {
                guard (0x30...0x39).contains(b) else { return nil }
                v = v * 10 + Int(b - 0x30)
            }
            at += n
            return v
        }

        mutating func word(_ n: Int) -> String? {
            guard at + n <= bytes.count else { return nil }
            let w = bytes[at..<at + n]
            guard w.allSatisfy({ (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }) else { return nil }
            at += n
            return String(decoding: w, as: UTF8.self)
        }

        mutating func sign() -> Int? {
            if take("+") { return 1 }
            if take("-") { return -1 }
            return nil
        }
    }
}

/// `value` in decimal, left-padded with zeros to `width` digits (a negative value keeps its sign
/// in front: -0042).
package func zeroPadded(_ value: Int, _ width: Int = 2) -> String {
    let digits = String(value.magnitude)
    let zeros = String(repeating: "0", count: max(0, width - digits.count - (value < 0 ? 1 : 0)))
    return (value < 0 ? "-" : "") + zeros + digits
}
