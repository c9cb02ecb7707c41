// swift-tools-version:6.0
// The libFuzzer target, kept out of the main package so a normal build needs no sanitizer.
// Build and run it with `make fuzz` (see Fuzz/README.md).
import PackageDescription

let package = Package(
    name: "vault-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "vault", path: "..")],
    targets: [
        .executableTarget(name: "fuzzvault", dependencies: [.product(name: "VaultCore", package: "vault")]),
    ]
)
