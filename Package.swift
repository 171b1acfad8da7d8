// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "SyncNode",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "SyncNodeStore", targets: ["SyncNodeStore"]),
        .executable(name: "syncnode", targets: ["syncnode"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .target(
            name: "SyncNodeStore",
            dependencies: [
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .executableTarget(
            name: "syncnode",
            dependencies: [
                "SyncNodeStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "SyncNodeBenchmarks",
            dependencies: [
                "SyncNodeStore",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "SyncNodeStoreTests",
            dependencies: ["SyncNodeStore"]
        ),
    ]
)
