import Foundation

/// One sample of a soak: what serve looked like over the last interval.
struct SoakSample: Sendable, Hashable {
    /// Seconds since the soak's steady state began (every device following, tokened, the match live).
    var elapsed: Double
    /// serve's resident memory at the sample, bytes.
    var rss: Int
    /// serve's open file descriptors at the sample.
    var openFiles: Int
    /// serve's CPU over the interval, percent of one core; nil where unknown.
    var cpuPercent: Double?
    /// `matchcast_outbox_deliveries` at the sample: deliveries saved and not yet sent.
    var outboxDepth: Double?
    /// Feed changes shown in the interval.
    var changes: Int
    /// Deliveries read in the interval.
    var deliveries: Int
    /// Change→delivery over the interval's updates (median, 99th percentile, worst); nil when none came.
    var latencyP50: Duration?
    var latencyP99: Duration?
    var latencyMax: Duration?
}

/// The soak's samples as a CSV file and an SVG plot, and the figure it is judged by: resident memory growth over
/// the samples after the warm-up.
enum SoakReport {
    static let csvHeader =
        "elapsed_s,rss_mb,open_fds,cpu_percent,outbox_depth,changes,deliveries,latency_p50_ms,latency_p99_ms,latency_max_ms"

    static func csv(_ samples: [SoakSample]) -> String {
        ([csvHeader] + samples.map(csvRow)).joined(separator: "\n") + "\n"
    }

    /// One sample as a CSV line (no line end).
    static func csvRow(_ sample: SoakSample) -> String {
        let ms = { (value: Duration?) in value.map { String(format: "%.1f", $0.seconds * 1000) } ?? "" }
        return [
            String(format: "%.0f", sample.elapsed), String(format: "%.1f", Double(sample.rss) / 1_048_576),
            "\(sample.openFiles)", sample.cpuPercent.map { String(format: "%.1f", $0) } ?? "",
            sample.outboxDepth.map { String(format: "%.0f", $0) } ?? "", "\(sample.changes)", "\(sample.deliveries)",
            ms(sample.latencyP50), ms(sample.latencyP99), ms(sample.latencyMax),
        ].joined(separator: ",")
    }

    /// Resident memory growth from the first sample at or after `warmUp` to the last, as a fraction of the first;
    /// nil when there are fewer than two such samples.
    static func rssGrowth(_ samples: [SoakSample], after warmUp: Double) -> (from: SoakSample, to: SoakSample, growth: Double)? {
        let steady = samples.filter { $0.elapsed >= warmUp }
        guard steady.count >= 2, let first = steady.first, let last = steady.last, first.rss > 0 else { return nil }
        return (first, last, Double(last.rss - first.rss) / Double(first.rss))
    }

    /// Two panels over elapsed minutes: serve's resident memory (MB), and change→delivery latency (p50, p99, ms).
    static func svg(_ samples: [SoakSample], title: String) -> String {
        let width = 760.0, panelHeight = 220.0, left = 70.0, right = 20.0, top = 40.0, gap = 60.0
        let plotWidth = width - left - right
        let height = top + 2 * panelHeight + gap + 50
        let maxMinutes = max(samples.map { $0.elapsed / 60 }.max() ?? 1, 1e-9)
        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(left)" y="20" font-size="14">\(escape(title))</text>

            """
        func panel(_ index: Int, label: String, series: [(name: String, color: String, values: [Double?])]) {
            let y0 = top + Double(index) * (panelHeight + gap)
            let all = series.flatMap { $0.values.compactMap { $0 } }
            let maxValue = niceCeiling(all.max() ?? 1)
            out += "<text x=\"\(left)\" y=\"\(y0 - 8)\">\(escape(label))</text>\n"
            out += "<rect x=\"\(left)\" y=\"\(y0)\" width=\"\(plotWidth)\" height=\"\(panelHeight)\" fill=\"none\" stroke=\"#888\"/>\n"
            for tick in 0...4 {
                let value = maxValue * Double(tick) / 4
                let y = y0 + panelHeight - panelHeight * Double(tick) / 4
                out += "<line x1=\"\(left)\" y1=\"\(f(y))\" x2=\"\(left + plotWidth)\" y2=\"\(f(y))\" stroke=\"#eee\"/>\n"
                out += "<text x=\"\(left - 6)\" y=\"\(f(y + 4))\" text-anchor=\"end\">\(String(format: "%g", value))</text>\n"
            }
            for tick in 0...6 {
                let minutes = maxMinutes * Double(tick) / 6
                let x = left + plotWidth * Double(tick) / 6
                out += "<text x=\"\(f(x))\" y=\"\(f(y0 + panelHeight + 16))\" text-anchor=\"middle\">"
                    + String(format: "%.0f", minutes) + "</text>\n"
            }
            for (offset, line) in series.enumerated() {
                let points = zip(samples, line.values).compactMap { sample, value -> String? in
                    guard let value else { return nil }
                    let x = left + plotWidth * (sample.elapsed / 60) / maxMinutes
                    let y = y0 + panelHeight - panelHeight * value / maxValue
                    return "\(f(x)),\(f(y))"
                }
                if !points.isEmpty {
                    out += "<polyline fill=\"none\" stroke=\"\(line.color)\" stroke-width=\"2\" points=\"\(points.joined(separator: " "))\"/>\n"
                }
                let legendX = left + plotWidth - 140
                let legendY = y0 + 16 + Double(offset) * 16
                out += "<line x1=\"\(f(legendX))\" y1=\"\(f(legendY - 4))\" x2=\"\(f(legendX + 20))\" y2=\"\(f(legendY - 4))\" "
                    + "stroke=\"\(line.color)\" stroke-width=\"2\"/>\n"
                out += "<text x=\"\(f(legendX + 26))\" y=\"\(f(legendY))\">\(escape(line.name))</text>\n"
            }
        }
        panel(0, label: "serve's resident memory, MB", series: [
            ("RSS", "#1f77b4", samples.map { Double($0.rss) / 1_048_576 }),
        ])
        panel(1, label: "feed change → delivery, ms", series: [
            ("p50", "#2ca02c", samples.map { $0.latencyP50.map { $0.seconds * 1000 } }),
            ("p99", "#d62728", samples.map { $0.latencyP99.map { $0.seconds * 1000 } }),
        ])
        out += "<text x=\"\(f(left + plotWidth / 2))\" y=\"\(f(height - 12))\" text-anchor=\"middle\">minutes</text>\n"
        out += "</svg>\n"
        return out
    }

    /// 1, 2 or 5 times a power of ten, at least `value` (and above zero).
    static func niceCeiling(_ value: Double) -> Double {
        guard value > 0, value.isFinite else { return 1 }
        let power = pow(10, floor(log10(value)))
        for step in [1.0, 2, 5, 10] where step * power >= value { return step * power }
        return 10 * power
    }

    private static func f(_ value: Double) -> String { String(format: "%.1f", value) }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
