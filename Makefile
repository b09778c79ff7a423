# The two commands of the README: `make demo` and `make test`. Both install liblmdb-dev if missing.
.PHONY: demo test bench bench-quick

demo:
	@scripts/ensure-dependencies.sh lmdb
	swift run -c release localstorage-demo

test:
	@scripts/ensure-dependencies.sh lmdb
	swift test

bench:
	@scripts/ensure-dependencies.sh lmdb sqlite
	swift run -c release LocalStorageBenchmarks

bench-quick:
	@scripts/ensure-dependencies.sh lmdb sqlite
	swift run -c release LocalStorageBenchmarks --quick
