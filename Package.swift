// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "SyncNode",
    // The Synchronization module (Mutex, Atomic) needs macOS 15 / iOS 18. Only Linux is built and
    // tested; SyncNodeDiscovery and the syncnode CLI need avahi-client and libqrencode, so they are
    // Linux-only (the store, sync and Combine modules are plain Swift and may build on Apple platforms).
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "SyncNodeStore", targets: ["SyncNodeStore"]),
        .library(name: "SyncNodeSync", targets: ["SyncNodeSync"]),
        .library(name: "SyncNodeCombine", targets: ["SyncNodeCombine"]),
        .library(name: "SyncNodeDiscovery", targets: ["SyncNodeDiscovery"]),
        .library(name: "SyncNodeMesh", targets: ["SyncNodeMesh"]),
        .executable(name: "syncnode", targets: ["syncnode"]),
        .executable(name: "syncnode-chat", targets: ["syncnode-chat"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
        .package(url: "https://github.com/adam-fowler/compress-nio", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // `swift package generate-documentation` builds the DocC catalogs (Sources/<Module>/<Module>.docc).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .target(
            name: "SyncNodeStore",
            dependencies: [
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                "CXattr",
                "CWriteback",
                .target(name: "CLibCrypto", condition: .when(platforms: [.linux])),
            ]
        ),
        .target(
            name: "SyncNodeSync",
            dependencies: [
                "SyncNodeStore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // HTTP parts as the server pipeline carries them (for the connection limits).
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                // CouchDB sends text attachments gzip-encoded.
                .product(name: "CompressNIO", package: "compress-nio"),
                .target(name: "CIsal", condition: .when(platforms: [.linux])),
                // GET /_node/_local/_prometheus.
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            // The web dashboard at /_utils/, compiled into the binary: a node is one file.
            resources: [
                .embedInCode("Listener/Dashboard/Assets/index.html"),
                .embedInCode("Listener/Dashboard/Assets/dashboard.js"),
                .embedInCode("Listener/Dashboard/Assets/dashboard.css"),
            ]
        ),
        // System libraries: DNS-SD through avahi-client, QR codes through libqrencode (Debian's -dev packages).
        .systemLibrary(name: "CAvahi", pkgConfig: "avahi-client", providers: [.apt(["libavahi-client-dev"])]),
        .systemLibrary(name: "CQRencode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
        .systemLibrary(name: "CMalloc"),
        // Extended attributes, where the blob store keeps each blob's MD5 (no file of its own).
        .systemLibrary(name: "CXattr"),
        // Writeback started early, so a batch of pulled blobs waits for the disk once.
        .systemLibrary(name: "CWriteback"),
        // OpenSSL's SHA-256 without a context allocated per hash: every write hashes one to three digest entries.
        .systemLibrary(name: "CLibCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // Gzip between nodes through Intel's ISA-L (igzip): about three times zlib's speed at the same ratio.
        .systemLibrary(name: "CIsal", pkgConfig: "libisal", providers: [.apt(["libisal-dev"])]),
        .target(
            name: "SyncNodeDiscovery",
            dependencies: [
                "SyncNodeSync",
                "SyncNodeStore",
                "CAvahi",
                "CQRencode",
                .product(name: "Logging", package: "swift-log"),
                // NodeProbe asks each sighted peer who it is.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // A whole node as one object: listener, DNS-SD, trust, replication with every peer, presence.
        .target(
            name: "SyncNodeMesh",
            dependencies: [
                "SyncNodeDiscovery",
                "SyncNodeSync",
                "SyncNodeStore",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Publishers: Combine on Apple platforms, OpenCombine elsewhere.
        .target(
            name: "SyncNodeCombine",
            dependencies: [
                "SyncNodeStore",
                "SyncNodeSync",
                // Mesh nodes need Avahi, so Linux only; Combine builds on Apple platforms without them.
                .target(name: "SyncNodeMesh", condition: .when(platforms: [.linux])),
                .product(name: "OpenCombine", package: "OpenCombine", condition: .when(platforms: [.linux, .windows, .android])),
            ]
        ),
        .executableTarget(
            name: "syncnode",
            dependencies: [
                "CMalloc",
                "SyncNodeStore",
                "SyncNodeSync",
                "SyncNodeDiscovery",
                "SyncNodeMesh",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // `syncnode --version`: the VERSION file and the git commit, stamped at build time.
            plugins: ["VersionStamp"]
        ),
        .plugin(name: "VersionStamp", capability: .buildTool()),
        .executableTarget(
            name: "SyncNodeBenchmarks",
            dependencies: [
                "SyncNodeStore",
                "SyncNodeSync",
                "SyncNodeMesh",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // Example apps' view models (a to-do list, categorized products), run by their tests.
        .target(
            name: "SyncNodeExamples",
            dependencies: [
                "SyncNodeStore",
                "SyncNodeCombine",
                .product(name: "OpenCombine", package: "OpenCombine", condition: .when(platforms: [.linux, .windows, .android])),
            ],
            path: "Examples",
            exclude: ["Chat"]
        ),
        // A terminal chat room over a mesh of nodes, on the public API only; the lab test runs it on 3 hosts.
        .executableTarget(
            name: "syncnode-chat",
            dependencies: ["SyncNodeMesh", "SyncNodeSync", "SyncNodeStore"],
            path: "Examples/Chat"
        ),
        .testTarget(
            name: "SyncNodeExamplesTests",
            dependencies: ["SyncNodeExamples", "SyncNodeCombine", "SyncNodeStore"]
        ),
        .testTarget(
            name: "SyncNodeCombineTests",
            dependencies: [
                "SyncNodeCombine", "SyncNodeSync", "SyncNodeStore",
                .target(name: "SyncNodeMesh", condition: .when(platforms: [.linux])),
            ]
        ),
        .testTarget(
            name: "SyncNodeDiscoveryTests",
            dependencies: ["SyncNodeDiscovery", "SyncNodeSync", "SyncNodeStore", "SyncNodeTestSupport"]
        ),
        // Test helpers every suite shares: temporary directories, collectors, child processes, executables.
        .target(name: "SyncNodeTestSupport", path: "Tests/SyncNodeTestSupport"),
        .testTarget(
            name: "SyncNodeMeshTests",
            dependencies: ["SyncNodeMesh", "SyncNodeDiscovery", "SyncNodeSync", "SyncNodeStore", "SyncNodeTestSupport"]
        ),
        .testTarget(
            name: "SyncNodeStoreTests",
            dependencies: ["SyncNodeStore", "SyncNodeTestSupport"]
        ),
        // The command line as a user runs it (the dependency makes `swift test` build syncnode).
        .testTarget(
            name: "SyncNodeCLITests",
            dependencies: ["SyncNodeStore", "SyncNodeTestSupport", "syncnode"]
        ),
        .testTarget(
            name: "SyncNodeSyncTests",
            dependencies: [
                "SyncNodeSync",
                "SyncNodeStore",
                "SyncNodeTestSupport",
                // Its suites run `syncnode serve` and `sync` processes.
                "syncnode",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CompressNIO", package: "compress-nio"),
            ]
        ),
    ]
)
