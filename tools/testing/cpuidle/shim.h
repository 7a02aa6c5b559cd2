/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Just enough of the kernel's API for a cpuidle governor to compile and run
 * unmodified in userspace.  Every governor source is compiled with this
 * header included first (-include); the <linux/...> headers it names are
 * empty files made by the Makefile.  shim.c implements the functions declared at the end,
 * answering from the idle period being replayed (struct shim_view).
 */
#ifndef TEO_HARNESS_SHIM_H
#define TEO_HARNESS_SHIM_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long u64;	/* as the kernel's, so that %llu fits */
typedef long long s64;
typedef unsigned int u32;
typedef int s32;
typedef unsigned short u16;
typedef unsigned char u8;
typedef signed char s8;
typedef s64 ktime_t;

/*
 * The replayed CPUs are those of an SMP kernel, unless the object is built
 * with SHIM_UP: a uniprocessor kernel's (the harness's "teo-up").
 */
#ifndef SHIM_UP
#define CONFIG_SMP	1
#endif

#define U8_MAX		UINT8_MAX
#define U64_MAX		UINT64_MAX
#define U32_MAX		UINT32_MAX
#define S64_MAX		INT64_MAX
#define S64_MIN		INT64_MIN
#define KTIME_MAX	S64_MAX
#define NSEC_PER_USEC	1000L
#define NSEC_PER_MSEC	1000000L
#define NSEC_PER_SEC	1000000000L

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)
#define __init
/* glibc's <sys/cdefs.h> has its own; the kernel's is meant. */
#undef __always_inline
#define __always_inline	inline __attribute__((__always_inline__))
#define noinline	__attribute__((__noinline__))
#define __cpuidle
#define BIT(n)		(1UL << (n))
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define DIV_ROUND_UP(n, d)	(((n) + (d) - 1) / (d))
#define DIV_ROUND_CLOSEST(n, d)	(((n) + (d) / 2) / (d))

#define min(a, b)	((a) < (b) ? (a) : (b))
#define max(a, b)	((a) > (b) ? (a) : (b))
#define min_t(type, a, b)	min((type)(a), (type)(b))
#define max_t(type, a, b)	max((type)(a), (type)(b))
#define clamp(v, lo, hi)	min(max(v, lo), hi)
#define clamp_t(type, v, lo, hi)	clamp((type)(v), (type)(lo), (type)(hi))

/* IS_ENABLED(CONFIG_X): 1 if CONFIG_X is defined to 1, else 0. */
#define __shim_one_1			0,
#define __shim_second(a, b, ...)	b
#define __shim_enabled3(junk)		__shim_second(junk 1, 0, 0)
#define __shim_enabled2(val)		__shim_enabled3(__shim_one_##val)
#define __shim_enabled1(option)		__shim_enabled2(option)
#define IS_ENABLED			__shim_enabled1

/* The harness is no KUnit kernel: the decision core stays static. */
#define VISIBLE_IF_KUNIT		static
#define EXPORT_SYMBOL_IF_KUNIT(sym)
#define KUNIT_STATIC_STUB_REDIRECT(fn, args...)	do { } while (0)

/*
 * Trace events (TRACE_EVENT()): each call fills the event's fields as the
 * kernel does and, if shim_trace is set (cpuidle-replay --events), prints
 * them as the kernel's trace file would, one event per line after the CPU
 * it was recorded on ("[001] teo_update: ...").  Both trace_<event>() and
 * trace_<event>_enabled() test shim_trace_on() where the kernel tests the
 * event's static key.
 *
 * The kernel's test is a jump label: a no-op instruction that enabling the
 * event rewrites into a jump to the code that records it, so that with
 * tracing off an event costs one no-op where it is tested, and the
 * instruction counts of scripts/teo/judge/cost should see no more.  On x86-64
 * and arm64 the harness does the same: shim_trace_on() is a no-op listed
 * in the section shim_jump_table, which shim_set_trace() rewrites into a
 * jump when it turns the events on and back when it turns them off.
 * Elsewhere it tests shim_trace, a load and a branch.
 */
struct shim_symbol {
	long value;
	const char *name;
};

extern FILE *shim_trace;
const char *shim_symbolic(long value, const struct shim_symbol *syms);
void shim_set_trace(FILE *f);

#define __shim_str(x...)	#x
#define SHIM_STR(x...)		__shim_str(x)

#if defined(__x86_64__)
/* Five bytes, as many as the jump (0xe9 and an offset) that replaces them. */
#define SHIM_NOP_BYTES	0x0f, 0x1f, 0x44, 0x00, 0x00
#define SHIM_JUMP_NOP	".byte " SHIM_STR(SHIM_NOP_BYTES)
#elif defined(__aarch64__)
#define SHIM_NOP_INSN	0xd503201f
#define SHIM_JUMP_NOP	".inst " SHIM_STR(SHIM_NOP_INSN)
#endif

#ifdef SHIM_JUMP_NOP
/* Each entry: the no-op's and the jump target's offsets from the entry. */
struct shim_jump {
	int code;
	int target;
};

/* The table's bounds, which the linker defines (none if it is empty). */
extern const struct shim_jump __start_shim_jump_table[] __attribute__((weak));
extern const struct shim_jump __stop_shim_jump_table[] __attribute__((weak));

static __always_inline bool shim_trace_on(void)
{
	asm goto("1: " SHIM_JUMP_NOP "\n\t"
		 ".pushsection shim_jump_table, \"a\"\n\t"
		 ".balign 4\n\t"
		 ".long 1b - ., %l[on] - .\n\t"
		 ".popsection"
		 : : : : on);
	return false;
on:
	return true;
}
#else
static __always_inline bool shim_trace_on(void)
{
	return unlikely(shim_trace);
}
#endif

#define TP_PROTO(args...)		args
#define TP_ARGS(args...)		args
#define TP_STRUCT__entry(args...)	args
#define TP_fast_assign(args...)		args
#define TP_printk(args...)		args
#define __field(type, item)		type item;
#define __print_symbolic(value, syms...)				\
	({ static const struct shim_symbol __syms[] = { syms, { 0, NULL } }; \
	   shim_symbolic(value, __syms); })
#define TRACE_DEFINE_ENUM(x)
#define TRACE_EVENT(name, proto, args, entry, assign, print)		\
	struct shim_entry_##name { entry };				\
	static inline bool trace_##name##_enabled(void)			\
	{								\
		return shim_trace_on();				\
	}								\
	static inline void trace_##name(proto)				\
	{								\
		struct shim_entry_##name __e, *__entry = &__e;		\
									\
		if (!trace_##name##_enabled())				\
			return;						\
		assign							\
		fprintf(shim_trace, "[%03u] ", shim_this_cpu);		\
		fprintf(shim_trace, #name ": " print);			\
		fputc('\n', shim_trace);				\
	}

/* 64-bit arithmetic helpers: plain C here. */
#define div_u64(a, b)		((u64)(a) / (u32)(b))
#define div_s64(a, b)		((s64)(a) / (s32)(b))
#define div64_u64(a, b)		((u64)(a) / (u64)(b))
#define do_div(n, base) ({				\
	u32 __rem = (u64)(n) % (u32)(base);		\
	(n) = (u64)(n) / (u32)(base);			\
	__rem;						\
})
#define ktime_to_us(t)		((s64)(t) / NSEC_PER_USEC)
#define ktime_to_ns(t)		((s64)(t))

/*
 * One replayed CPU at a time: per-CPU data is an array indexed by CPU, for
 * as many CPUs as a large server has (a replay sets up only the CPUs its
 * trace is on).
 */
#define SHIM_NR_CPUS			4096
extern unsigned int shim_this_cpu;
#define DEFINE_PER_CPU(type, name)	type name[SHIM_NR_CPUS]
#define per_cpu_ptr(ptr, cpu)		(&(*(ptr))[cpu])
#define per_cpu(var, cpu)		((var)[cpu])
#define this_cpu_ptr(ptr)		per_cpu_ptr(ptr, shim_this_cpu)

/*
 * What the governor being called sees of the kernel around it: the replay
 * fills this in from the idle period and the replay's configuration before
 * each call (shim.c answers the kernel's functions from it).  The tick
 * period is one of them, HZ being a replay parameter, not a constant.
 */
struct shim_view {
	s64 tick_ns;
	s64 latency_req_ns;
	s64 sleep_length_ns;
	s64 delta_tick_ns;
	bool got_tick;
	bool tick_stopped;
	u64 clock_ns;
	unsigned long util, capacity;
};

extern struct shim_view shim_view;
#define TICK_NSEC			shim_view.tick_ns

/* The cpuidle API, as far as governors use it. */
#define CPUIDLE_STATE_MAX		10
#define CPUIDLE_NAME_LEN		16
#define CPUIDLE_DESC_LEN		32
#define CPUIDLE_FLAG_NONE		0x00
#define CPUIDLE_FLAG_POLLING		BIT(0)
#define CPUIDLE_FLAG_TIMER_STOP		BIT(2)

struct cpuidle_device;
struct cpuidle_driver;

struct cpuidle_state {
	char name[CPUIDLE_NAME_LEN];
	char desc[CPUIDLE_DESC_LEN];
	s64 exit_latency_ns;
	s64 target_residency_ns;
	unsigned int flags;
	unsigned int exit_latency;
	int power_usage;
	unsigned int target_residency;
};

struct cpuidle_state_usage {
	unsigned long long disable;
	unsigned long long usage;
	u64 time_ns;
	unsigned long long above;
	unsigned long long below;
	unsigned long long rejected;
};

struct cpuidle_device {
	unsigned int registered:1;
	unsigned int enabled:1;
	unsigned int poll_time_limit:1;
	unsigned int cpu;
	ktime_t next_hrtimer;
	int last_state_idx;
	u64 last_residency_ns;
	u64 poll_limit_ns;
	u64 forced_idle_latency_limit_ns;
	struct cpuidle_state_usage states_usage[CPUIDLE_STATE_MAX];
};

struct cpuidle_driver {
	const char *name;
	struct cpuidle_state states[CPUIDLE_STATE_MAX];
	int state_count;
	int safe_state_index;
};

struct cpuidle_governor {
	char name[CPUIDLE_NAME_LEN];
	unsigned int rating;
	int (*enable)(struct cpuidle_driver *drv, struct cpuidle_device *dev);
	void (*disable)(struct cpuidle_driver *drv, struct cpuidle_device *dev);
	int (*select)(struct cpuidle_driver *drv, struct cpuidle_device *dev,
		      bool *stop_tick);
	void (*reflect)(struct cpuidle_device *dev, int index);
};

/*
 * Registration: each governor object is compiled with SHIM_GOV_TAG set to
 * a unique name, so that ours and upstream's "teo" can live side by side.
 */
int shim_register_governor(const char *tag, struct cpuidle_governor *gov);
#define cpuidle_register_governor(gov)	shim_register_governor(SHIM_GOV_TAG, gov)
#define postcore_initcall(fn)						\
	static void __attribute__((constructor)) shim_init_##fn(void)	\
	{								\
		fn();							\
	}

/*
 * Module parameters (module_param_cb(), the one form the governors use):
 * plain variables, at their defaults, in the harness, each in a parameter
 * entry as the kernel's table holds it; their operations are the kernel's,
 * in plain C, though nothing calls them here.  The utilization and capacity
 * are in the units of SCHED_CAPACITY_SCALE.
 */
struct kernel_param;
struct kernel_param_ops {
	int (*set)(const char *val, const struct kernel_param *kp);
	int (*get)(char *buffer, const struct kernel_param *kp);
};

struct kernel_param {
	const char *name;
	const struct kernel_param_ops *ops;
	void *arg;
};

#define module_param_cb(name, ops, arg, perm)				\
	static __attribute__((unused)) const struct kernel_param	\
	shim_param_##name = { #name, ops, arg }
#define MODULE_PARM_DESC(name, desc)

static inline int param_set_uint_minmax(const char *val,
					const struct kernel_param *kp,
					unsigned int min, unsigned int max)
{
	unsigned long num;
	char *end;

	if (!val || !*val || *val == '-')
		return -EINVAL;
	num = strtoul(val, &end, 0);
	if (*end == '\n')
		end++;
	if (*end || num < min || num > max)
		return -EINVAL;
	*(unsigned int *)kp->arg = num;
	return 0;
}

static inline int param_get_uint(char *buffer, const struct kernel_param *kp)
{
	return sprintf(buffer, "%u\n", *(unsigned int *)kp->arg);
}

#define SCHED_CAPACITY_SCALE		1024
#define READ_ONCE(x)			(*(const volatile typeof(x) *)&(x))

/* Answered by the replay engine from the idle period being replayed. */
s64 cpuidle_governor_latency_req(unsigned int cpu);
ktime_t tick_nohz_get_sleep_length(ktime_t *delta_next);
bool tick_nohz_tick_stopped(void);
bool tick_nohz_idle_got_tick(void);
u64 local_clock(void);
unsigned long sched_cpu_util(int cpu);
unsigned long arch_scale_cpu_capacity(int cpu);

#endif /* TEO_HARNESS_SHIM_H */
