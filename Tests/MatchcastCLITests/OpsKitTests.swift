import Foundation
@testable import MatchcastCLI
import Testing
import Yams

/// Keeps `ops/` true to the code: the manifests parse, the alert rules name only metrics (and
/// labels) the sources export, the probes and ports agree with the configuration they ship, and
/// every configuration file under `ops/` has the keys of `Config/matchcast.yaml`.
@Suite("ops/: container, systemd, Kubernetes and Prometheus files agree with the code")
struct OpsKitTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static func text(_ path: String) throws -> String {
        try String(contentsOf: repository.appendingPathComponent(path), encoding: .utf8)
    }

    /// Every document of a YAML file; throws on the first that does not parse.
    static func documents(_ path: String) throws -> [Any] {
        var sequence = try Yams.load_all(yaml: try text(path))
        var documents: [Any] = []
        while let document = sequence.next() { documents.append(document) }
        if let error = sequence.error { throw error }
        return documents
    }

    static func mapping(_ path: String) throws -> [String: Any] {
        try #require(try documents(path).first as? [String: Any], "\(path) is not a YAML mapping")
    }

    /// Files under `folder` (relative to the repository) whose names end in one of `extensions`.
    static func files(under folder: String, extensions: Set<String>) throws -> [String] {
        let root = repository.appendingPathComponent(folder)
        let enumerator = try #require(FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil))
        var out: [String] = []
        for case let url as URL in enumerator where extensions.contains(url.pathExtension) {
            out.append(folder + "/" + url.path.dropFirst(root.path.count + 1))
        }
        return out.sorted()
    }

    /// Capture groups of every match of `pattern` in `text` (nil for a group that did not take part).
    static func captures(_ pattern: String, in text: String) throws -> [[String?]] {
        let regex = try NSRegularExpression(pattern: pattern, options: [.dotMatchesLineSeparators])
        let ns = text as NSString
        return regex.matches(in: text, range: NSRange(location: 0, length: ns.length)).map { match in
            (1..<match.numberOfRanges).map { index in
                let range = match.range(at: index)
                return range.location == NSNotFound ? nil : ns.substring(with: range)
            }
        }
    }

    // MARK: - Configuration files

    static let kubernetes = "ops/kubernetes"

    /// The broker configuration held by the ConfigMap.
    static func configMapConfig() throws -> String {
        let configMap = try mapping("\(kubernetes)/configmap.yaml")
        let data = try #require(configMap["data"] as? [String: Any])
        return try #require(data["matchcast.yaml"] as? String, "the ConfigMap has no matchcast.yaml")
    }

    static func port(ofConfig text: String) throws -> Int {
        let flat = try ConfigurationLoader.flatten(yaml: text)
        let port = try #require(flat["http.port"], "no http.port")
        return try #require(Int(port), "http.port is not a number")
    }

    @Test("Every YAML file under ops/ parses, the ConfigMap's embedded config too")
    func everyYAMLParses() throws {
        let paths = try Self.files(under: "ops", extensions: ["yaml", "yml"])
        for expected in ["ops/prometheus/alerts.yaml", "\(Self.kubernetes)/deployment.yaml", "\(Self.kubernetes)/configmap.yaml",
                         "\(Self.kubernetes)/secret.yaml", "\(Self.kubernetes)/service.yaml", "ops/container/matchcast.yaml"] {
            #expect(paths.contains(expected), "\(expected) is missing")
        }
        for path in paths {
            let documents = try Self.documents(path)
            #expect(!documents.isEmpty, "\(path) holds no YAML document")
        }
        #expect(try Yams.load(yaml: try Self.configMapConfig()) is [String: Any])
    }

    @Test("Every configuration under ops/ has exactly the keys of Config/matchcast.yaml and loads")
    func configurationsHaveEveryKey() throws {
        let reference = Set(try ConfigurationLoader.flatten(yaml: try Self.text("Config/matchcast.yaml")).keys)
        #expect(reference.contains("http.port"))
        let configs = [
            ("the ConfigMap", try Self.configMapConfig()),
            ("ops/container/matchcast.yaml", try Self.text("ops/container/matchcast.yaml")),
        ]
        for (name, text) in configs {
            let keys = Set(try ConfigurationLoader.flatten(yaml: text).keys)
            #expect(keys.subtracting(reference).isEmpty, "\(name) has keys Config/matchcast.yaml does not: \(keys.subtracting(reference).sorted())")
            #expect(reference.subtracting(keys).isEmpty, "\(name) lacks \(reference.subtracting(keys).sorted())")
        }

        // The ConfigMap loads with the environment the Deployment gives it (Secret values made up).
        let environment = try Self.deploymentEnvironment()
        let known = Set(ConfigurationKey.all.map(\.environmentName))
        for variable in try Self.container()["env"] as? [[String: Any]] ?? [] {
            let name = variable["name"] as? String ?? ""
            #expect(known.contains(name), "the Deployment sets \(name), which no configuration key reads")
        }
        let fromConfigMap = try ConfigurationLoader.load(fileText: try Self.configMapConfig(), environment: environment, flags: [:])
        #expect(fromConfigMap.host == "0.0.0.0")
        #expect(!fromConfigMap.adminKey.isEmpty, "the admin key should come from the Secret")
        let fromImage = try ConfigurationLoader.load(fileText: try Self.text("ops/container/matchcast.yaml"), environment: [:], flags: [:])
        #expect(fromImage.host == "0.0.0.0")
    }

    // MARK: - Kubernetes

    static func container() throws -> [String: Any] {
        let deployment = try mapping("\(kubernetes)/deployment.yaml")
        #expect(deployment["kind"] as? String == "Deployment")
        let spec = try #require(deployment["spec"] as? [String: Any])
        let template = try #require(spec["template"] as? [String: Any])
        let podSpec = try #require(template["spec"] as? [String: Any])
        let containers = try #require(podSpec["containers"] as? [[String: Any]])
        return try #require(containers.first { $0["name"] as? String == "matchcast" })
    }

    static func podSpec() throws -> [String: Any] {
        let deployment = try mapping("\(kubernetes)/deployment.yaml")
        let spec = try #require(deployment["spec"] as? [String: Any])
        let template = try #require(spec["template"] as? [String: Any])
        return try #require(template["spec"] as? [String: Any])
    }

    /// The container's environment, with a made-up value for each variable taken from a Secret
    /// (and none for those the Secret may leave out).
    static func deploymentEnvironment() throws -> [String: String] {
        let env = try container()["env"] as? [[String: Any]] ?? []
        var out: [String: String] = [:]
        for variable in env {
            let name = try #require(variable["name"] as? String)
            if let value = variable["value"] { out[name] = "\(value)" }
            if let from = variable["valueFrom"] as? [String: Any] {
                if (from["secretKeyRef"] as? [String: Any])?["optional"] as? Bool == true { continue }
                out[name] = "made-up-\(name.lowercased())"
            }
        }
        return out
    }

    /// A probe's or Service's port (a number or the name of a container port) as a number.
    static func resolve(_ port: Any?, in ports: [[String: Any]]) throws -> Int {
        if let number = port as? Int { return number }
        let name = try #require(port as? String, "no port given")
        let named = try #require(ports.first { $0["name"] as? String == name }, "no container port named \(name)")
        return try #require(named["containerPort"] as? Int)
    }

    @Test("Probes: readiness on /readyz, liveness on /healthz, on the port the ConfigMap's config listens on")
    func deploymentProbes() throws {
        let container = try Self.container()
        let ports = try #require(container["ports"] as? [[String: Any]])
        let listening = try Self.port(ofConfig: try Self.configMapConfig())

        func probe(_ key: String) throws -> (path: String?, port: Int) {
            let probe = try #require(container[key] as? [String: Any], "no \(key)")
            let get = try #require(probe["httpGet"] as? [String: Any], "\(key) is not an httpGet probe")
            return (get["path"] as? String, try Self.resolve(get["port"], in: ports))
        }
        let readiness = try probe("readinessProbe")
        let liveness = try probe("livenessProbe")
        #expect(readiness.path == "/readyz")
        #expect(liveness.path == "/healthz")
        #expect(readiness.port == listening)
        #expect(liveness.port == listening)
        if container["startupProbe"] != nil {
            #expect(try probe("startupProbe").port == listening)
        }

        // The Service reaches the same port.
        let service = try Self.mapping("\(Self.kubernetes)/service.yaml")
        let servicePorts = try #require((service["spec"] as? [String: Any])?["ports"] as? [[String: Any]])
        #expect(!servicePorts.isEmpty)
        for servicePort in servicePorts {
            #expect(try Self.resolve(servicePort["targetPort"], in: ports) == listening)
        }

        // Enough time to drain, and never root.
        let pod = try Self.podSpec()
        #expect((pod["terminationGracePeriodSeconds"] as? Int ?? 30) >= 30)
        let security = try #require(pod["securityContext"] as? [String: Any])
        #expect(security["runAsNonRoot"] as? Bool == true)
        #expect((security["runAsUser"] as? Int ?? 0) > 0)
    }

    @Test("The Deployment reads its config file from the ConfigMap's mount")
    func configMountedWhereServeReadsIt() throws {
        let container = try Self.container()
        let args = try #require(container["args"] as? [String])
        let flag = try #require(args.firstIndex(of: "--config"), "serve is not given --config")
        let configPath = args[args.index(after: flag)]

        let volumes = try #require(try Self.podSpec()["volumes"] as? [[String: Any]])
        let configVolume = try #require(volumes.first {
            ($0["configMap"] as? [String: Any])?["name"] as? String == "matchcast-config"
        }, "no volume of the ConfigMap matchcast-config")
        let mounts = try #require(container["volumeMounts"] as? [[String: Any]])
        let mount = try #require(mounts.first { $0["name"] as? String == configVolume["name"] as? String })
        let mountPath = try #require(mount["mountPath"] as? String)
        let mounted = (mount["subPath"] as? String).map { _ in mountPath } ?? mountPath + "/matchcast.yaml"
        #expect(mounted == configPath)

        let configMap = try Self.mapping("\(Self.kubernetes)/configmap.yaml")
        #expect((configMap["metadata"] as? [String: Any])?["name"] as? String == "matchcast-config")
    }

    @Test("The Secret template holds placeholders only")
    func secretIsATemplate() throws {
        let secret = try Self.mapping("\(Self.kubernetes)/secret.yaml")
        #expect(secret["kind"] as? String == "Secret")
        let values = try #require(secret["stringData"] as? [String: String])
        #expect(Set(values.keys).isSuperset(of: ["admin-key", "webhook-secret", "apns-key.p8"]))
        for (key, value) in values {
            #expect(value.contains("REPLACE"), "\(key) looks like a real secret")
        }
    }

    // MARK: - Prometheus

    /// Metric names the sources export, each with the label names it is made with (nil when the
    /// labels are not stated beside the name): `Counter(label: "matchcast_x", dimensions: [...])`
    /// and friends, and swift-prometheus `MetricNameDescriptor`s (`namespace_subsystem_name_unit`).
    static func exportedMetrics() throws -> [String: Set<String>?] {
        var metrics: [String: Set<String>?] = [:]
        for path in try files(under: "Sources", extensions: ["swift"]) {
            let source = try text(path)
            for match in try captures(#"label:\s*"(matchcast_[a-z0-9_]+)"(\s*,\s*dimensions:\s*\[([^\]]*)\])?"#, in: source) {
                let name = try #require(match[0])
                let labels = Set(try captures(#"\(\s*"([a-zA-Z_][a-zA-Z0-9_]*)""#, in: match[2] ?? "").compactMap { $0[0] })
                metrics[name] = (metrics[name] ?? []).map { $0.union(labels) } ?? labels
            }
            for match in try captures(#"MetricNameDescriptor\(\s*namespace:\s*"(\w*)",\s*subsystem:\s*"(\w*)",\s*metricName:\s*"(\w+)",\s*unitName:\s*"(\w*)""#, in: source) {
                let name = match.compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: "_")
                for exposed in [name, name + "_bucket", name + "_sum", name + "_count"] where metrics[exposed] == nil {
                    metrics[exposed] = .some(nil)
                }
            }
        }
        return metrics
    }

    /// Metric names and the label names each selector matches on, read from a PromQL expression.
    static func metricReferences(in expression: String) throws -> [(metric: String, labels: Set<String>)] {
        var references: [(String, Set<String>)] = []
        var stripped = expression
        for match in try captures(#"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}"#, in: expression) {
            let labels = Set(try captures(#"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*""#, in: match[1] ?? "").compactMap { $0[0] })
            references.append((try #require(match[0]), labels))
        }
        // What is left once selectors, ranges, strings, grouping clauses and numbers are gone:
        // functions (followed by "("), keywords, and bare metric names.
        for pattern in [#"([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{[^}]*\}"#, #"\[[^\]]*\]"#, #""[^"]*""#,
                        #"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)"#, #"\b\d+(\.\d+)?([eE][+-]?\d+)?\b"#] {
            stripped = stripped.replacingOccurrences(of: pattern, with: " ", options: .regularExpression)
        }
        let keywords: Set<String> = ["and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right"]
        for match in try captures(#"([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?"#, in: stripped) where match[1] == nil {
            let name = try #require(match[0])
            if !keywords.contains(name) { references.append((name, [])) }
        }
        return references
    }

    static func alertRules() throws -> [[String: Any]] {
        let document = try mapping("ops/prometheus/alerts.yaml")
        let groups = try #require(document["groups"] as? [[String: Any]])
        return try groups.flatMap { try #require($0["rules"] as? [[String: Any]]) }
    }

    @Test("The metric scanner finds what the broker exports")
    func scannerSeesTheMetrics() throws {
        let metrics = try Self.exportedMetrics()
        #expect(metrics["matchcast_polls_total"] == .some(["source", "outcome"]))
        // `app` from the routed sink of several apps (docs/apps.md).
        #expect(metrics["matchcast_deliveries_total"] == .some(["sink", "outcome", "app"]))
        #expect(metrics["matchcast_follows"] == .some([]))
        #expect(metrics.keys.contains("matchcast_http_requests_total"))
        let references = try Self.metricReferences(in: #"sum by (job) (rate(matchcast_a{x="1", y=~"2|3"}[5m])) / ignoring(y) matchcast_b > 0.1 unless on (job) up == 0"#)
        #expect(references.map(\.metric).sorted() == ["matchcast_a", "matchcast_b", "up"])
        #expect(references.first { $0.metric == "matchcast_a" }?.labels == ["x", "y"])
    }

    @Test("Every metric and label an alert names is one the sources export")
    func alertsUseExportedMetrics() throws {
        let exported = try Self.exportedMetrics()
        // Series Prometheus makes itself, and labels every scraped series gets.
        let builtIn: Set<String> = ["up"]
        let targetLabels: Set<String> = ["job", "instance"]
        let rules = try Self.alertRules()
        #expect(rules.count >= 8)
        for rule in rules {
            let name = try #require(rule["alert"] as? String, "a rule without an alert name")
            let expression = try #require(rule["expr"] as? String, "\(name) has no expr")
            let references = try Self.metricReferences(in: expression)
            #expect(!references.isEmpty, "\(name) names no metric")
            for (metric, labels) in references {
                if builtIn.contains(metric) { continue }
                guard let known = exported[metric] else {
                    Issue.record("\(name) uses \(metric), which the sources do not export")
                    continue
                }
                if let known {
                    let unknown = labels.subtracting(known).subtracting(targetLabels)
                    #expect(unknown.isEmpty, "\(name) matches \(metric) on \(unknown.sorted()), labels it does not have")
                }
            }
        }
    }

    @Test("Every alert has a severity, a summary and a runbook section")
    func alertsHaveRunbookSections() throws {
        let runbook = try Self.text("ops/RUNBOOK.md")
        let headings = Set(try Self.captures(#"(?m)^###\s+(\S+)\s*$"#, in: runbook).compactMap { $0[0] })
        for rule in try Self.alertRules() {
            let name = try #require(rule["alert"] as? String)
            let labels = rule["labels"] as? [String: Any] ?? [:]
            let annotations = rule["annotations"] as? [String: Any] ?? [:]
            #expect(["critical", "warning"].contains(labels["severity"] as? String), "\(name) has no severity")
            #expect(annotations["summary"] is String, "\(name) has no summary")
            #expect(headings.contains(name), "ops/RUNBOOK.md has no section ### \(name)")
            #expect(annotations["runbook_url"] as? String == "ops/RUNBOOK.md#\(name.lowercased())")
        }
    }

    /// `promtool`, where it is installed (Debian's prometheus package).
    static let promtool: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/promtool" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    @Test("promtool accepts the rules and their unit tests pass", .enabled(if: OpsKitTests.promtool != nil, "promtool is not installed"))
    func promtoolRules() throws {
        for arguments in [["check", "rules", "ops/prometheus/alerts.yaml"], ["test", "rules", "ops/prometheus/alerts.test.yaml"]] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try #require(Self.promtool))
            process.arguments = arguments
            process.currentDirectoryURL = Self.repository
            let output = Pipe()
            process.standardOutput = output
            process.standardError = output
            try process.run()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "promtool \(arguments.joined(separator: " ")):\n\(text)")
        }
    }

    // MARK: - Container and systemd

    @Test("The image exposes, health-checks and configures the port its config listens on")
    func containerfileAgreesWithItsConfig() throws {
        let containerfile = try Self.text("ops/container/Containerfile")
        let port = try Self.port(ofConfig: try Self.text("ops/container/matchcast.yaml"))
        #expect(try Self.captures(#"(?m)^EXPOSE\s+(\d+)"#, in: containerfile).map { $0[0] } == ["\(port)"])
        let healthcheck = try #require(try Self.captures(#"(?m)^HEALTHCHECK\b(.*?)(?<!\\)\n"#, in: containerfile).first?[0])
        #expect(healthcheck.contains("127.0.0.1:\(port)/healthz"))
        #expect(containerfile.contains("COPY ops/container/matchcast.yaml /etc/matchcast/matchcast.yaml"))
        #expect(containerfile.contains(#""--config", "/etc/matchcast/matchcast.yaml""#))
        #expect(containerfile.contains("--static-swift-stdlib"))
        #expect(try Self.captures(#"(?m)^USER\s+(\S+)"#, in: containerfile).first?[0]?.hasPrefix("root") == false)
        // The SQLite file is on the volume.
        let store = try #require(try ConfigurationLoader.flatten(yaml: try Self.text("ops/container/matchcast.yaml"))["store"])
        let volume = try #require(try Self.captures(#"(?m)^VOLUME\s+\["([^"]+)"\]"#, in: containerfile).first?[0])
        #expect(store.hasPrefix("sqlite:\(volume)/"))
    }

    @Test("The systemd unit runs serve with the config, hardened, restarting on failure, with time to drain")
    func systemdUnit() throws {
        let unit = try Self.text("ops/systemd/matchcast.service")
        var settings: [String: [String]] = [:]
        for line in unit.split(separator: "\n") where !line.hasPrefix("#") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            settings[String(line[..<equals]), default: []].append(String(line[line.index(after: equals)...]))
        }
        #expect(settings["ExecStart"]?.first?.hasSuffix("matchcast serve --config /etc/matchcast/matchcast.yaml") == true)
        #expect(settings["Restart"] == ["on-failure"])
        #expect(settings["NoNewPrivileges"] == ["yes"])
        #expect(settings["ProtectSystem"] == ["strict"])
        #expect(settings["StateDirectory"] == ["matchcast"])
        #expect(settings["DynamicUser"] == ["yes"] || settings["User"] != nil)
        #expect(settings["EnvironmentFile"]?.isEmpty == false)
        let stop = try #require(settings["TimeoutStopSec"]?.first.flatMap { Int($0) })
        #expect(stop >= 30)
    }
}
