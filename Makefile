# The two commands of the README: `make demo` and `make test`. Both install liblmdb-dev, libsodium-dev and
# libzstd-dev if missing;
# `make test` also installs libsqlite3-dev (`swift test` builds every target, the benchmark's included) and
# redis-server (the shared-tier tests start their own on a loopback port unless LOCALSTORAGE_REDIS_PORT names one).
# `make docs`, `make lint` and `make api-check` are the checks CI runs after the tests (.ci/run).
.PHONY: demo test bench bench-quick docs lint api-baseline api-check

demo:
	@scripts/ensure-dependencies.sh lmdb sodium zstd
	swift run -c release localstorage-demo

test:
	@scripts/ensure-dependencies.sh lmdb sodium zstd sqlite redis
	@if command -v python3 >/dev/null 2>&1; then python3 scripts/check-layers.py; fi
	swift test

bench:
	@scripts/ensure-dependencies.sh lmdb sodium zstd sqlite
	swift run -c release LocalStorageBenchmarks

bench-quick:
	@scripts/ensure-dependencies.sh lmdb sodium zstd sqlite
	swift run -c release LocalStorageBenchmarks --quick

# The DocC site in .build/docs, with zero warnings, every public symbol documented and every article
# listing compiled by Tests/LocalStorageKitTests/Documentation/ArticleSnippetTests.swift.
docs:
	@scripts/build-docs.sh

# swift-format's lint with the configuration in .swift-format; scripts/format-tree.sh formats the tree.
lint:
	swift format lint --strict --parallel -r Sources Tests Benchmarks Package.swift

# The public API (api/LocalStorageKit.public-api.txt) against the build: `make api-baseline` writes it,
# `make api-check` fails when the build differs from it, or when it changed without a CHANGELOG line.
api-baseline:
	@scripts/api-baseline.sh write

api-check:
	@scripts/api-baseline.sh check
