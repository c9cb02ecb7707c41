/// Counted nouns in messages: "1 document", "2 documents", "1 batch", "3 batches".
enum Plural {
    /// The noun for `n`: its plural unless `n` is 1 ("batch" → "batches", "entry" → "entries").
    static func noun(_ n: Int, _ singular: String) -> String {
        if n == 1 { return singular }
        if singular.hasSuffix("ch") || singular.hasSuffix("s") || singular.hasSuffix("x") { return singular + "es" }
        if singular.hasSuffix("y") { return String(singular.dropLast()) + "ies" }
        return singular + "s"
    }

    /// `n` and its noun: "1 document", "0 documents".
    static func count(_ n: Int, _ singular: String) -> String { "\(n) \(noun(n, singular))" }

    static func files(_ n: Int) -> String { noun(n, "file") }
}
