/// Parses HTTP-date values (RFC 9110 §5.6.7): IMF-fixdate, and the obsolete RFC 850 and asctime forms.
enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Seconds since the Unix epoch, or `nil` when `text` is not an HTTP-date.
    static func parse(_ text: String) -> Int64? {
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT  → [Sun, 06, Nov, 1994, 08:49:37, GMT]
        if parts.count == 6, parts[5] == "GMT", let day = Int(parts[1]), let year = Int(parts[3]) {
            return make(year: year, month: parts[2], day: day, time: parts[4])
        }
        // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT → [Sunday, 06-Nov-94, 08:49:37, GMT]
        if parts.count == 4, parts[3] == "GMT" {
            let dmy = parts[1].split(separator: "-").map(String.init)
            guard dmy.count == 3, let day = Int(dmy[0]), let yy = Int(dmy[2]) else { return nil }
            let year = dmy[2].count == 2 ? (yy < 70 ? 2000 + yy : 1900 + yy) : yy
            return make(year: year, month: dmy[1], day: day, time: parts[2])
        }
        // asctime: Sun Nov  6 08:49:37 1994 → [Sun, Nov, 6, 08:49:37, 1994]
        if parts.count == 5, let day = Int(parts[2]), let year = Int(parts[4]) {
            return make(year: year, month: parts[1], day: day, time: parts[3])
        }
        return nil
    }

    private static func make(year: Int, month: String, day: Int, time: String) -> Int64? {
        guard let monthIndex = months.firstIndex(of: month.lowercased()) else { return nil }
        let hms = time.split(separator: ":").compactMap { Int($0) }
        guard hms.count == 3, (1...31).contains(day), (0...23).contains(hms[0]), (0...59).contains(hms[1]),
              (0...60).contains(hms[2]), (1...9999).contains(year) else { return nil }
        let days = daysFromCivil(year: year, month: monthIndex + 1, day: day)
        return Int64(days) * 86_400 + Int64(hms[0] * 3600 + hms[1] * 60 + hms[2])
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar.
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// `YYYY-MM-DD` (UTC) of a time in seconds since 1970.
    static func day(_ seconds: Int64) -> String {
        let days = Int(seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400)
        // Howard Hinnant's civil_from_days.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(year)-\(two(month))-\(two(day))"
    }

    /// The IMF-fixdate of a time in seconds since 1970 (`Sun, 06 Nov 1994 08:49:37 GMT`), as requests carry it.
    static func format(_ seconds: Int64) -> String {
        let ymd = day(seconds).split(separator: "-").compactMap { Int($0) }
        let dayNumber = Int(seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400)
        let secondOfDay = Int(seconds - Int64(dayNumber) * 86_400)
        let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
        let weekday = weekdays[((dayNumber % 7) + 7) % 7]
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        guard ymd.count == 3 else { return "" }
        let month = months[ymd[1] - 1].prefix(1).uppercased() + months[ymd[1] - 1].dropFirst()
        let year = String(ymd[0]).count < 4 ? String(repeating: "0", count: 4 - String(ymd[0]).count) + String(ymd[0]) : String(ymd[0])
        return "\(weekday), \(two(ymd[2])) \(month) \(year) \(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) GMT"
    }
}
