import Synchronization

/// A counter that only goes up. Lock-free: one atomic add per increment.
public final class Counter: Sendable {
    private let storage = Atomic<Int>(0)

    public init() {}

    @inline(__always)
    public func increment(by amount: Int = 1) {
        self.storage.wrappingAdd(amount, ordering: .relaxed)
    }

    public var value: Int { self.storage.load(ordering: .relaxed) }
}

/// A histogram with fixed upper bounds (Prometheus `le` buckets, non-cumulative inside,
/// cumulated when exposed).
public final class Histogram: Sendable {
    /// Upper bounds, ascending; `+Inf` is implicit.
    public let bounds: [Double]
    private let state: Mutex<(counts: [Int], sum: Double, count: Int)>

    /// Latency buckets in seconds, from 100 µs to 10 s.
    public static let defaultLatencyBuckets: [Double] = [
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]

    /// The `le` label value of each bucket, `+Inf` last: formatted once, written on every scrape.
    let boundLabels: [String]

    public init(bounds: [Double] = Histogram.defaultLatencyBuckets) {
        self.bounds = bounds.sorted()
        self.boundLabels = self.bounds.map(MetricsRegistry.format) + ["+Inf"]
        self.state = Mutex((Array(repeating: 0, count: bounds.count + 1), 0, 0))
    }

    public func observe(_ value: Double) {
        // Linear scan: ~16 bounds, cheaper than anything cleverer at this size.
        var index = self.bounds.count
        for (i, bound) in self.bounds.enumerated() where value <= bound {
            index = i
            break
        }
        self.state.withLock { state in
            state.counts[index] += 1
            state.sum += value
            state.count += 1
        }
    }

    /// Cumulative counts per bound (last entry is `+Inf` = total), the sum and the count.
    public func snapshot() -> (cumulative: [Int], sum: Double, count: Int) {
        let (counts, sum, count) = self.state.withLock { ($0.counts, $0.sum, $0.count) }
        var running = 0
        return (counts.map { running += $0; return running }, sum, count)
    }
}

/// Named metric families with labelled series, rendered as Prometheus text
/// exposition format 0.0.4.
///
/// Registration takes a lock and a dictionary lookup; hot paths keep the returned
/// `Counter`/`Histogram` and touch only that. Asking again for the same name and
/// labels returns the same series.
public final class MetricsRegistry: Sendable {
    /// The `Content-Type` of `exposition()`.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    public typealias Labels = [(name: String, value: String)]

    enum Kind: String { case counter, gauge, histogram }

    enum Series {
        case counter(Counter)
        case histogram(Histogram)
        case gauge(@Sendable () -> Double)
    }

    struct Family {
        var name: String
        var help: String
        var kind: Kind
        var series: [Entry]
    }

    /// A series with its labels rendered once, at registration: a scrape then only appends text
    /// (rendering each bucket line's labels anew made a 2000-line scrape take milliseconds).
    struct Entry {
        var key: String
        var series: Series
        /// `a="1",b="2"`: the labels inside their braces, escaped ("" without labels).
        var renderedLabels: String

        init(labels: Labels, key: String, series: Series) {
            self.key = key
            self.series = series
            self.renderedLabels = MetricsRegistry.renderInner(labels)
        }
    }

    private struct State {
        var families: [Family] = []
        var index: [String: Int] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// The counter `name{labels}`, created on first use.
    public func counter(_ name: String, help: String, labels: Labels = []) -> Counter {
        let series = self.register(name, help: help, kind: .counter, labels: labels) { .counter(Counter()) }
        if case .counter(let counter) = series { return counter }
        // The name is already a different kind: hand back a detached series rather than crash.
        return Counter()
    }

    /// The histogram `name{labels}`, created on first use with `bounds`.
    public func histogram(_ name: String, help: String, labels: Labels = [], bounds: [Double] = Histogram.defaultLatencyBuckets) -> Histogram {
        let series = self.register(name, help: help, kind: .histogram, labels: labels) { .histogram(Histogram(bounds: bounds)) }
        if case .histogram(let histogram) = series { return histogram }
        return Histogram(bounds: bounds)
    }

    /// A gauge whose value is read from `read` at exposition time; registering the same
    /// name and labels again replaces the closure.
    public func gauge(_ name: String, help: String, labels: Labels = [], _ read: @escaping @Sendable () -> Double) {
        let key = Self.seriesKey(labels)
        self.state.withLock { state in
            if let f = state.index[name] {
                guard state.families[f].kind == .gauge else { return }
                if let s = state.families[f].series.firstIndex(where: { $0.key == key }) {
                    state.families[f].series[s].series = .gauge(read)
                } else {
                    state.families[f].series.append(Entry(labels: labels, key: key, series: .gauge(read)))
                }
            } else {
                state.index[name] = state.families.count
                state.families.append(Family(name: name, help: help, kind: .gauge, series: [Entry(labels: labels, key: key, series: .gauge(read))]))
            }
        }
    }

    private func register(_ name: String, help: String, kind: Kind, labels: Labels, make: () -> Series) -> Series {
        let key = Self.seriesKey(labels)
        return self.state.withLock { state in
            if let f = state.index[name] {
                if let existing = state.families[f].series.first(where: { $0.key == key }) { return existing.series }
                guard state.families[f].kind == kind else { return make() }
                let series = make()
                state.families[f].series.append(Entry(labels: labels, key: key, series: series))
                return series
            }
            let series = make()
            state.index[name] = state.families.count
            state.families.append(Family(name: name, help: help, kind: kind, series: [Entry(labels: labels, key: key, series: series)]))
            return series
        }
    }

    private static func seriesKey(_ labels: Labels) -> String {
        labels.map { $0.name + "\u{0}" + $0.value }.joined(separator: "\u{1}")
    }

    /// All families in registration order, series in registration order.
    public func exposition() -> String {
        let families = self.state.withLock { $0.families }
        var out = ""
        out.reserveCapacity(families.reduce(4096) { $0 + $1.series.count * 64 })
        for family in families {
            out += "# HELP " + family.name + " " + Self.escapeHelp(family.help) + "\n"
            out += "# TYPE " + family.name + " " + family.kind.rawValue + "\n"
            for entry in family.series {
                let labels = entry.renderedLabels
                switch entry.series {
                case .counter(let counter):
                    Self.appendSample(&out, family.name, "", labels, String(counter.value))
                case .gauge(let read):
                    Self.appendSample(&out, family.name, "", labels, Self.format(read()))
                case .histogram(let histogram):
                    let snapshot = histogram.snapshot()
                    let bucketLabels = labels.isEmpty ? "le=\"" : labels + ",le=\""
                    for (i, bound) in histogram.boundLabels.enumerated() {
                        out += family.name
                        out += "_bucket{"
                        out += bucketLabels
                        out += bound
                        out += "\"} "
                        out += String(snapshot.cumulative[i])
                        out += "\n"
                    }
                    Self.appendSample(&out, family.name, "_sum", labels, Self.format(snapshot.sum))
                    Self.appendSample(&out, family.name, "_count", labels, String(snapshot.count))
                }
            }
        }
        return out
    }

    /// `name` + `suffix`, the labels in braces (none without), a space, `value`, a line feed.
    private static func appendSample(_ out: inout String, _ name: String, _ suffix: String, _ labels: String, _ value: String) {
        out += name
        out += suffix
        if !labels.isEmpty {
            out += "{"
            out += labels
            out += "}"
        }
        out += " "
        out += value
        out += "\n"
    }

    /// `a="1",b="2"`: the labels without their braces.
    static func renderInner(_ labels: Labels) -> String {
        labels.map { $0.name + "=\"" + escapeLabelValue($0.value) + "\"" }.joined(separator: ",")
    }

    /// Label values escape backslash, double quote and line feed (format 0.0.4).
    static func escapeLabelValue(_ value: String) -> String { Self.escaped(value, Self.labelValueEscapes) }
    private static let labelValueEscapes: [Unicode.Scalar: String] = ["\\": "\\\\", "\"": "\\\"", "\n": "\\n"]

    /// HELP text escapes backslash and line feed only.
    static func escapeHelp(_ help: String) -> String { Self.escaped(help, Self.helpEscapes) }
    private static let helpEscapes: [Unicode.Scalar: String] = ["\\": "\\\\", "\n": "\\n"]

    /// `text` with each scalar that `escapes` names replaced by its escape; as it is when none.
    private static func escaped(_ text: String, _ escapes: [Unicode.Scalar: String]) -> String {
        guard text.unicodeScalars.contains(where: { escapes[$0] != nil }) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if let escape = escapes[scalar] { out += escape } else { out.unicodeScalars.append(scalar) }
        }
        return out
    }

    /// Sample values: integers without a fraction, `+Inf`/`-Inf`/`NaN` as the format spells them.
    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value == .infinity { return "+Inf" }
        if value == -.infinity { return "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
