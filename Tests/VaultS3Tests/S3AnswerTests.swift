import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing
import VaultCore
@testable import VaultS3

/// What vault makes of S3 answers, on the answers SeaweedFS gave (recorded by
/// scripts/record-s3-answers.sh into Fuzz/seeds/s3/, where they also seed `make fuzz`) and on
/// the hostile ones the fuzzer found or the review wrote.
@Suite struct S3AnswerTests {
    static let seeds = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Fuzz")
        .standardized

    /// The parts of a seed, framed as the fuzz family reads it (a mode byte, parts split at 0x1E).
    static func parts(_ name: String) throws -> [[UInt8]] {
        let data = try Data(contentsOf: seeds.appendingPathComponent(name))
        return data.dropFirst().split(separator: 0x1E, omittingEmptySubsequences: false).map(Array.init)
    }

    @Test func aRecordedListingReadsPageByPageWithinItsPrefix() throws {
        let p = try Self.parts("seeds/s3/seaweedfs-listing-two-pages")
        var listing = S3XML.ObjectListing(prefix: "p/", what: "ListObjectsV2 rec/p/")
        #expect(try listing.read(p[1]).map(\.key) == ["p/a", "p/b"])
        #expect(listing.token == "p/b" && !listing.done)
        let second = try listing.read(p[2])
        #expect(
            second.map(\.key) == ["p/c", "p/sp ace"] && second.allSatisfy { $0.size > 0 && !$0.etag.contains("\"") })
        #expect(listing.done)

        // The same page again (the same token): an error, not another page.
        var again = S3XML.ObjectListing(prefix: "p/", what: "ListObjectsV2 rec/p/")
        let repeated = try Self.parts("seeds/s3/seaweedfs-listing-same-token-twice")
        _ = try again.read(repeated[1])
        let e = #expect(throws: VaultError.self) { try again.read(repeated[2]) }
        #expect(e?.code == .vaultDamaged && e?.message.contains("continuation token it gave before") == true)

        // Asked for q/, the store's p/ keys are not part of the answer.
        var other = S3XML.ObjectListing(prefix: "q/", what: "ListObjectsV2 rec/q/")
        #expect(try other.read(try Self.parts("seeds/s3/seaweedfs-listing-other-prefix")[1]).isEmpty)
    }

    @Test func aRecordedPartListReadsWhileItsMarkerGoesUp() throws {
        let p = try Self.parts("seeds/s3/seaweedfs-list-parts-two-pages")
        var list = S3XML.PartListing(what: "ListParts rec/m")
        try list.read(p[0])
        #expect(list.marker == 1 && !list.done)
        try list.read(p[1])
        #expect(list.done && list.parts.map(\.number) == [1, 2] && list.parts.map(\.size) == [5_242_880, 4])

        var again = S3XML.PartListing(what: "ListParts rec/m")
        let repeated = try Self.parts("seeds/s3/seaweedfs-list-parts-same-marker-twice")
        try again.read(repeated[0])
        #expect(throws: VaultError.self) { try again.read(repeated[1]) }
    }

    @Test func recordedAnswersAndErrorsParse() throws {
        let created = try Self.parts("seeds/s3/seaweedfs-create-multipart")[0]
        #expect(S3XML.values("UploadId", in: created).first?.isEmpty == false)
        let completed = try Self.parts("seeds/s3/seaweedfs-complete-multipart")[0]
        #expect(S3Client.unquote(S3XML.values("ETag", in: completed).first ?? "").hasSuffix("-2"))
        for (seed, code) in [
            ("no-such-key", "NoSuchKey"), ("no-such-bucket", "NoSuchBucket"), ("signature", "SignatureDoesNotMatch"),
            ("invalid-part", "InvalidPart")
        ] {
            #expect(S3XML.error(try Self.parts("seeds/s3/seaweedfs-error-\(seed)")[0])?.code == code)
        }
    }

    /// Found by `make fuzz`: Foundation's XMLParser traps on a name that is not UTF-8, and it
    /// substitutes entities. Such answers read as empty; the same answer in plain UTF-8 reads.
    // Long: a table of cases, read down the page.
    @Test func answersFoundationCannotParseSafelyReadAsEmpty() throws {
        // The fuzzer's input: a listing whose element name holds 0xFF bytes. A listing page or
        // a part list that cannot be read is an error (read as empty, it would hide objects).
        var listing = S3XML.ObjectListing(prefix: "p/", what: "ListObjectsV2 fuzz/p/")
        let unreadable = #expect(throws: VaultError.self) {
            try listing.read(try Self.parts("regressions/s3/element-name-not-utf8")[1])
        }
        #expect(unreadable?.code == .vaultDamaged && unreadable?.message.contains("not a listing") == true)
        let unreadablePages = [
            "", "<html><body>Bucket</body></html>", "<ListBucketResult><Contents>",
            "<ListBucketResult>\u{7}</ListBucketResult>",
        ]
        for page in unreadablePages {
            var l = S3XML.ObjectListing(prefix: "", what: "ListObjectsV2 rec/")
            #expect(throws: VaultError.self, "\(page.debugDescription)") { try l.read(Array(page.utf8)) }
            var parts = S3XML.PartListing(what: "ListParts rec")
            #expect(throws: VaultError.self, "\(page.debugDescription)") { try parts.read(Array(page.utf8)) }
        }
        // The same page under new tokens, or more keys than asked for, is an error: memory
        // would otherwise grow by a page each time, up to 10,000 of them.
        func page(_ keys: [String], next: String) -> [UInt8] {
            Array(
                ("<ListBucketResult>" + keys.map { "<Contents><Key>\($0)</Key><Size>1</Size></Contents>" }.joined()
                    + "<IsTruncated>true</IsTruncated><NextContinuationToken>\(next)</NextContinuationToken>"
                    + "</ListBucketResult>").utf8)
        }
        var repeated = S3XML.ObjectListing(prefix: "p/", what: "ListObjectsV2 rec/p/", pageSize: 3)
        #expect(try repeated.read(page(["p/a", "p/b", "p/c"], next: "1")).count == 3)
        let again = #expect(throws: VaultError.self) { try repeated.read(page(["p/a", "p/b", "p/c"], next: "2")) }
        #expect(again?.code == .vaultDamaged && again?.message.contains("out of order") == true)
        var crowded = S3XML.ObjectListing(prefix: "p/", what: "ListObjectsV2 rec/p/", pageSize: 3)
        let big = #expect(throws: VaultError.self) { try crowded.read(page(["p/a", "p/b", "p/c", "p/d"], next: "1")) }
        #expect(big?.message.contains("4 keys in a page of at most 3") == true)
        var ordered = S3XML.ObjectListing(prefix: "p/", what: "ListObjectsV2 rec/p/", pageSize: 3)
        #expect(try ordered.read(page(["p/a", "p/b"], next: "1")).count == 2)
        #expect(try ordered.read(page(["p/c", "p/sp ace"], next: "2")).count == 2)
        var empty = S3XML.ObjectListing(prefix: "", what: "ListObjectsV2 rec/")
        let none = Array("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>".utf8)
        #expect(try empty.read(none).isEmpty)
        #expect(empty.done)
        // Numbers are ASCII digits: Swift's UInt64("+460") is 460, and a size that was not a
        // number read as 0.
        for size in ["+460", "-1", " 460", "4e2", "", "99999999999999999999"] {
            var signed = S3XML.ObjectListing(prefix: "", what: "ListObjectsV2 rec/")
            let listed = Array(
                "<ListBucketResult><Contents><Key>a</Key><Size>\(size)</Size></Contents></ListBucketResult>".utf8)
            let refused = #expect(throws: VaultError.self, "\(size)") { try signed.read(listed) }
            #expect(refused?.message.contains("a size that is not a number") == true)
            var parts = S3XML.PartListing(what: "ListParts rec")
            let part = Array(
                "<ListPartsResult><Part><PartNumber>1</PartNumber><Size>\(size)</Size></Part></ListPartsResult>".utf8)
            #expect(throws: VaultError.self, "\(size)") { try parts.read(part) }
        }
        var plus = S3XML.PartListing(what: "ListParts rec")
        let plusPart = "<ListPartsResult><Part><PartNumber>+2</PartNumber><Size>5</Size></Part></ListPartsResult>"
        #expect(throws: VaultError.self) { try plus.read(Array(plusPart.utf8)) }
        var sized = S3XML.ObjectListing(prefix: "", what: "ListObjectsV2 rec/")
        let listed = try sized.read(
            Array("<ListBucketResult><Contents><Key>a</Key><Size>460</Size></Contents></ListBucketResult>".utf8))
        #expect(listed.map(\.size) == [460])
        // A store's message is cut at 300 characters (a hostile one sent 4 MB to stderr).
        let long = S3ServiceError(
            status: 500, code: String(repeating: "C", count: 100), message: String(repeating: "m", count: 5000))
        #expect(long.message == String(repeating: "m", count: 300) + "…")
        #expect(long.code == String(repeating: "C", count: 64) + "…")
        #expect(S3ServiceError(status: 404, code: "NoSuchKey", message: "gone").description == "NoSuchKey: gone")
        let bomb = try Self.parts("seeds/s3/hostile-entity-bomb-error")[0]
        #expect(S3XML.error(bomb) == nil)
        #expect(S3XML.error(try Self.parts("seeds/s3/hostile-external-entity")[0]) == nil)
        let error = Array(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code><Message>é</Message></Error>".utf8)
        #expect(S3XML.error(error)?.code == "SlowDown" && S3XML.error(error)?.message == "é")
        let latin1 = Array("<?xml version='1.0' encoding='ISO-8859-1'?><Error><Code>SlowDown</Code></Error>".utf8)
        #expect(S3XML.error(latin1) == nil)
        #expect(S3XML.error([0x3C, 0xFF, 0x3E]) == nil)
        // The fuzzer's second input: a processing instruction without data (Foundation reads
        // its missing data with strlen(NULL)).
        #expect(S3XML.error(try Self.parts("regressions/s3/processing-instruction-without-data")[0]) == nil)
        // The third: a declaration that seems to end at a later instruction's `?>`.
        #expect(S3XML.error(try Self.parts("regressions/s3/declaration-ends-inside-an-instruction")[0]) == nil)
        for refused in [
            "<Error><!-- x --><Code>A</Code></Error>", "<Error><Code><![CDATA[A]]></Code></Error>",
            "<?xml?><Error><Code>A</Code></Error>",
            "<Error><?pi?><Code>A</Code></Error>", "<Error><Code>A\u{0}</Code></Error>"
        ] {
            #expect(S3XML.error(Array(refused.utf8)) == nil, "\(refused)")
        }
        #expect(S3XML.error(Array("\u{FEFF}<?xml version='1.0'?>\n<Error><Code>A</Code></Error>".utf8))?.code == "A")
    }

    /// XMLParser's events for `body`, consecutive texts joined (it may split a text), or nil
    /// when it finds the body malformed.
    static func foundationEvents(_ body: [UInt8]) -> [S3XMLReader.Event]? {
        final class Recorder: NSObject, XMLParserDelegate {
            var events: [S3XMLReader.Event] = []
            func parser(
                _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]
            ) { events.append(.start(name)) }
            func parser(_ parser: XMLParser, foundCharacters string: String) { events.append(.text(string)) }
            func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?)
            {
                events.append(.end(name))
            }
        }
        let recorder = Recorder()
        let parser = XMLParser(data: Data(body))
        parser.delegate = recorder
        guard parser.parse() else { return nil }
        return S3XMLReader.joiningTexts(recorder.events)
    }


    /// The reader that replaced Foundation's XMLParser (and libxml2) gives XMLParser's events on
    /// every answer it accepts: every recorded SeaweedFS answer (all accepted), every hostile seed
    /// and the inputs that crashed XMLParser, where they pass the whitelist before both; and
    /// hand-made answers with references, line ends, attributes and empty elements. What is not
    /// well-formed it refuses whole, where XMLParser (libxml2 in recovery mode) reported whatever
    /// it recovered: the cases below are such answers.
    @Test func theHandWrittenReaderReadsWhatXMLParserReads() throws {
        var bodies: [(name: String, body: [UInt8])] = []
        for folder in ["seeds/s3", "regressions/s3"] {
            let path = Self.seeds.appendingPathComponent(folder).path
            let names = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
            for name in names where !name.hasPrefix("reader-") {
                // Mode 0 (a listing) begins with the prefix asked for; the other parts are answers.
                let mode = try Data(contentsOf: Self.seeds.appendingPathComponent(folder + "/" + name)).first ?? 0
                let parts = try Self.parts(folder + "/" + name)
                bodies += (mode % 4 == 0 ? parts.dropFirst() : parts[...]).map { (name, $0) }
            }
        }
        let wellFormed = [
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                + "<A xmlns=\"http://s3\"><K>a &amp; b &lt;&gt; &quot;&apos; &#233;&#x1F600;</K></A>",
            "\u{FEFF}<A><B/><C a='1' b=\"2\" >x\r\ny\rz&#13;</C>\n</A>\n", "<A><K>p/sp ace</K><K></K></A>",
        ]
        bodies += wellFormed.map { ("well-formed", Array($0.utf8)) }
        var compared = 0, recorded = 0
        for (name, body) in bodies where S3XML.isPlainUTF8XML(body) {
            let ours = S3XMLReader.events(body).map(S3XMLReader.joiningTexts)
            if name.hasPrefix("seaweedfs-") || name == "well-formed" {
                #expect(ours != nil, "\(name): \(String(decoding: body, as: UTF8.self).debugDescription)")
                recorded += 1
            }
            guard let ours else { continue }
            let text = String(decoding: body, as: UTF8.self).debugDescription
            #expect(ours == Self.foundationEvents(body), "\(name): \(text)")
            compared += 1
        }
        #expect(recorded >= 16 && compared >= recorded, "compared \(compared), of which \(recorded) must be accepted")
        let malformed = [
            "<A>]]></A>", "<A><B></A></B>", "<A></A><B></B>", "<A>x</A>y", "<A>&bogus;</A>", "<A>&#0;</A>",
            "<A>&#xD800;</A>", "<A b='1' b='2'/>", "<A b=1/>", "<A", "<A>", "text", "<1A/>", "<A>\u{7}</A>",
            "<A c='<'/>", "<A><B>\u{FFFE}</B></A>", "<A>&#x;</A>", "<A>&#65</A>", "<A>&#x+41;</A>", "",
            // A name beyond ASCII: `</\u{212A}ey>` (KELVIN SIGN) equals `</Key>` as a Swift String.
            "<Key>p/a</\u{212A}ey>", "<\u{212A}ey>p/a</\u{212A}ey>", "<Size\u{301}>1</Size\u{301}>",
        ]
        for text in malformed { #expect(S3XMLReader.events(Array(text.utf8)) == nil, "\(text.debugDescription)") }
        // Nesting is bounded: the 257th open element makes the answer malformed.
        let deep = String(repeating: "<a>", count: 257) + String(repeating: "</a>", count: 257)
        #expect(S3XMLReader.events(Array(deep.utf8)) == nil)
        let fine = String(repeating: "<a>", count: 256) + String(repeating: "</a>", count: 256)
        #expect(S3XMLReader.events(Array(fine.utf8))?.count == 512)
    }

}
