// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "LocalStorage",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "LocalStorageKit", targets: ["LocalStorageKit"]),
        .executable(name: "localstorage-demo", targets: ["LocalStorageDemo"]),
        .executable(name: "localstorage", targets: ["localstorage"]),
    ],
    targets: [
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),
        .target(name: "LocalStorageKit", dependencies: ["CLMDB"]),
        .executableTarget(name: "LocalStorageDemo", dependencies: ["LocalStorageKit"]),
        .executableTarget(name: "localstorage", dependencies: ["LocalStorageKit"]),
        // The CLI tests run the built `localstorage` binary; depending on it makes `swift test` build it first.
        .testTarget(name: "LocalStorageKitTests", dependencies: ["LocalStorageKit", "CLMDB", "localstorage"]),
    ],
    swiftLanguageModes: [.v6]
)
