/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The replay harness's own types and functions, by the file that has them.
 * The governors see none of this: they are compiled against shim.h alone.
 */
#ifndef TEO_HARNESS_REPLAY_H
#define TEO_HARNESS_REPLAY_H

#include "shim.h"

#define MAX_GOVS	32
#define POLL_MIN_NS	(10 * NSEC_PER_USEC)
/* What a stop of the tick and its restart cost by default (README). */
#define TICK_COST_NS	(2 * NSEC_PER_USEC)
/* The tick period of a replay that is given none: CONFIG_HZ's default. */
#define DEFAULT_HZ	250

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

/* governors.c: the governors built in, and the bounds beside them. */
extern struct gov govs[MAX_GOVS];
extern int ngovs;
bool usable(const struct cpuidle_driver *drv,
	    const struct cpuidle_device *dev, int i, s64 lat_ns);
const struct gov *find_gov(const char *name);
int series_steps(const char **names);
const char *step_before(const char *step);

/* parse.c: state tables and traces; a failure's message in errbuf. */
extern char errbuf[512];
int fail(const char *file, int line, const char *fmt, ...);
char *slurp(const char *path);
int parse_table(const char *name, const char *text,
		struct cpuidle_driver *drv);
int parse_trace(const char *name, const char *text, struct trace *t);
int trace_line(void *ctx, const char *name, int line, char *s);

/* replay.c: the cpuidle core around a governor, over a whole trace. */
s64 kept_tick_cut(const struct period *p, s64 delta_tick_ns,
		  s64 elapsed_ns);
bool line_resumes(const struct trace *t);
s64 next_tick(const struct period *p, u64 now_ns, s64 elapsed_ns,
	      bool again, s64 tick_ns);
void account(const struct cpuidle_driver *drv,
	     struct cpuidle_device *dev, int idx, s64 diff,
	     struct result *r);
int replay(const struct cpuidle_driver *drv0, const struct trace *t,
	   const struct gov *g, const struct replay_cfg *cfg,
	   struct result *r);
void out_of_memory(void);

/* energy.c: the energy models, and the oracles that minimize them. */
void model_costs(const struct cpuidle_driver *drv, double *peak,
		 double *table);
double model_energy(const struct cpuidle_driver *drv,
		    const double *cost, int idx, s64 ns);
int running_mw(const struct cpuidle_driver *drv);
double tick_stop_uj(const struct cpuidle_driver *drv,
		    const struct replay_cfg *cfg);
s64 exit_share(const struct cpuidle_state *s,
	       const struct replay_cfg *cfg);
int cheapest(const struct cpuidle_driver *drv,
	     const struct cpuidle_device *dev, const double *cost,
	     const struct replay_cfg *cfg, s64 lat_ns, s64 ns, bool share,
	     double *uj);
int trace_cpus(const struct trace *t);
double make_plan(const struct cpuidle_driver *drv,
		 const struct cpuidle_device *devs,
		 const struct trace *t, const struct replay_cfg *cfg,
		 const double *cost);
int oracle(const struct call *c, bool *stop_tick);

/* report.c: what a replay prints, and the lockstep comparisons. */
double seconds(void);
const char *list_next(const char *list, char *name, size_t size);
void report(const struct cpuidle_driver *drv, const struct trace *t,
	    const struct replay_cfg *cfg, const char *only, bool csv,
	    bool cost, bool misses);
int agree_pairs(const struct cpuidle_driver *drv, const struct trace *t,
		const struct replay_cfg *cfg, const char *gnames,
		const char *shadows);
int agree_random(const char *gname, const char *shadow, u64 seed,
		 u64 cases, bool extreme);
int write_decisions(const struct cpuidle_driver *drv, const struct trace *t,
		    const struct replay_cfg *cfg0, const char *gname,
		    const char *path);

/* tests/: the self-tests and the fuzzer. */
int self_test(long fuzz_iterations);
void fuzz_make(u64 seed, bool ours, struct cpuidle_driver *drv,
	       struct trace *t, struct replay_cfg *cfg);
int fuzz_main(double limit_s, u64 seed0, u64 max_cases);
int fuzz_one(u64 seed);
void fuzz_died(void);

#endif /* TEO_HARNESS_REPLAY_H */
