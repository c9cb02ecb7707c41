// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "vault",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "VaultCore", targets: ["VaultCore"]),
        .library(name: "VaultFoundation", targets: ["VaultFoundation"]),
        .library(name: "VaultUpload", targets: ["VaultUpload"]),
        .library(name: "VaultS3", targets: ["VaultS3"]),
        .library(name: "VaultRemote", targets: ["VaultRemote"]),
        .library(name: "VaultReceive", targets: ["VaultReceive"]),
        .executable(name: "vault", targets: ["vault"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", exact: "4.5.2"),
        .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", exact: "2.101.3"),
        .package(url: "https://github.com/apple/swift-system", exact: "1.8.1"),
        // `vault receive`: the HTTP server (streamed request bodies, TLS), its log and metrics.
        // No traits: swift-configuration and full Foundation are not needed by the receiver.
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-nio-ssl", exact: "2.37.6"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", exact: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", exact: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types", exact: "1.8.0"),
        // Tests only: the browser view's pages are compared with what swift-mustache renders
        // (they were its templates; it links Foundation and ICU, so the binary renders them itself).
        .package(url: "https://github.com/hummingbird-project/swift-mustache", exact: "2.1.1"),
        // `make docs`: the DocC catalogs of VaultCore and VaultUpload.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", exact: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"]), .brew(["libsodium"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        // zlib, for the tests only: some of the age test vectors (Fixtures/age) are compressed.
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .target(name: "CVaultSystem"),
        .target(name: "CBase64"),
        .target(name: "CVaultBuildInfo"),
        .target(
            name: "VaultCore",
            dependencies: [
                "CSodium",
                "CSQLite",
                "CVaultSystem",
                "CBase64",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        // VaultCore's conveniences for Foundation's FileHandle and InputStream, apart so that the
        // vault binary links no Foundation class (and so no ICU): only FoundationEssentials.
        .target(name: "VaultFoundation", dependencies: ["VaultCore"]),
        // The back office's side (`vault receive`): payloads read as they arrive.
        .target(
            name: "VaultReceive",
            dependencies: [
                "VaultCore",
                "VaultRemote",
                "VaultS3",
                "CZlib",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        .target(
            name: "VaultUpload",
            dependencies: [
                "VaultCore",
                "VaultS3",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .target(
            name: "VaultS3",
            dependencies: [
                "VaultCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .target(
            name: "VaultRemote",
            dependencies: [
                "VaultCore",
                "VaultS3",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "vault",
            dependencies: [
                "VaultCore",
                "VaultUpload",
                "VaultS3",
                "VaultRemote",
                "VaultReceive",
                "CVaultBuildInfo",
                "CVaultSystem",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        // The fuzz target: libFuzzer's driver when `make fuzz` builds it with -DFUZZING and the
        // sanitizers; otherwise it replays the inputs it is given (make test: Fuzz/regressions/).
        .executableTarget(name: "fuzzvault", dependencies: ["VaultCore", "VaultUpload", "VaultS3", "VaultRemote", "VaultReceive", "CSQLite",
                                                           .product(name: "Crypto", package: "swift-crypto"),
                                                           .product(name: "NIOCore", package: "swift-nio"),
                                                           .product(name: "NIOHTTP1", package: "swift-nio")],
                          path: "Fuzz/Sources/fuzzvault"),
        // The example app (`make example`): a capture app's job through the public API only.
        // `packageAccess: false` compiles it outside the package, so `package` symbols are out of
        // its reach, as they are for an app that depends on vault (Examples/CaptureApp/Package.swift
        // builds the same sources that way); here it shares the one build of the dependency graph.
        .executableTarget(name: "CaptureApp", dependencies: ["VaultCore", "VaultFoundation", "VaultUpload"], path: "Examples/CaptureApp/Sources/CaptureApp",
                          packageAccess: false),
        // Large vaults for `make bench` and the scale tests (not installed).
        .executableTarget(
            name: "vault-fixture",
            dependencies: ["VaultCore", "CSodium", .product(name: "Crypto", package: "swift-crypto")]),
        // The test peers (SeaweedFS, PHP, the receiver, tus, the Python scripts), shared by the
        // test targets: one spawn helper, one copy of each peer.
        .target(
            name: "VaultTestSupport",
            dependencies: ["VaultCore", "VaultS3", "CSQLite"],
            path: "Tests/VaultTestSupport"
        ),
        .testTarget(
            name: "VaultCoreTests",
            dependencies: ["VaultCore", "VaultFoundation", "CBase64", "CZlib", "VaultTestSupport", .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "CryptoExtras", package: "swift-crypto")]
        ),
        .testTarget(
            name: "VaultReceiveTests",
            dependencies: [
                "VaultReceive", "VaultCore", "VaultUpload", "VaultTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]
        ),
        .testTarget(
            name: "VaultUploadTests",
            dependencies: ["VaultUpload", "VaultCore", "VaultS3"]
        ),
        .testTarget(
            name: "VaultS3Tests",
            dependencies: ["VaultS3", "VaultCore", "VaultTestSupport", .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "AsyncHTTPClient", package: "async-http-client")]
        ),
        // The replicator and the range cache against an in-memory object store (no network).
        .testTarget(
            name: "VaultRemoteTests",
            dependencies: ["VaultRemote", "VaultCore", "VaultS3", .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOPosix", package: "swift-nio")]
        ),
        .testTarget(
            name: "VaultCLITests",
            dependencies: ["vault", "vault-fixture", "VaultCore", "VaultS3", "VaultTestSupport", .product(name: "Crypto", package: "swift-crypto")]
        ),
    ]
)
