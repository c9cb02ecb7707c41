// Family `receipt`: a receiver's answer with a receipt, as a station reads it
// (`Receipt.answer`, docs/FORMAT.md). The input is the answer.
// Properties: no crash; failures only as header-malformed; what it accepts is the canonical
// answer byte for byte (the receipt it states, written again with the signature it carried,
// is the input), and the signature check gives the same verdict twice.
import Foundation
import VaultCore

enum ReceiptFamily {
    static func check(_ bytes: [UInt8]) {
        let answer: Receipt.Answer
        do {
            answer = try Receipt.answer(bytes)
        } catch let e as VaultError {
            expect(e.code == .headerMalformed, "a failure with the documented code, not \(e.code)")
            return
        } catch {
            expect(false, "only VaultErrors: \(error)")
            return
        }
        expect(answer.receipt.statement() == answer.statement, "the statement is the receipt's own")
        let framed =
            Array(#"{"receipt":"#.utf8) + answer.statement
            + Array(#","signature":"\#(Data(answer.signature).base64EncodedString())"}"#.utf8)
        expect(framed == bytes, "an accepted answer is the canonical one")
        let key = [UInt8](repeating: 7, count: 32)
        expect(answer.isSigned(by: key) == answer.isSigned(by: key), "the check is a function of its input")
    }
}
