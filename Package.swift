// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "LocalStorage",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "LocalStorageKit", targets: ["LocalStorageKit"]),
        .executable(name: "localstorage-demo", targets: ["LocalStorageDemo"]),
    ],
    targets: [
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),
        .target(name: "LocalStorageKit", dependencies: ["CLMDB"]),
        .executableTarget(name: "LocalStorageDemo", dependencies: ["LocalStorageKit"]),
        // The helper process of the crash and multi-process tests (Tests/LocalStorageKitTests/Reliability).
        .executableTarget(name: "LocalStorageStress", dependencies: ["LocalStorageKit", "CLMDB"]),
        .testTarget(name: "LocalStorageKitTests", dependencies: ["LocalStorageKit", "CLMDB"]),
    ],
    swiftLanguageModes: [.v6]
)
