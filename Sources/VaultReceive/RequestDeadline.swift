import NIOCore
import NIOHTTPTypes

/// Bounds the time a client may hold a connection without sending what it must:
/// - the next request head must arrive in time, counted from the connection's start and from
///   the end of each answer (slow headers, slow-loris);
/// - a request that carries no batch (a sign-in form, a page, `/healthz`: anything but
///   `/batches` and `/files`) must arrive whole within ``smallRequest`` of its head: the idle
///   timeout alone let a body of 8 KiB sent one byte at a time hold a connection for hours, and
///   256 of them shut every station out. A batch's body is paced by the receiver instead (a
///   minimum rate after a grace period, ``Receiver/Limits``), once its sender authenticated;
/// - an answer written before its request ended (a refusal: no token, too large, a tus chunk
///   past its upload's end) closes the connection once it is sent: a refused body is not read
///   on, and nothing pipelined after it is answered;
/// - so does a refusal of the sender itself (401, 413, 429), and any answer that says
///   `Connection: close` (every refusal of a batch or a tus request), even when its request had
///   ended: a request pipelined behind it in the same packet is not answered.
///
/// Written by hand: Hummingbird bounds idle time and header sizes, not the time a request takes,
/// and reads a refused body to its end to keep the connection.
final class RequestDeadline: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let timeout: TimeAmount
    private let smallRequest: TimeAmount
    private var timer: Scheduled<Void>?
    /// A request's head was read and its end not yet.
    private var requestOpen = false
    /// The answer being written refuses its sender: the connection closes once it is sent.
    private var refusesSender = false

    /// Answers after which a connection is not used again: no token (or a wrong one), a body
    /// too large, too many failed tries.
    static let closingStatuses: Set<Int> = [401, 413, 429]

    /// - Parameters:
    ///   - timeout: for a request's head.
    ///   - smallRequest: for the whole of a request that is not a batch's.
    init(timeout: TimeAmount, smallRequest: TimeAmount) {
        self.timeout = timeout
        self.smallRequest = smallRequest
    }

    func handlerAdded(context: ChannelHandlerContext) { arm(context, timeout) }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    /// Paths whose bodies are batches, paced by the receiver rather than bounded here.
    static func carriesBatch(_ path: String?) -> Bool {
        guard let path else { return false }
        return path == "/batches" || path.hasPrefix("/batches?") || path == "/files" || path.hasPrefix("/files/")
            || path.hasPrefix("/files?")
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            requestOpen = true
            timer?.cancel()
            timer = nil
            if !Self.carriesBatch(request.path) { arm(context, smallRequest) }
        case .end:
            requestOpen = false
            timer?.cancel()
            timer = nil
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let part = unwrapOutboundIn(data)
        if case .head(let response) = part {
            refusesSender =
                Self.closingStatuses.contains(response.status.code)
                || response.headerFields[.connection]?.lowercased().contains("close") == true
        }
        guard case .end = part else {
            context.write(data, promise: promise)
            return
        }
        guard requestOpen || refusesSender else {
            arm(context, timeout)
            context.write(data, promise: promise)
            return
        }
        // Answered before the request ended (a refusal: its body is not read on), or a refusal
        // of the sender: nothing more is read or answered on this connection.
        timer?.cancel()
        timer = nil
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let sent = promise ?? context.eventLoop.makePromise()
        sent.futureResult.whenComplete { _ in bound.value.close(promise: nil) }
        context.write(data, promise: sent)
        context.flush()
    }

    private func arm(_ context: ChannelHandlerContext, _ after: TimeAmount) {
        timer?.cancel()
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: after) { bound.value.close(promise: nil) }
    }
}
