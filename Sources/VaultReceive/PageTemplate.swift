/// A template of the browser view's pages, in the part of Mustache (mustache.github.io) the
/// pages use: `{{name}}` (escaped), sections `{{#name}}…{{/name}}` over a list, a truth value
/// or a value that becomes the innermost context, inverted sections `{{^name}}…{{/name}}`, and
/// partials `{{> name}}`. A tag alone on its line (but the first line's, as swift-mustache
/// treated it after the content-type pragma the pages began with) takes its line with it.
/// Anything else in braces (`{{{`, `{{&`, `{{=`, comments, dotted names) is refused when the
/// template is read.
///
/// Written by hand: the pages were rendered by swift-mustache, which links Foundation's
/// classes and, with them, ICU (its `NSNull` conformance: about 44 MB of a static binary, see
/// docs/PERFORMANCE.md); no template library on this machine's list does without Foundation.
/// A test renders every page with both and compares the bytes.
struct PageTemplate: Sendable {
    indirect enum Node: Equatable, Sendable {
        case text(String)
        case value(String)
        case section(String, inverted: Bool, [Node])
        case partial(String)
    }

    struct Malformed: Error, CustomStringConvertible {
        let description: String
    }

    let nodes: [Node]

    init(_ text: String) throws {
        var parser = Parser(Array(text.utf8))
        nodes = try parser.nodes(until: nil)
    }

    /// The template rendered with `context` (a `[String: Any]`, or a value whose stored
    /// properties are read by name), every value through `escape`.
    func render(_ context: Any, partials: [String: PageTemplate], escape: (String) -> String) -> String {
        var out = ""
        var stack = [context]
        Self.render(nodes, &stack, partials, escape, into: &out)
        return out
    }

    private static func render(
        _ nodes: [Node], _ stack: inout [Any], _ partials: [String: PageTemplate], _ escape: (String) -> String,
        into out: inout String
    ) {
        for node in nodes {
            switch node {
            case .text(let t): out += t
            case .value(let name):
                if let v = lookup(name, stack) { out += escape(String(describing: v)) }
            case .section(let name, let inverted, let body):
                let v = lookup(name, stack)
                let items: [Any]?
                if let v, Mirror(reflecting: v).displayStyle == .collection {
                    items = Mirror(reflecting: v).children.map(\.value)
                } else {
                    items = nil
                }
                if inverted {
                    let empty = v == nil || (v as? Bool) == false || items?.isEmpty == true
                    if empty { render(body, &stack, partials, escape, into: &out) }
                } else if let items {
                    for item in items {
                        stack.append(item)
                        render(body, &stack, partials, escape, into: &out)
                        stack.removeLast()
                    }
                } else if let flag = v as? Bool {
                    if flag { render(body, &stack, partials, escape, into: &out) }
                } else if let v {
                    stack.append(v)
                    render(body, &stack, partials, escape, into: &out)
                    stack.removeLast()
                }
            case .partial(let name):
                if let partial = partials[name] { render(partial.nodes, &stack, partials, escape, into: &out) }
            }
        }
    }

    /// `name` in the innermost context that has it with a value (a nil optional is looked for
    /// further out, as swift-mustache does).
    private static func lookup(_ name: String, _ stack: [Any]) -> Any? {
        for context in stack.reversed() {
            let found: Any?
            if let d = context as? [String: Any] {
                found = d[name]
            } else {
                found = Mirror(reflecting: context).children.first { $0.label == name }?.value
            }
            if let found, let value = unwrapped(found) { return value }
        }
        return nil
    }

    private static func unwrapped(_ value: Any) -> Any? {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return value }
        return mirror.children.first.flatMap { unwrapped($0.value) }
    }

    private struct Parser {
        let b: [UInt8]
        var i = 0
        /// True at the start of a line (not at the template's start: see the type's note).
        var lineStart = false

        init(_ bytes: [UInt8]) { b = bytes }

        mutating func nodes(until closing: String?) throws -> [Node] {
            var out: [Node] = []
            var text: [UInt8] = []
            func flush() {
                if !text.isEmpty { out.append(.text(String(decoding: text, as: UTF8.self))) }
                text = []
            }
            while i < b.count {
                guard b[i...].starts(with: [0x7B, 0x7B]) else {  // "{{"
                    text.append(b[i])
                    if b[i] == 0x0A {
                        lineStart = true
                    } else if b[i] != 0x20 && b[i] != 0x09 {
                        lineStart = false
                    }
                    i += 1
                    continue
                }
                guard let close = find([0x7D, 0x7D], from: i + 2) else {
                    throw Malformed(description: "an unclosed tag")
                }
                let inner = String(decoding: b[(i + 2)..<close], as: UTF8.self)
                let kind = inner.first
                let marked = kind == "#" || kind == "^" || kind == "/" || kind == ">"
                let name = (marked ? String(inner.dropFirst()) : inner).trimmingSpaces()
                guard !name.isEmpty,
                      name.utf8.allSatisfy({ $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "_") || $0 == 0x2D }) else {
                    throw Malformed(description: "the tag {{\(inner)}} is not one these templates may use")
                }
                let after = close + 2
                if marked {
                    // Alone on its line: the line goes (its indentation, the tag, the line end).
                    var end = after
                    while end < b.count, b[end] == 0x20 || b[end] == 0x09 { end += 1 }
                    let alone = lineStart && (end == b.count || b[end] == 0x0A)
                    if alone {
                        while let last = text.last, last == 0x20 || last == 0x09 { text.removeLast() }
                        i = end < b.count ? end + 1 : end
                        lineStart = true
                    } else {
                        i = after
                        lineStart = false
                    }
                } else {
                    i = after
                    lineStart = false
                }
                switch kind {
                case "#", "^":
                    flush()
                    out.append(.section(name, inverted: kind == "^", try nodes(until: name)))
                case "/":
                    guard name == closing else { throw Malformed(description: "{{/\(name)}} closes nothing open") }
                    flush()
                    return out
                case ">":
                    flush()
                    out.append(.partial(name))
                default:
                    flush()
                    out.append(.value(name))
                }
            }
            guard closing == nil else { throw Malformed(description: "{{#\(closing!)}} is not closed") }
            flush()
            return out
        }

        func find(_ needle: [UInt8], from start: Int) -> Int? {
            var j = start
            while j + needle.count <= b.count {
                if b[j..<(j + needle.count)].elementsEqual(needle) { return j }
                j += 1
            }
            return nil
        }
    }
}
