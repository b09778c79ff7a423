#!/usr/bin/env bash
# Installs the system libraries LocalStorageKit builds against, when they are missing.
# Usage: scripts/ensure-dependencies.sh [lmdb] [sodium] [zstd] [sqlite] [redis]   (default: lmdb sodium zstd)
# `sodium` (libsodium-dev) seals payloads, `zstd` (libzstd-dev) compresses them: the library links both.
# `redis` installs redis-server (the shared-tier tests and benchmark run against a real one).
set -euo pipefail

wanted=("$@")
[ ${#wanted[@]} -eq 0 ] && wanted=(lmdb sodium zstd)

packages=()
for lib in "${wanted[@]}"; do
    case "$lib" in
        lmdb)
            [ -f /usr/include/lmdb.h ] || pkg-config --exists lmdb 2>/dev/null || packages+=(liblmdb-dev)
            command -v mdb_stat >/dev/null 2>&1 || packages+=(lmdb-utils) ;;
        sodium) [ -f /usr/include/sodium.h ] || pkg-config --exists libsodium 2>/dev/null || packages+=(libsodium-dev) ;;
        zstd) [ -f /usr/include/zdict.h ] || pkg-config --exists libzstd 2>/dev/null || packages+=(libzstd-dev) ;;
        sqlite) [ -f /usr/include/sqlite3.h ] || packages+=(libsqlite3-dev) ;;
        redis) command -v redis-server >/dev/null 2>&1 || packages+=(redis-server) ;;
        *) echo "unknown library: $lib" >&2; exit 2 ;;
    esac
done
[ ${#packages[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "Please install: ${packages[*]} (e.g. 'brew install lmdb libsodium zstd redis' on macOS)" >&2
    exit 1
fi
echo "Installing ${packages[*]} ..." >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${packages[@]}" >/dev/null
