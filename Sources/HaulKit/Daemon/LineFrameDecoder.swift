import NIOCore

/// Splits a byte stream into lines (`\n`, or `\r\n`), each at most `maxLength` bytes.
struct LineFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    struct LineTooLong: Error {}

    let maxLength: Int
    /// How far the current line has been searched for a newline already.
    private var searched = 0

    init(maxLength: Int = JSONRPC.maxMessageBytes) { self.maxLength = maxLength }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        let view = buffer.readableBytesView
        guard let newline = view.dropFirst(searched).firstIndex(of: UInt8(ascii: "\n")) else {
            searched = view.count
            // One byte of slack for a `\r` before the newline.
            if view.count > maxLength + 1 { throw LineTooLong() }
            return .needMoreData
        }
        searched = 0
        var length = newline - view.startIndex
        guard var line = buffer.readSlice(length: length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 1)
        if line.readableBytesView.last == UInt8(ascii: "\r") {
            length -= 1
            line = line.getSlice(at: line.readerIndex, length: length) ?? line
        }
        guard length <= maxLength else { throw LineTooLong() }
        context.fireChannelRead(wrapInboundOut(line))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        // A last line without its newline is dropped: a message is complete only with it.
        while try decode(context: context, buffer: &buffer) == .continue {}
        return .needMoreData
    }
}
