#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import VaultCore

/// The browser view's pages: templates (``PageTemplate``, a part of Mustache) rendered from
/// the models below, every value through ``ScalarHTMLEscaping``. The templates use only
/// `{{name}}`, never the unescaped `{{{name}}}` or `{{&name}}` (a test holds them to it).
enum OperatorPages {
    static let templates: [String: PageTemplate] = {
        var templates: [String: PageTemplate] = [:]
        for (name, text) in sources {
            do {
                templates[name] = try PageTemplate(text)
            } catch {
                preconditionFailure("internal error: the template \(name) does not parse: \(error)")
            }
        }
        return templates
    }()

    /// `page` rendered with the template `name`.
    static func render(_ page: Any, _ name: String) -> String {
        guard let template = templates[name] else { preconditionFailure("internal error: no template \(name)") }
        return template.render(page, partials: templates, escape: ScalarHTMLEscaping().escapeText)
    }

    /// The templates' text, by name (`head`, `foot` and `stationCard` are partials of the others).
    static let sources: [String: String] = [
        "head": """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>{{title}} · vault receive</title>
        <link rel="stylesheet" href="/ui/style.css">
        </head>
        <body>
        <header>
        <span class="brand">vault receive</span>
        {{#signedIn}}
        <nav><a href="/ui/">Stations</a><a href="/ui/documents">Documents</a><a href="/ui/batches">Batches</a>
        <a href="/ui/alerts">Alerts</a></nav>
        <form method="post" action="/ui/logout" class="logout">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <span class="who">{{operatorName}}</span>
        <button type="submit" id="logout">Sign out</button>
        </form>
        {{/signedIn}}
        </header>
        <main>
        <h1>{{title}}</h1>

        """,
        "foot": """
        </main>
        </body>
        </html>

        """,
        "login": """
        {{> head}}
        {{#message}}<p class="error" id="message">{{message}}</p>{{/message}}
        {{#noOperators}}<p class="note">No operator can sign in yet: add one with
        <code>vault receive operator add NAME</code>.</p>{{/noOperators}}
        <form method="post" action="/ui/login" class="login">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <label>Name <input name="name" id="name" autocomplete="username" required></label>
        <label>Password <input name="password" id="password" type="password"
          autocomplete="current-password" required></label>
        <button type="submit" id="signin">Sign in</button>
        </form>
        {{> foot}}
        """,
        "stationCard": """
        <section class="card station" id="station-{{name}}">
        <h2><a href="/ui/stations/{{name}}">{{name}}</a></h2>
        {{#alerts}}<p class="alert">Rollback alert {{time}}: {{reason}}, sent {{head}}
        where {{knownHead}} was known.</p>{{/alerts}}
        <dl>
        <dt>Last seen</dt><dd>{{lastSeen}}</dd>
        {{#refused}}<dt>Refused</dt><dd class="refused">{{refused}}</dd>{{/refused}}
        <dt>Batches</dt><dd class="batches">{{batches}}</dd>
        <dt>Documents</dt><dd>{{documents}}</dd>
        <dt>Received</dt><dd>{{bytes}}</dd>
        <dt>History head</dt><dd><code>{{head}}</code></dd>
        </dl>
        </section>
        """,
        "stations": """
        {{> head}}
        {{#removedTokens}}<p class="alert">The token of removed station {{name}} was used {{time}}:
        it was refused.</p>{{/removedTokens}}
        {{^stations}}<p class="note">No stations yet: add one with
        <code>vault receive station add NAME</code>.</p>{{/stations}}
        {{#stations}}
        {{> stationCard}}
        {{/stations}}
        {{> foot}}
        """,
        "batches": """
        {{> head}}
        {{^batches}}<p class="note">No batches yet.</p>{{/batches}}
        {{#archive}}<p><a href="{{archive}}" class="button" id="archive">Download as a zip</a></p>{{/archive}}
        {{#batches}}
        <section class="card batch">
        <h2><a href="/ui/batches/{{position}}">{{time}} · {{station}}</a></h2>
        <p>{{count}}, {{bytes}}, by {{wire}}{{#sealed}}, sealed{{/sealed}}; receipt signed <code>{{signature}}</code>
        (batch <code>{{key}}</code>)</p>
        <ul>
        {{#documents}}<li><a href="/ui/documents/{{id}}" class="document">{{name}}</a> ({{size}})</li>{{/documents}}
        </ul>
        </section>
        {{/batches}}
        {{#paged}}<nav class="pages">{{#previous}}<a href="{{previous}}" id="previous">Newer</a>{{/previous}}
        <span>Page {{page}} of {{pages}} ({{total}} batches)</span>
        {{#next}}<a href="{{next}}" id="next">Older</a>{{/next}}</nav>{{/paged}}
        {{> foot}}
        """,
        "documents": """
        {{> head}}
        <form method="get" action="/ui/documents" class="filters card">
        <label>Name or folder <input name="q" id="q" value="{{q}}"></label>
        <label>Station <select name="station" id="station"><option value="">any</option>
        {{#stationOptions}}<option value="{{name}}"{{#selected}} selected{{/selected}}>{{name}}</option>
        {{/stationOptions}}</select></label>
        <label>Tag <input name="tag" id="tag" value="{{tag}}"></label>
        <label>Received from <input type="date" name="from" id="from" value="{{from}}"></label>
        <label>to <input type="date" name="to" id="to" value="{{to}}"></label>
        <label>Sealed <select name="sealed" id="sealed">
        {{#sealedOptions}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>
        {{/sealedOptions}}</select></label>
        <button type="submit" id="filter">Filter</button>
        </form>
        <p><span id="count">{{count}}</span> ·
        <a href="{{archive}}" class="button" id="archive">Download all as a zip</a></p>
        {{^documents}}<p class="note">No documents match.</p>{{/documents}}
        <form method="get" action="/ui/archive" id="selection">
        <ul class="documents">
        {{#documents}}<li class="card row"><label><input type="checkbox" name="id" value="{{id}}"></label>
        <div><a href="/ui/documents/{{id}}" class="document">{{name}}</a>
        <p class="meta">{{size}}{{#type}} · {{type}}{{/type}} · {{station}} · {{received}}
        {{#sealed}} · sealed{{/sealed}}
        · <a href="/ui/batches/{{batch}}">batch {{batch}}</a>
        {{#present}}· <a href="/ui/documents/{{id}}/download" class="download">download</a>{{/present}}
        {{^present}}· removed{{/present}}</p></div></li>
        {{/documents}}
        </ul>
        <button type="submit" id="archive-selected">Download the ticked as a zip</button>
        </form>
        <nav class="pages">{{#first}}<a href="{{first}}" id="first">Newest</a>{{/first}}
        {{#previous}}<a href="{{previous}}" id="previous">Newer</a>{{/previous}}
        <span id="page">Page {{page}} of {{pages}}</span>
        {{#next}}<a href="{{next}}" id="next">Older</a>{{/next}}
        {{#last}}<a href="{{last}}" id="last">Oldest</a>{{/last}}</nav>
        {{> foot}}
        """,
        "alerts": """
        {{> head}}
        {{^open}}<p class="note" id="no-alerts">No open alerts.</p>{{/open}}
        {{#open}}
        <section class="card notice" id="alert-{{number}}">
        <h2>{{station}}: {{kind}}</h2>
        <p class="alert">{{time}}: {{detail}}</p>
        <form method="post" action="/ui/alerts/acknowledge">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <input type="hidden" name="alert" value="{{number}}">
        <button type="submit" class="acknowledge" id="acknowledge-{{number}}">Acknowledge</button>
        </form>
        </section>
        {{/open}}
        {{#anyAcknowledged}}<h2>Acknowledged</h2>
        <ul class="acknowledged">
        {{#acknowledged}}<li>{{time}} · {{station}}: {{detail}}; acknowledged by {{by}} {{when}}</li>
        {{/acknowledged}}
        </ul>{{/anyAcknowledged}}
        {{> foot}}
        """,
        "station": """
        {{> head}}
        {{#station}}
        {{> stationCard}}
        {{/station}}
        <p><a href="{{documents}}" class="button" id="documents">Its documents</a></p>
        <h2>Newest batches</h2>
        {{^batches}}<p class="note">No batches yet.</p>{{/batches}}
        <ul>
        {{#batches}}<li><a href="/ui/batches/{{n}}">{{time}}</a>: {{count}}, {{bytes}}</li>{{/batches}}
        </ul>
        {{> foot}}
        """,
        "document": """
        {{> head}}
        <dl class="card">
        <dt>Id</dt><dd><code>{{id}}</code></dd>
        <dt>Content type</dt><dd>{{contentType}}</dd>
        {{^captured}}<dt>Size</dt><dd>{{size}} ({{sizeBytes}} bytes)</dd>
        <dt>SHA-256</dt><dd><code>{{sha256}}</code></dd>{{/captured}}
        {{#captured}}<dt>Sealed files</dt><dd>{{size}} ({{sizeBytes}} bytes) with its sealed metadata; the .age file
        alone is {{dataBytes}} bytes</dd>
        <dt>SHA-256 of the pair</dt><dd><code>{{sha256}}</code> (docs/FORMAT.md, "Capture-only stations")</dd>
        {{/captured}}
        {{#tags}}<dt>Tags</dt><dd>{{tags}}</dd>{{/tags}}
        {{#received}}<dt>Received</dt>
        <dd>{{time}} from {{station}} (batch <code>{{key}}</code>){{#sealed}}, sealed{{/sealed}}</dd>
        {{#stationID}}<dt>Station's id</dt><dd><code>{{stationID}}</code></dd>{{/stationID}}{{/received}}
        {{#downloaded}}<dt>Downloaded</dt><dd><ul class="downloads">
        {{#downloads}}<li>{{time}} by {{operatorName}} from {{address}} ({{via}})</li>{{/downloads}}
        </ul></dd>{{/downloaded}}
        </dl>
        {{#captured}}<p id="captured">This document came from a capture-only station and is kept as it was
        sealed there: nothing here opens it. The sealed file, <code>{{id}}.age</code>, is an age file: where the
        office's identity is, age opens it as it is, and vault's get, given the identity, writes it under the name
        and with the tags it was captured with (docs/RECEIVE.md, "What came captured").</p>
        <p><a href="/ui/documents/{{id}}/download" id="download" class="button">Download the sealed file (.age)</a>
        <a href="/ui/documents/{{id}}/metadata" id="metadata">its sealed metadata (.meta.age)</a></p>
        {{/captured}}{{^captured}}<p><a href="/ui/documents/{{id}}/download" id="download" class="button">Download</a>
        </p>
        {{/captured}}
        {{> foot}}
        """,
        "problem": """
        {{> head}}
        <p class="error">{{message}}</p>
        {{> foot}}
        """
    ]

    /// The style sheet: one column, readable on a phone (tables are avoided; long digests wrap).
    static let css = """
        *{box-sizing:border-box}
        body{margin:0;font:16px/1.45 system-ui,sans-serif;color:#1b1f24;background:#f6f7f9}
        header{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center;padding:.6rem 1rem;
        background:#1b1f24;color:#fff}
        header a{color:#fff;margin-right:1rem}
        .brand{font-weight:600}
        .logout{margin-left:auto;display:flex;gap:.5rem;align-items:center}
        main{max-width:48rem;margin:0 auto;padding:1rem}
        h1{font-size:1.4rem}
        h2{font-size:1.1rem;margin:.2rem 0 .5rem}
        .card{background:#fff;border:1px solid #d8dde3;border-radius:6px;padding:.8rem 1rem;margin:0 0 1rem}
        dl{display:grid;grid-template-columns:minmax(6rem,auto) 1fr;gap:.2rem 1rem;margin:0}
        dt{color:#57606a}
        dd{margin:0;min-width:0}
        code,dd,li,p,h2{overflow-wrap:anywhere}
        .alert,.error{background:#ffebe9;border:1px solid #ff8182;border-radius:6px;padding:.5rem .8rem}
        .note{color:#57606a}
        .login{display:grid;gap:.8rem;max-width:22rem}
        .login label{display:grid;gap:.2rem}
        input,select,button,.button{font:inherit;padding:.45rem .6rem;border-radius:6px;border:1px solid #8c959f}
        button,.button{background:#0969da;color:#fff;border-color:#0969da;text-decoration:none;cursor:pointer}
        .filters{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:end}
        .filters label{display:grid;gap:.2rem}
        .documents{list-style:none;padding:0}
        .row{display:flex;gap:.6rem;align-items:start;padding:.5rem .8rem;margin:0 0 .4rem}
        .meta{margin:.1rem 0 0;color:#57606a;font-size:.9rem}
        .pages{display:flex;flex-wrap:wrap;gap:1rem;margin:1rem 0}

        """
}

/// HTML escaping by Unicode scalar. swift-mustache's HTML escaping (the pages' renderer before
/// ``PageTemplate``) looks characters up
/// one `Character` (grapheme cluster) at a time, so a `"` followed by a combining mark (one
/// cluster) passes unescaped and can end an attribute; a document's name comes from a station
/// and may hold anything. Here every `<`, `>`, `&`, `"` and `'` is escaped whatever follows
/// it, and control and bidirectional-override characters (which could make a name read as
/// another) are shown as U+FFFD.
struct ScalarHTMLEscaping {
    func escapeText(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for s in text.unicodeScalars {
            switch s {
            case "<": out.append(contentsOf: "&lt;".unicodeScalars)
            case ">": out.append(contentsOf: "&gt;".unicodeScalars)
            case "&": out.append(contentsOf: "&amp;".unicodeScalars)
            case "\"": out.append(contentsOf: "&quot;".unicodeScalars)
            case "'": out.append(contentsOf: "&#39;".unicodeScalars)
            default:
                switch s.value {
                case 0x00...0x1F, 0x7F...0x9F, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069:
                    out.append("\u{FFFD}")
                default: out.append(s)
                }
            }
        }
        return String(out)
    }
}

/// Times as the pages show them (sizes: ``ByteSize``).
enum Shown {
    static func time(millis: Int64?) -> String {
        guard let millis else { return "never" }
        return UTCTime(millis: millis).readable
    }
}
