# The two commands of the README: `make demo` and `make test`. Both install liblmdb-dev, libsodium-dev and
# libzstd-dev if missing;
# `make test` also installs libsqlite3-dev (`swift test` builds every target, the benchmark's included) and
# redis-server (the shared-tier tests start their own on a loopback port unless LOCALSTORAGE_REDIS_PORT names one).
# `make test` runs the layer check first (scripts/check-layers.py, needs python3): it fails when the check fails or
# cannot run.
# `make docs`, `make lint` and `make api-check` are the checks CI runs after the tests (.ci/run).
.PHONY: demo test bench bench-quick bench-hitratio docs lint api-baseline api-check

demo:
	@scripts/ensure-dependencies.sh lmdb sodium zstd
	swift run -c release localstorage-demo

test:
	@scripts/ensure-dependencies.sh lmdb sodium zstd sqlite redis
	@command -v python3 >/dev/null 2>&1 || { echo "make test: python3 is needed for the layer check (scripts/check-layers.py)" >&2; exit 1; }
	python3 scripts/check-layers.py
	swift test

bench:
	@scripts/ensure-dependencies.sh lmdb sodium zstd sqlite
	swift run -c release LocalStorageBenchmarks

bench-quick:
	@scripts/ensure-dependencies.sh lmdb sodium zstd sqlite
	swift run -c release LocalStorageBenchmarks --quick

# Miss ratios of the store's eviction policies on standard cache traces beside libCacheSim's LRU, ARC,
# S3-FIFO, SIEVE and W-TinyLFU and Belady's optimum (Benchmarks/README.md, "Hit ratio"). libCacheSim
# comes from PyPI into a virtual environment this target makes in .build/hitratio-venv. HITRATIO_REQUESTS
# shortens the traces (default 400000 requests each).
HITRATIO_REQUESTS ?= 400000
bench-hitratio:
	@scripts/ensure-dependencies.sh lmdb sqlite
	@test -x .build/hitratio-venv/bin/python || python3 -m venv .build/hitratio-venv
	@.build/hitratio-venv/bin/python -c "import libcachesim" 2>/dev/null || .build/hitratio-venv/bin/pip install --quiet libcachesim
	swift run -c release LocalStorageBenchmarks --hitratio .build/hitratio --requests $(HITRATIO_REQUESTS)
	.build/hitratio-venv/bin/python scripts/hitratio.py .build/hitratio

# The DocC site in .build/docs, with zero warnings, every public symbol documented and every article
# listing compiled by the snippet files of Tests/LocalStorageKitTests/Documentation/.
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
