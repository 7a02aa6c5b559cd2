// SPDX-License-Identifier: GPL-2.0
/*
 * What the governors see of the kernel: the functions shim.h declares,
 * answering from struct shim_view, which the replay fills in before each
 * call, and the trace events' no-ops rewritten as the kernel enables an
 * event.
 */
#include <sys/mman.h>
#include <unistd.h>

#include "replay.h"

unsigned int shim_this_cpu;
struct shim_view shim_view;
FILE *shim_trace;

const char *shim_symbolic(long value, const struct shim_symbol *syms)
{
	for (; syms->name; syms++)
		if (syms->value == value)
			return syms->name;
	return "?";
}

#ifdef SHIM_JUMP_NOP
#if defined(__x86_64__)
static const unsigned char shim_nop[] = { SHIM_NOP_BYTES };
#else
static const u32 shim_nop = SHIM_NOP_INSN;
#endif

/* Where the no-op of @j is. */
static unsigned char *shim_jump_code(const struct shim_jump *j)
{
	return (unsigned char *)&j->code + j->code;
}

/* Rewrite the no-op of @j into a jump to its target (@on) or back. */
static void shim_patch(const struct shim_jump *j, bool on)
{
	unsigned char *code = shim_jump_code(j);
	unsigned char *target = (unsigned char *)&j->target + j->target;
#if defined(__x86_64__)
	s32 rel = target - (code + sizeof(shim_nop));
	unsigned char insn[sizeof(shim_nop)] = { 0xe9 };

	memcpy(insn + 1, &rel, sizeof(rel));
#else
	u32 insn = 0x14000000 | (((target - code) >> 2) & 0x03ffffff);
#endif

	memcpy(code, on ? (const void *)&insn : (const void *)&shim_nop,
	       sizeof(shim_nop));
	__builtin___clear_cache((char *)code, (char *)code + sizeof(shim_nop));
}

/*
 * Rewrite every no-op of shim_jump_table (@on) or put them back, with the
 * pages that hold them writable meanwhile.
 */
static void shim_patch_all(bool on)
{
	uintptr_t page = sysconf(_SC_PAGESIZE), lo = UINTPTR_MAX, hi = 0;
	const struct shim_jump *j;

	for (j = __start_shim_jump_table; j < __stop_shim_jump_table; j++) {
		lo = min_t(uintptr_t, lo, shim_jump_code(j));
		hi = max(hi, (uintptr_t)shim_jump_code(j) + sizeof(shim_nop));
	}
	if (lo > hi)
		return;
	lo &= ~(page - 1);
	if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE | PROT_EXEC)) {
		fprintf(stderr, "cpuidle-replay: cannot turn the trace events %s: mprotect: %s\n",
			on ? "on" : "off", strerror(errno));
		exit(2);
	}
	for (j = __start_shim_jump_table; j < __stop_shim_jump_table; j++)
		shim_patch(j, on);
	mprotect((void *)lo, hi - lo, PROT_READ | PROT_EXEC);
}
#endif

/*
 * Turn the trace events on, printing them to @f, or off (NULL): as the
 * kernel enables an event, by rewriting the no-ops that test it (shim.h).
 */
void shim_set_trace(FILE *f)
{
#ifdef SHIM_JUMP_NOP
	if (!f != !shim_trace)
		shim_patch_all(f);
#endif
	shim_trace = f;
}

s64 cpuidle_governor_latency_req(unsigned int cpu)
{
	return shim_view.latency_req_ns;
}

ktime_t tick_nohz_get_sleep_length(ktime_t *delta_next)
{
	*delta_next = min(shim_view.delta_tick_ns, shim_view.sleep_length_ns);
	return shim_view.sleep_length_ns;
}

bool tick_nohz_tick_stopped(void)
{
	return shim_view.tick_stopped;
}

bool tick_nohz_idle_got_tick(void)
{
	return shim_view.got_tick;
}

u64 local_clock(void)
{
	return shim_view.clock_ns;
}

unsigned long sched_cpu_util(int cpu)
{
	return shim_view.util;
}

unsigned long arch_scale_cpu_capacity(int cpu)
{
	return shim_view.capacity;
}
