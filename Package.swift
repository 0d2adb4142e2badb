// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "matchcast",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "matchcast", targets: ["matchcast"]),
        .library(name: "MatchcastCore", targets: ["MatchcastCore"]),
        .library(name: "MatchcastTesting", targets: ["MatchcastTesting"]),
        // The benchmarks and the fakes they run against; not part of the shipped `matchcast`.
        .executable(name: "matchcast-bench", targets: ["matchcast-bench"]),
        // A fake APNs on swift-nio-http2's server side, for `bench serve --sink apns` and by hand.
        .executable(name: "matchcast-fake-apns", targets: ["matchcast-fake-apns"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.0.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.25.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.27.0"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.10.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.5.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.0.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.0.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.21.0"),
    ],
    targets: [
        // Pure domain: values, formatting, payload encoding, state machines. No I/O.
        .target(name: "MatchcastCore"),
        .target(
            name: "MatchcastFeeds",
            dependencies: [
                "MatchcastCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // `fake-feed` serves the simulated matches over HTTP (`FakeFeedServer`).
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .target(
            name: "MatchcastDelivery",
            dependencies: [
                "MatchcastCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                // RSA (`_RSA.Signing`, PKCS#1 v1.5): the FCM sink signs its OAuth2 assertions (RS256) with the
                // service account's RSA key; Crypto itself has no RSA. The underscored product, because only it
                // exists in every swift-crypto this package accepts (3.x and 4.x).
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ]
        ),
        .target(
            name: "MatchcastStore",
            dependencies: [
                "MatchcastCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, as GRDB links it: the fan-out's per-row UPDATE binds its values directly.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                // SHA-256: SQLite indexes an update token by a 64-bit key no client can make collide.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                // NIO timers for the connection-lease timeout: cancelled with their call (see `PostgresStore.leaseTimer`).
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        .target(
            name: "MatchcastService",
            dependencies: [
                "MatchcastCore", "MatchcastFeeds", "MatchcastDelivery", "MatchcastStore",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "MatchcastHTTP",
            dependencies: [
                "MatchcastFeeds", "MatchcastService", "MatchcastStore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .target(
            name: "MatchcastTesting",
            dependencies: [
                "MatchcastCore", "MatchcastFeeds", "MatchcastDelivery",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "Crypto", package: "swift-crypto"),
                // The fake FCM's OAuth endpoint verifies RS256 assertions; test service accounts get fresh RSA keys.
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        // An APNs peer built on swift-nio-http2's server side, sharing no code with our hand-framed client
        // (`MatchcastDelivery/APNs`): the independent check of it, for tests and the benchmark. Only test
        // targets and `matchcast-fake-apns` link it, so the shipped `matchcast` does not link NIOHTTP2.
        .target(
            name: "APNsPeer",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ]
        ),
        .executableTarget(
            name: "matchcast-fake-apns",
            dependencies: ["APNsPeer", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        // Command implementations, kept apart from the executable so tests can drive them.
        .target(
            name: "MatchcastCLI",
            dependencies: [
                "MatchcastCore", "MatchcastFeeds", "MatchcastDelivery", "MatchcastStore",
                "MatchcastService", "MatchcastHTTP",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .executableTarget(
            name: "matchcast",
            dependencies: ["MatchcastCLI", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        // `matchcast-bench`: benchmarks of the pipeline and of `serve` as users run it, with the fakes they need
        // (MatchcastTesting). Kept out of `matchcast` so the shipped binary links no test code.
        .target(
            name: "MatchcastBench",
            dependencies: [
                "MatchcastCore", "MatchcastFeeds", "MatchcastDelivery", "MatchcastStore", "MatchcastService",
                "MatchcastCLI", "MatchcastTesting",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .executableTarget(
            name: "matchcast-bench",
            dependencies: ["MatchcastBench", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .testTarget(
            name: "MatchcastBenchTests",
            dependencies: ["MatchcastBench", "MatchcastTesting"]
        ),
        .testTarget(
            name: "MatchcastDeliveryTests",
            dependencies: [
                "MatchcastDelivery", "MatchcastCore", "MatchcastTesting", "APNsPeer",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            ]
        ),
        .testTarget(name: "MatchcastCoreTests", dependencies: ["MatchcastCore", "MatchcastTesting"]),
        .testTarget(
            name: "MatchcastFeedsTests",
            dependencies: [
                "MatchcastFeeds", "MatchcastTesting",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // The broker in one process, and whole `matchcast serve` processes (crashes, replicas, outages) end to end.
        .testTarget(
            name: "MatchcastServiceTests",
            dependencies: [
                "MatchcastService", "MatchcastStore", "MatchcastTesting",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            // The golden replay's files, read by path (`GoldenReplayTests`, `ReplayAPNsTests`), not bundled.
            exclude: ["Golden"]
        ),
        .testTarget(
            name: "MatchcastHTTPTests",
            dependencies: [
                "MatchcastHTTP", "MatchcastService", "MatchcastStore", "MatchcastTesting",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        .testTarget(
            name: "MatchcastCLITests",
            dependencies: [
                "MatchcastCLI", "MatchcastService", "MatchcastStore", "MatchcastTesting",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .testTarget(
            name: "MatchcastStoreTests",
            dependencies: [
                "MatchcastStore", "MatchcastCore", "MatchcastTesting",
                // The upgrade tests write databases as an earlier release left them.
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
