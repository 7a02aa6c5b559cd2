// SPDX-License-Identifier: GPL-2.0
/*
 * Timer events oriented (TEO) CPU idle governor.
 *
 * Copyright (C) 2026 The TEO governor developers
 */

/**
 * DOC: teo-description
 *
 * Why timers first
 * ================
 *
 * On most systems the timer interrupt is by far the most common reason for a
 * CPU to leave an idle state, and the time of the next timer is known before
 * the CPU goes idle.  The "sleep length", the time until that timer, is
 * therefore the best single predictor of how long the CPU will stay idle.  It
 * is not free, though: tick_nohz_get_sleep_length() walks the timer queues,
 * so this governor asks for it only when the answer can depend on it.
 *
 * Other interrupts (I/O completions, IPIs, network packets) end some idle
 * periods earlier than the sleep length.  The governor learns how often that
 * happens from recent wakeups and moves to a shallower state when such early
 * wakeups dominate.
 *
 * Data: one bin per idle state
 * ============================
 *
 * The target residencies of the driver's states cut the time axis into bins:
 * bin i holds idle durations from the target residency of state i up to, but
 * not including, that of state i + 1; the last bin has no upper end.  Each
 * bin keeps two decaying metrics:
 *
 * - *hits*: the idle period ended in the same bin as the sleep length and
 *   within half the entered state's exit latency of it, so the timer
 *   predicted it;
 * - *intercepts*: the idle period ended in this bin although the sleep length
 *   lay in a deeper one, so something other than a timer cut it short.
 *
 * After every wakeup each metric loses an eighth of its value (rounded up, so
 * that small values do reach zero) and the bin the event falls into gains
 * %TEO_PULSE.  A metric thus weights the last few dozen wakeups, the latest
 * most.  The measured idle duration is the core's residency less half of the
 * entered state's exit latency, the typical share of it spent before the CPU
 * runs again.
 *
 * Wakeups caused by the scheduler tick or by the polling time limit are
 * *artificial*: the governor (or the core) chose to wake the CPU early, so
 * the CPU could have stayed idle until the next timer.  They are counted as
 * hits at the sleep length, or in the deepest bin when the sleep length was
 * not asked for.  Counting them where they occurred instead would make a kept
 * tick look like a stream of early wakeups, which keeps the tick, which makes
 * more of them: on systems with HZ=100 and few idle states that loop pins the
 * CPU in its shallowest state.
 *
 * Selection
 * =========
 *
 * A state is *usable* if it is enabled and its exit latency is within the
 * CPU's latency limit (global and per-CPU PM QoS).
 *
 * 1. The candidate is the deepest usable state.  If no state is usable, the
 *    shallowest enabled state (or state 0) is returned with the tick kept.
 *    If only one state is usable there is nothing to choose: it is returned,
 *    and the tick is stopped only if the state does not poll and its target
 *    residency is at least the tick period (or the tick is stopped already).
 *
 * 2. Early wakeups are the intercepts in the bins below the candidate.  If
 *    they outweigh all events in the candidate's bin and above (hits below
 *    the candidate are left out: step 4 finds those from the sleep length),
 *    the governor takes the median early wakeup: walking down from the
 *    candidate, the first bin at which the intercepts seen so far exceed half
 *    of all early ones and that is not deeper than the bin with the most
 *    intercepts.  It then picks the deepest usable state whose target
 *    residency does not exceed that bin's lower edge or, if there is none
 *    (the states below are disabled or over the latency limit), the
 *    shallowest usable state above that bin.  Bins of states that
 *    share their target residency with a deeper state are empty by
 *    construction, and "deepest state that fits" always prefers the deeper of
 *    such twins, so an empty bin never attracts the choice.
 *    If the tick has just woken the CPU and the CPU has been idle since its
 *    last real wakeup for at least the upper edge of the median bin, the
 *    early wakeup it was kept shallow for did not come when such wakeups
 *    do, and the candidate stands.  That does not apply to a polling state:
 *    its time limit is the next state's target residency, so it would
 *    always apply, and polling is cheap to leave.
 *
 *    Utilization (step 2a): on a utilized CPU (see below), when the tick
 *    or the polling limit did not cause the last wakeup, the governor also
 *    asks the wakeup patterns what comes next.  If an early wakeup is
 *    likely enough and step 2 did not already pick a shallower state, it
 *    picks for the bin the last early wakeup ended in, as step 2 would once
 *    the metrics caught up; it never picks a polling state this way.  If an
 *    early wakeup is unlikely and step 2 did pick a shallower state, the
 *    candidate stands.
 *
 * 3. The sleep length is asked for only if it can change the answer.  With
 *    the tick stopped it always can.  It cannot when early wakeups dominated
 *    and the chosen state is the shallowest usable one (nothing shallower
 *    exists, and step 5 keeps the tick), nor when state 0 polls and the
 *    chosen state's target residency is below %RESIDENCY_THRESHOLD_NS (the
 *    tick stays; so short a state is worth no query).
 *
 * 4. With the tick already stopped, only a timer ends the idle period: a
 *    state whose target residency is below the tick period stands only if a
 *    timer is due within two tick periods (%SAFE_TIMER_RANGE_NS); otherwise
 *    the deepest usable state that fits the sleep length is taken, and the
 *    selection ends.  If the next timer comes before the chosen state's
 *    target residency, the deepest usable state that fits before the timer
 *    is taken instead.
 *
 * 5. The tick is kept if the chosen state polls, or if the timer comes
 *    before the next tick anyway; the comparison is with the actual time
 *    left until the next tick (delta_tick), not with the tick period, so a
 *    timer due after the next tick but within one period does not leave the
 *    tick running to cut the idle period short.  If early wakeups dominated
 *    (or step 2a applied) and most of them come within one tick period (the
 *    upper edge of the median bin is not beyond it), the tick is kept too,
 *    as insurance against a wakeup that does not come; if they come later,
 *    the tick would only cut short the very idle periods they end.  The
 *    exception is a choice of the shallowest usable state for early wakeups:
 *    the tick is always kept then (as mainline keeps it for state 0), since
 *    without it a CPU would sit in its shallowest state until a far timer
 *    whenever an expected wakeup did not come, and the rule of step 2 for
 *    an overdue wakeup moves it deeper at the next selection.  In every
 *    other case the tick is stopped.  When the tick is kept, the chosen
 *    state must pay off before the next tick, or the deepest usable state
 *    that does is taken.
 *
 * Utilization awareness
 * =====================
 *
 * A CPU is *utilized* when sched_cpu_util() exceeds 1/64 of its capacity
 * (arch_scale_cpu_capacity()); without CONFIG_SMP it never is.  Interactive
 * work comes in bursts of early wakeups (input, GPU, network, ping-pong
 * between CPUs), and the decaying metrics take several wakeups to notice the
 * start of a burst, each of them spent in a state too deep, and several more
 * to notice its end.  They also blur a rhythm: a frame that waits for the GPU
 * three times and then for the next vsync timer shows three intercepts in
 * four wakeups, so step 2 keeps every idle period shallow, the vsync one
 * too.
 *
 * Wakeup patterns capture the rhythm.  The governor keeps the length of the
 * current *run* (wakeups in a row that all came early, or all did not; tick
 * and polling-limit wakeups are left out) and, for each kind and length of
 * run up to 31, how many of the wakeups that followed such a run came early,
 * out of how many (halved every 64, so old habits fade).  A pattern seen
 * fewer than 4 times says "early" if the last wakeup was early and nothing
 * otherwise.  Else it says "early" if the odds are better than 1 in 14, and
 * "timer" if they are below 1 in 16.  A wrong "early" costs a shallow state
 * until the next tick at most (step 5 keeps the tick), so with a tick period
 * above 4 ms the odds must be better in proportion: 1 in 5.6 at HZ=100.
 *
 * Utilization is a permission, not evidence: without wakeups that were
 * actually early it changes nothing, and step 4 can still make the choice
 * shallower.  That is what keeps clear of the three problems that had
 * utilization awareness reverted from Linux 6.11, which picked a shallower
 * state whenever the CPU was utilized:
 *
 * - a light periodic task on a CPU with only WFI and CPU-off kept it in WFI
 *   with the tick running: here, a CPU woken only by timers has patterns
 *   that never say "early", so it picks CPU-off and stops the tick as if it
 *   were not utilized;
 * - utilization decays for about 150 ms after a burst, and low-activity use
 *   (video playback) lost power in shallow states all that time: here, the
 *   patterns after a burst soon say "timer", which makes the choice deeper
 *   if anything;
 * - on x86 the polling state 0 burned power when picked for utilization:
 *   here, utilization never picks a polling state.
 *
 * Structure
 * =========
 *
 * teo_decide_early() (steps 1-3), teo_decide_late() (steps 4-5) and
 * teo_account() (the update after wakeup) are pure functions of explicit
 * inputs: the state table, the disabled states, the latency limit, the tick
 * period and state, whether the CPU is utilized, the metrics and, when
 * asked for, the sleep length.  The cpuidle callbacks gather those inputs
 * (asking for utilization only when a wakeup pattern has a say) and call
 * them, and the KUnit suite and the userspace replay harness call the very
 * same functions.
 */

#include <kunit/static_stub.h>
#include <kunit/visibility.h>
#include <linux/bits.h>
#include <linux/cpuidle.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/minmax.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/sched/topology.h>
#include <linux/tick.h>

#include "gov.h"
#include "teo.h"

/**
 * struct teo_cpu - Per-CPU state of the governor.
 * @metrics: Wakeup history, binned by idle state.
 * @sleep_length_ns: Sleep length found at the last selection, or KTIME_MAX
 *	if it was not asked for.
 * @tick_wakeup: The scheduler tick ended the last idle period.
 */
struct teo_cpu {
	struct teo_metrics metrics;
	s64 sleep_length_ns;
	bool tick_wakeup;
};

static DEFINE_PER_CPU(struct teo_cpu, teo_cpus);

static int teo_count(const struct teo_input *in)
{
	return clamp(in->state_count, 0, CPUIDLE_STATE_MAX);
}

static s64 teo_residency(const struct teo_input *in, int i)
{
	return in->states[i].target_residency_ns;
}

static bool teo_polls(const struct teo_input *in, int i)
{
	return in->states[i].flags & CPUIDLE_FLAG_POLLING;
}

static bool teo_enabled(const struct teo_input *in, int i)
{
	return !(in->disabled & BIT(i));
}

static bool teo_usable(const struct teo_input *in, int i)
{
	return teo_enabled(in, i) &&
	       in->states[i].exit_latency_ns <= in->latency_req_ns;
}

/*
 * The deepest usable state at or below @cap whose target residency does not
 * exceed @duration_ns, or -1 if there is none.
 */
static int teo_deepest_fit(const struct teo_input *in, int cap,
			   s64 duration_ns)
{
	int i;

	for (i = cap; i >= 0; i--) {
		if (teo_usable(in, i) && teo_residency(in, i) <= duration_ns)
			return i;
	}
	return -1;
}

/* The shallowest usable state in [@from, @cap), or @cap if there is none. */
static int teo_shallowest_from(const struct teo_input *in, int from, int cap)
{
	int i;

	for (i = from; i < cap; i++) {
		if (teo_usable(in, i))
			return i;
	}
	return cap;
}

/*
 * The deepest usable state at or below @cap that pays off within
 * @duration_ns or, if none does, the shallowest usable one (@cap is).
 */
static int teo_fit(const struct teo_input *in, int cap, s64 duration_ns)
{
	int idx = teo_deepest_fit(in, cap, duration_ns);

	return idx >= 0 ? idx : teo_shallowest_from(in, 0, cap);
}

/* State @i is usable and does not poll. */
static bool teo_sleeps(const struct teo_input *in, int i)
{
	return teo_usable(in, i) && !teo_polls(in, i);
}

/* The shallowest state in [@from, @cand) that teo_sleeps(), or @cand. */
static int teo_sleeper(const struct teo_input *in, int from, int cand)
{
	int i;

	for (i = from; i < cand; i++) {
		if (teo_sleeps(in, i))
			return i;
	}
	return cand;
}

enum teo_guess { TEO_GUESS_NONE, TEO_GUESS_EARLY, TEO_GUESS_TIMER };

/*
 * Step 2a: what the wakeups that followed runs like the current one say of
 * the next wakeup, whether or not the CPU is utilized.  A pattern seen too
 * rarely yet says "early" if the last wakeup was early.
 */
static enum teo_guess teo_pattern_guess(const struct teo_input *in,
					const struct teo_metrics *m)
{
	const struct teo_pattern *p = &m->patterns[m->last_early][m->run];
	u64 tick_ns;

	if (m->artificial)
		return TEO_GUESS_NONE;
	tick_ns = max_t(s64, in->tick_period_ns, TEO_GUESS_TICK_NS);
	if (p->seen < TEO_PATTERN_MIN)
		return m->last_early ? TEO_GUESS_EARLY : TEO_GUESS_NONE;
	if (p->early * TEO_TIMER_ODDS < p->seen)
		return TEO_GUESS_TIMER;
	if ((u64)p->early * TEO_GUESS_ODDS * TEO_GUESS_TICK_NS >
	    (u64)p->seen * tick_ns)
		return TEO_GUESS_EARLY;
	return TEO_GUESS_NONE;
}

/* Step 2a: the pattern's guess, on a utilized CPU only. */
static enum teo_guess teo_guess(const struct teo_input *in,
				const struct teo_metrics *m)
{
	return in->utilized ? teo_pattern_guess(in, m) : TEO_GUESS_NONE;
}

/*
 * Step 2: pick a state for the median early wakeup; set @d->idx to it and
 * @d->intercept_bound_ns to the upper edge of its bin.  @d->idx stays @cand
 * if early wakeups do not dominate, no usable state suits them, the CPU has
 * already outlived them, or (@guess) utilization awareness expects a timer.
 */
static void teo_intercept_choice(const struct teo_input *in,
				 const struct teo_metrics *m, int cand,
				 enum teo_guess guess, struct teo_decision *d)
{
	unsigned int early = 0, rest = 0, seen = 0, most = 0;
	int i, idx, most_bin = 0;

	d->idx = cand;
	for (i = 0; i < teo_count(in); i++) {
		if (i >= cand) {
			rest += m->bins[i].hits + m->bins[i].intercepts;
			continue;
		}
		early += m->bins[i].intercepts;
		if (m->bins[i].intercepts >= most) {
			most = m->bins[i].intercepts;
			most_bin = i;
		}
	}
	if (early <= rest)
		return;

	/* The median early wakeup, but no deeper than the most common one. */
	for (i = cand - 1; i > 0; i--) {
		seen += m->bins[i].intercepts;
		if (2 * seen > early && i <= most_bin)
			break;
	}

	idx = teo_deepest_fit(in, cand - 1, teo_residency(in, i));
	if (idx < 0)
		idx = teo_shallowest_from(in, i + 1, cand);

	/* The CPU has already waited longer than the early wakeups take. */
	if (m->artificial && !teo_polls(in, idx) &&
	    teo_residency(in, i + 1) <= m->outlived_ns)
		return;
	if (guess == TEO_GUESS_TIMER && idx < cand) {
		d->utilized = true;
		return;
	}
	d->idx = idx;
	d->intercept_bound_ns = teo_residency(in, i + 1);
}

/*
 * Step 2a, early wakeup guessed: pick for the bin the last early wakeup
 * ended in as if the metrics already said so: the deepest usable state that
 * fits it or, if none does, the shallowest usable one above; never a polling
 * state, never @d->idx or deeper.
 */
static void teo_burst_choice(const struct teo_input *in,
			     const struct teo_metrics *m,
			     struct teo_decision *d)
{
	int i, bin = m->early_bin, cand = d->idx;

	if (bin < 0 || bin >= cand)
		return;

	for (i = bin; i >= 0; i--) {
		if (teo_sleeps(in, i))
			break;
	}
	if (i < 0)
		i = teo_sleeper(in, bin + 1, cand);
	if (i == cand)
		return;
	d->idx = i;
	d->utilized = true;
	d->intercept_bound_ns = teo_residency(in, bin + 1);
}

/**
 * teo_decide_early - Select an idle state without the sleep length.
 * @in: State table, limits and tick state.
 * @m: Wakeup history of the CPU.
 * @d: Decision to fill in.
 *
 * Steps 1 to 3 of the selection described in the DOC block.  On return
 * @d->idx and @d->stop_tick are final unless @d->need_sleep_length is set, in
 * which case the caller must query the sleep length and complete the
 * decision with teo_decide_late().
 */
VISIBLE_IF_KUNIT void teo_decide_early(const struct teo_input *in,
				  const struct teo_metrics *m,
				  struct teo_decision *d)
{
	int i, cand = -1, shallowest = -1, first_enabled = -1;
	enum teo_guess guess;

	d->need_sleep_length = false;
	d->intercepted = false;
	d->intercept_bound_ns = KTIME_MAX;
	d->utilized = false;
	d->stop_tick = false;

	for (i = 0; i < teo_count(in); i++) {
		if (first_enabled < 0 && teo_enabled(in, i))
			first_enabled = i;
		if (!teo_usable(in, i))
			continue;
		if (shallowest < 0)
			shallowest = i;
		cand = i;
	}

	if (cand < 0) {
		/* Nothing meets the limits: the least harmful state, tick on. */
		d->idx = max(first_enabled, 0);
		return;
	}

	if (cand == shallowest) {
		/*
		 * Nothing to choose.  The tick is not worth stopping for a
		 * state that pays off within a tick period anyway.
		 */
		d->idx = cand;
		d->stop_tick = !teo_polls(in, cand) &&
			       (in->tick_stopped ||
				teo_residency(in, cand) >= in->tick_period_ns);
		return;
	}

	guess = teo_guess(in, m);
	teo_intercept_choice(in, m, cand, guess, d);
	if (guess == TEO_GUESS_EARLY && d->idx == cand)
		teo_burst_choice(in, m, d);
	d->intercepted = d->idx < cand;

	/* With the tick stopped, step 4 needs the sleep length. */
	if (in->tick_stopped) {
		d->need_sleep_length = true;
		return;
	}

	/* Nothing shallower, and the tick stays as insurance (step 5). */
	if (d->intercepted && d->idx == shallowest)
		return;

	if (teo_polls(in, 0) &&
	    teo_residency(in, d->idx) < RESIDENCY_THRESHOLD_NS)
		return;

	d->need_sleep_length = true;
}
EXPORT_SYMBOL_IF_KUNIT(teo_decide_early);

/**
 * teo_decide_late - Complete a selection once the sleep length is known.
 * @in: State table, limits and tick state (as given to teo_decide_early()).
 * @sleep_length_ns: Time till the next timer event.
 * @delta_tick_ns: Time till the next tick if the tick is not stopped.
 * @d: Decision made by teo_decide_early(), updated in place.
 *
 * Steps 4 and 5 of the selection described in the DOC block.
 */
VISIBLE_IF_KUNIT void teo_decide_late(const struct teo_input *in,
				 s64 sleep_length_ns, s64 delta_tick_ns,
				 struct teo_decision *d)
{
	int idx = d->idx;
	bool keep_tick;

	/*
	 * With the tick stopped, only a timer ends a state: a state shallower
	 * than the tick period stands only if one is due within two tick
	 * periods (SAFE_TIMER_RANGE_NS); otherwise the deepest usable state
	 * that fits the sleep length is taken.
	 */
	if (in->tick_stopped && sleep_length_ns > 2 * in->tick_period_ns &&
	    teo_residency(in, idx) < in->tick_period_ns) {
		d->idx = max(idx, teo_fit(in, teo_count(in) - 1, sleep_length_ns));
		d->stop_tick = !teo_polls(in, d->idx);
		d->need_sleep_length = false;
		return;
	}

	if (teo_residency(in, idx) > sleep_length_ns)
		idx = teo_fit(in, idx, sleep_length_ns);

	/*
	 * With early wakeups dominating, the tick is insurance against a wakeup
	 * that does not come, but only if they come within a tick period:
	 * otherwise the tick would cut short the very idle periods they end.
	 */
	keep_tick = teo_polls(in, idx) ||
		    (!in->tick_stopped &&
		     (sleep_length_ns <= delta_tick_ns ||
		      (d->intercepted &&
		       d->intercept_bound_ns <= in->tick_period_ns)));

	if (keep_tick && !in->tick_stopped &&
	    teo_residency(in, idx) > delta_tick_ns)
		idx = teo_fit(in, idx, delta_tick_ns);

	d->idx = idx;
	d->stop_tick = !keep_tick;
	d->need_sleep_length = false;
}
EXPORT_SYMBOL_IF_KUNIT(teo_decide_late);

static void teo_decay(unsigned int *metric)
{
	*metric -= DIV_ROUND_UP(*metric, 1U << TEO_DECAY_SHIFT);
}

/**
 * teo_account - Update the wakeup history after an idle period.
 * @in: State table (only the target residencies are used).
 * @m: Wakeup history to update.
 * @w: What happened in the idle period.
 *
 * Decays every metric, then adds a pulse to the hits of the sleep length's
 * bin if the idle period ended in that bin, or to the intercepts of the bin
 * it ended in otherwise.  An artificial wakeup adds to the idle time cut
 * short since the last real one; a real wakeup resets it, is counted in the
 * pattern of the run before it, and extends that run or starts a new one.  A
 * duration falls into the bin of the deepest state whose target residency
 * does not exceed it; disabled states keep their bins, so that toggling a
 * state does not scramble the history.
 */
VISIBLE_IF_KUNIT void teo_account(const struct teo_input *in,
			     struct teo_metrics *m,
			     const struct teo_wakeup *w)
{
	s64 duration_ns = w->sleep_length_ns, measured_ns = duration_ns;
	s64 lat_ns = max_t(s64, w->exit_latency_ns, 0);
	int i, timer_bin = 0, idle_bin = 0;
	bool early;

	if (!w->artificial) {
		u64 res_ns = min_t(u64, w->residency_ns, KTIME_MAX);

		res_ns -= min_t(u64, res_ns, lat_ns) / 2;
		measured_ns = res_ns;
		duration_ns = min_t(s64, res_ns, w->sleep_length_ns);
	}

	/* One pass over the table: decay, and find both bins. */
	for (i = 0; i < teo_count(in); i++) {
		teo_decay(&m->bins[i].hits);
		teo_decay(&m->bins[i].intercepts);
		if (teo_residency(in, i) <= w->sleep_length_ns)
			timer_bin = i;
		if (teo_residency(in, i) <= duration_ns)
			idle_bin = i;
	}

	/*
	 * A hit is a wakeup in the sleep length's bin and close to the sleep
	 * length (within half the exit latency); an artificial one is one.
	 */
	early = idle_bin != timer_bin ||
		(!w->artificial && w->sleep_length_ns - measured_ns >= lat_ns / 2);
	if (early)
		m->bins[idle_bin].intercepts += TEO_PULSE;
	else
		m->bins[idle_bin].hits += TEO_PULSE;

	m->artificial = w->artificial;
	if (w->artificial) {
		m->outlived_ns = min_t(u64, (u64)m->outlived_ns +
				       min_t(u64, w->residency_ns, KTIME_MAX),
				       KTIME_MAX);
	} else {
		struct teo_pattern *p = &m->patterns[m->last_early][m->run];

		m->outlived_ns = 0;
		/* Only utilization awareness reads the patterns. */
		if (IS_ENABLED(CONFIG_SMP)) {
			p->early += early;
			if (++p->seen >= TEO_PATTERN_WINDOW) {
				p->early /= 2;
				p->seen /= 2;
			}
		}
		if (early != m->last_early)
			m->run = 0;
		if (m->run < TEO_RUN_MAX - 1)
			m->run++;
		m->last_early = early;
		if (early)
			m->early_bin = idle_bin;
	}
}
EXPORT_SYMBOL_IF_KUNIT(teo_account);

/*
 * What the glue asks the kernel, each behind a function of its own that the
 * KUnit suite can redirect to a stub (KUNIT_STATIC_STUB_REDIRECT() is empty
 * without CONFIG_KUNIT).
 */
/**
 * teo_tick_stopped - Whether the tick is stopped on this CPU.
 *
 * Return: tick_nohz_tick_stopped(), or what a KUnit stub says.
 */
VISIBLE_IF_KUNIT bool teo_tick_stopped(void)
{
	KUNIT_STATIC_STUB_REDIRECT(teo_tick_stopped);
	return tick_nohz_tick_stopped();
}
EXPORT_SYMBOL_IF_KUNIT(teo_tick_stopped);

/**
 * teo_got_tick - Whether the tick ended the last idle period; clears it.
 *
 * Return: tick_nohz_idle_got_tick(), or what a KUnit stub says.
 */
VISIBLE_IF_KUNIT bool teo_got_tick(void)
{
	KUNIT_STATIC_STUB_REDIRECT(teo_got_tick);
	return tick_nohz_idle_got_tick();
}
EXPORT_SYMBOL_IF_KUNIT(teo_got_tick);

/**
 * teo_sleep_length - Time till the next timer event on this CPU.
 * @delta_tick: Set to the time till the next tick.
 *
 * Return: tick_nohz_get_sleep_length(), or what a KUnit stub says.
 */
VISIBLE_IF_KUNIT ktime_t teo_sleep_length(ktime_t *delta_tick)
{
	KUNIT_STATIC_STUB_REDIRECT(teo_sleep_length, delta_tick);
	return tick_nohz_get_sleep_length(delta_tick);
}
EXPORT_SYMBOL_IF_KUNIT(teo_sleep_length);

/**
 * teo_cpu_utilized - Whether a CPU counts as utilized.
 * @cpu: The CPU.
 *
 * Return: whether sched_cpu_util() exceeds 1/2^%TEO_UTIL_THRESHOLD_SHIFT of
 * arch_scale_cpu_capacity() (never without CONFIG_SMP), or what a KUnit
 * stub says.
 */
VISIBLE_IF_KUNIT bool teo_cpu_utilized(int cpu)
{
	KUNIT_STATIC_STUB_REDIRECT(teo_cpu_utilized, cpu);
#ifdef CONFIG_SMP
	return sched_cpu_util(cpu) >
	       arch_scale_cpu_capacity(cpu) >> TEO_UTIL_THRESHOLD_SHIFT;
#else
	return false;
#endif
}
EXPORT_SYMBOL_IF_KUNIT(teo_cpu_utilized);

static void teo_gather(struct cpuidle_driver *drv, struct cpuidle_device *dev,
		       struct teo_input *in)
{
	int i;

	in->states = drv->states;
	in->state_count = drv->state_count;
	in->disabled = 0;
	for (i = 0; i < teo_count(in); i++) {
		if (dev->states_usage[i].disable)
			in->disabled |= BIT(i);
	}
	in->latency_req_ns = cpuidle_governor_latency_req(dev->cpu);
	in->tick_period_ns = TICK_NSEC;
	in->tick_stopped = teo_tick_stopped();
}

/**
 * teo_select - Select the idle state to enter (cpuidle ->select callback).
 * @drv: cpuidle driver of the CPU.
 * @dev: cpuidle device of the CPU.
 * @stop_tick: Set to whether the tick may be stopped.
 *
 * Accounts for the previous idle period, then runs the decision core,
 * querying the sleep length only if the core asks for it.
 *
 * Return: index of the idle state to enter.
 */
VISIBLE_IF_KUNIT int teo_select(struct cpuidle_driver *drv,
				struct cpuidle_device *dev, bool *stop_tick)
{
	struct teo_cpu *cpu_data = this_cpu_ptr(&teo_cpus);
	struct teo_decision d;
	struct teo_input in;

	teo_gather(drv, dev, &in);
	if (dev->last_state_idx >= 0) {
		struct teo_wakeup w = {
			.sleep_length_ns = cpu_data->sleep_length_ns,
			.residency_ns = dev->last_residency_ns,
			.exit_latency_ns =
				drv->states[dev->last_state_idx].exit_latency_ns,
			.artificial = cpu_data->tick_wakeup ||
				      dev->poll_time_limit,
		};

		teo_account(&in, &cpu_data->metrics, &w);
		dev->poll_time_limit = false;
		dev->last_state_idx = -1;
	}

	/* Utilization is asked for only when a wakeup pattern has a say. */
	in.utilized = IS_ENABLED(CONFIG_SMP) &&
		      teo_pattern_guess(&in, &cpu_data->metrics) != TEO_GUESS_NONE &&
		      teo_cpu_utilized(dev->cpu);
	cpu_data->sleep_length_ns = KTIME_MAX;
	teo_decide_early(&in, &cpu_data->metrics, &d);
	if (d.need_sleep_length) {
		ktime_t delta_tick;

		cpu_data->sleep_length_ns = teo_sleep_length(&delta_tick);
		teo_decide_late(&in, cpu_data->sleep_length_ns, delta_tick, &d);
	}

	*stop_tick = d.stop_tick;
	return d.idx;
}
EXPORT_SYMBOL_IF_KUNIT(teo_select);

/**
 * teo_reflect - Note the state entered and whether the tick woke the CPU.
 * @dev: cpuidle device of the CPU.
 * @index: Index of the state that was entered.
 *
 * The history is updated at the next selection, off the wakeup path.  The
 * tick's flag is read (and so cleared) after every idle period, whatever
 * else ended it, so that it never leaks into the next one.
 */
VISIBLE_IF_KUNIT void teo_reflect(struct cpuidle_device *dev, int index)
{
	struct teo_cpu *cpu_data = this_cpu_ptr(&teo_cpus);

	cpu_data->tick_wakeup = teo_got_tick();
	dev->last_state_idx = index;
}
EXPORT_SYMBOL_IF_KUNIT(teo_reflect);

/**
 * teo_enable - Start a CPU with an empty history (cpuidle ->enable callback).
 * @drv: cpuidle driver of the CPU (unused).
 * @dev: cpuidle device of the CPU.
 *
 * Return: 0.
 */
VISIBLE_IF_KUNIT int teo_enable(struct cpuidle_driver *drv,
				struct cpuidle_device *dev)
{
	*per_cpu_ptr(&teo_cpus, dev->cpu) = (struct teo_cpu) {
		.sleep_length_ns = KTIME_MAX,
	};
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(teo_enable);

/*
 * Rated below menu (20): registering does not make TEO the default; users
 * pick it with cpuidle.governor=teo or through current_governor in sysfs.
 */
static struct cpuidle_governor teo_gov = {
	.name		= "teo",
	.rating		= 19,
	.enable		= teo_enable,
	.select		= teo_select,
	.reflect	= teo_reflect,
};

static int __init teo_register(void)
{
	return cpuidle_register_governor(&teo_gov);
}
postcore_initcall(teo_register);
