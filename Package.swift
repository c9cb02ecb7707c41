// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "vault",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "VaultCore", targets: ["VaultCore"]),
        .executable(name: "vault", targets: ["vault"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", exact: "4.5.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"]), .brew(["libsodium"])]
        ),
        .target(name: "CVaultSystem"),
        .target(name: "CBase64"),
        .target(
            name: "VaultCore",
            dependencies: [
                "CSodium",
                "CVaultSystem",
                "CBase64",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .executableTarget(
            name: "vault",
            dependencies: [
                "VaultCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "VaultCoreTests",
            dependencies: ["VaultCore"]
        ),
        .testTarget(
            name: "VaultCLITests",
            dependencies: ["vault"]
        ),
    ]
)
