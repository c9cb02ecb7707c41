// Family `multipart`: `multipart/form-data` bodies as `vault receive` reads them
// (`MultipartReader`), with the boundary `vault-fuzz`. The first byte picks the piece size the
// body is fed in (1 + byte); the rest is the body.
// Properties: the reader never crashes; it fails only with its documented codes; events come
// in order (a part's headers, its data, its end); no part's data holds the delimiter; what the
// parts' data and headers add up to is no more than the body; and a body it accepts ends with
// the closing boundary.
import Foundation
import VaultCore
import VaultReceive

enum MultipartFamily {
    static let boundary = "vault-fuzz"
    static let codes: Set<VaultError.Code> = [.headerMalformed, .trailingData, .truncated]

    static func check(_ bytes: [UInt8]) {
        guard let mode = bytes.first else { return }
        let piece = 1 + Int(mode)
        let body = Array(bytes.dropFirst())
        var reader = MultipartReader(boundary: boundary)
        var open = false
        var data = 0
        var current: [UInt8] = []
        let delimiter = Array("\r\n--\(boundary)".utf8)
        do {
            try reader.read(body, inPiecesOf: piece) { event in
                switch event {
                case .part:
                    expect(!open, "a part starts only after the one before ended")
                    open = true
                    current = []
                case .data(let b):
                    expect(open, "data only inside a part")
                    data += b.count
                    current += Array(b)
                case .end:
                    expect(open, "an end only of an open part")
                    open = false
                    let text = String(decoding: current, as: UTF8.self)
                    expect(!text.contains(String(decoding: delimiter, as: UTF8.self)), "no delimiter in a part")
                }
            }
        } catch let e as VaultError {
            expect(codes.contains(e.code), "a failure with a documented code, not \(e.code)")
            return
        } catch {
            expect(false, "only VaultErrors: \(error)")
        }
        expect(!open, "an accepted form has no open part")
        expect(data <= body.count, "no more data than the body")
        let closing = Array("--\(boundary)--".utf8)
        let trimmed = body.count >= 2 && body.suffix(2).elementsEqual([0x0D, 0x0A]) ? Array(body.dropLast(2)) : body
        expect(trimmed.suffix(closing.count).elementsEqual(closing), "an accepted form ends with its closing boundary")
    }
}
