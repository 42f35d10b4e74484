import Synchronization
import Testing

@testable import ConcordObservability

/// 2026-11-23T08:45:40.123Z
private let fixedTime: Int64 = 1_795_423_540_123_456_789

private let lineCases: [(name: String, level: LogLevel, message: String, metadata: LogMetadata, expected: String)] = [
    ("plain", .info, "listening", [:],
     #"{"ts":"2026-11-23T08:45:40.123Z","level":"info","msg":"listening"}"#),
    ("metadataInOrderWithTypes", .notice, "request", ["route": "/health", "status": 200, "ok": true, "ratio": 0.5],
     #"{"ts":"2026-11-23T08:45:40.123Z","level":"notice","msg":"request","route":"/health","status":200,"ok":true,"ratio":0.5}"#),
    ("escapesQuotesBackslashesAndControls", .error, "bad \"x\"\\\n\t\u{1}", ["k\"": "v\n"],
     #"{"ts":"2026-11-23T08:45:40.123Z","level":"error","msg":"bad \"x\"\\\n\t\u0001","k\"":"v\n"}"#),
    ("reservedKeysAreNotDuplicated", .warning, "m", ["msg": "other", "level": "x", "a": 1],
     #"{"ts":"2026-11-23T08:45:40.123Z","level":"warning","msg":"m","a":1}"#),
    ("nonFiniteDoublesStayValidJSON", .debug, "d", ["v": .double(.nan)],
     #"{"ts":"2026-11-23T08:45:40.123Z","level":"debug","msg":"d","v":"nan"}"#),
    ("unicodePassesThrough", .trace, "café ✓", [:],
     #"{"ts":"2026-11-23T08:45:40.123Z","level":"trace","msg":"café ✓"}"#),
]

@Test(arguments: lineCases.indices)
func logLineIsOneJSONObjectPerLine(_ index: Int) {
    let c = lineCases[index]
    let line = LogLine.render(epochNanoseconds: fixedTime, level: c.level, message: c.message, metadata: c.metadata)
    #expect(String(decoding: line, as: UTF8.self) == c.expected + "\n", "\(c.name)")
}

/// Collects what the sink writes, and how many writes it took.
private final class Capture: Sendable {
    let state = Mutex<(text: String, writes: Int)>(("", 0))
    var output: LogSink.Output {
        { bytes in self.state.withLock { $0.text += String(decoding: bytes, as: UTF8.self); $0.writes += 1 } }
    }
}

@Test func disabledLevelsDoNotEvaluateTheMessage() {
    let capture = Capture()
    let logger = Logger(level: .warning, sink: LogSink(flushInterval: 0, output: capture.output))
    let evaluated = Mutex(0)
    func expensive() -> String { evaluated.withLock { $0 += 1 }; return "x" }
    logger.debug(expensive())
    logger.info(expensive(), metadata: ["k": .string(expensive())])
    logger.warning(expensive())
    logger.sink.flush()
    #expect(evaluated.withLock { $0 } == 1)
    #expect(capture.state.withLock { $0.text }.split(separator: "\n").count == 1)
}

@Test func sinkBuffersLinesUntilFlush() {
    let capture = Capture()
    let sink = LogSink(flushInterval: 0, flushThreshold: 1 << 20, output: capture.output)
    var logger = Logger(level: .info, sink: sink)
    logger[metadataKey: "request"] = 7
    for i in 0..<100 { logger.info("line", metadata: ["i": .int(i)]) }
    #expect(capture.state.withLock { $0.writes } == 0)
    sink.flush()
    let (text, writes) = capture.state.withLock { ($0.text, $0.writes) }
    #expect(writes == 1)
    let lines = text.split(separator: "\n")
    #expect(lines.count == 100)
    #expect(lines[99].hasSuffix(#""msg":"line","request":7,"i":99}"#))
}

@Test func sinkFlushesWhenBufferPassesThreshold() {
    let capture = Capture()
    let sink = LogSink(flushInterval: 0, flushThreshold: 1000, output: capture.output)
    let logger = Logger(level: .info, sink: sink)
    for _ in 0..<50 { logger.info(String(repeating: "x", count: 100)) }
    // ~150 bytes a line: a write every ~7 lines, never one per line.
    let writes = capture.state.withLock { $0.writes }
    #expect(writes >= 5 && writes <= 10)
}

@Test func sinkTimerFlushesInTheBackground() async throws {
    let capture = Capture()
    let sink = LogSink(flushInterval: 0.02, output: capture.output)
    Logger(level: .info, sink: sink).info("tick")
    for _ in 0..<100 where capture.state.withLock({ $0.writes }) == 0 {
        try await Task.sleep(for: .milliseconds(10))
    }
    #expect(capture.state.withLock { $0.text }.contains(#""msg":"tick""#))
    sink.shutdown()
}

@Test func logLevelsParseByName() {
    #expect(LogLevel.allCases.map(\.name) == ["trace", "debug", "info", "notice", "warning", "error"])
    #expect(LogLevel(name: "WARNING") == .warning)
    #expect(LogLevel(name: "critical") == nil)
    #expect(LogLevel.debug < LogLevel.info)
}
