/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Timer events oriented (TEO) CPU idle governor: the decision core.
 *
 * The types below are the explicit inputs and outputs of the governor's
 * decision logic.  The functions are visible outside teo.c only in kernels
 * with KUnit (VISIBLE_IF_KUNIT), so that tests call the very code the kernel
 * runs.
 */
#ifndef __CPUIDLE_GOV_TEO_H
#define __CPUIDLE_GOV_TEO_H

#include <linux/cpuidle.h>
#include <linux/ktime.h>
#include <linux/time64.h>
#include <linux/types.h>

/* Added to the metric an event is counted in. */
#define TEO_PULSE		1024
/* Every metric loses 1/2^TEO_DECAY_SHIFT of itself per wakeup. */
#define TEO_DECAY_SHIFT		3

/**
 * struct teo_bin - Decaying wakeup metrics of the bin owned by one state.
 * @intercepts: Wakeups that ended in this bin earlier than the next timer
 *	would have ended them.
 * @hits: Wakeups that the next timer predicted (or artificial wakeups,
 *	counted as such), by the bin the timer was in.
 *
 * Bin i holds idle durations from the target residency of state i up to
 * (not including) that of state i + 1; the last bin is unbounded.
 */
struct teo_bin {
	unsigned int intercepts;
	unsigned int hits;
};

/* A CPU is utilized above 1/2^TEO_UTIL_THRESHOLD_SHIFT of its capacity. */
#define TEO_UTIL_THRESHOLD_SHIFT	6

/* Runs of up to TEO_RUN_MAX - 1 alike wakeups are told apart. */
#define TEO_RUN_MAX		32
/* The pattern after a run of @run wakeups, early ones if @early. */
#define TEO_CONTEXT(early, run)	((early) * TEO_RUN_MAX + (run))
/* A pattern's counts are halved when it has been seen this many times. */
#define TEO_PATTERN_WINDOW	64
/*
 * Utilization awareness acts on a pattern only if the saving it predicts is
 * over two standard errors away from zero: TEO_CONFIDENCE_Z2 is z squared.
 */
#define TEO_CONFIDENCE_Z2	4

/**
 * struct teo_pattern - What followed one kind of run of wakeups.
 * @early: How many of the wakeups that followed it came early (intercepts
 *	below the deepest bin).
 * @seen: How many wakeups followed it.
 */
struct teo_pattern {
	u8 early;
	u8 seen;
};

/**
 * struct teo_metrics - Per-CPU wakeup history of the governor.
 * @bins: One bin per idle state of the driver.
 * @events: What all bins' metrics add up to after the last update.
 * @brief_idles: Decaying count of wakeups after less than
 *	%RESIDENCY_THRESHOLD_NS of idle (or within the exit latency).
 * @artificial: The last wakeup was artificial (see struct teo_wakeup).
 * @outlived_ns: Idle time since the last wakeup that was not artificial:
 *	what the CPU has waited through when the tick or a polling limit
 *	woke it.
 * @early_ns: Decaying mean idle duration of the early wakeups (intercepts
 *	that ended below the deepest bin).
 * @early_bin: The bin the last early wakeup ended in.
 * @context: TEO_CONTEXT() of the kind of the last wakeup that was not
 *	artificial (early or not) and of how many wakeups in a row, up to and
 *	including that one, were of its kind (up to %TEO_RUN_MAX - 1): the
 *	pattern the next one counts in.
 * @patterns: By @context, what followed each kind and length of run
 *	(artificial wakeups are left out).
 */
struct teo_metrics {
	struct teo_bin bins[CPUIDLE_STATE_MAX];
	unsigned int events;
	unsigned int brief_idles;
	bool artificial;
	s64 outlived_ns;
	s64 early_ns;
	int early_bin;
	u8 context;
	struct teo_pattern patterns[2 * TEO_RUN_MAX];
};

/**
 * struct teo_input - Everything a selection depends on besides the metrics.
 * @states: The driver's state table, shallowest first.
 * @state_count: Number of entries in @states.
 * @usage: The CPU's usage record of each state; only .disable is read
 *	(state i is disabled if it is not zero).
 * @latency_req_ns: Exit latency limit for this CPU (global and per-CPU QoS).
 * @tick_period_ns: Length of the scheduler tick period (TICK_NSEC).
 * @tick_stopped: The tick is already stopped on this CPU.
 * @utilized: The CPU's utilization (sched_cpu_util()) exceeds
 *	1/2^%TEO_UTIL_THRESHOLD_SHIFT of its capacity; never without
 *	CONFIG_SMP.  The glue asks for it only if the decision without it
 *	says that it matters (@util_matters in struct teo_decision).
 */
struct teo_input {
	const struct cpuidle_state *states;
	int state_count;
	const struct cpuidle_state_usage *usage;
	s64 latency_req_ns;
	s64 tick_period_ns;
	bool tick_stopped;
	bool utilized;
};

/**
 * enum teo_reason - Why a selection ended at the state it picked.
 * @TEO_REASON_TIMER: Nothing predicted a wakeup before the next timer: the
 *	candidate (the deepest usable state), or the deepest usable state
 *	that fits the sleep length.
 * @TEO_REASON_LATENCY: The candidate, shallower than the deepest enabled
 *	state because of the latency limit.
 * @TEO_REASON_INTERCEPTS: The state picked for the intercepts (step 2).
 * @TEO_REASON_UTIL: The state the wakeup pattern picked on a utilized CPU
 *	(step 2a).
 * @TEO_REASON_TICK: The deepest usable state that fits before the kept
 *	tick.
 * @TEO_REASON_SINGLE: At most one state was usable.
 *
 * The reason is that of the last step that changed the state.
 */
enum teo_reason {
	TEO_REASON_TIMER,
	TEO_REASON_LATENCY,
	TEO_REASON_INTERCEPTS,
	TEO_REASON_UTIL,
	TEO_REASON_TICK,
	TEO_REASON_SINGLE,
};

/**
 * struct teo_decision - Result of (each phase of) an idle state selection.
 * @idx: Index of the selected state.
 * @cand: The candidate: the deepest usable state, -1 if none is usable.
 * @reason: Why @idx was picked.
 * @stop_tick: Whether the tick may be stopped.
 * @need_sleep_length: Set by the early phase when the sleep length may
 *	change the answer: the caller must query it and run the late phase.
 * @first_idx: The shallowest usable state or, if none is, the shallowest
 *	enabled one (for the late phase).
 * @intercept_bound_ns: If step 2 picked a shallower state for intercepts,
 *	the upper edge of its bin (the next state's target residency), by
 *	which most of them came; if step 2a picked one, the upper edge of the
 *	last early wakeup's bin, at most one tick period; else KTIME_MAX.
 * @utilized: Utilization awareness changed step 2's choice: it picked a
 *	shallower state for an early wakeup that the metrics did not yet
 *	foresee, or kept the candidate for a timer wakeup they did not.
 * @util_matters: The wakeup pattern would change the choice if the CPU
 *	were utilized (whatever @utilized in struct teo_input says).
 * @util_idx: If @util_matters, the state the pattern picks.
 */
struct teo_decision {
	int idx;
	int cand;
	enum teo_reason reason;
	bool stop_tick;
	bool need_sleep_length;
	int first_idx;
	s64 intercept_bound_ns;
	bool utilized;
	bool util_matters;
	int util_idx;
};

/**
 * struct teo_wakeup - What happened in the last idle period.
 * @sleep_length_ns: Time till the next timer at selection time, or
 *	KTIME_MAX if the governor did not ask for it.
 * @residency_ns: Idle time measured by the cpuidle core.
 * @exit_latency_ns: Exit latency of the state that was entered.
 * @artificial: The scheduler tick or a polling state's time limit ended
 *	the idle period: the CPU could have stayed idle until the next timer.
 */
struct teo_wakeup {
	s64 sleep_length_ns;
	s64 residency_ns;
	s64 exit_latency_ns;
	bool artificial;
};

/**
 * enum teo_kind - How a wakeup was counted.
 * @TEO_KIND_HIT: As a hit: the sleep length predicted it.
 * @TEO_KIND_INTERCEPT: As an intercept: it came before the sleep length
 *	or in another bin.
 * @TEO_KIND_ARTIFICIAL: As a hit in the sleep length's bin, being
 *	artificial (see struct teo_wakeup).
 */
enum teo_kind {
	TEO_KIND_HIT,
	TEO_KIND_INTERCEPT,
	TEO_KIND_ARTIFICIAL,
};

/**
 * struct teo_count - Where teo_account() counted a wakeup.
 * @idle_ns: The idle duration it was taken for, by which its bin was
 *	found: the measured one (see the DOC block) up to the sleep length;
 *	the sleep length if the wakeup was artificial.
 * @bin: The bin whose metric got the event.
 * @kind: The metric that got it.
 */
struct teo_count {
	s64 idle_ns;
	int bin;
	enum teo_kind kind;
};

#if IS_ENABLED(CONFIG_KUNIT)
void teo_decide_early(const struct teo_input *in,
		      const struct teo_metrics *m, struct teo_decision *d);
void teo_decide_late(const struct teo_input *in, s64 sleep_length_ns,
		     s64 delta_tick_ns, struct teo_decision *d);
struct teo_count teo_account(const struct teo_input *in,
			     struct teo_metrics *m,
			     const struct teo_wakeup *w);

/* The glue, and what it asks the kernel (KUnit static stubs). */
int teo_select(struct cpuidle_driver *drv, struct cpuidle_device *dev,
	       bool *stop_tick);
void teo_reflect(struct cpuidle_device *dev, int index);
int teo_enable(struct cpuidle_driver *drv, struct cpuidle_device *dev);
bool teo_tick_stopped(void);
bool teo_got_tick(void);
ktime_t teo_sleep_length(ktime_t *delta_tick);
bool teo_cpu_utilized(int cpu);
s64 teo_latency_req(int cpu);
#endif

#endif /* __CPUIDLE_GOV_TEO_H */
