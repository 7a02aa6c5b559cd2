// SPDX-License-Identifier: GPL-2.0
/*
 * Replay idle periods through cpuidle governors compiled unmodified in
 * userspace (our teo.c; upstream mainline 7.3's and 6.12's teo.c and
 * menu.c, copied from the pristine trees at build time), reproducing what
 * the cpuidle core does around a governor: the tick (which stays stopped
 * when an interrupt ends an idle period without waking a task: a non-timer
 * wakeup with no busy time), the polling
 * time limit, the latency limit, disabled states and the above/below ("too
 * deep"/"too shallow") accounting of cpuidle_enter_state().
 *
 *   cpuidle-replay --table FILE --trace FILE [--gov NAME[,NAME...]] [--hz N]
 *                  [--exit-share PCT] [--disable MASK] [--tick-cost NS]
 *                  [--latency-limit US] [--csv] [--no-cost]
 *   cpuidle-replay --table FILE --trace FILE --agree GOV [--with GOV] ...
 *   cpuidle-replay --table FILE --trace FILE --gov NAME --decisions FILE ...
 *   cpuidle-replay --self-test
 *
 * The formats are described in README in this directory.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif
#include <time.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shim.h"

#define MAX_GOVS	32
#define POLL_MIN_NS	(10 * NSEC_PER_USEC)
/* What a stop of the tick and its restart cost by default (README). */
#define TICK_COST_NS	(2 * NSEC_PER_USEC)

/* ---- What the governors see ------------------------------------------ */

unsigned int shim_this_cpu;
s64 shim_tick_nsec = NSEC_PER_SEC / 1000;
FILE *shim_trace;

const char *shim_symbolic(long value, const struct shim_symbol *syms)
{
	for (; syms->name; syms++)
		if (syms->value == value)
			return syms->name;
	return "?";
}

#ifdef SHIM_JUMP_NOP
extern const struct shim_jump __start_shim_jump_table[] __attribute__((weak));
extern const struct shim_jump __stop_shim_jump_table[] __attribute__((weak));
#if defined(__x86_64__)
static const unsigned char shim_nop[] = { SHIM_NOP_BYTES };
#else
static const uint32_t shim_nop = SHIM_NOP_INSN;
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
	int32_t rel = target - (code + sizeof(shim_nop));
	unsigned char insn[sizeof(shim_nop)] = { 0xe9 };

	memcpy(insn + 1, &rel, sizeof(rel));
#else
	uint32_t insn = 0x14000000 | (((target - code) >> 2) & 0x03ffffff);
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
		lo = min(lo, (uintptr_t)shim_jump_code(j));
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

static struct {
	s64 latency_req_ns;
	s64 sleep_length_ns;
	s64 delta_tick_ns;
	bool got_tick;
	bool tick_stopped;
	u64 clock_ns;
	unsigned long util, capacity;
} now_seen;

s64 cpuidle_governor_latency_req(unsigned int cpu)
{
	return now_seen.latency_req_ns;
}

ktime_t tick_nohz_get_sleep_length(ktime_t *delta_next)
{
	*delta_next = min(now_seen.delta_tick_ns, now_seen.sleep_length_ns);
	return now_seen.sleep_length_ns;
}

bool tick_nohz_tick_stopped(void)
{
	return now_seen.tick_stopped;
}

bool tick_nohz_idle_got_tick(void)
{
	return now_seen.got_tick;
}

u64 local_clock(void)
{
	return now_seen.clock_ns;
}

unsigned long sched_cpu_util(int cpu)
{
	return now_seen.util;
}

unsigned long arch_scale_cpu_capacity(int cpu)
{
	return now_seen.capacity;
}

/* ---- Governors -------------------------------------------------------- */

/*
 * What a bound (a rule of the harness, not a governor's code) is told at
 * each call: the period (trace line) and how far into it, what is left of
 * it, when the tick would end it if kept (see kept_tick_cut()), the
 * latency limit and the tick state.
 */
struct call {
	const struct cpuidle_driver *drv;
	const struct cpuidle_device *dev;
	size_t k;
	s64 elapsed_ns;
	s64 idle_ns;
	s64 tick_cut_ns;
	s64 lat_ns;
	bool stopped;
	bool recorded;
};

struct gov {
	const char *name;
	struct cpuidle_governor *ops;	/* NULL for the bounds below */
	int (*bound)(const struct call *c, bool *stop_tick);
	int model;			/* an oracle's energy model, see below */
	bool no_util;			/* sched_cpu_util() answers 0 */
	bool full_util;			/* it answers the capacity */
};

/* The energy models (see model_costs()); an oracle minimizes one of them. */
enum { MODEL_NONE, MODEL_DEFAULT, MODEL_TABLE };

static struct gov govs[MAX_GOVS];
static int ngovs;

int shim_register_governor(const char *tag, struct cpuidle_governor *ops)
{
	if (ngovs == MAX_GOVS) {
		fprintf(stderr, "cpuidle-replay: more than %d governors built in, %s left out: raise MAX_GOVS\n",
			MAX_GOVS, tag);
		exit(2);
	}
	govs[ngovs].name = tag;
	govs[ngovs].ops = ops;
	ngovs++;
	return 0;
}

static bool usable(const struct cpuidle_driver *drv,
		   const struct cpuidle_device *dev, int i, s64 lat_ns)
{
	return !dev->states_usage[i].disable &&
	       drv->states[i].exit_latency_ns <= lat_ns;
}

static int oracle(const struct call *c, bool *stop_tick);

/*
 * Never too deep: the shallowest usable state that does not poll, with the
 * tick stopped; if there is none, the shallowest usable one (or state 0)
 * with the tick kept.
 */
static int shallowest(const struct call *c, bool *stop_tick)
{
	int i, first = -1;

	for (i = 0; i < c->drv->state_count; i++) {
		if (!usable(c->drv, c->dev, i, c->lat_ns))
			continue;
		if (!(c->drv->states[i].flags & CPUIDLE_FLAG_POLLING)) {
			*stop_tick = true;
			return i;
		}
		if (first < 0)
			first = i;
	}
	*stop_tick = false;
	return max(first, 0);
}

/* Does nothing: what the replay costs without a governor's work. */
static int null_select(struct cpuidle_driver *drv, struct cpuidle_device *dev,
		       bool *stop_tick)
{
	return 0;
}

static void null_reflect(struct cpuidle_device *dev, int index)
{
}

static struct cpuidle_governor null_ops = {
	.name = "null", .select = null_select, .reflect = null_reflect,
};

static const struct gov *find_gov(const char *name)
{
	static const struct gov bounds[] = {
		{ .name = "oracle", .bound = oracle, .model = MODEL_DEFAULT },
		{ .name = "oracle-table", .bound = oracle, .model = MODEL_TABLE },
		{ .name = "shallowest", .bound = shallowest },
		{ .name = "null", .ops = &null_ops },
	};
	/*
	 * A governor told that the utilization is 0, "NAME-noutil", or the
	 * CPU's capacity, "NAME-fullutil": "teo-noutil" is our teo with
	 * utilization awareness off, and the step that brings it must decide
	 * like the step before it when it is off, whatever later steps add.
	 */
	static const struct { const char *suffix; bool no_util; } forced[] = {
		{ "-noutil", true }, { "-fullutil", false },
	};
	static struct gov variants[MAX_GOVS][ARRAY_SIZE(forced)];
	int i, k;

	for (i = 0; i < ngovs; i++) {
		if (!strcmp(govs[i].name, name))
			return &govs[i];
	}
	for (i = 0; i < ngovs; i++) {
		size_t len = strlen(govs[i].name);

		for (k = 0; k < ARRAY_SIZE(forced); k++) {
			struct gov *v = &variants[i][k];

			if (strncmp(govs[i].name, name, len) ||
			    strcmp(name + len, forced[k].suffix))
				continue;
			if (!v->name) {
				v->name = strdup(name);
				v->ops = govs[i].ops;
				v->no_util = forced[k].no_util;
				v->full_util = !forced[k].no_util;
			}
			return v->name ? v : NULL;
		}
	}
	for (i = 0; i < ARRAY_SIZE(bounds); i++) {
		if (!strcmp(bounds[i].name, name))
			return &bounds[i];
	}
	return NULL;
}

/* ---- Formats ---------------------------------------------------------- */

struct period {
	s64 timer_ns;		/* time to the next timer */
	s64 irq_ns;		/* time to a non-timer wakeup, -1: none */
	unsigned long util;
	unsigned long capacity;
	s64 latency_ns;		/* latency limit, S64_MAX: none */
	unsigned int cpu;
	s64 busy_ns;		/* run time after the wakeup */
	/*
	 * Trace version 2, a kernel's recorded idle entries: the time to the
	 * next tick and whether the tick was stopped at idle entry (-1: not
	 * recorded, modeled as in version 1).  With tick_ns recorded the
	 * line is one governor call, and irq_ns is the measured residency,
	 * whatever woke the CPU: see replay().  Version 3 adds whether the
	 * governor was told that the tick ran (1) or not (0) at the wakeup;
	 * -1: not recorded.  Version 4 adds, for a polling state, whether its
	 * time limit ended the entry (1) or not (0); -1: not recorded (the
	 * limit ends the entry if it comes first).  Version 5 adds whether
	 * a timer woke the CPU (1), even where the measured residency falls
	 * short of timer_ns, or not (0); -1: not recorded (a wakeup before
	 * timer_ns is an interrupt).
	 */
	s64 tick_ns;
	int stopped;
	int woke;
	int limit;
	int by_timer;
};

struct trace {
	struct period *p;
	size_t n, cap;
	int version;
};

/*
 * When a kept tick ends the idle time of a call @elapsed_ns into period
 * @p, the next tick being @delta_tick_ns away: then, unless the line
 * records whether the tick ran (version 3); it then ends at the measured
 * residency either way, and this is S64_MAX.  (Under emulation a tick is
 * often taken long after it was due: ending the line at the due time would
 * put the wakeup in another bin than the kernel's.)  Nor does a tick due
 * after a recorded line's timer end it: the timer, seen late, did.
 */
static s64 kept_tick_cut(const struct period *p, s64 delta_tick_ns,
			 s64 elapsed_ns)
{
	if (p->woke >= 0 ||
	    (p->tick_ns >= 0 && delta_tick_ns >= p->timer_ns - elapsed_ns))
		return S64_MAX;
	return delta_tick_ns;
}

/*
 * Whether a recorded line of @t that a governor's own choice cut short (a
 * kept tick the line says nothing of, or a polling limit it says nothing
 * of) goes on in another call for the rest of the line, as the kernel
 * would go back to idle: from version 3, whose lines say where the tick
 * ran, so that a cut one did not (the kernel had stopped it); a version 2
 * line ends there.
 */
static bool line_resumes(const struct trace *t)
{
	return t->version >= 3;
}

/*
 * The time to the next tick from a call @elapsed_ns into period @p, which
 * began @now_ns into the trace, the tick's period being @tick_ns: on a
 * modeled line the ticks fall on multiples of the period; on a recorded
 * one the first call is told the recorded tick, and a call @again after
 * it the tick after @elapsed_ns, the recorded one and then one every
 * period (a period away right after a tick that was due, even one due at
 * the line's start).
 */
static s64 next_tick(const struct period *p, u64 now_ns, s64 elapsed_ns,
		     bool again, s64 tick_ns)
{
	if (p->tick_ns < 0)
		return tick_ns - (s64)((now_ns + elapsed_ns) % tick_ns);
	if (!again)
		return p->tick_ns;
	if (elapsed_ns < p->tick_ns)
		return p->tick_ns - elapsed_ns;
	return tick_ns - (elapsed_ns - p->tick_ns) % tick_ns;
}

static char errbuf[512];

static int fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	int len;

	len = snprintf(errbuf, sizeof(errbuf), "%s:%d: ", file, line);
	va_start(ap, fmt);
	vsnprintf(errbuf + len, sizeof(errbuf) - len, fmt, ap);
	va_end(ap);
	return -1;
}

/* A non-negative integer, or "-" for @dash. */
static bool parse_num(const char *s, s64 dash, s64 *v)
{
	char *end;
	long long x;

	if (!strcmp(s, "-")) {
		*v = dash;
		return dash != -2;
	}
	errno = 0;
	x = strtoll(s, &end, 10);
	if (errno || *end || end == s || x < 0)
		return false;
	*v = x;
	return true;
}

/* Split @line into at most @max words; returns the count. */
static int split(char *line, char **w, int max)
{
	int n = 0;
	char *tok, *save;

	for (tok = strtok_r(line, " \t\r\n", &save); tok;
	     tok = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == max)
			return max + 1;
		w[n++] = tok;
	}
	return n;
}

/*
 * Read a whole text, line by line.  The first non-comment line must be
 * "@magic v1"; @fn gets every later one.
 */
/*
 * read_lines - Call @fn on each line of @text after the first, which must
 * be "@magic vN" with N from 1 to @max_version; N goes to *@version.
 */
static int read_lines(const char *name, const char *text, const char *magic,
		      int max_version, int *version,
		      int (*fn)(void *ctx, const char *name, int line, char *s),
		      void *ctx)
{
	const char *p = text;
	bool seen_magic = false;
	char buf[512];
	int line = 0;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char *hash;

		line++;
		if (len >= sizeof(buf))
			return fail(name, line, "line longer than %zu characters",
				    sizeof(buf) - 1);
		memcpy(buf, p, len);
		buf[len] = 0;
		p += len + (nl ? 1 : 0);

		hash = strchr(buf, '#');
		if (hash)
			*hash = 0;
		if (strspn(buf, " \t\r") == strlen(buf))
			continue;
		if (!seen_magic) {
			const char *w = buf + strspn(buf, " \t");
			char want[64];
			int v = 0;

			snprintf(want, sizeof(want), "%s v", magic);
			if (!strncmp(w, want, strlen(want)))
				v = atoi(w + strlen(want));
			if (v < 1 || v > max_version)
				return fail(name, line, max_version > 1 ?
					    "expected \"%s v1\" to \"%s v%d\" first" :
					    "expected \"%s v1\" first", magic, magic,
					    max_version);
			*version = v;
			seen_magic = true;
			continue;
		}
		if (fn(ctx, name, line, buf))
			return -1;
	}
	if (!seen_magic)
		return fail(name, line, "empty: no \"%s v1\" line", magic);
	return 0;
}

static int table_line(void *ctx, const char *name, int line, char *s)
{
	struct cpuidle_driver *drv = ctx;
	struct cpuidle_state *st;
	s64 lat, res, power;
	char *w[6];
	int n = split(s, w, 5);

	if (n != 5)
		return fail(name, line, "want 5 fields (name exit_latency_us target_residency_us flags power_mw), got %d", n);
	if (drv->state_count == CPUIDLE_STATE_MAX)
		return fail(name, line, "more than %d states", CPUIDLE_STATE_MAX);
	if (!parse_num(w[1], -2, &lat) || !parse_num(w[2], -2, &res) ||
	    !parse_num(w[4], -2, &power) || lat > INT_MAX || res > INT_MAX ||
	    power > INT_MAX)
		return fail(name, line, "latency, residency and power must be whole numbers from 0 to %d", INT_MAX);
	if (strcmp(w[3], "poll") && strcmp(w[3], "-"))
		return fail(name, line, "flags must be \"poll\" or \"-\", not \"%s\"", w[3]);
	if (strlen(w[0]) >= CPUIDLE_NAME_LEN)
		return fail(name, line, "state name longer than %d characters", CPUIDLE_NAME_LEN - 1);
	if (drv->state_count &&
	    res < drv->states[drv->state_count - 1].target_residency)
		return fail(name, line, "target residency below the previous state's: states go shallowest first");

	st = &drv->states[drv->state_count++];
	memset(st, 0, sizeof(*st));
	strcpy(st->name, w[0]);
	st->exit_latency = lat;
	st->target_residency = res;
	st->exit_latency_ns = lat * NSEC_PER_USEC;
	st->target_residency_ns = res * NSEC_PER_USEC;
	st->power_usage = power;
	st->flags = strcmp(w[3], "poll") ? 0 : CPUIDLE_FLAG_POLLING;
	return 0;
}

static int parse_table(const char *name, const char *text,
		       struct cpuidle_driver *drv)
{
	memset(drv, 0, sizeof(*drv));
	drv->name = name;
	int version;

	if (read_lines(name, text, "teo-states", 1, &version, table_line, drv))
		return -1;
	if (!drv->state_count)
		return fail(name, 0, "no states");
	return 0;
}

/*
 * A trace line's fields in order: version N has the first trace_fields[N];
 * those from TRACE_FLAGS on are 0, 1 or "-", and a field that a version
 * does not have reads as "-" (-1).
 */
static const char *const trace_field_names[] = {
	"timer_ns", "irq_ns", "util", "capacity", "latency_ns", "cpu", "busy_ns",
	"tick_ns", "stopped", "woke", "limit", "by_timer",
};
static const int trace_fields[] = { 0, 7, 9, 10, 11, 12 };
#define TRACE_FLAGS	8

static int trace_line(void *ctx, const char *name, int line, char *s)
{
	struct trace *t = ctx;
	int i, n, want = trace_fields[t->version];
	char *w[ARRAY_SIZE(trace_field_names) + 1];
	s64 v[ARRAY_SIZE(trace_field_names)];
	struct period *p;

	n = split(s, w, want);
	if (n != want) {
		char list[128] = "";

		for (i = 0; i < want; i++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list),
				 "%s%s", i ? " " : "", trace_field_names[i]);
		return fail(name, line, "want %d fields (%s), got %d", want, list, n);
	}
	for (i = 0; i < (int)ARRAY_SIZE(v); i++) {
		s64 dash = i == 1 || i >= 7 ? -1 : i == 4 ? S64_MAX : -2;

		if (i >= want)
			v[i] = -1;
		else if (!parse_num(w[i], dash, &v[i]))
			return fail(name, line, "field %d (\"%s\") is not a whole number%s",
				    i + 1, w[i], dash != -2 ? " or -" : "");
		else if (i >= TRACE_FLAGS && v[i] > 1)
			return fail(name, line, "%s must be 0, 1 or -",
				    trace_field_names[i]);
	}
	if (v[5] >= SHIM_NR_CPUS)
		return fail(name, line, "cpu %lld is beyond %d", v[5], SHIM_NR_CPUS - 1);
	if (v[3] == 0 || v[2] > v[3])
		return fail(name, line, "utilization must be within a non-zero capacity");

	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 1024;
		struct period *np = realloc(t->p, cap * sizeof(*np));

		if (!np)
			return fail(name, line, "out of memory");
		t->p = np;
		t->cap = cap;
	}
	p = &t->p[t->n++];
	*p = (struct period) {
		.timer_ns = v[0], .irq_ns = v[1], .util = v[2],
		.capacity = v[3], .latency_ns = v[4], .cpu = v[5],
		.busy_ns = v[6],
		.tick_ns = v[7], .stopped = v[8], .woke = v[9], .limit = v[10],
		.by_timer = v[11],
	};
	return 0;
}

static int parse_trace(const char *name, const char *text, struct trace *t)
{
	memset(t, 0, sizeof(*t));
	return read_lines(name, text, "teo-trace", ARRAY_SIZE(trace_fields) - 1,
			  &t->version, trace_line, t);
}

/* ---- The replayed core ------------------------------------------------ */

struct result {
	u64 wakeups, above, below, oracle_hits, tick_stopped;
	u64 residency_ns[CPUIDLE_STATE_MAX];
	u64 usage[CPUIDLE_STATE_MAX];
	u64 irq_wakeups, irq_exit_latency_ns;
	u64 deepest_entries, deepest_tick_stopped;
	u64 below_ref_ns;	/* idle time in states shallower than ref_idx[] */
	u64 misfit_ns;		/* idle time in states shallower than the oracle's */
	u64 tick_stops;		/* the tick stopped (and later restarted) */
	u64 span_ns;		/* the trace's time: idle and busy */
	double util_sum;	/* utilization / capacity, summed over periods */
	double energy_uj;	/* modeled, see model_costs(), tick stops included */
	double energy_table_uj;	/* in the table-implied model, the same */
	double plan_uj;		/* an oracle's planned energy in its model */
	int bad_index;		/* an out-of-range index was returned */
	u64 violations;		/* invariant violations (with check_invariants) */
	u64 disabled_picks;	/* of which a disabled state, another enabled */
	u64 shadow_same;	/* decisions the shadow governor made alike */
	u64 shadow_idx_same;	/* of which the same state, whatever the tick */
	char shadow_first[160];	/* the first decision that differed */
	/* The longest idle period in a state shallower than the shadow's. */
	s64 shallower_stopped_ns;	/* with the tick stopped */
	s64 shallower_kept_ns;		/* with the tick running */
};

struct replay_cfg {
	s64 tick_ns;
	int exit_share_pct;	/* share of the exit latency in the residency */
	u32 disabled;
	/*
	 * What stopping the tick and restarting it later costs, as time at
	 * the table's highest power (see tick_stop_uj()).
	 */
	s64 tick_cost_ns;
	/* A latency limit for every CPU (as CPU latency QoS), if has_qos. */
	bool has_qos;
	s64 qos_ns;
	bool check_invariants;
	s64 *irq_latencies;	/* if set: exit latency paid at each non-timer wakeup */
	int *first_idx;		/* if set: the state first chosen in each period */
	const int *ref_idx;	/* if set: count idle time in states shallower */
	const struct gov *shadow;	/* if set: see shadow_select() */
	FILE *decisions;	/* if set: one line per governor call */
	/*
	 * If set, a tick due while a polling state spins does not end it
	 * (poll_idle() stops only at need_resched() or its time limit): the
	 * idle period goes on and the governor sees the tick's flag.
	 */
	bool tick_in_poll;
};

/* The invariants of the KUnit suite, as broken_invariants() reports them. */
enum {
	BROKEN_DISABLED = 1,	/* a disabled state, though one is enabled */
	BROKEN_LATENCY = 2,	/* over the limit, though an enabled state is not */
	BROKEN_POLL_TICK = 4,	/* the tick stopped for a polling state */
	/*
	 * (Only if the tick was running: with the tick already stopped, the
	 * core keeps it stopped whatever the governor says, see
	 * idle_call_stop_or_retain_tick().)
	 */
};

/* The invariants a governor's answer breaks (BROKEN_*), 0 if none. */
static int broken_invariants(const struct cpuidle_driver *drv,
			     const struct cpuidle_device *dev, int idx,
			     bool stop_tick, bool stopped, s64 lat_ns)
{
	bool any_enabled = false, any_usable = false;
	int i, broken = 0;

	for (i = 0; i < drv->state_count; i++) {
		any_enabled |= !dev->states_usage[i].disable;
		any_usable |= usable(drv, dev, i, lat_ns);
	}
	if (any_enabled && dev->states_usage[idx].disable)
		broken |= BROKEN_DISABLED;
	if (any_usable && drv->states[idx].exit_latency_ns > lat_ns)
		broken |= BROKEN_LATENCY;
	if (stop_tick && !stopped &&
	    (drv->states[idx].flags & CPUIDLE_FLAG_POLLING))
		broken |= BROKEN_POLL_TICK;
	return broken;
}

/* cpuidle_poll_time(): how long a polling state may spin. */
static s64 poll_limit(const struct cpuidle_driver *drv,
		      const struct cpuidle_device *dev, s64 tick_ns)
{
	int i;

	for (i = 1; i < drv->state_count; i++) {
		if (dev->states_usage[i].disable ||
		    drv->states[i].target_residency_ns < POLL_MIN_NS)
			continue;
		return min(drv->states[i].target_residency_ns, tick_ns / 16);
	}
	return tick_ns / 16;
}

/* cpuidle_enter_state()'s above/below accounting. */
static void account(const struct cpuidle_driver *drv,
		    struct cpuidle_device *dev, int idx, s64 diff,
		    struct result *r)
{
	s64 delay = drv->states[idx].exit_latency_ns;
	int i;

	if (diff < drv->states[idx].target_residency_ns) {
		for (i = idx - 1; i >= 0; i--) {
			if (dev->states_usage[i].disable)
				continue;
			dev->states_usage[idx].above++;
			r->above++;
			break;
		}
	} else if (diff > delay) {
		for (i = idx + 1; i < drv->state_count; i++) {
			if (dev->states_usage[i].disable)
				continue;
			if (diff - delay >= drv->states[i].target_residency_ns) {
				dev->states_usage[idx].below++;
				r->below++;
			}
			break;
		}
	}
}

static double seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Energy models: a state's power over the time spent in it, plus a cost of
 * entering and leaving it (mW * ns), in uJ.  model_costs() fills the
 * costs of both per state:
 *
 * - @peak, the default model: the exit latency at the table's highest
 *   power (waking up is not free);
 * - @table, the model the table itself implies: the cost that makes each
 *   target residency the exact break-even point with the state above, as a
 *   driver's target residencies are by their definition, the sum over the
 *   states up to i of (power(j - 1) - power(j)) * res(j) (none below zero,
 *   for a table whose deeper state draws more).  The default model's
 *   break-even points differ from the table's; beside it, this one tells an
 *   energy difference that comes from a governor's choice from one that
 *   comes from the model disagreeing with the table.
 */
static void model_costs(const struct cpuidle_driver *drv, double *peak,
			double *table)
{
	int i, top = 0;

	for (i = 0; i < drv->state_count; i++)
		top = max(top, drv->states[i].power_usage);
	for (i = 0; i < drv->state_count; i++) {
		peak[i] = top * (double)drv->states[i].exit_latency_ns;
		table[i] = i ? table[i - 1] +
			       max(0.0, (double)(drv->states[i - 1].power_usage -
						 drv->states[i].power_usage) *
					drv->states[i].target_residency_ns) : 0;
	}
}

static double model_energy(const struct cpuidle_driver *drv,
			   const double *cost, int idx, s64 ns)
{
	return (drv->states[idx].power_usage * (double)ns + cost[idx]) / 1e6;
}

/*
 * The power at which the CPU runs the tick's stop and restart: the table's
 * highest, as the default model charges waking up at.
 */
static int running_mw(const struct cpuidle_driver *drv)
{
	int i, top = 0;

	for (i = 0; i < drv->state_count; i++)
		top = max(top, drv->states[i].power_usage);
	return top;
}

/* What one stop of the tick and its restart cost, in uJ. */
static double tick_stop_uj(const struct cpuidle_driver *drv,
			   const struct replay_cfg *cfg)
{
	return running_mw(drv) * (double)cfg->tick_cost_ns / 1e6;
}

/*
 * The part of a state's exit latency spent waking up, which the residency
 * includes: a table may claim any exit latency, but waking up takes at most
 * a second here.
 */
static s64 exit_share(const struct cpuidle_state *s,
		      const struct replay_cfg *cfg)
{
	s64 lat = s->exit_latency_ns < NSEC_PER_SEC ? s->exit_latency_ns :
		  NSEC_PER_SEC;

	return lat * cfg->exit_share_pct / 100;
}

/*
 * The energy replay() counts for @ns of idle time in state @i, in the
 * model of @cost; @share: the residency includes part of the exit latency
 * (always, but for a recorded line that ended by itself: see replay()).
 */
static double segment_uj(const struct cpuidle_driver *drv, const double *cost,
			 const struct replay_cfg *cfg, int i, s64 ns, bool share)
{
	return model_energy(drv, cost, i,
			    ns + (share ? exit_share(&drv->states[i], cfg) : 0));
}

/*
 * The cheapest state for @ns of idle time in the model of @cost among the
 * usable ones (enabled, within @lat_ns), or among all if none is usable;
 * its energy goes to *@uj.
 */
static int cheapest(const struct cpuidle_driver *drv,
		    const struct cpuidle_device *dev, const double *cost,
		    const struct replay_cfg *cfg, s64 lat_ns, s64 ns, bool share,
		    double *uj)
{
	int i, best = -1, pass;

	for (pass = 0; pass < 2 && best < 0; pass++) {
		for (i = 0; i < drv->state_count; i++) {
			double e;

			if (!pass && !usable(drv, dev, i, lat_ns))
				continue;
			e = segment_uj(drv, cost, cfg, i, ns, share);
			if (best < 0 || e < *uj) {
				best = i;
				*uj = e;
			}
		}
	}
	return best;
}

/*
 * The oracles ("oracle" in the default model, "oracle-table" in the one the
 * table implies) know the whole trace and spend it on the least energy
 * replay() can count in their model, the tick's stops included: no
 * governor, which chooses among the same states, tick decisions and tick
 * phases without knowing the future, can use less.
 *
 * A governor's choices in a period are a state for each call and whether
 * to stop the tick.  A call's segment lasts until the period's end, or
 * until the next tick if the tick runs and comes first; the cheapest state
 * for a segment depends only on its length, so what remains to choose is
 * when to stop the tick: at idle entry, at one of the tick wakeups, or
 * never.  With the tick running from idle entry, d0 to the next tick, a
 * tick period P and an idle period T > d0, n = (T - d0 - 1) / P full tick
 * periods fit before the last segment L; stopping at the i-th tick
 * wakeup after the first costs E(d0) + i * E(P) + C + E(T - d0 - i * P),
 * with E() the cheapest segment's energy (a minimum of affine functions,
 * so concave) and C a stop's cost: a concave function of i, least at i = 0
 * or i = n.  So four ways cover every choice: stop at entry, at the first
 * tick wakeup, at the last one, or never.  A stopped tick stays stopped
 * into the next period if an interrupt that wakes no task ended this one
 * (see replay()), so the plan is made over the whole trace, per CPU, by
 * dynamic programming over the tick's state at each idle entry.
 *
 * Polling states' time limits are left out: they split a segment in a
 * polling state, which costs nothing for a polling state that takes no
 * time to leave.  On a recorded line (trace version 2) a kept tick ends
 * the line, as it ends it for every governor: at the recorded tick, or
 * at the measured residency (version 3, see kept_tick_cut()).  From
 * version 3, a kept tick that the line says nothing of (the kernel had
 * stopped it) wakes the CPU at the recorded tick and every tick period
 * after, as on a modeled line, until the measured residency (@resume).
 */
struct way {
	double uj;		/* the period's energy */
	s64 stop_at;		/* when into it the tick is stopped, S64_MAX never */
	bool stopped;		/* the tick is stopped at its end */
};

/*
 * The ways to spend period @p, entered at @start_ns with the tick stopped
 * or not (@stopped), into @w (room for 4); returns how many.
 */
static int period_ways(const struct cpuidle_driver *drv,
		       const struct cpuidle_device *dev, const double *cost,
		       const struct replay_cfg *cfg, const struct period *p,
		       u64 start_ns, bool stopped, s64 lat_ns, bool resume,
		       struct way *w)
{
	bool irq = p->irq_ns >= 0 && p->irq_ns < p->timer_ns;
	bool recorded = p->tick_ns >= 0;
	s64 t = irq || (recorded && p->irq_ns >= 0) ? p->irq_ns : p->timer_ns;
	s64 tick = cfg->tick_ns, d0, rest, n, last;
	double c = tick_stop_uj(drv, cfg), e0, ep, el, e;
	/* Whether a stopped tick stays stopped into the next period. */
	bool keep = irq && !p->busy_ns;
	int nw = 0;

#define WAY(u, at, st) (w[nw++] = (struct way){ .uj = (u), .stop_at = (at), .stopped = (st) })
	cheapest(drv, dev, cost, cfg, lat_ns, t, !recorded, &e);
	if (stopped) {
		WAY(e, S64_MAX, keep);
		return nw;
	}
	WAY(c + e, 0, keep);
	d0 = recorded ? kept_tick_cut(p, p->tick_ns, 0) :
			tick - (s64)(start_ns % tick);
	if (d0 >= t) {
		WAY(e, S64_MAX, false);
		return nw;
	}
	cheapest(drv, dev, cost, cfg, lat_ns, d0, true, &e0);
	if (recorded && !resume) {
		/* The tick ends the line. */
		WAY(e0, S64_MAX, false);
		return nw;
	}
	rest = t - d0;
	/* On a recorded line, the ticks end at the timer (see above). */
	n = ((recorded ? min(t, p->timer_ns) : t) - d0 - 1) / tick;
	last = rest - n * tick;
	cheapest(drv, dev, cost, cfg, lat_ns, rest, !recorded, &e);
	WAY(e0 + c + e, d0, keep);
	cheapest(drv, dev, cost, cfg, lat_ns, last, !recorded, &el);
	ep = 0;
	if (n)
		cheapest(drv, dev, cost, cfg, lat_ns, tick, true, &ep);
	WAY(e0 + n * ep + el, S64_MAX, false);
	if (n)
		WAY(e0 + n * ep + c + el, t - last, keep);
#undef WAY
	return nw;
}

/* The plan the oracle of the current replay follows (see oracle()). */
static struct {
	s64 *stop_at;		/* per period, when to stop the tick */
	const double *cost;	/* the model's costs of entering and leaving */
	const struct replay_cfg *cfg;
} plan;

/* Per period, the best way to each tick state at its end. */
struct plan_step {
	double uj[2];		/* the least energy from the start, per end state */
	signed char entry[2];		/* with the tick stopped at entry (1) or not (0) */
	s64 stop_at[2];		/* and when the tick was stopped */
	signed char before[2];		/* per entry state: the previous period's end state */
	ssize_t prev;		/* the CPU's previous period, -1 for none */
};

/* One more than the highest CPU a period of @t is on: the CPUs to set up. */
static int trace_cpus(const struct trace *t)
{
	unsigned int n = 1;
	size_t k;

	for (k = 0; k < t->n; k++)
		n = max(n, t->p[k].cpu + 1);
	return n;
}

/*
 * Make the plan for trace @t in the model of @cost into plan.stop_at; the
 * devices @devs give the disabled states.  Returns the plan's energy
 * (uJ), or a negative value if out of memory.
 */
static double make_plan(const struct cpuidle_driver *drv,
			const struct cpuidle_device *devs,
			const struct trace *t, const struct replay_cfg *cfg,
			const double *cost)
{
	static ssize_t last[SHIM_NR_CPUS];
	int ncpus = trace_cpus(t);
	struct plan_step *st = calloc(t->n + 1, sizeof(*st));
	s64 *stop_at = realloc(plan.stop_at, (t->n + 1) * sizeof(*stop_at));
	double total = 0;
	u64 now = 0;
	size_t k;
	int cpu;

	if (!st || !stop_at) {
		free(st);
		return -1;
	}
	plan.stop_at = stop_at;
	plan.cost = cost;
	plan.cfg = cfg;
	for (cpu = 0; cpu < ncpus; cpu++)
		last[cpu] = -1;

	for (k = 0; k < t->n; k++) {
		const struct period *p = &t->p[k];
		s64 lat = cfg->has_qos ? min(p->latency_ns, cfg->qos_ns) : p->latency_ns;
		double from[2] = { 0, INFINITY };
		struct way w[4];
		int s, i, n;

		st[k].prev = last[p->cpu];
		st[k].uj[0] = st[k].uj[1] = INFINITY;
		for (s = 0; s < 2; s++)
			st[k].before[s] = s;
		if (st[k].prev >= 0) {
			from[0] = st[st[k].prev].uj[0];
			from[1] = st[st[k].prev].uj[1];
		}
		if (p->stopped >= 0) {
			/* A recorded tick state: whatever the plan did before. */
			s = from[1] < from[0];
			from[p->stopped] = from[s];
			from[!p->stopped] = INFINITY;
			st[k].before[p->stopped] = s;
		}
		for (s = 0; s < 2; s++) {
			if (from[s] == INFINITY)
				continue;
			n = period_ways(drv, &devs[p->cpu], cost, cfg, p, now, s,
					lat, line_resumes(t), w);
			for (i = 0; i < n; i++) {
				double e = from[s] + w[i].uj;

				if (e < st[k].uj[w[i].stopped]) {
					st[k].uj[w[i].stopped] = e;
					st[k].entry[w[i].stopped] = s;
					st[k].stop_at[w[i].stopped] = w[i].stop_at;
				}
			}
		}
		last[p->cpu] = k;
		now += (p->irq_ns >= 0 && (p->irq_ns < p->timer_ns || p->tick_ns >= 0) ?
			p->irq_ns : p->timer_ns) + p->busy_ns;
	}

	/* Back from each CPU's last period, along the cheapest ends. */
	for (cpu = 0; cpu < ncpus; cpu++) {
		ssize_t j = last[cpu];
		int end;

		if (j < 0)
			continue;
		end = st[j].uj[1] < st[j].uj[0];
		total += st[j].uj[end];
		while (j >= 0) {
			int entry = st[j].entry[end];

			stop_at[j] = st[j].stop_at[end];
			end = st[j].before[entry];
			j = st[j].prev;
		}
	}
	free(st);
	return total;
}

/* An oracle's call: the plan's tick decision, the cheapest state. */
static int oracle(const struct call *c, bool *stop_tick)
{
	bool stop = !c->stopped && c->elapsed_ns >= plan.stop_at[c->k];
	bool cut = !c->stopped && !stop && c->tick_cut_ns < c->idle_ns;
	double uj;

	*stop_tick = c->stopped || stop;
	return cheapest(c->drv, c->dev, plan.cost, plan.cfg, c->lat_ns,
			cut ? c->tick_cut_ns : c->idle_ns, cut || !c->recorded,
			&uj);
}

static void reset_devices(struct cpuidle_device *devs, int ncpus,
			  const struct cpuidle_driver *drv, const struct gov *g,
			  const struct replay_cfg *cfg)
{
	int i, s;

	for (i = 0; i < ncpus; i++) {
		memset(&devs[i], 0, sizeof(devs[i]));
		devs[i].cpu = i;
		devs[i].last_state_idx = -1;
		for (s = 0; s < drv->state_count; s++)
			devs[i].states_usage[s].disable = !!(cfg->disabled & BIT(s));
		if (g->ops && g->ops->enable) {
			shim_this_cpu = i;
			g->ops->enable((struct cpuidle_driver *)drv, &devs[i]);
		}
	}
}

/* The utilization @g is told in period @p: its own, or forced (find_gov()). */
static unsigned long util_seen(const struct gov *g, const struct period *p)
{
	return g->no_util ? 0 : g->full_util ? p->capacity : p->util;
}

/*
 * Lockstep comparison: the shadow governor is asked for its decision with
 * the inputs the replayed one got (but the utilization its name forces,
 * if it does: "teo-noutil" is told 0 whichever governor leads), and is
 * then told that the replayed one's state was entered, with the same
 * residency and the same tick and polling-limit flags.  Both therefore see
 * one history, and a difference is a difference of decision alone.  With
 * the tick already stopped the tick decision is ignored, as the core
 * ignores it.
 */
static int shadow_select(struct cpuidle_driver *drv,
			 struct cpuidle_device *sdev, const struct replay_cfg *cfg,
			 const struct period *p, int idx, bool stop_tick,
			 bool stopped, size_t k, struct result *r)
{
	unsigned long util = now_seen.util;
	bool sstop = true;
	int sidx;

	now_seen.util = util_seen(cfg->shadow, p);
	sidx = cfg->shadow->ops->select(drv, sdev, &sstop);
	now_seen.util = util;

	r->shadow_idx_same += sidx == idx;
	if (sidx == idx && (stopped || sstop == stop_tick)) {
		r->shadow_same++;
		return sidx;
	}
	if (!r->shadow_first[0])
		snprintf(r->shadow_first, sizeof(r->shadow_first),
			 "period %zu: state %d, tick %s; %s: state %d, tick %s (sleep length %lld ns%s)",
			 k + 1, idx, stop_tick ? "stopped" : "kept",
			 cfg->shadow->name, sidx, sstop ? "stopped" : "kept",
			 now_seen.sleep_length_ns, stopped ? ", tick stopped" : "");
	return sidx;
}

static int replay(const struct cpuidle_driver *drv0, const struct trace *t,
		  const struct gov *g, const struct replay_cfg *cfg,
		  struct result *r)
{
	static struct cpuidle_device devs[SHIM_NR_CPUS];
	static struct cpuidle_device sdevs[SHIM_NR_CPUS];
	static bool kept_stopped[SHIM_NR_CPUS];
	struct cpuidle_driver drv = *drv0;
	double peak[CPUIDLE_STATE_MAX], table[CPUIDLE_STATE_MAX];
	double stop_uj = tick_stop_uj(&drv, cfg);
	/*
	 * The trace's own time, idle and busy: the tick's phase at each idle
	 * entry is the same for every governor.
	 */
	u64 now = 0;
	size_t k;

	memset(r, 0, sizeof(*r));
	model_costs(&drv, peak, table);
	memset(kept_stopped, 0, sizeof(kept_stopped));
	shim_tick_nsec = cfg->tick_ns;
	reset_devices(devs, trace_cpus(t), &drv, g, cfg);
	if (cfg->shadow)
		reset_devices(sdevs, trace_cpus(t), &drv, cfg->shadow, cfg);
	if (g->model) {
		r->plan_uj = make_plan(&drv, devs, t, cfg,
				       g->model == MODEL_TABLE ? table : peak);
		if (r->plan_uj < 0) {
			fprintf(stderr, "cpuidle-replay: out of memory\n");
			exit(2);
		}
	}

	for (k = 0; k < t->n; k++) {
		const struct period *p = &t->p[k];
		struct cpuidle_device *dev = &devs[p->cpu];
		struct cpuidle_device *sdev = &sdevs[p->cpu];
		s64 natural = p->timer_ns, elapsed = 0;
		s64 lat = cfg->has_qos ? min(p->latency_ns, cfg->qos_ns) : p->latency_ns;
		/*
		 * A recorded entry: one call, its tick as recorded, and more
		 * only after a kept tick or a polling limit that the line says
		 * nothing of (@again).
		 */
		bool irq = false, recorded = p->tick_ns >= 0, again = false;
		/*
		 * The idle loop restarts a stopped tick only when the CPU
		 * leaves it to run a task: after an interrupt that woke no
		 * task (a non-timer wakeup with no busy time) the CPU
		 * re-enters idle with the tick still stopped.
		 */
		bool stopped = p->stopped >= 0 ? p->stopped :
			       kept_stopped[p->cpu];

		if (p->irq_ns >= 0 && p->irq_ns < natural) {
			natural = p->irq_ns;
			/*
			 * Unless the line records that a timer woke the CPU:
			 * the residency starts at the state's entry, the sleep
			 * length at the idle loop's, and under emulation the
			 * time between them is long.
			 */
			irq = p->by_timer <= 0;
		} else if (recorded && p->irq_ns >= 0) {
			/* The measured residency: the timer, seen late. */
			natural = p->irq_ns;
		}
		shim_this_cpu = p->cpu;
		now_seen.latency_req_ns = lat;
		now_seen.util = util_seen(g, p);
		now_seen.capacity = p->capacity;
		r->util_sum += (double)p->util / p->capacity;

		/*
		 * The idle loop: a wakeup by the tick or the polling limit
		 * before the period's end re-enters idle for the rest of it,
		 * with the tick still stopped if the governor stopped it.
		 */
		do {
			s64 delta_tick = next_tick(p, now, elapsed, again,
						   cfg->tick_ns);
			s64 idle = natural - elapsed, diff;
			s64 cut = kept_tick_cut(p, delta_tick, elapsed);
			bool stop_tick = true, tick_woke = false, tick_cut = false;
			bool poll_woke = false, polls, measured;
			int idx, best, sidx = -1;
			double best_uj;

			now_seen.sleep_length_ns = p->timer_ns - elapsed;
			now_seen.delta_tick_ns = stopped ? now_seen.sleep_length_ns :
					       delta_tick;
			now_seen.tick_stopped = stopped;
			now_seen.got_tick = false;
			now_seen.clock_ns = now + elapsed;

			if (g->ops) {
				idx = g->ops->select(&drv, dev, &stop_tick);
			} else {
				struct call c = {
					.drv = &drv, .dev = dev, .k = k,
					.elapsed_ns = elapsed, .idle_ns = idle,
					.tick_cut_ns = cut, .lat_ns = lat,
					.stopped = stopped, .recorded = recorded,
				};

				idx = g->bound(&c, &stop_tick);
			}
			if (idx < 0 || idx >= drv.state_count) {
				r->bad_index = idx;
				return -1;
			}
			if (cfg->shadow)
				sidx = shadow_select(&drv, sdev, cfg, p, idx,
						     stop_tick, stopped, k, r);
			if (cfg->check_invariants) {
				int broken = broken_invariants(&drv, dev, idx,
							       stop_tick, stopped,
							       lat);

				r->violations += !!broken;
				r->disabled_picks += !!(broken & BROKEN_DISABLED);
			}
			if (cfg->decisions)
				fprintf(cfg->decisions, "%zu %u %d %d %d\n", k + 1,
					p->cpu, idx, stop_tick, stopped);
			if (stop_tick && !stopped) {
				r->tick_stops++;
				r->energy_uj += stop_uj;
				r->energy_table_uj += stop_uj;
			}
			stopped |= stop_tick;
			polls = drv.states[idx].flags & CPUIDLE_FLAG_POLLING;

			if (p->woke >= 0) {
				tick_woke = p->woke;
			} else if (!stopped && cut < idle &&
				   !(polls && cfg->tick_in_poll)) {
				idle = cut;
				tick_woke = tick_cut = true;
			}
			if (polls) {
				s64 poll_ns = poll_limit(&drv, dev, cfg->tick_ns);

				/*
				 * A recorded tick may have run while it polled;
				 * a recorded limit (version 4) ended the entry,
				 * at the recorded residency, or did not, even
				 * past it (the polling loop reads the clock
				 * only now and then).
				 */
				if (p->limit >= 0 ? p->limit : poll_ns < idle) {
					if (p->limit < 0 || p->woke < 0)
						idle = min(idle, poll_ns);
					poll_woke = true;
					tick_woke = p->woke > 0;
				}
				if (cfg->tick_in_poll)
					tick_woke = p->woke >= 0 ? p->woke :
						    !stopped && cut < idle;
			}

			/*
			 * Cut short, before the line's end and its timer, by a
			 * kept tick or a polling limit that a recorded line says
			 * nothing of (kept_tick_cut() keeps the tick to the
			 * timer; a timer seen late, past its expiry, would have
			 * woken a polling CPU): the rest is chosen for again,
			 * and a tick that the line records ran at its end.
			 */
			again = recorded && line_resumes(t) &&
				(tick_cut || (poll_woke && p->limit < 0)) &&
				idle < min(natural, p->timer_ns) - elapsed;
			if (again && p->woke >= 0)
				tick_woke = false;

			/*
			 * A recorded residency has its exit latency in it, a
			 * modeled one a share of it.
			 */
			measured = recorded && !poll_woke &&
				   (!tick_woke || p->woke > 0);
			diff = idle + (measured ? 0 :
				       exit_share(&drv.states[idx], cfg));
			dev->last_residency_ns = diff;
			dev->poll_time_limit = poll_woke;
			dev->states_usage[idx].usage++;
			dev->states_usage[idx].time_ns += diff;
			account(&drv, dev, idx, diff, r);
			if (idx < sidx && (stopped || stop_tick))
				r->shallower_stopped_ns = max(r->shallower_stopped_ns, diff);
			else if (idx < sidx)
				r->shallower_kept_ns = max(r->shallower_kept_ns, diff);

			r->wakeups++;
			r->usage[idx]++;
			r->residency_ns[idx] += diff;
			r->tick_stopped += stop_tick;
			if (idx == drv.state_count - 1) {
				r->deepest_entries++;
				r->deepest_tick_stopped += stop_tick;
			}
			if (cfg->first_idx && !elapsed)
				cfg->first_idx[k] = idx;
			if (cfg->ref_idx && idx < cfg->ref_idx[k])
				r->below_ref_ns += diff;
			r->energy_uj += model_energy(&drv, peak, idx, diff);
			r->energy_table_uj += model_energy(&drv, table, idx, diff);
			best = cheapest(&drv, dev, table, cfg, lat, natural - elapsed,
					!recorded, &best_uj);
			r->oracle_hits += idx == best;
			if (idx < best)
				r->misfit_ns += diff;
			elapsed += idle;
			/*
			 * A recorded tick that woke the CPU is no interrupt,
			 * nor is a polling limit recorded past the wakeup.
			 */
			if (irq && elapsed >= natural && !(measured && tick_woke) &&
			    !poll_woke) {
				if (cfg->irq_latencies)
					cfg->irq_latencies[r->irq_wakeups] =
						drv.states[idx].exit_latency_ns;
				r->irq_wakeups++;
				r->irq_exit_latency_ns +=
					drv.states[idx].exit_latency_ns;
			}

			now_seen.got_tick = tick_woke;
			now_seen.clock_ns = now + elapsed;
			if (g->ops && g->ops->reflect)
				g->ops->reflect(dev, idx);
			if (cfg->shadow) {
				sdev->last_residency_ns = diff;
				sdev->poll_time_limit = poll_woke;
				cfg->shadow->ops->reflect(sdev, idx);
			}
		} while (elapsed < natural && (!recorded || again));

		kept_stopped[p->cpu] = stopped && irq && !p->busy_ns;
		now += natural + p->busy_ns;
	}
	r->span_ns = now;
	return 0;
}

/* ---- Self-tests ------------------------------------------------------- */

static int passed, failed;

static void check(bool ok, const char *what, ...)
{
	va_list ap;

	printf("%s: ", ok ? "PASS" : "FAIL");
	va_start(ap, what);
	vprintf(what, ap);
	va_end(ap);
	printf("\n");
	if (ok)
		passed++;
	else
		failed++;
}

static const char x86_table[] =
	"teo-states v1\n"
	"# name exit_latency_us target_residency_us flags power_mw\n"
	"POLL 0 0 poll 3000\n"
	"C1 1 1 - 1200\n"
	"C2 120 360 - 400\n"
	"C3 1034 3102 - 50\n";

static const char arm3_table[] =
	"teo-states v1\n"
	"WFI 1 1 - 300\n"
	"cpu-sleep 250 900 - 40\n"
	"cluster-sleep 500 2000 - 10\n";

/* A small, seeded, deterministic generator. */
static u64 rng_state;

static u64 rng(void)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return rng_state >> 33;
}

static void must_parse_table(const char *text, struct cpuidle_driver *drv)
{
	if (parse_table("builtin", text, drv)) {
		fprintf(stderr, "cpuidle-replay: built-in table: %s\n", errbuf);
		exit(2);
	}
}

/* Append a generated @line of trace version @version to @t. */
static void add_line(struct trace *t, int version, char *line)
{
	t->version = version;
	if (trace_line(t, "generated", (int)t->n + 1, line)) {
		fprintf(stderr, "cpuidle-replay: %s\n", errbuf);
		exit(2);
	}
}

static void add(struct trace *t, s64 timer, s64 irq, s64 busy)
{
	char line[128], irq_s[24] = "-";

	if (irq >= 0)
		snprintf(irq_s, sizeof(irq_s), "%lld", irq);
	snprintf(line, sizeof(line), "%lld %s 0 1024 - 0 %lld",
		 timer, irq_s, busy);
	add_line(t, 1, line);	/* a generated trace's lines are version 1's */
}

/*
 * Append a recorded line (version 4) to @t: the next tick @tick_ns away,
 * the measured residency @irq if any (the timer otherwise), the tick
 * stopped at entry one time in four, the woke field 0, 1 or "-" (the
 * kernel stopped the tick) at random, and a polling limit that did not end
 * the entry or, at random where the timer was not seen late, "-" (not
 * recorded).  (A limit that did end the entry, or "-" past a timer seen
 * late, ends the line where a governor polls, which the oracles' plan
 * leaves out: no bound there.)
 */
static void add_recorded(struct trace *t, s64 timer, s64 irq, s64 busy,
			 s64 tick_ns)
{
	static const char *const woke[] = { "0", "1", "-" };
	int stopped = !(rng() % 4), w = rng() % 3, unknown = rng() % 2;
	char line[160];

	if (irq < 0)
		irq = timer;
	snprintf(line, sizeof(line), "%lld %lld 0 1024 - 0 %lld %lld %d %s %s",
		 timer, irq, busy, tick_ns, stopped, woke[w],
		 unknown && irq <= timer ? "-" : "0");
	add_line(t, 4, line);
}

static void test_accounting(void)
{
	struct cpuidle_driver drv;
	struct replay_cfg cfg = { .tick_ns = NSEC_PER_MSEC, .exit_share_pct = 50 };
	struct trace t = {};
	struct result r;
	double peak[CPUIDLE_STATE_MAX], table[CPUIDLE_STATE_MAX], uj;
	int i;

	must_parse_table(x86_table, &drv);
	/*
	 * By hand, on an 8 us idle: C1 (res 1 us), diff =
	 * 8 us + 0.5 us: no miss.  The "shallowest" bound on the same table
	 * picks C1 for 100 us: diff - exit latency = 99.5 us < 360 us, no
	 * miss; for 5 ms: 4999.5 us >= 360 us, too shallow (below).
	 */
	add(&t, 8000, -1, 1000);
	add(&t, 100000, -1, 1000);
	add(&t, 5000000, -1, 1000);
	replay(&drv, &t, find_gov("shallowest"), &cfg, &r);
	check(r.wakeups == 3 && r.above == 0 && r.below == 1 && r.usage[1] == 3,
	      "accounting by hand: shallowest, 3 wakeups, 0 above, 1 below (got %llu, %llu, %llu)",
	      r.wakeups, r.above, r.below);
	/*
	 * Of them, only the 5 ms in C1 (5000.5 us with half C1's exit
	 * latency) is in a state shallower than the oracle's (C3).
	 */
	check(r.misfit_ns == 5000500,
	      "accounting by hand: shallowest, 5000500 ns shallower than the oracle (got %llu)",
	      r.misfit_ns);

	/*
	 * In the table-implied model, 5 ms in C3 (50 mW, 5.517 ms with half
	 * its exit latency, entering and leaving 1375.5 uJ) costs 1651 uJ,
	 * in C2 2314 uJ.  Deepest state (C3, residency 3102 us, exit latency
	 * 1034 us) for a 100 us idle: diff = 100 + 517 us < 3102 us, too deep
	 * (above).
	 */
	model_costs(&drv, peak, table);
	i = cheapest(&drv, &(struct cpuidle_device){}, table, &cfg, S64_MAX,
		     5000000, true, &uj);
	check(i == 3 && uj > 1651 && uj < 1652,
	      "the table-implied oracle picks C3 for 5 ms (%.1f uJ)", uj);
	{
		struct cpuidle_device dev = {};
		struct result rr = {};

		account(&drv, &dev, 3, 100000 + 517000, &rr);
		check(rr.above == 1 && rr.below == 0,
		      "accounting by hand: C3 for 617 us is too deep");
		memset(&rr, 0, sizeof(rr));
		account(&drv, &dev, 2, 5000000 + 60000, &rr);
		check(rr.above == 0 && rr.below == 1,
		      "accounting by hand: C2 for 5.06 ms is too shallow");
		memset(&rr, 0, sizeof(rr));
		dev.states_usage[3].disable = 1;
		account(&drv, &dev, 2, 5000000 + 60000, &rr);
		check(rr.above == 0 && rr.below == 0,
		      "accounting by hand: no miss when the deeper state is disabled");
	}
	free(t.p);
}

/*
 * The table-implied energy model breaks even exactly at each target
 * residency, where the default one does not (x86 C3 against C2: 7.8 ms
 * against 3.1 ms).
 */
static void test_energy_models(void)
{
	static const char *const tables[] = { x86_table, arm3_table };
	double peak[CPUIDLE_STATE_MAX], table[CPUIDLE_STATE_MAX];
	struct cpuidle_driver drv;
	int ti, i;

	for (ti = 0; ti < ARRAY_SIZE(tables); ti++) {
		double worst = 0;

		must_parse_table(tables[ti], &drv);
		model_costs(&drv, peak, table);
		for (i = 1; i < drv.state_count; i++) {
			s64 res = drv.states[i].target_residency_ns;
			double deep = model_energy(&drv, table, i, res);
			double shallow = model_energy(&drv, table, i - 1, res);

			worst = max(worst, max(deep - shallow, shallow - deep) / shallow);
		}
		check(worst < 1e-9,
		      "table-implied energy breaks even at every target residency of %s (worst %.2g)",
		      ti ? "arm3" : "x86", worst);
	}
	must_parse_table(x86_table, &drv);
	model_costs(&drv, peak, table);
	check(model_energy(&drv, peak, 3, 3102000) >
	      model_energy(&drv, peak, 2, 3102000),
	      "default energy model: x86 C3 costs more than C2 at C3's target residency");
}

static const char arm2_table[] =
	"teo-states v1\n"
	"WFI 1 1 - 100\n"
	"cpu-off 350 4488 - 5\n";

static const char power_table[] =
	"teo-states v1\n"
	"snooze 0 0 poll 2000\n"
	"CEDE 12 120 - 200\n";

/*
 * Fill @t with 2000 random idle periods: modeled lines, or if @rec recorded
 * ones (version 4) with the next tick within @tick_ns.
 */
static void bound_trace(struct trace *t, bool rec, s64 tick_ns)
{
	int k;

	for (k = 0; k < 2000; k++) {
		s64 timer = 1000 + rng() % 30000000;
		s64 irq = rng() % 2 ? (s64)(rng() % 5000000) : -1;
		s64 busy = rng() % 4 ? rng() % 100000 : 0;

		if (rec)
			add_recorded(t, timer, irq, busy, rng() % tick_ns);
		else
			add(t, timer, irq, busy);
	}
}

/*
 * The oracles are the least energy a replay can count: on seeded random
 * traces (timers from 1 us to 30 ms, interrupts, a quarter of the periods
 * with no busy time after them, so that a stopped tick stays stopped), on
 * four tables at HZ 100, 250 and 1000, with a stop of the tick costing 0,
 * 2 and 5 us and a latency limit or none, on modeled lines and on recorded
 * ones, no governor uses less energy than the oracle of either model, and
 * each oracle's replay counts exactly the energy its plan promised.
 */
static void test_bound(void)
{
	static const char *const tables[] = { x86_table, arm3_table, arm2_table,
					      power_table };
	static const char *const tnames[] = { "x86", "arm3", "arm2", "power" };
	static const s64 hz[] = { 100, 250, 1000 }, cost[] = { 0, 2000, 5000 };
	static const s64 qos[] = { 200000, 400000, 200000, 6000 };
	const struct gov *ora = find_gov("oracle"), *orat = find_gov("oracle-table");
	const struct gov *all[MAX_GOVS + 2];
	int ti, h, c, v, n, nall = 0, runs = 0, beaten = 0, off_plan = 0;
	double closest = INFINITY;
	char first[200] = "";

	/* Every governor built in, ours with utilization off, the bound. */
	for (n = 0; n < ngovs; n++)
		all[nall++] = &govs[n];
	all[nall++] = find_gov("teo-noutil");
	all[nall++] = find_gov("shallowest");
	/* v: with a latency limit (bit 0), on recorded lines (bit 1). */
	for (ti = 0; ti < ARRAY_SIZE(tables); ti++) {
		for (h = 0; h < ARRAY_SIZE(hz); h++) {
			for (c = 0; c < ARRAY_SIZE(cost); c++) {
				for (v = 0; v < 4; v++) {
					struct replay_cfg cfg = {
						.tick_ns = NSEC_PER_SEC / hz[h],
						.exit_share_pct = 50,
						.tick_cost_ns = cost[c],
						.has_qos = v & 1, .qos_ns = qos[ti],
					};
					struct cpuidle_driver drv;
					struct trace t = {};
					struct result ro, rt, r;

					must_parse_table(tables[ti], &drv);
					rng_state = 7 + ti * 100 + h * 10 + c * 2 + v;
					bound_trace(&t, v & 2, cfg.tick_ns);
					replay(&drv, &t, ora, &cfg, &ro);
					replay(&drv, &t, orat, &cfg, &rt);
					if (fabs(ro.energy_uj - ro.plan_uj) > 1e-9 * ro.plan_uj ||
					    fabs(rt.energy_table_uj - rt.plan_uj) > 1e-9 * rt.plan_uj)
						off_plan++;
					for (n = 0; n < nall; n++) {
						if (!all[n])
							continue;
						runs++;
						replay(&drv, &t, all[n], &cfg, &r);
						closest = min(closest, min(r.energy_uj / ro.energy_uj,
									   r.energy_table_uj / rt.energy_table_uj));
						if (r.energy_uj >= ro.energy_uj * (1 - 1e-9) &&
						    r.energy_table_uj >= rt.energy_table_uj * (1 - 1e-9))
							continue;
						if (!beaten++)
							snprintf(first, sizeof(first),
								 "; first: %s on %s, HZ=%lld, tick cost %lld ns%s%s",
								 all[n]->name, tnames[ti], hz[h], cost[c],
								 v & 1 ? ", latency limit" : "",
								 v & 2 ? ", recorded lines" : "");
					}
					free(t.p);
				}
			}
		}
	}
	check(!off_plan, "each oracle's replay counts the energy its plan promised (%d of %d replays off the plan)",
	      off_plan, 2 * (int)(ARRAY_SIZE(tables) * ARRAY_SIZE(hz) * ARRAY_SIZE(cost) * 4));
	check(runs && !beaten,
	      "no governor uses less energy than the oracles, on modeled and recorded lines: %d replays of %d governors, %d below, the closest at %.4f times the oracle's%s",
	      runs, nall, beaten, closest, first);
}

static void test_periodic(void)
{
	static const char *const names[] = { "teo", "teo-6.12" };
	struct replay_cfg cfg = { .tick_ns = NSEC_PER_MSEC, .exit_share_pct = 50 };
	struct cpuidle_driver drv;
	int n, k;

	must_parse_table(x86_table, &drv);
	for (n = 0; n < ARRAY_SIZE(names); n++) {
		const struct gov *g = find_gov(names[n]);
		struct trace t = {};
		struct result r;

		if (!g) {
			check(false, "governor %s is built in", names[n]);
			continue;
		}
		/* A pure 2 ms periodic timer: 0.1 ms busy, 1.9 ms idle. */
		for (k = 0; k < 2000; k++)
			add(&t, 1900000, -1, 100000);
		replay(&drv, &t, g, &cfg, &r);
		check(r.above + r.below <= r.wakeups / 100,
		      "%s: periodic 2 ms timer, %llu wakeups, %llu above, %llu below",
		      names[n], r.wakeups, r.above, r.below);
		free(t.p);
	}
}

/*
 * Replay the trace @text on @drv through governor @gov into *@r.  If it does
 * not parse or replay, a failed check named @what says so, and false.
 */
static bool replay_text(const struct cpuidle_driver *drv, const char *text,
			const char *gov, const struct replay_cfg *cfg,
			struct result *r, const char *what)
{
	struct trace t;
	int ret;

	if (parse_trace("t", text, &t)) {
		check(false, "%s: the trace does not parse: %s", what, errbuf);
		return false;
	}
	ret = replay(drv, &t, find_gov(gov), cfg, r);
	free(t.p);
	if (ret)
		check(false, "%s: the replay failed", what);
	return !ret;
}

/*
 * Recorded entries (trace version 2): one governor call per line, the tick
 * as recorded.  On a table of one polling state (the tick always kept,
 * a polling limit of a sixteenth of a tick): a recorded tick 100 us into
 * a 10 ms sleep ends the line there; a recorded stopped tick leaves only
 * the polling limit, 250 us, after which the line ends too; the same
 * sleep without the recorded fields (as in version 1) goes on to the
 * timer in many calls.
 */
static void test_recorded(void)
{
	struct replay_cfg cfg = { .tick_ns = 4 * NSEC_PER_MSEC, .exit_share_pct = 0 };
	unsigned int calls[4] = {};
	struct cpuidle_driver drv;
	struct result r;
	unsigned int k;
	bool ok;

	must_parse_table("teo-states v1\nPOLL 0 0 poll 3000\n", &drv);
	cfg.decisions = tmpfile();
	ok = replay_text(&drv, "teo-trace v2\n"
			 "10000000 - 0 1024 - 0 0 100000 0\n"
			 "10000000 - 0 1024 - 0 0 100000 1\n"
			 "10000000 - 0 1024 - 0 0 - -\n",
			 "shallowest", &cfg, &r, "recorded entries");
	rewind(cfg.decisions);
	while (fscanf(cfg.decisions, "%u %*u %*d %*d %*d", &k) == 1)
		calls[min(k, 3U)]++;
	fclose(cfg.decisions);
	if (ok)
		check(calls[1] == 1 && calls[2] == 1 && calls[3] > 1 &&
		      r.residency_ns[0] == 100000 + 250000 + 10000000,
		      "recorded entries: calls per line %u, %u, %u (want 1, 1, more), %lld ns idle (want 10.35 ms)",
		      calls[1], calls[2], calls[3], r.residency_ns[0]);
}

/*
 * Replay @trace, a few one-state lines recorded at HZ=250, on @table: @what
 * passes with @wakeups wakeups, @want_ns of idle time and @irqs interrupts.
 */
static void replay_recorded(const char *table, const char *trace,
			   const char *what, u64 wakeups, s64 want_ns, u64 irqs)
{
	struct replay_cfg cfg = { .tick_ns = 4 * NSEC_PER_MSEC, .exit_share_pct = 0 };
	struct cpuidle_driver drv;
	struct result r;

	must_parse_table(table, &drv);
	if (!replay_text(&drv, trace, "teo-7.3", &cfg, &r, what))
		return;
	check(r.wakeups == wakeups && r.residency_ns[0] == want_ns && r.irq_wakeups == irqs,
	      "%s: %llu wakeups, %lld ns idle, %llu interrupts (want %llu, %lld ns, %llu)",
	      what, r.wakeups, r.residency_ns[0], r.irq_wakeups, wakeups, want_ns, irqs);
}

/*
 * Version 3's woke field: the tick, kept, is due 100 us into each line, but
 * the kernel measured 200 us.  Where the line says the tick ran (taken
 * late, as under emulation) or did not (something else woke the CPU), it
 * ends at 200 us, and only the latter is an interrupt; where it does not
 * say ("-": the kernel had stopped it), the tick wakes the CPU at 100 us
 * and the governor is called again for the other 100 us, which the
 * interrupt ends: a fourth wakeup, the second interrupt, and the line's
 * idle time all counted.  One state that does not poll, so that no
 * polling limit comes first.  A fourth line whose tick was due at its
 * start: the tick wakes the CPU at once, and the next, a period later,
 * comes after the interrupt (two more wakeups, a third interrupt).
 */
static void test_woke(void)
{
	replay_recorded("teo-states v1\nWFI 1 1 - 100\n", "teo-trace v3\n"
		       "10000000 200000 0 1024 - 0 0 100000 0 1\n"
		       "10000000 200000 0 1024 - 0 0 100000 0 0\n"
		       "10000000 200000 0 1024 - 0 0 100000 0 -\n"
		       "10000000 200000 0 1024 - 0 0 0 0 -\n",
		       "recorded tick wakeups", 6, 4 * 200000, 3);
}

/*
 * Version 4's limit field: one polling state, its limit 250 us (TICK_NSEC /
 * 16 at HZ=250), the tick kept and not run, and the kernel measured 300 us.
 * Where the line says the limit did not end the entry (the polling loop
 * read the clock late), it ends at 300 us on an interrupt; where it says
 * the limit did, at 300 us without one, the governor told so; where it
 * does not say ("-"), the limit ends the call at 250 us and the governor
 * is called again for the other 50 us, which the interrupt ends: a fourth
 * wakeup, the second interrupt, and the line's idle time all counted.
 */
static void test_limit(void)
{
	replay_recorded("teo-states v1\nPOLL 0 0 poll 100\n", "teo-trace v4\n"
		       "10000000 300000 0 1024 - 0 0 1000000 0 0 0\n"
		       "10000000 300000 0 1024 - 0 0 1000000 0 0 1\n"
		       "10000000 300000 0 1024 - 0 0 1000000 0 0 -\n",
		       "recorded polling limits", 4, 300000 + 300000 + 300000, 2);
}

/*
 * Version 5's by_timer field: the timer is 1 ms from the idle loop's entry,
 * the kernel measured 950 us from the state's entry.  Where the line says the
 * timer woke the CPU, the wakeup is no interrupt; where it says it did not,
 * or does not say, it is one.  The idle time is the measured one in all.
 */
static void test_by_timer(void)
{
	replay_recorded("teo-states v1\nWFI 1 1 - 100\n", "teo-trace v5\n"
		       "1000000 950000 0 1024 - 0 0 2000000 0 0 0 1\n"
		       "1000000 950000 0 1024 - 0 0 2000000 0 0 0 0\n"
		       "1000000 950000 0 1024 - 0 0 2000000 0 0 0 -\n",
		       "recorded timer wakeups", 3, 3 * 950000, 2);
}

/* @text must fail to parse, with @want in the message. */
static void trace_rejected(const char *text, const char *want, const char *what)
{
	struct trace t;

	check(parse_trace("t", text, &t) && strstr(errbuf, want), "%s: %s", what, errbuf);
	free(t.p);
}

static void test_formats(void)
{
	struct cpuidle_driver drv;
	struct trace t;

	trace_rejected("teo-trace v1\n100 - 0 1024 - 0 0\n1 2 x 1024 - 0 0\n", "t:3:",
		       "trace with a bad 3rd line is rejected");
	trace_rejected("teo-trace v6\n", "t:1:", "trace of an unknown version is rejected");
	trace_rejected("teo-trace v5\n100 - 0 1024 - 0 0 50 0 0 0\n", "want 12 fields",
		       "version 5 wants the by_timer field");
	trace_rejected("teo-trace v5\n100 - 0 1024 - 0 0 50 0 0 0 2\n", "by_timer must be",
		       "version 5's by_timer is 0, 1 or -");
	trace_rejected("teo-trace v4\n100 - 0 1024 - 0 0 50 0 0\n", "want 11 fields",
		       "version 4 wants the limit field");
	trace_rejected("teo-trace v4\n100 - 0 1024 - 0 0 50 0 0 2\n", "limit must be",
		       "version 4's limit is 0, 1 or -");
	trace_rejected("teo-trace v3\n100 - 0 1024 - 0 0 50 0\n", "want 10 fields",
		       "version 3 wants the woke field");
	trace_rejected("teo-trace v3\n100 - 0 1024 - 0 0 50 0 2\n", "woke must be",
		       "version 3's woke is 0, 1 or -");
	trace_rejected("teo-trace v2\n100 - 0 1024 - 0 0\n", "want 9 fields",
		       "version 2 wants the tick fields");
	trace_rejected("teo-trace v2\n100 - 0 1024 - 0 0 50 2\n", "stopped must be",
		       "version 2's stopped is 0, 1 or -");
	trace_rejected("teo-trace v1\n5 - 900 800 - 0 0\n", "t:2:",
		       "utilization above capacity is rejected");
	check(parse_table("s", "teo-states v1\nA 1 10 - 1\nB 2 5 - 1\n", &drv) &&
	      strstr(errbuf, "s:3:"),
	      "state table out of order is rejected: %s", errbuf);
	check(parse_table("s", "teo-states v1\nA 1 10 sleepy 1\n", &drv) &&
	      strstr(errbuf, "s:2:"),
	      "state table with unknown flags is rejected: %s", errbuf);
	check(!parse_trace("t", "# comment\nteo-trace v1\n100 - 0 1024 - 0 0 # x\n", &t) &&
	      t.n == 1 && t.p[0].irq_ns == -1 && t.p[0].latency_ns == S64_MAX,
	      "comments, \"-\" for no interrupt and no limit");
	free(t.p);
}

/* A trace on the harness's first and last CPU replays through our teo. */
static void test_many_cpus(void)
{
	struct replay_cfg cfg = { .tick_ns = 4 * NSEC_PER_MSEC, .exit_share_pct = 50 };
	struct cpuidle_driver drv;
	char text[128], want[32];
	struct trace t;
	struct result r;
	int ret;

	must_parse_table("teo-states v1\nA 1 1 - 100\nB 100 500 - 10\n", &drv);
	snprintf(text, sizeof(text), "teo-trace v1\n3000000 - 0 1024 - 0 0\n"
		 "3000000 200000 0 1024 - %d 0\n3000000 - 0 1024 - %d 0\n",
		 SHIM_NR_CPUS - 1, SHIM_NR_CPUS - 1);
	if (parse_trace("t", text, &t)) {
		check(false, "a trace on CPU %d parses: %s", SHIM_NR_CPUS - 1, errbuf);
		return;
	}
	ret = replay(&drv, &t, find_gov("teo"), &cfg, &r);
	check(!ret && trace_cpus(&t) == SHIM_NR_CPUS && r.wakeups >= 3,
	      "a trace on CPUs 0 and %d replays through teo (%llu wakeups)",
	      SHIM_NR_CPUS - 1, r.wakeups);
	free(t.p);
	snprintf(text, sizeof(text), "teo-trace v1\n100 - 0 1024 - %d 0\n", SHIM_NR_CPUS);
	snprintf(want, sizeof(want), "cpu %d is beyond", SHIM_NR_CPUS);
	trace_rejected(text, want, "a CPU beyond the harness's is rejected");
}

/*
 * One random case: a state table (hostile ones included: unordered exit
 * latencies, equal residencies, one to ten states, a polling state 0 or
 * not), disabled states, latency limits, HZ, utilization and a 40-period
 * idle history on four CPUs, a quarter of whose periods have no busy time
 * (after an interrupt, the tick stays stopped across them); half the cases
 * notice a tick inside a polling state (see struct replay_cfg).  With
 * @extreme, also near-S64_MAX target residencies and exit latencies, and
 * periods with no timer at all (an interrupt ends them); those are for our
 * teo alone, as upstream's governors were not written for them.
 */
static void random_case(struct cpuidle_driver *drv, struct trace *t,
			struct replay_cfg *cfg, bool extreme)
{
	static const s64 hz[] = { 100, 250, 300, 1000 };
	s64 res = 0;
	int k;

	*cfg = (struct replay_cfg) {
		.tick_ns = NSEC_PER_SEC / hz[rng() % ARRAY_SIZE(hz)],
		.exit_share_pct = rng() % 101,
		.disabled = rng() % 4 ? 0 : (u32)rng(),
		.check_invariants = true,
		.tick_in_poll = rng() % 2,
	};
	*drv = (struct cpuidle_driver) { .name = "fuzz" };
	memset(t, 0, sizeof(*t));
	drv->state_count = 1 + rng() % CPUIDLE_STATE_MAX;
	for (k = 0; k < drv->state_count; k++) {
		struct cpuidle_state *st = &drv->states[k];

		if (k && rng() % 4 && res < NSEC_PER_SEC)
			res += rng() % 3 ? rng() % 5000000 : 0;
		if (extreme && k && !(rng() % 8))
			res = S64_MAX - rng() % 2;
		st->target_residency_ns = res;
		st->exit_latency_ns = rng() % 3 ? (s64)(rng() % ((u64)res + 1)) :
				      rng() % 3000000;
		if (extreme && !(rng() % 8))
			st->exit_latency_ns = S64_MAX - rng() % 2;
		st->flags = !k && rng() % 2 ? CPUIDLE_FLAG_POLLING : 0;
		if (st->flags)
			st->exit_latency_ns = st->target_residency_ns = 0;
	}
	for (k = 0; k < 40; k++) {
		s64 irq = rng() % 2 ? (s64)(rng() % 3000000) : -1;
		struct period *p;

		add(t, rng() % 3 ? rng() % 30000000 : rng() % 50000, irq,
		    rng() % 4 ? rng() % 200000 : 0);
		p = &t->p[t->n - 1];
		if (extreme && irq >= 0 && !(rng() % 8))
			p->timer_ns = KTIME_MAX;
		p->cpu = rng() % 4;
		p->capacity = 1 + rng() % 1024;
		p->util = rng() % 2 ? rng() % (p->capacity + 1) : 0;
		switch (rng() % 4) {
		case 0:
			p->latency_ns = 0;
			break;
		case 1:
			p->latency_ns = rng() % 2000000;
			break;
		}
	}
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * The series' intermediate steps built in (teo-stepNN), in order, into
 * @names (room for MAX_GOVS); returns how many.
 */
static int series_steps(const char **names)
{
	int i, n = 0;

	for (i = 0; i < ngovs; i++) {
		if (!strncmp(govs[i].name, "teo-step", strlen("teo-step")))
			names[n++] = govs[i].name;
	}
	qsort(names, n, sizeof(*names), cmp_name);
	return n;
}

/*
 * The steps that bring utilization awareness, the trace events, the fix
 * that stops returning a disabled state, the cleanups that read the tick's
 * state once and halve the exit latency with a shift, and the preparation
 * for KUnit (patches/steps/NN-util.diff, NN-trace.diff, NN-disabled.diff,
 * NN-tick-once.diff, NN-halve.diff and NN-prepare-for-kunit.diff), which
 * the Makefile names.
 */
#ifndef STEP_UTIL
#define STEP_UTIL	"teo-step??"
#endif
#ifndef STEP_TRACE
#define STEP_TRACE	"teo-step??"
#endif
#ifndef STEP_DISABLED
#define STEP_DISABLED	"teo-step??"
#endif
#ifndef STEP_PREPARE
#define STEP_PREPARE	"teo-step??"
#endif
#ifndef STEP_TICK_ONCE
#define STEP_TICK_ONCE	"teo-step??"
#endif
#ifndef STEP_HALVE
#define STEP_HALVE	"teo-step??"
#endif

/*
 * The step of the series before @step: mainline teo (teo-7.3) before the
 * first, "teo-step??" if @step is none of them.
 */
static const char *step_before(const char *step)
{
	const char *names[MAX_GOVS];
	int n = series_steps(names), i;

	for (i = 0; i < n; i++) {
		if (!strcmp(names[i], step))
			return i ? names[i - 1] : "teo-7.3";
	}
	return "teo-step??";
}

/*
 * The fuzzer.  Every case, made by random_case() from its own seed, goes
 * through six replays: our teo with the invariants checked at every
 * decision (every other case with extreme values), and five lockstep
 * pairs, which must agree on every decision: four of the series, each a
 * stretch of it that is to change none and the step before it (the two
 * cleanups that read the tick's state once and halve the exit latency
 * with a shift, the preparation for KUnit, the step that brings
 * utilization awareness with it off, and the step that adds the trace
 * events), and our teo built without CONFIG_SMP against our teo
 * told that utilization is 0, as a uniprocessor kernel has no utilization
 * to read and is to lose nothing else.  The replays drive the glue
 * as the idle loop does: the tick kept stopped across periods that wake no task,
 * polling states ended by their time limit, the tick noticed inside a
 * polling state, disabled states and latency limits.  A finding is an
 * index out of range, a broken invariant, a lockstep difference or (in
 * the sanitized build, which stops there) a sanitizer report.
 */
#define FUZZ_REPLAYS	6

static const char *const fuzz_names[FUZZ_REPLAYS] = {
	"invariants of teo",
	STEP_HALVE " and the step before " STEP_TICK_ONCE,
	STEP_PREPARE " and the step before it",
	STEP_UTIL "-noutil and the step before it",
	STEP_TRACE " and the step before it",
	"teo-up (no CONFIG_SMP) and teo-noutil",
};

/**
 * struct fuzz_stats - What a fuzz run did and found.
 * @cases: Cases run.
 * @decisions: Decisions made in each of the replays of every case.
 * @findings: Cases with a finding, by replay.
 * @first: The first finding of each replay.
 */
struct fuzz_stats {
	u64 cases;
	u64 decisions[FUZZ_REPLAYS];
	u64 findings[FUZZ_REPLAYS];
	char first[FUZZ_REPLAYS][256];
};

/* The case being run, for the sanitizers' death callback. */
static u64 fuzz_seed;
static bool fuzz_running;

#if defined(__SANITIZE_ADDRESS__)
static void fuzz_died(void)
{
	if (fuzz_running)
		fprintf(stderr, "fuzz: finding at seed %llu: the sanitizer report above (replay it: cpuidle-replay --fuzz-case %llu)\n",
			fuzz_seed, fuzz_seed);
}
#endif

/*
 * The case of @seed; @ours: for our teo alone, which gets extreme values in
 * every other case.
 */
static void fuzz_make(u64 seed, bool ours, struct cpuidle_driver *drv,
		      struct trace *t, struct replay_cfg *cfg)
{
	rng_state = (seed + 1) * 0x9e3779b97f4a7c15ULL;
	random_case(drv, t, cfg, ours && seed % 2);
}

/*
 * No step from STEP_DISABLED on returns a disabled state while another is
 * enabled, over random tables, disabled states and latency limits; mainline
 * teo and the steps before it do, which shows that the check can fail.
 */
static void test_disabled_states(void)
{
	const char *names[MAX_GOVS];
	int n, i;

	names[0] = "teo-7.3";
	n = 1 + series_steps(names + 1);
	for (i = 0; i < n; i++) {
		const struct gov *g = find_gov(names[i]);
		bool fixed = i && strcmp(names[i], STEP_DISABLED) >= 0;
		u64 seed, picks = 0, decisions = 0;

		if (!g) {
			check(false, "disabled states: no governor %s", names[i]);
			continue;
		}
		for (seed = 0; seed < 1000; seed++) {
			struct cpuidle_driver drv;
			struct replay_cfg cfg;
			struct trace t;
			struct result r;

			fuzz_make(seed, false, &drv, &t, &cfg);
			cfg.check_invariants = true;
			if (!replay(&drv, &t, g, &cfg, &r)) {
				picks += r.disabled_picks;
				decisions += r.wakeups;
			}
			free(t.p);
		}
		check(fixed ? !picks : picks > 0,
		      "disabled states: %s returns one while another is enabled in %llu of %llu decisions over 1000 random cases (want %s)",
		      names[i], picks, decisions, fixed ? "none" : "some: fixed by " STEP_DISABLED);
	}
}

/*
 * The teo_select event's reason is that of the last step that changed the
 * state, and every step but those that name "timer" or "single" goes only
 * shallower, from a state no deeper than the candidate, so with any other
 * reason the state picked is shallower than the candidate.  Over random
 * tables (exit latencies in any order), disabled states and latency
 * limits, through the step that adds the events, with them on: it must
 * still decide like the step before it.
 */
static void test_select_reasons(void)
{
	static const char *const reasons[] = {
		"timer", "latency", "intercepts", "util", "tick", "single",
	};
	const struct gov *g = find_gov(STEP_TRACE);
	const struct gov *before = find_gov(step_before(STEP_TRACE));
	const u64 cases = 1000;
	u64 seed, events = 0, bad = 0, differ = 0;
	u64 seen[ARRAY_SIZE(reasons)] = { 0 };
	char first[160] = "";
	int i;

	if (!g || !before) {
		check(false, "select reasons: no governor %s or %s",
		      STEP_TRACE, step_before(STEP_TRACE));
		return;
	}
	for (seed = 0; seed < cases; seed++) {
		struct cpuidle_driver drv;
		struct replay_cfg cfg;
		struct trace t;
		struct result r;
		char *buf = NULL, *line, *next;
		size_t len = 0;

		fuzz_make(seed, false, &drv, &t, &cfg);
		cfg.shadow = before;
		shim_set_trace(open_memstream(&buf, &len));
		if (!shim_trace) {
			check(false, "select reasons: open_memstream: %s",
			      strerror(errno));
			free(t.p);
			return;
		}
		if (replay(&drv, &t, g, &cfg, &r) || r.shadow_same != r.wakeups)
			differ++;
		fclose(shim_trace);
		shim_set_trace(NULL);
		free(t.p);
		/*
		 * A line at a time: ASan's strstr() takes the strlen() of
		 * all that follows, which over the whole buffer made this
		 * test take 27 s instead of half a second.
		 */
		for (line = buf; line; line = next) {
			char *end = strchr(line, '\n');
			char why[16];
			int cand, state;

			next = end ? end + 1 : NULL;
			if (end)
				*end = '\0';
			line = strstr(line, "teo_select: ");
			if (!line)
				continue;
			events++;
			if (sscanf(line, "teo_select: cand=%d state=%d reason=%15s",
				   &cand, &state, why) != 3) {
				if (!bad++)
					snprintf(first, sizeof(first),
						 "seed %llu: unreadable: %.*s",
						 seed, (int)strcspn(line, "\n"),
						 line);
				continue;
			}
			for (i = 0; i < (int)ARRAY_SIZE(reasons); i++)
				if (!strcmp(why, reasons[i]))
					seen[i]++;
			if (strcmp(why, "timer") && strcmp(why, "single") &&
			    state >= cand && !bad++)
				snprintf(first, sizeof(first),
					 "seed %llu: cand=%d state=%d reason=%s",
					 seed, cand, state, why);
		}
		free(buf);
	}
	check(events && !bad && !differ,
	      "select reasons: %llu teo_select events over %llu random cases, %llu unreadable or with a reason other than timer or single and a state not shallower than the candidate%s%s; %llu cases decided otherwise with the events on",
	      events, cases, bad, first[0] ? ", first at " : "", first, differ);
	for (i = 0; i < (int)ARRAY_SIZE(reasons); i++)
		check(seen[i], "select reasons: reason=%s in %llu events",
		      reasons[i], seen[i]);
}

/*
 * One case from @seed through the replays into @st; with @dec, our
 * teo's decisions are written there.  @report prints each finding.
 */
static void fuzz_case(u64 seed, struct fuzz_stats *st, FILE *dec, bool report)
{
	const char *ref[FUZZ_REPLAYS] = {
		NULL, step_before(STEP_TICK_ONCE), step_before(STEP_PREPARE),
		step_before(STEP_UTIL), step_before(STEP_TRACE), "teo-noutil",
	};
	const char *gname[FUZZ_REPLAYS] = {
		"teo", STEP_HALVE, STEP_PREPARE, STEP_UTIL "-noutil",
		STEP_TRACE, "teo-up",
	};
	int i;

	fuzz_seed = seed;
	st->cases++;
	for (i = 0; i < FUZZ_REPLAYS; i++) {
		const struct gov *g = find_gov(gname[i]);
		const struct gov *shadow = ref[i] ? find_gov(ref[i]) : NULL;
		char what[sizeof(st->first[0]) - 64] = "";
		struct replay_cfg cfg;
		struct cpuidle_driver drv;
		struct trace t;
		struct result r;
		int rc;

		if (!g || (ref[i] && !shadow)) {
			snprintf(what, sizeof(what), "no governor %s",
				 g ? ref[i] : gname[i]);
			r.wakeups = 0;
			rc = 0;
		} else {
			fuzz_make(seed, !i, &drv, &t, &cfg);
			cfg.shadow = shadow;
			cfg.check_invariants = !i;
			cfg.decisions = i ? NULL : dec;
			rc = replay(&drv, &t, g, &cfg, &r);
			free(t.p);
			if (rc)
				snprintf(what, sizeof(what), "index %d out of range",
					 r.bad_index);
			else if (r.violations)
				snprintf(what, sizeof(what), "%llu invariant violations",
					 r.violations);
			else if (shadow && r.shadow_same != r.wakeups)
				snprintf(what, sizeof(what), "%s", r.shadow_first);
		}
		st->decisions[i] += r.wakeups;
		if (!what[0])
			continue;
		st->findings[i]++;
		if (!st->first[i][0])
			snprintf(st->first[i], sizeof(st->first[i]), "seed %llu: %s",
				 seed, what);
		if (report)
			printf("fuzz: finding at seed %llu, %s: %s (replay it: cpuidle-replay --fuzz-case %llu)\n",
			       seed, fuzz_names[i], what, seed);
	}
}

static u64 fuzz_total(const u64 *v)
{
	u64 sum = 0;
	int i;

	for (i = 0; i < FUZZ_REPLAYS; i++)
		sum += v[i];
	return sum;
}

/*
 * Cases from seed @seed0 on, until @max_cases (if not 0) or @limit_s
 * seconds (if not 0) are reached; with @progress, a line every ten seconds.
 */
static void fuzz_run(u64 seed0, u64 max_cases, double limit_s, bool progress,
		     struct fuzz_stats *st)
{
	double t0 = seconds(), next = t0 + 10;

	memset(st, 0, sizeof(*st));
	fuzz_running = true;
	while ((!max_cases || st->cases < max_cases) &&
	       (!limit_s || seconds() - t0 < limit_s)) {
		fuzz_case(seed0 + st->cases, st, NULL, progress);
		if (progress && seconds() >= next) {
			printf("fuzz: %.0f s: %llu cases, %llu decisions, %llu findings\n",
			       seconds() - t0, st->cases,
			       fuzz_total(st->decisions), fuzz_total(st->findings));
			fflush(stdout);
			next += 10;
		}
	}
	fuzz_running = false;
}

/* make fuzz: the timed run, its totals in the last line. */
static int fuzz_main(double limit_s, u64 seed0, u64 max_cases)
{
	double t0 = seconds();
	struct fuzz_stats st;
	int i;

	printf("fuzz: seed %llu, %s%.0f s%s\n", seed0,
	       max_cases ? "at most " : "", limit_s,
	       max_cases ? " or the cases given" : "");
	fflush(stdout);
	fuzz_run(seed0, max_cases, limit_s, true, &st);
	for (i = 0; i < FUZZ_REPLAYS; i++)
		printf("fuzz: %-44s %12llu decisions, %llu findings%s%s\n",
		       fuzz_names[i], st.decisions[i], st.findings[i],
		       st.first[i][0] ? ", first at " : "", st.first[i]);
	printf("fuzz: %.0f s, %llu cases (seeds %llu to %llu), %llu decisions, %llu findings\n",
	       seconds() - t0, st.cases, seed0, seed0 + st.cases - 1,
	       fuzz_total(st.decisions), fuzz_total(st.findings));
	return fuzz_total(st.findings) ? 1 : 0;
}

/* --fuzz-case SEED: one case, with the table and our teo's decisions. */
static int fuzz_one(u64 seed)
{
	struct replay_cfg cfg;
	struct cpuidle_driver drv;
	struct fuzz_stats st = { 0 };
	struct trace t;
	int i;

	fuzz_make(seed, true, &drv, &t, &cfg);
	free(t.p);
	printf("# seed %llu: HZ %lld, exit share %d%%, disabled 0x%x, tick in poll %d\n",
	       seed, NSEC_PER_SEC / cfg.tick_ns, cfg.exit_share_pct,
	       cfg.disabled, cfg.tick_in_poll);
	for (i = 0; i < drv.state_count; i++)
		printf("# state %d: exit latency %lld ns, target residency %lld ns%s\n",
		       i, drv.states[i].exit_latency_ns,
		       drv.states[i].target_residency_ns,
		       drv.states[i].flags & CPUIDLE_FLAG_POLLING ? ", polls" : "");
	printf("# our teo's decisions: period cpu state stop_tick tick_was_stopped\n");
	fuzz_case(seed, &st, stdout, true);
	return fuzz_total(st.findings) ? 1 : 0;
}

/*
 * The fuzz run of the self-test takes about as long as the other tests, so
 * it runs in a child process beside them: fuzz_start() forks it, and
 * fuzz_finish() reads the counts it sends through a pipe.  The child ends
 * with exit(), so that LeakSanitizer still checks it; a child that dies
 * (a sanitizer's report) or leaks sends nothing or exits non-zero.  With
 * no pipe or no child, fuzz_start() makes the run in this process.
 */
struct fuzz_child {
	pid_t pid;
	int fd;
	struct fuzz_stats st;	/* the run's counts */
};

static void fuzz_start(long iterations, struct fuzz_child *c)
{
	int fds[2];

	c->pid = -1;
	c->fd = -1;
	if (!pipe(fds)) {
		fflush(stdout);
		fflush(stderr);
		c->pid = fork();
		if (c->pid > 0) {
			close(fds[1]);
			c->fd = fds[0];
			return;
		}
		close(fds[0]);
		if (c->pid < 0)
			close(fds[1]);
	}
	/* In the child, or here without one. */
	fuzz_run(2026, iterations, 0, false, &c->st);
	if (c->pid == 0)
		exit(write(fds[1], &c->st, sizeof(c->st)) == sizeof(c->st) ? 0 : 1);
}

/* The run's counts in @c->st; false, and why in @why, if the child sent none. */
static bool fuzz_finish(struct fuzz_child *c, char *why, size_t len)
{
	size_t got = 0;
	ssize_t n;
	int status;

	if (c->pid < 0)
		return true;
	while (got < sizeof(c->st)) {
		n = read(c->fd, (char *)&c->st + got, sizeof(c->st) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
	}
	close(c->fd);
	if (waitpid(c->pid, &status, 0) != c->pid) {
		snprintf(why, len, "waitpid: %s", strerror(errno));
		return false;
	}
	if (WIFEXITED(status) && !WEXITSTATUS(status) && got == sizeof(c->st))
		return true;
	if (WIFSIGNALED(status))
		snprintf(why, len, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(why, len, "exit status %d, %zu of %zu bytes of counts",
			 WEXITSTATUS(status), got, sizeof(c->st));
	return false;
}

static int self_test(long fuzz_iterations)
{
	struct fuzz_child child = { .pid = -1, .fd = -1 };

	if (fuzz_iterations)
		fuzz_start(fuzz_iterations, &child);
	test_accounting();
	test_bound();
	test_energy_models();
	test_periodic();
	test_formats();
	test_many_cpus();
	test_recorded();
	test_woke();
	test_by_timer();
	test_limit();
	test_disabled_states();
	test_select_reasons();
	if (fuzz_iterations) {
		const struct fuzz_stats *st = &child.st;
		char why[96];
		int i;

		/*
		 * The cleanup and the preparation for KUnit decide like the
		 * steps before them; with utilization awareness off, its step
		 * decides like the one before it, and the trace events change
		 * no decision.
		 */
		if (!fuzz_finish(&child, why, sizeof(why))) {
			check(false, "fuzz: its process ended without its counts (%s)",
			      why);
		} else {
			for (i = 0; i < FUZZ_REPLAYS; i++)
				check(st->decisions[i] && !st->findings[i],
				      "fuzz, %s: %llu cases, %llu decisions, %llu findings%s%s",
				      fuzz_names[i], st->cases, st->decisions[i],
				      st->findings[i], st->first[i][0] ? "; first at " : "",
				      st->first[i]);
		}
	}
	printf("harness: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

/* ---- Command line ----------------------------------------------------- */

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, cap = 0, got;

	if (!f) {
		fprintf(stderr, "cpuidle-replay: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	do {
		if (cap - len < 4096) {
			cap = cap ? 2 * cap : 65536;
			buf = realloc(buf, cap + 1);
			if (!buf) {
				fprintf(stderr, "cpuidle-replay: out of memory\n");
				exit(2);
			}
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
	} while (got);
	fclose(f);
	buf[len] = 0;
	return buf;
}

static int cmp_s64(const void *a, const void *b)
{
	s64 x = *(const s64 *)a, y = *(const s64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * Time per decision (select + reflect) in whole replays, the least of
 * seven: timing each call would cost more than the call.  The same for the
 * null governor is the cost of the replay itself, which the caller
 * subtracts.
 */
static double ns_per_call(const struct cpuidle_driver *drv,
			  const struct trace *t, const struct gov *g,
			  const struct replay_cfg *cfg0)
{
	struct replay_cfg cfg = *cfg0;
	double best = 1e30;
	struct result r;
	int rep;

	cfg.irq_latencies = NULL;
	cfg.first_idx = NULL;
	cfg.ref_idx = NULL;
	for (rep = 0; rep < 7; rep++) {
		double t0 = seconds();

		replay(drv, t, g, &cfg, &r);
		best = min(best, (seconds() - t0) * 1e9 / max(r.wakeups, 1));
	}
	return best;
}

/*
 * The first of the comma-separated names in @list, into @name (@size bytes,
 * cut short if need be); returns the rest of the list, or NULL after the
 * last name.
 */
static const char *list_next(const char *list, char *name, size_t size)
{
	size_t len = strcspn(list, ",");

	snprintf(name, size, "%.*s", (int)min(len, size - 1), list);
	return list[len] ? list + len + 1 : NULL;
}

/* Whether @name is one of the comma-separated names in @list. */
static bool in_list(const char *list, const char *name)
{
	char item[64];

	while (list) {
		list = list_next(list, item, sizeof(item));
		if (!strcmp(item, name))
			return true;
	}
	return false;
}

/*
 * One line per governor: wakeups, too deep and too shallow (% of wakeups),
 * agreement with the table-implied oracle's choice for the rest of the
 * idle period (%), tick stopped (% of calls), tick stops per second of the
 * trace, mean and p99 exit latency paid at non-timer wakeups (us), energy
 * in the default and the table-implied model (mJ, see model_costs(), the
 * tick's stops included) and how much above that of our teo with
 * utilization awareness off the default one is (%), decision cost (ns per
 * select + reflect, the null governor subtracted), the mean utilization (%
 * of capacity), and the residency share of each state (%).  CSV adds the
 * share of entries into the deepest state with the tick stopped, the idle
 * time in states shallower than mainline (7.3) teo picks for the same
 * period and than the oracle's (misfit_pct), both in % of idle time, the
 * tick stops and the power they are paid at, and the misfit time in ms
 * (misfit_ms: the share's denominator, the idle time, counts each state's
 * exit latency share, so it shrinks when a governor picks shallower states).
 */
static void report(const struct cpuidle_driver *drv, const struct trace *t,
		   const struct replay_cfg *cfg, const char *only, bool csv,
		   bool cost, bool misses)
{
	static const char *const fixed[] = {
		"teo", "teo-noutil", "teo-fullutil", "teo-7.3", "menu-7.3",
		"teo-6.12", "menu-6.12", "oracle", "oracle-table", "shallowest",
	};
	/*
	 * Then the series' intermediate steps (teo-stepNN), in order, and any
	 * other governor asked for ("teo-step06-noutil"), as asked.
	 */
	const char *names[ARRAY_SIZE(fixed) + 2 * MAX_GOVS];
	static char asked[MAX_GOVS][64];
	const char *list;
	int nnames = 0, nasked = 0;
	const struct gov *ref = find_gov("teo-7.3");
	double off_uj = 0;
	double null_ns = cost ? ns_per_call(drv, t, find_gov("null"), cfg) : 0;
	s64 *lat = calloc(t->n + 1, sizeof(*lat));
	int *ref_idx = calloc(t->n + 1, sizeof(*ref_idx));
	struct replay_cfg rcfg = *cfg;
	struct result r;
	int n, i;

	if (!lat || !ref_idx) {
		fprintf(stderr, "cpuidle-replay: out of memory\n");
		exit(2);
	}
	for (n = 0; n < ARRAY_SIZE(fixed); n++)
		names[nnames++] = fixed[n];
	nnames += series_steps(names + nnames);
	for (n = 0, list = only; list && n < MAX_GOVS; n++) {
		list = list_next(list, asked[nasked], sizeof(asked[nasked]));
		for (i = 0; i < nnames && strcmp(names[i], asked[nasked]); i++)
			;
		if (i == nnames)
			names[nnames++] = asked[nasked++];
	}

	/* What upstream teo picks first in each period, if it is built in. */
	rcfg.first_idx = ref_idx;
	if (ref)
		replay(drv, t, ref, &rcfg, &r);
	rcfg.first_idx = NULL;
	rcfg.ref_idx = ref ? ref_idx : NULL;

	/* The energy of our teo with utilization awareness off, if built in. */
	if (find_gov("teo-noutil") && !replay(drv, t, find_gov("teo-noutil"), &rcfg, &r))
		off_uj = r.energy_uj;

	if (csv) {
		printf("governor,wakeups,too_deep_pct,too_shallow_pct,oracle_pct,tick_stopped_pct,deepest_tick_stopped_pct,shallower_than_teo73_pct,irq_exit_latency_mean_us,irq_exit_latency_p99_us,energy_mj,energy_vs_util_off_pct,ns_per_decision,util_pct,misfit_pct,energy_table_mj,tick_stops,tick_stops_per_s,running_mw,misfit_ms,idle_periods,too_deep_wakeups,too_shallow_wakeups");
		for (i = 0; i < drv->state_count; i++)
			printf(",residency_pct_%s", drv->states[i].name);
		printf("\n");
	} else if (misses) {
		printf("%-12s %8s %11s %15s %8s %8s\n", "governor", "idles",
		       "idle_misses", "idle_miss_ratio", "belows", "aboves");
	} else {
		printf("%-12s %7s %6s %6s %6s %6s %6s %7s %7s %9s %9s %6s %5s %5s  %s\n",
		       "governor", "wakeups", "deep%", "shal%", "orcl%",
		       "tick0%", "stop/s", "irqlat", "p99lat", "energy", "etable",
		       "vsoff%", "ns", "util%", "residency% by state");
	}
	for (n = 0; n < nnames; n++) {
		const struct gov *g = find_gov(names[n]);
		double w, cost_ns = 0, mean = 0, p99 = 0, total = 0, stops_s;

		if (!g || (only && !in_list(only, names[n])))
			continue;
		rcfg.irq_latencies = lat;
		if (replay(drv, t, g, &rcfg, &r)) {
			fprintf(stderr, "cpuidle-replay: %s returned state %d of %d\n",
				names[n], r.bad_index, drv->state_count);
			exit(1);
		}
		w = max(r.wakeups, 1);
		if (misses) {
			printf("%-12s %8llu %11llu %15.4f %8llu %8llu\n", names[n],
			       r.wakeups, r.above + r.below, (r.above + r.below) / w,
			       r.below, r.above);
			continue;
		}
		if (g->ops && cost)
			cost_ns = max(0.0, ns_per_call(drv, t, g, cfg) - null_ns);
		if (r.irq_wakeups) {
			qsort(lat, r.irq_wakeups, sizeof(*lat), cmp_s64);
			mean = r.irq_exit_latency_ns / 1e3 / r.irq_wakeups;
			p99 = lat[(r.irq_wakeups * 99) / 100] / 1e3;
		}
		for (i = 0; i < drv->state_count; i++)
			total += r.residency_ns[i];
		total = max(total, 1.0);
		stops_s = r.tick_stops * 1e9 / max(r.span_ns, 1);
		if (csv)
			printf("%s,%llu,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.1f,%.1f,%.3f,%.2f,%.1f,%.2f,%.3f,%.3f,%llu,%.1f,%d,%.3f,%zu,%llu,%llu",
			       names[n], r.wakeups, 100 * r.above / w, 100 * r.below / w,
			       100 * r.oracle_hits / w, 100 * r.tick_stopped / w,
			       100.0 * r.deepest_tick_stopped / max(r.deepest_entries, 1),
			       100 * r.below_ref_ns / total, mean, p99,
			       r.energy_uj / 1e3,
			       off_uj > 0 ? 100 * (r.energy_uj / off_uj - 1) : 0.0,
			       cost_ns, 100 * r.util_sum / max(t->n, 1),
			       100 * r.misfit_ns / total, r.energy_table_uj / 1e3,
			       r.tick_stops, stops_s, running_mw(drv),
			       r.misfit_ns / 1e6, t->n, r.above, r.below);
		else
			printf("%-12s %7llu %6.2f %6.2f %6.2f %6.2f %6.1f %7.1f %7.1f %9.3f %9.3f %+6.1f %5.0f %5.1f ",
			       names[n], r.wakeups, 100 * r.above / w, 100 * r.below / w,
			       100 * r.oracle_hits / w, 100 * r.tick_stopped / w,
			       stops_s, mean, p99, r.energy_uj / 1e3,
			       r.energy_table_uj / 1e3,
			       off_uj > 0 ? 100 * (r.energy_uj / off_uj - 1) : 0.0,
			       cost_ns, 100 * r.util_sum / max(t->n, 1));
		for (i = 0; i < drv->state_count; i++)
			printf(csv ? ",%.2f" : " %5.1f", 100 * r.residency_ns[i] / total);
		printf("\n");
	}
	free(ref_idx);
	free(lat);
}

/*
 * The governors named @gname and @shadow, for a lockstep replay, in @g and
 * @s; 2 after one line on stderr if they cannot be paired: either is not a
 * built-in governor, or both are one build ("teo" and "teo-noutil"),
 * whose per-CPU data they would share, each selection updating it twice.
 */
static int lockstep_pair(const char *gname, const char *shadow,
			 const struct gov **g, const struct gov **s)
{
	*g = find_gov(gname);
	*s = find_gov(shadow);
	if (!*g || !(*g)->ops || !*s || !(*s)->ops) {
		fprintf(stderr, "cpuidle-replay: --agree compares two built-in governors; %s is not one\n",
			*g && (*g)->ops ? shadow : gname);
		return 2;
	}
	if ((*g)->ops == (*s)->ops) {
		fprintf(stderr, "cpuidle-replay: --agree needs two builds, and %s and %s are one, with one per-CPU state between them\n",
			gname, shadow);
		return 2;
	}
	return 0;
}

/*
 * --agree: replay @gname (default: our teo) with @shadow in lockstep (see
 * shadow_select()) and print how many decisions were the same.  The last
 * line is "agree GOV SHADOW: SAME of N (PCT%), same state in ...".
 */
static int agree(const struct cpuidle_driver *drv, const struct trace *t,
		 const struct replay_cfg *cfg0, const char *gname,
		 const char *shadow)
{
	struct replay_cfg cfg = *cfg0;
	const struct gov *g, *s;
	struct result r;

	if (lockstep_pair(gname, shadow, &g, &s))
		return 2;
	cfg.shadow = s;
	if (replay(drv, t, g, &cfg, &r)) {
		fprintf(stderr, "cpuidle-replay: %s returned state %d of %d\n",
			gname, r.bad_index, drv->state_count);
		return 1;
	}
	if (r.shadow_first[0])
		printf("first difference: %s\n", r.shadow_first);
	printf("shallower than %s: longest %lld ns with the tick stopped, %lld ns with it running\n",
	       shadow, r.shallower_stopped_ns, r.shallower_kept_ns);
	printf("agree %s %s: %llu of %llu (%.3f%%), same state in %llu\n",
	       gname, shadow, r.shadow_same, r.wakeups,
	       100.0 * r.shadow_same / max(r.wakeups, 1), r.shadow_idx_same);
	return 0;
}

/*
 * --agree with lists: --gov G1,G2,... --agree S1,S2,... replays each Gi
 * with Si in lockstep, one "agree" line each, the trace read once.
 */
static int agree_pairs(const struct cpuidle_driver *drv, const struct trace *t,
		       const struct replay_cfg *cfg, const char *gnames,
		       const char *shadows)
{
	char g[64], s[64];
	int rc = 0;

	while (gnames && shadows && !rc) {
		gnames = list_next(gnames, g, sizeof(g));
		shadows = list_next(shadows, s, sizeof(s));
		rc = agree(drv, t, cfg, g, s);
	}
	if (!rc && (gnames || shadows)) {
		fprintf(stderr, "cpuidle-replay: --gov and --agree list different numbers of governors\n");
		return 2;
	}
	return rc;
}

/*
 * --agree SHADOW --gov NAME --random CASES: the fuzzer's random cases from
 * @seed on (with @extreme, also those with near-S64_MAX values), each
 * replayed through @gname with @shadow in lockstep.  The last line is
 * "agree GOV SHADOW: SAME of N (PCT%) over CASES random cases".
 */
static int agree_random(const char *gname, const char *shadow, u64 seed,
			u64 cases, bool extreme)
{
	u64 same = 0, total = 0, c;
	const struct gov *g, *s;
	char first[300] = "";

	if (lockstep_pair(gname, shadow, &g, &s))
		return 2;
	for (c = seed; c < seed + cases; c++) {
		struct cpuidle_driver drv;
		struct replay_cfg cfg;
		struct trace t;
		struct result r;
		int rc;

		fuzz_make(c, extreme, &drv, &t, &cfg);
		cfg.shadow = s;
		cfg.check_invariants = false;
		rc = replay(&drv, &t, g, &cfg, &r);
		free(t.p);
		if (rc) {
			fprintf(stderr, "cpuidle-replay: %s returned state %d of %d in case %llu\n",
				gname, r.bad_index, drv.state_count, c);
			return 1;
		}
		same += r.shadow_same;
		total += r.wakeups;
		if (r.shadow_same != r.wakeups && !first[0])
			snprintf(first, sizeof(first), "case %llu: %s", c,
				 r.shadow_first);
	}
	if (first[0])
		printf("first difference: %s\n", first);
	printf("agree %s %s: %llu of %llu (%.3f%%) over %llu random cases\n",
	       gname, shadow, same, total, 100.0 * same / max(total, 1), cases);
	return 0;
}

/*
 * --decisions: replay one governor and write each of its calls as a line
 * "PERIOD CPU STATE STOP_TICK TICK_STOPPED" (PERIOD counts the trace's
 * lines from 1; STOP_TICK is the governor's tick decision, TICK_STOPPED
 * whether the tick was already stopped) to @path.
 */
static int decisions(const struct cpuidle_driver *drv, const struct trace *t,
		     const struct replay_cfg *cfg0, const char *gname,
		     const char *path)
{
	const struct gov *g = find_gov(gname);
	struct replay_cfg cfg = *cfg0;
	struct result r;
	int ret;

	if (!g || !g->ops || strchr(gname, ',')) {
		fprintf(stderr, "cpuidle-replay: --decisions needs one governor of the harness in --gov, not '%s'\n",
			gname);
		return 2;
	}
	cfg.decisions = fopen(path, "w");
	if (!cfg.decisions) {
		fprintf(stderr, "cpuidle-replay: cannot write %s: %s\n", path, strerror(errno));
		return 2;
	}
	ret = replay(drv, t, g, &cfg, &r);
	if (fclose(cfg.decisions) || ret) {
		fprintf(stderr, "cpuidle-replay: %s\n", ret ? "the governor returned a state out of range" :
			"cannot finish writing the decisions");
		return 1;
	}
	printf("decisions %s: %llu calls in %s\n", gname, r.wakeups, path);
	return 0;
}

static const char usage_text[] =
	"usage: cpuidle-replay --table FILE --trace FILE [--gov NAME[,NAME...]] [--hz N] [--exit-share PCT] [--disable MASK] [--tick-cost NS] [--latency-limit US] [--csv | --misses] [--no-cost]\n"
	"       cpuidle-replay --table FILE --trace FILE --agree SHADOW [--gov NAME] [--hz N] ...\n"
	"       cpuidle-replay --agree SHADOW --gov NAME --random CASES [--seed N] [--extreme]\n"
	"       cpuidle-replay --table FILE --trace FILE --gov NAME --decisions FILE [--events FILE] [--hz N] ...\n"
	"       cpuidle-replay --self-test\n"
	"       cpuidle-replay --self-test-fuzz ITERATIONS\n"
	"       cpuidle-replay --fuzz SECONDS [--seed N] [--cases N]\n"
	"       cpuidle-replay --fuzz-case SEED\n";

/* How to read the table a replay prints (--help, --legend). */
static const char legend_text[] =
	"The replay's table, one row per governor:\n"
	"  wakeups  idle periods the governor chose a state for\n"
	"  deep%    of them too deep: the idle time fell short of the state's target residency\n"
	"  shal%    of them too shallow: a deeper enabled state would have paid off\n"
	"  orcl%    of them the state the table-implied oracle picks for the rest of the period\n"
	"  tick0%   of them spent with the tick stopped\n"
	"  stop/s   tick stops per second of the trace\n"
	"  irqlat   mean exit latency paid at wakeups that were not timers, us (p99lat: 99th percentile)\n"
	"  energy   mJ in the default model (state power plus exit latency at the highest power);\n"
	"           etable: mJ in the model the target residencies imply; both count the tick stops\n"
	"  vsoff%   energy against our teo with utilization awareness off (teo-noutil)\n"
	"  ns       time per decision (0 with --no-cost); util%: mean utilization, % of capacity\n"
	"  residency% by state: share of idle time in each state, shallowest first\n"
	"Lower is better in deep%, shal%, irqlat, p99lat, energy, etable and ns, higher in\n"
	"orcl%.  The \"oracle\" and \"oracle-table\" rows are no governors: they are the least\n"
	"energy any governor could use in each model, knowing the whole trace.\n"
	"With --misses the table has linux-pm's idle-miss columns instead, counted as the\n"
	"cpuidle core counts a state's \"above\" and \"below\" in sysfs: idles (the wakeups),\n"
	"idle_misses (aboves + belows), idle_miss_ratio, belows (too shallow) and aboves\n"
	"(too deep), so that a device's or a guest's table and its replay stand side by side.\n";

/* Bad usage: one line on stderr, exit status 2. */
static void usage(const char *why)
{
	fprintf(stderr, "cpuidle-replay: %s (cpuidle-replay --help for usage)\n", why);
	exit(2);
}

/* The value of the option at argv[*@i], which moves *@i past it. */
static const char *value(int argc, char **argv, int *i)
{
	if (*i + 1 == argc) {
		snprintf(errbuf, sizeof(errbuf), "%s needs a value", argv[*i]);
		usage(errbuf);
	}
	return argv[++*i];
}

/* An argument that is none of the options. */
static void unknown(const char *a)
{
	snprintf(errbuf, sizeof(errbuf), "%s '%s'",
		 strncmp(a, "--", 2) ? "unexpected argument" : "unknown option", a);
	usage(errbuf);
}

/* A whole number from @s, or usage() about @what. */
static u64 number(const char *s, const char *what)
{
	char *end;
	u64 v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-')
		usage(what);
	return v;
}

/*
 * --fuzz SECONDS [--seed N] [--cases N], or --fuzz-case SEED: nothing else
 * goes with them.
 */
static int fuzz_args(int argc, char **argv)
{
	u64 seed = 1, cases = 0, limit;
	int i;

	if (argc < 2)
		usage("--fuzz needs a number of seconds, --fuzz-case a seed");
	if (!strcmp(argv[0], "--fuzz-case")) {
		if (argc != 2)
			usage("--fuzz-case takes a seed and nothing else");
		return fuzz_one(number(argv[1], "--fuzz-case needs a seed (a whole number)"));
	}
	limit = number(argv[1], "--fuzz needs a number of seconds");
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--seed"))
			seed = number(value(argc, argv, &i), "--seed needs a whole number");
		else if (!strcmp(argv[i], "--cases"))
			cases = number(value(argc, argv, &i), "--cases needs a whole number");
		else
			unknown(argv[i]);
	}
	if (!limit && !cases)
		usage("--fuzz needs seconds or --cases above 0");
#if defined(__SANITIZE_ADDRESS__)
	__sanitizer_set_death_callback(fuzz_died);
#endif
	return fuzz_main(limit, seed, cases);
}

int main(int argc, char **argv)
{
	const char *table = NULL, *trace = NULL, *gname = NULL, *shadow = NULL;
	const char *dfile = NULL, *efile = NULL;
	bool csv = false, cost = true, extreme = false, misses = false;
	u64 random_cases = 0, seed = 1;
	struct replay_cfg cfg = {
		.tick_ns = NSEC_PER_MSEC, .exit_share_pct = 50,
		.tick_cost_ns = TICK_COST_NS,
	};
	struct cpuidle_driver drv;
	struct trace t;
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--help")) {
			fputs(usage_text, stdout);
			fputs("\n", stdout);
			fputs(legend_text, stdout);
			return 0;
		}
		if (!strcmp(a, "--legend")) {
			fputs(legend_text, stdout);
			return 0;
		}
		if (!strcmp(a, "--self-test"))
			return self_test(0);
		if (!strcmp(a, "--csv")) {
			csv = true;
			continue;
		}
		if (!strcmp(a, "--no-cost")) {
			cost = false;
			continue;
		}
		if (!strcmp(a, "--misses")) {
			misses = true;
			continue;
		}
		if (!strcmp(a, "--extreme")) {
			extreme = true;
			continue;
		}
		if (!strcmp(a, "--fuzz") || !strcmp(a, "--fuzz-case")) {
			if (i != 1)
				usage("--fuzz and --fuzz-case go first, with their own options only");
			break;
		}
		if (!strcmp(a, "--self-test-fuzz")) {
			long n = i + 1 < argc ? strtol(argv[i + 1], NULL, 10) : 0;

			if (n <= 0)
				usage("--self-test-fuzz needs a number of iterations");
			return self_test(n);
		}
		if (!strcmp(a, "--table"))
			table = value(argc, argv, &i);
		else if (!strcmp(a, "--trace"))
			trace = value(argc, argv, &i);
		else if (!strcmp(a, "--gov"))
			gname = value(argc, argv, &i);
		else if (!strcmp(a, "--agree"))
			shadow = value(argc, argv, &i);
		else if (!strcmp(a, "--random"))
			random_cases = number(value(argc, argv, &i),
					      "--random needs a whole number of cases");
		else if (!strcmp(a, "--seed"))
			seed = number(value(argc, argv, &i), "--seed needs a whole number");
		else if (!strcmp(a, "--decisions"))
			dfile = value(argc, argv, &i);
		else if (!strcmp(a, "--events"))
			efile = value(argc, argv, &i);
		else if (!strcmp(a, "--hz")) {
			long hz = strtol(value(argc, argv, &i), NULL, 10);

			if (hz < 24 || hz > 10000)
				usage("--hz must be between 24 and 10000");
			cfg.tick_ns = NSEC_PER_SEC / hz;
		} else if (!strcmp(a, "--disable")) {
			char *end;

			cfg.disabled = strtoul(value(argc, argv, &i), &end, 0);
			if (*end || cfg.disabled >= BIT(CPUIDLE_STATE_MAX))
				usage("--disable takes a bit mask of states, such as 0x4 for state 2");
		} else if (!strcmp(a, "--tick-cost")) {
			cfg.tick_cost_ns = number(value(argc, argv, &i),
						  "--tick-cost needs a whole number of ns");
			if (cfg.tick_cost_ns > NSEC_PER_SEC)
				usage("--tick-cost is at most 1000000000 ns");
		} else if (!strcmp(a, "--latency-limit")) {
			u64 us = number(value(argc, argv, &i),
					"--latency-limit needs a whole number of us");

			if (us > INT_MAX)
				usage("--latency-limit is at most 2147483647 us");
			cfg.has_qos = true;
			cfg.qos_ns = us * NSEC_PER_USEC;
		} else if (!strcmp(a, "--exit-share")) {
			cfg.exit_share_pct = strtol(value(argc, argv, &i), NULL, 10);
			if (cfg.exit_share_pct < 0 || cfg.exit_share_pct > 100)
				usage("--exit-share must be between 0 and 100");
		} else {
			unknown(a);
		}
	}
	if (i < argc)
		return fuzz_args(argc - i, argv + i);
	if (random_cases || extreme) {
		if (!shadow || !gname || !random_cases || table || trace)
			usage("--random CASES goes with --agree and --gov, without --table or --trace");
		return agree_random(gname, shadow, seed, random_cases, extreme);
	}
	if (!table || !trace)
		usage("--table and --trace are required");
	if (csv && misses)
		usage("--csv has every column, --misses linux-pm's idle-miss columns: one of them");

	if (parse_table(table, slurp(table), &drv) ||
	    parse_trace(trace, slurp(trace), &t)) {
		fprintf(stderr, "cpuidle-replay: %s\n", errbuf);
		return 2;
	}

	if (efile && !dfile)
		usage("--events goes with --decisions");
	if (efile) {
		shim_set_trace(fopen(efile, "w"));
		if (!shim_trace) {
			fprintf(stderr, "cpuidle-replay: cannot write %s: %s\n", efile, strerror(errno));
			return 2;
		}
	}
	if (dfile)
		return decisions(&drv, &t, &cfg, gname ? gname : "teo", dfile);
	if (shadow)
		return agree_pairs(&drv, &t, &cfg, gname ? gname : "teo", shadow);
	if (gname) {
		const char *g = gname;

		/* Every name in the list must be a governor of the harness. */
		while (g) {
			char name[64];

			g = list_next(g, name, sizeof(name));
			if (!find_gov(name)) {
				fprintf(stderr, "cpuidle-replay: unknown governor '%s'\n", name);
				return 2;
			}
		}
	}
	report(&drv, &t, &cfg, gname, csv, cost, misses);
	return 0;
}
