# SPDX-License-Identifier: GPL-2.0
# Shared settings for scripts/teo/*: sourced, never run.
#
# Everything large lives under $TEO_CACHE (default ~/.cache/teo), never in
# the clone: the pristine unpacked source, the patched tree (a git
# repository), one build directory per architecture and purpose, ccache.

set -euo pipefail

TEO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TEO_CACHE=${TEO_CACHE:-$HOME/.cache/teo}
TEO_TARBALL=${TEO_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
TEO_PRISTINE=$TEO_CACHE/linux-source-6.12
TEO_TREE=$TEO_CACHE/tree
TEO_BUILD=$TEO_CACHE/build
TEO_JOBS=${TEO_JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-$TEO_CACHE/ccache}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}

# die MESSAGE...: one understandable line on stderr, then exit 1.
die()
{
	echo "teo: error: $*" >&2
	exit 1
}

# say MESSAGE...: progress on stderr, so stdout stays machine-readable.
say()
{
	echo "teo: $*" >&2
}

# cross_prefix ARCH: the CROSS_COMPILE prefix for ARCH on this host.
cross_prefix()
{
	case "$1" in
	x86_64|i386) echo "" ;;
	arm64) echo "aarch64-linux-gnu-" ;;
	*) die "unknown ARCH '$1' (expected x86_64 or arm64)" ;;
	esac
}
