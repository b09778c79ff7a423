/// Which codec wrote a payload.
enum PayloadFormat: UInt8, Sendable {
    case json = 1
    case binary = 2
}
