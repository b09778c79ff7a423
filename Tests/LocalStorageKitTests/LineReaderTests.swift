import Foundation
import LocalStorageTestSupport
import Testing

@_spi(Maintenance) @_spi(Testing) @testable import LocalStorageKit

/// The import's line reader against a plain split of the file, on random files whose lines span the reader's
/// chunks (a line is searched for its break once, not from its start again with every chunk).
@Suite struct LineReaderTests {
    @Test(arguments: 1...40)
    func linesAreTheFilesSplitAtLineBreaks(seed: UInt64) throws {
        var generator = SplitMix64(seed: seed)
        let chunkSize = [1, 2, 7, 64].randomElement(using: &generator) ?? 1
        var bytes: [UInt8] = []
        for _ in 0..<Int.random(in: 1...12, using: &generator) {
            let length = [0, 1, 7, chunkSize - 1, chunkSize, chunkSize + 1, 5 * chunkSize + 3].randomElement(
                using: &generator)
            bytes += repeatElement(UInt8.random(in: 32...126, using: &generator), count: length ?? 0)
            bytes += Bool.random(using: &generator) ? [10] : [13, 10]
        }
        if Bool.random(using: &generator) { bytes.removeLast() }  // The last line without its break, or a lone \r.
        let url = temporaryDirectory().appendingPathComponent("lines.jsonl")
        try Data(bytes).write(to: url)

        // A line break is \n or \r\n; a last line without one keeps its bytes (a lone \r among them).
        var expected = bytes.split(separator: 10, omittingEmptySubsequences: false)
        if bytes.isEmpty || bytes.last == 10 { expected.removeLast() }
        for index in expected.indices where index < expected.count - 1 || bytes.last == 10 {
            if expected[index].last == 13 { expected[index] = expected[index].dropLast() }
        }
        var reader = try LineReader(url: url, chunkSize: chunkSize)
        defer { reader.close() }
        var lines: [ArraySlice<UInt8>] = []
        while let line = try reader.nextLine() { lines.append(line) }
        #expect(lines.count == expected.count)
        let differing = zip(lines, expected).enumerated().filter { !$0.element.0.elementsEqual($0.element.1) }
        #expect(differing.isEmpty, "lines \(differing.map { $0.offset + 1 }) differ")
        #expect(reader.bytesRead == bytes.count)
    }
}
