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
        // Sealed payloads (`StorageEncryption`): libsodium's XChaCha20-Poly1305 (`libsodium-dev`).
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"]), .brew(["libsodium"])]
        ),
        // Compressed payloads (`StorageCompression`): zstd with trained dictionaries (`libzstd-dev`).
        .systemLibrary(
            name: "CZstd",
            pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"]), .brew(["zstd"])]
        ),
        .target(name: "LocalStorageKit", dependencies: ["CLMDB", "CSodium", "CZstd"]),
        .executableTarget(name: "LocalStorageDemo", dependencies: ["LocalStorageKit"]),
        // The benchmark compares LocalStorageKit with raw LMDB and SQLite (`libsqlite3-dev`);
        // `make bench` / `make bench-quick` run it in release mode.
        .systemLibrary(
            name: "CSQLite",
            path: "Benchmarks/Sources/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        .executableTarget(
            name: "LocalStorageBenchmarks",
            dependencies: ["LocalStorageKit", "CLMDB", "CSQLite", "LocalStorageTestSupport"],
            path: "Benchmarks/Sources/LocalStorageBenchmarks"
        ),
        .executableTarget(name: "localstorage", dependencies: ["LocalStorageKit"]),
        // Record types and drivers that the tests and their helper process share.
        .target(
            name: "LocalStorageTestSupport", dependencies: ["LocalStorageKit"],
            path: "Tests/LocalStorageTestSupport"),
        // The helper process of the crash and multi-process tests (Tests/LocalStorageKitTests/Reliability).
        .executableTarget(
            name: "LocalStorageStress",
            dependencies: ["LocalStorageKit", "CLMDB", "LocalStorageTestSupport"]),
        // The CLI and reliability tests run the built `localstorage` and `LocalStorageStress` binaries;
        // depending on them makes `swift test` build them first.
        .testTarget(
            name: "LocalStorageKitTests",
            dependencies: [
                "LocalStorageKit", "CLMDB", "LocalStorageTestSupport", "localstorage",
                "LocalStorageStress",
            ]),
    ],
    swiftLanguageModes: [.v6]
)
