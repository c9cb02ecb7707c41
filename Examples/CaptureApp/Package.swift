// swift-tools-version:6.0
// A capture app's job, written against the public VaultCore, VaultFoundation and VaultUpload API only: this
// package depends on vault by path, as an app would. `make example` (and `make test`) builds and runs it.
import PackageDescription

let package = Package(
    name: "CaptureApp",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "vault", path: "../..")],
    targets: [
        .executableTarget(
            name: "CaptureApp",
            dependencies: [
                .product(name: "VaultCore", package: "vault"),
                .product(name: "VaultFoundation", package: "vault"),
                .product(name: "VaultUpload", package: "vault")
            ])
    ]
)
