# SPDX-License-Identifier: GPL-2.0
# Shared settings for scripts/teo/*: sourced, never run.
#
# Everything large lives under $TEO_CACHE (default ~/.cache/teo), never in
# the clone: the pristine unpacked source, the patched tree (a git
# repository), one build directory per architecture and purpose, ccache.

set -euo pipefail

# --help or -h as a script's first argument: print the comment at the top of
# the script (after its SPDX line), which says what it does and takes.
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
	awk 'NR <= 2 { next } /^#/ { sub(/^# ?/, ""); if ($0 != "" || seen++) print; next }
		{ exit }' "$0"
	exit 0
fi

TEO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
TEO_CACHE=${TEO_CACHE:-$HOME/.cache/teo}

# The bases: mainline (what the series is for) and the LTS backport.
# TEO_BASE (which "make kunit BASE=6.12" sets) picks one; mainline is the
# default.  Each base has its own pristine source, patched tree and builds.
# Settings come from TEO_* names only: a shell's own BASE is not ours.
TEO_BASES=(7.3 6.12)
TEO_MAINLINE=${TEO_BASES[0]}
TEO_BASE=${TEO_BASE:-$TEO_MAINLINE}
case " ${TEO_BASES[*]} " in
*" $TEO_BASE "*) ;;
*) echo "teo: error: unknown base '$TEO_BASE' (expected one of: ${TEO_BASES[*]})" >&2; exit 1 ;;
esac
TEO_PRISTINE=$TEO_CACHE/linux-source-$TEO_BASE
TEO_TREE=$TEO_CACHE/tree-$TEO_BASE
TEO_BUILD=$TEO_CACHE/build/$TEO_BASE
TEO_JOBS=${TEO_JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-$TEO_CACHE/ccache}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}

# die MESSAGE...: one understandable line on stderr, then exit 1.
die()
{
	echo "teo: error: $*" >&2
	exit 1
}

# pass_fail SUITE NAME STATUS [LOG]: count one check of a suite (in
# $passed and $failed) and print "SUITE: PASS NAME", or "SUITE: FAIL NAME"
# and the tail of LOG if there is one.
passed=0
failed=0
pass_fail()
{
	if [ "$3" -eq 0 ]; then
		echo "$1: PASS $2"
		passed=$((passed + 1))
	else
		echo "$1: FAIL $2${4:+ (log: $4)}"
		[ -z "${4:-}" ] || sed 's/^/    /' "$4" | tail -n 40
		failed=$((failed + 1))
	fi
}

# kunit_summary LOG: the last "Ran N tests: passed: N, ..." line of a
# kunit.py log, without colours; kunit_count SUMMARY KEY: the number after
# "KEY: " in it ("Ran" for the cases), 0 if it has none.
kunit_summary()
{
	grep -E 'Ran [0-9]+ tests?:' "$1" 2>/dev/null | tail -n 1 | sed 's/\x1b\[[0-9;]*m//g'
}

kunit_count()
{
	local n
	if [ "$2" = Ran ]; then
		n=$(sed -n -E 's/.*Ran ([0-9]+) tests?.*/\1/p' <<<"$1")
	else
		n=$(grep -o -E "$2: [0-9]+" <<<"$1" | grep -o -E '[0-9]+' || true)
	fi
	echo "${n:-0}"
}

# suite_total SUITE: the last line of a suite, which scripts/teo/check/check
# reads; fails if any check did.
suite_total()
{
	echo "$1: $passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}

# parallel CMD...: run CMD in the background, after waiting for one of the
# jobs started so to end if TEO_JOBS of them are running; parallel_wait
# waits for them all.  Only for jobs whose status the caller reads from
# what they write (wait -n takes any job's end).
parallel_running=0
parallel()
{
	if [ "$parallel_running" -ge "$TEO_JOBS" ]; then
		wait -n
		parallel_running=$((parallel_running - 1))
	fi
	"$@" &
	parallel_running=$((parallel_running + 1))
}
parallel_wait()
{
	wait
	parallel_running=0
}

# say MESSAGE...: progress on stderr, so stdout stays machine-readable.
say()
{
	echo "teo: $*" >&2
}

# progress_start LABEL DIR: until progress_stop, print every 30 s on stderr
# how many objects the build has compiled under DIR and for how long, so
# that a kernel build (minutes, cold) is never silent; with the size of
# the last whole build in DIR (progress_stop ok records it), as a share.
progress_start()
{
	local label=$1 dir=$2 whole

	whole=$(cat "$dir/.teo-objects" 2>/dev/null || echo 0)
	[[ "$whole" =~ ^[0-9]+$ ]] || whole=0
	progress_stamp=$(mktemp)
	progress_dir=$dir
	(
		start=$SECONDS
		while sleep 30 </dev/null >/dev/null 2>&1; do
			n=$(find "$dir" -name '*.o' -newer "$progress_stamp" 2>/dev/null | wc -l)
			t=$((SECONDS - start))
			of=
			[ "$whole" -gt 0 ] && of=" ($((100 * n / whole))% of the $whole of a whole build)"
			say "$label: $n objects compiled$of, $((t / 60)) min $((t % 60)) s"
		done
	) &
	progress_pid=$!
}

# progress_stop [ok]: stop progress_start's lines; "ok" (the build
# succeeded) records how many objects the build directory holds.
progress_stop()
{
	kill "$progress_pid" 2>/dev/null || true
	wait "$progress_pid" 2>/dev/null || true
	rm -f "$progress_stamp"
	if [ "${1:-}" = ok ]; then
		find "$progress_dir" -name '*.o' 2>/dev/null | wc -l >"$progress_dir/.teo-objects" || true
	fi
}

# build_progress LABEL DIR LOG COMMAND...: run COMMAND with its output in
# LOG and progress_start's lines on stderr; COMMAND's exit status.
build_progress()
{
	local label=$1 dir=$2 log=$3 rc=0

	shift 3
	progress_start "$label" "$dir"
	"$@" >"$log" 2>&1 || rc=$?
	progress_stop "$([ "$rc" -eq 0 ] && echo ok)"
	return "$rc"
}

# pristine BASE: the unpacked pristine source of BASE (made by scripts/teo/tree/source).
pristine()
{
	echo "$TEO_CACHE/linux-source-$1"
}

# private_apt DIR LINE...: an apt configuration in DIR whose sources are
# only LINE... ("SUITE" for a binary suite, "src SUITE" for a source one,
# both on the Debian mirror this machine's own apt sources use), updated,
# and exported as APT_CONFIG, so that packages this machine's sources do
# not list can be fetched without touching those sources.
private_apt()
{
	local dir=$1 mirror line keyring=/usr/share/keyrings/debian-archive-keyring.gpg

	shift
	# The first Debian mirror of the machine's sources (deb822 or one-line
	# format).
	mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources \
			/etc/apt/sources.list.d/*.list 2>/dev/null |
		 sed -n -E 's/^URIs:[[:space:]]*//p; s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/p' |
		 tr ' ' '\n' | grep -E '/debian/?$' | head -n 1 || true)
	mirror=${TEO_DEBIAN_MIRROR:-$mirror}
	[ -n "$mirror" ] || die "no Debian mirror in this machine's apt sources; set TEO_DEBIAN_MIRROR to one"
	[ -f "$keyring" ] || die "missing $keyring (apt-get install debian-archive-keyring)"
	mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
	: >"$dir/sources.list"
	for line in "$@"; do
		case "$line" in
		src\ *) echo "deb-src [signed-by=$keyring] $mirror ${line#src } main" ;;
		*) echo "deb [signed-by=$keyring] $mirror $line main" ;;
		esac >>"$dir/sources.list"
	done
	cat >"$dir/apt.conf" <<-EOF
	Dir::Etc::SourceList "$dir/sources.list";
	Dir::Etc::SourceParts "/nonexistent";
	Dir::State::Lists "$dir/lists";
	Dir::Cache "$dir/cache";
	APT::Sandbox::User "root";
	EOF
	export APT_CONFIG=$dir/apt.conf
	say "reading the package lists of $* ($mirror)"
	apt-get update >"$dir/fetch.log" 2>&1 ||
		die "apt-get update of $* failed: $(tail -n 1 "$dir/fetch.log")"
}

# harness_make [TARGET...]: make the replay harness (tools/testing/cpuidle)
# into $TEO_CACHE/build/harness, with upstream's governor files taken out
# of the source package of every base first (scripts/teo/tree/source
# --governors).
harness_make()
{
	harness_make_into "$TEO_CACHE/build/harness" "$@"
}

# harness_make_into OUT [ARG...]: the same into OUT, with make's ARGs.
harness_make_into()
{
	local out=$1 b args=()

	shift
	for b in "${TEO_BASES[@]}"; do
		args+=("GOVERNORS_${b//./_}=$("$TEO_ROOT/scripts/teo/tree/source" --governors "$b")") || return 1
	done
	make -s -j"$TEO_JOBS" -C "$TEO_ROOT/tools/testing/cpuidle" TEO_CACHE="$TEO_CACHE" \
		"${args[@]}" OUT="$out" "$@"
}

# quick_start_block: the indented lines of the harness README's quick
# start, unindented: its commands ("$ ...") and the table they print.
# quick_start BIN: those commands but the build's (mkdir and make), with
# BIN for the binary; quick_start_sample: the table.
quick_start_block()
{
	awk '/^Quick start$/ { on = 1; next } on && /^-+$/ && seen { exit }
		on && /^  / { seen = 1; sub(/^  /, ""); print }' \
		"$TEO_ROOT/tools/testing/cpuidle/README"
}

quick_start()
{
	quick_start_block | sed -n 's/^\$ //p' | grep -v -E '^(mkdir|make) ' |
		sed "s|^tools/testing/cpuidle/build/cpuidle-replay |$1 |"
}

quick_start_sample()
{
	quick_start_block | grep -v '^\$ '
}

# verdict_section NAME: the section [NAME] of patches/verdict.txt (the
# judge's verdicts, which scripts/teo/judge/bench --update writes), or fail.
verdict_section()
{
	local file=$TEO_ROOT/patches/verdict.txt

	awk -v name="[$1]" '/^#/ { next } /^\[.*\]$/ { on = $0 == name; found += on; next }
		on { print } END { exit !found }' "$file" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' ||
		die "patches/verdict.txt has no section [$1] (scripts/teo/judge/bench --update writes it)"
}

# patch_message FILE: the patch message FILE (in patches/) with its
# @VERDICT@ line replaced by its verdict section.
patch_message()
{
	local msg=$TEO_ROOT/patches/$1 section

	if grep -q -x '@VERDICT@' "$msg"; then
		section=$(verdict_section "$1") || exit 1
		TEXT=$section awk '$0 == "@VERDICT@" { print ENVIRON["TEXT"]; next } { print }' "$msg"
	else
		cat "$msg"
	fi
}

# guest_table POWERS: the harness's state table (teo-states v1) of a
# guest, from "NAME LATENCY_US RESIDENCY_US" lines of CPU 0 on standard
# input (sysfs's figures, as the guest printed them) and POWERS, the
# "NAME POWER" lines scripts/teo/guest/guest-tables wrote.  POLL polls.
guest_table()
{
	echo "teo-states v1"
	awk 'NR == FNR { power[$1] = $2; next }
		{ if (!($1 in power)) { print "no power for state " $1 > "/dev/stderr"; exit 1 }
		  printf "%s %d %d %s %d\n", $1, $2, $3, $1 == "POLL" ? "poll" : "-", power[$1] }' "$1" -
}

# guest_boot_table BOOT: the state table of the guest whose boot test left
# its console log and powers in BOOT (CPU 0's states, as the guest printed
# them).
guest_boot_table()
{
	local states

	states=$(awk '$1 == "TEO" && $2 == "state" && $3 == 0 { print $5, $6, $7 }' "$1/console.log")
	[ "$(wc -l <<<"$states")" -gt 1 ] || { echo "no TEO state lines in $1/console.log" >&2; return 1; }
	guest_table "$1/states.power" <<<"$states"
}

# first_calls DECISIONS: the lines of cpuidle-replay --decisions output
# DECISIONS for the first call into each trace line, to set beside the
# kernel's decisions of a recorded trace (a governor that keeps a tick
# the kernel stopped is called again for the rest of the line).
first_calls()
{
	awk '!seen[$1]++' "$1"
}

# seeded_traces DIR WORKLOAD...: each WORKLOAD of the harness's
# workloads.py into DIR/WORKLOAD.trace, as scripts/teo/judge/bench makes it (seed
# 1, TEO_BENCH_PERIODS idle periods, default 4000).
seeded_traces()
{
	local dir=$1 wl

	shift
	mkdir -p "$dir"
	for wl in "$@"; do
		python3 "$TEO_ROOT/tools/testing/cpuidle/workloads.py" "$wl" --seed 1 \
			--periods "${TEO_BENCH_PERIODS:-4000}" >"$dir/$wl.trace" ||
			die "workloads.py $wl failed"
	done
}

# What a kernel log must not contain: warnings and oopses, the reports of
# KASAN, UBSAN, lockdep (its reports start with "WARNING:" or "BUG:", and it
# says when it turns itself off), DEBUG_PREEMPT and DEBUG_ATOMIC_SLEEP
# ("BUG:"), RCU stall and hung-task reports, ACPI errors and our guests' own
# errors.  Lockdep's boot banner ("Lock dependency validator") is no report.
TEO_REPORT_RE='WARNING:|Oops|BUG:|Kernel panic|Call [Tt]race:|cut here|UBSAN:|KASAN:|'
TEO_REPORT_RE+='turning off the locking correctness validator|DEBUG_LOCKS_WARN_ON|'
TEO_REPORT_RE+='rcu: INFO:|self-detected stall|detected stalls|blocked for more than|'
TEO_REPORT_RE+='ACPI (BIOS )?Error|^TEO error'

# kernel_reports LOG [MAX]: the first MAX (default 3) lines of LOG that
# TEO_REPORT_RE matches; none, and status 0, for a clean log.
kernel_reports()
{
	grep -a -E -m "${2:-3}" "$TEO_REPORT_RE" "$1" || true
}

# cross_prefix ARCH: the CROSS_COMPILE prefix for ARCH on this host.
cross_prefix()
{
	case "$1" in
	x86_64|i386) echo "" ;;
	arm64) echo "aarch64-linux-gnu-" ;;
	*) die "unknown ARCH '$1' (expected x86_64, arm64 or i386)" ;;
	esac
}

# rft_root DIR: a made-up device for the RFT kit's tests (TEO_RFT_ROOT=DIR,
# scripts/teo/rft/teo-rft), never the host's governor: two CPUs of two idle
# states (S0 and S1, 0 and 10 us, 0 and 100 us) with every counter at 100;
# the governors menu (in use) and teo; two RAPL-like energy zones, a
# package at 999000000 uJ and a psys zone that covers it at 5 uJ, each
# wrapping at 10^9 uJ; disks sdz (nothing uses it), sdx (its partition
# sdx1 mounted) and sdy (held by dm-0).
rft_root()
{
	local root=$1 c=$1/sys/devices/system/cpu s d f z a b name uj

	mkdir -p "$c/cpuidle" "$root/proc" "$root/sys/class/block/sdz" \
		"$root/sys/class/block/sdx" "$root/sys/class/block/sdy/holders/dm-0"
	echo "menu teo" >"$c/cpuidle/available_governors"
	echo menu >"$c/cpuidle/current_governor"
	for s in 0/0 0/1 1/0 1/1; do
		d=$c/cpu${s%/*}/cpuidle/state${s#*/}
		mkdir -p "$d"
		for f in usage time above below rejected; do
			echo 100 >"$d/$f"
		done
		echo "S${s#*/}" >"$d/name"
		echo "${s#*/}0" >"$d/latency"
		echo "${s#*/}00" >"$d/residency"
	done
	echo "/dev/sdx1 /mnt ext4 rw 0 0" >"$root/proc/mounts"
	for z in intel-rapl:0:package-0:999000000 intel-rapl:1:psys:5; do
		IFS=: read -r a b name uj <<<"$z"
		mkdir -p "$root/sys/class/powercap/$a:$b"
		echo "$name" >"$root/sys/class/powercap/$a:$b/name"
		echo "$uj" >"$root/sys/class/powercap/$a:$b/energy_uj"
		echo 1000000000 >"$root/sys/class/powercap/$a:$b/max_energy_range_uj"
	done
}
