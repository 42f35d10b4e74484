import Testing

@testable import ConcordObservability

/// Each case registers some metrics on a fresh registry and expects this exact text.
private let expositionCases: [(name: String, build: @Sendable (MetricsRegistry) -> Void, expected: String)] = [
    ("emptyRegistry", { _ in }, ""),
    ("counterWithoutLabels", { r in r.counter("jobs_total", help: "Jobs done.").increment(by: 3) }, """
        # HELP jobs_total Jobs done.
        # TYPE jobs_total counter
        jobs_total 3

        """),
    ("counterSeriesShareOneHeader", { r in
        r.counter("req_total", help: "Requests.", labels: [("route", "/a"), ("status", "200")]).increment()
        r.counter("req_total", help: "Requests.", labels: [("route", "/b"), ("status", "404")]).increment(by: 2)
        // Asking again returns the same series.
        r.counter("req_total", help: "Requests.", labels: [("route", "/a"), ("status", "200")]).increment()
    }, """
        # HELP req_total Requests.
        # TYPE req_total counter
        req_total{route="/a",status="200"} 2
        req_total{route="/b",status="404"} 2

        """),
    ("labelValuesEscapeBackslashQuoteNewline", { r in
        r.counter("x_total", help: "Help with \\ and\nnewline.", labels: [("v", "a\"b\\c\nd")]).increment()
    }, """
        # HELP x_total Help with \\\\ and\\nnewline.
        # TYPE x_total counter
        x_total{v="a\\"b\\\\c\\nd"} 1

        """),
    ("gaugeReadsClosureAtExposition", { r in
        r.gauge("open", help: "Open things.") { 7 }
        r.gauge("ratio", help: "A ratio.", labels: [("k", "v")]) { 0.25 }
        r.gauge("never", help: "Infinite.") { .infinity }
    }, """
        # HELP open Open things.
        # TYPE open gauge
        open 7
        # HELP ratio A ratio.
        # TYPE ratio gauge
        ratio{k="v"} 0.25
        # HELP never Infinite.
        # TYPE never gauge
        never +Inf

        """),
    ("histogramBucketsAreCumulative", { r in
        let h = r.histogram("lat_seconds", help: "Latency.", labels: [("route", "/x")], bounds: [0.1, 1])
        h.observe(0.05)
        h.observe(0.1)   // a value on a bound falls in that bucket (le = less or equal)
        h.observe(0.5)
        h.observe(3)
    }, """
        # HELP lat_seconds Latency.
        # TYPE lat_seconds histogram
        lat_seconds_bucket{route="/x",le="0.1"} 2
        lat_seconds_bucket{route="/x",le="1"} 3
        lat_seconds_bucket{route="/x",le="+Inf"} 4
        lat_seconds_sum{route="/x"} 3.65
        lat_seconds_count{route="/x"} 4

        """),
    ("emptyHistogramWithoutLabels", { r in
        _ = r.histogram("h", help: "H.", bounds: [1])
    }, """
        # HELP h H.
        # TYPE h histogram
        h_bucket{le="1"} 0
        h_bucket{le="+Inf"} 0
        h_sum 0
        h_count 0

        """),
]

@Test(arguments: expositionCases.indices)
func metricsExpositionMatchesPrometheusTextFormat(_ index: Int) {
    let c = expositionCases[index]
    let registry = MetricsRegistry()
    c.build(registry)
    #expect(registry.exposition() == c.expected, "\(c.name)")
}

@Test func countersAreSafeUnderConcurrentIncrements() async {
    let registry = MetricsRegistry()
    let counter = registry.counter("n_total", help: "N.")
    let histogram = registry.histogram("d", help: "D.", bounds: [1])
    await withTaskGroup(of: Void.self) { group in
        for _ in 0..<8 {
            group.addTask {
                for _ in 0..<10_000 {
                    counter.increment()
                    histogram.observe(0.5)
                }
            }
        }
    }
    #expect(counter.value == 80_000)
    #expect(histogram.snapshot().count == 80_000)
    #expect(histogram.snapshot().cumulative == [80_000, 80_000])
}
