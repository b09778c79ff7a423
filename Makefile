# The two commands of the README: `make demo` and `make test`. Both install liblmdb-dev if missing;
# `make test` also installs libsqlite3-dev: `swift test` builds every target, the benchmark's included.
.PHONY: demo test bench bench-quick

demo:
	@scripts/ensure-dependencies.sh lmdb
	swift run -c release localstorage-demo

test:
	@scripts/ensure-dependencies.sh lmdb sqlite
	@if command -v python3 >/dev/null 2>&1; then python3 scripts/check-layers.py; fi
	swift test

bench:
	@scripts/ensure-dependencies.sh lmdb sqlite
	swift run -c release LocalStorageBenchmarks

bench-quick:
	@scripts/ensure-dependencies.sh lmdb sqlite
	swift run -c release LocalStorageBenchmarks --quick
