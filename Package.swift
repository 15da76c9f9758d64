// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "Haul",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "HaulKit", targets: ["HaulKit"]),
        .executable(name: "haul", targets: ["haul"]),
    ],
    dependencies: [
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        // Tests only: property-based tests with shrinking (the cookie jar, proxy rules, list lines, redaction, sizes).
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        // A fleet's shared session store (`haul daemon --store postgres://...`): only HaulFleet links it.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // `swift package generate-documentation --target HaulKit` (a command plugin: nothing of it is linked).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // The functional core: decisions as pure values and functions (resume policy, ranges, naming, redirects,
        // retries, segment plans, proxy choice, task transitions). No I/O, no NIO, no SQLite.
        .target(name: "HaulCore"),
        // The shell: transfers over AsyncHTTPClient, files, the SQLite store, sessions, the daemon.
        .target(
            name: "HaulKit",
            dependencies: [
                "HaulCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                // HTTP/2 inside a proxy's tunnel (async-http-client already builds it for direct requests).
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // A fleet: session stores in PostgreSQL shared by several daemons (claims, leases, fencing, events between
        // nodes). Only `haul` links it: a library user who never runs a fleet does not build postgres-nio.
        .target(
            name: "HaulFleet",
            dependencies: [
                "HaulKit",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The daemon's side: the socket server, the service behind its methods, per-client limits. Only `haul`
        // links it: a library user who downloads in-process, or through a background session, does not.
        .target(
            name: "HaulDaemon",
            dependencies: [
                "HaulKit",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The web dashboard: an HTTP(S) server on SwiftNIO bridging a browser onto the daemon's service, and the
        // page itself (HTML, CSS, JavaScript) embedded in the binary. Its policy decisions live in HaulCore.
        .target(
            name: "HaulWeb",
            dependencies: [
                "HaulKit",
                "HaulDaemon",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            // The whole folder: `WebAssets.all` is the one list of its files (what is served, and how).
            resources: [.embedInCode("Assets")]
        ),
        .executableTarget(
            name: "haul",
            dependencies: [
                "HaulKit",
                "HaulDaemon",
                "HaulWeb",
                "HaulFleet",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        // A runnable example of the session API (see Sources/HaulKit/HaulKit.docc).
        .executableTarget(
            name: "SessionExample",
            dependencies: ["HaulKit"],
            path: "Examples/SessionExample"
        ),
        // Measures a session at scale (bench/session-scale.sh).
        .executableTarget(
            name: "haul-session-bench",
            dependencies: ["HaulKit"],
            path: "bench/SessionBench"
        ),
        // Measures a fleet's store alone: claims and conclusions per second (bench/fleet.sh).
        .executableTarget(
            name: "haul-fleet-bench",
            dependencies: ["HaulKit", "HaulFleet"],
            path: "bench/FleetBench"
        ),
        // What a spec's Codable costs per spec, in the store and on the wire (issue 28).
        .executableTarget(
            name: "haul-spec-coding-bench",
            dependencies: ["HaulKit"],
            path: "bench/SpecCodingBench"
        ),
        // An in-process HTTP server with fault injection, shared by the test targets.
        .target(
            name: "HaulTestSupport",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/HaulTestSupport"
        ),
        .testTarget(
            name: "HaulKitTests",
            dependencies: [
                "HaulCore",
                "HaulKit",
                "HaulTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        // The session store's one suite, run against SQLite and PostgreSQL, and the fleet's claims, leases and events.
        .testTarget(
            name: "HaulFleetTests",
            dependencies: [
                "HaulCore",
                "HaulKit",
                "HaulFleet",
                "HaulTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The daemon's service in-process: JSON-RPC lines in, answers and events out; no socket, no process.
        .testTarget(
            name: "HaulDaemonTests",
            dependencies: [
                "HaulKit",
                "HaulDaemon",
                "HaulTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The dashboard's routes in-process: HTTP requests in, answers out, over an in-process service; no socket.
        .testTarget(
            name: "HaulWebTests",
            dependencies: [
                "HaulKit",
                "HaulDaemon",
                "HaulWeb",
                "HaulTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "HaulCLITests",
            dependencies: [
                "haul",
                "HaulKit",
                // The dashboard's list of its files (WebAssets), which the tests of the page read.
                "HaulWeb",
                "HaulTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                // The typed options' tests parse commands in-process and check spellings as a class.
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
