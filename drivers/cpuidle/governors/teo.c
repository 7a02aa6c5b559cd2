// SPDX-License-Identifier: GPL-2.0
/*
 * Timer events oriented (TEO) CPU idle governor.
 *
 * The TEO design (timer-first prediction with "hits" and "intercepts" per
 * idle state bin) is Rafael J. Wysocki's.  This file restates it as a pure
 * decision core with explicit inputs and a thin layer of kernel glue.
 */

/**
 * DOC: teo-description
 *
 * Why timers first
 * ----------------
 *
 * Most idle periods of a CPU end with a timer, and the time until the next
 * timer (the *sleep length*) is known before the CPU goes idle.  It is the
 * best single predictor of the idle duration.  It is not free, though:
 * tick_nohz_get_sleep_length() walks the timer queues, so the governor asks
 * for it only when the answer can depend on it.  Other interrupts end some
 * idle periods early; the governor learns how often from recent wakeups.
 *
 * Data: one bin per idle state
 * ----------------------------
 *
 * The target residencies of the driver's states cut the time axis into
 * bins: bin i holds idle durations from the target residency of state i up
 * to that of state i + 1; the last bin has no upper end.  Each bin keeps
 * two metrics: *hits* (the idle period ended close to the sleep length and
 * in its bin: the timer predicted it) and *intercepts* (it ended in this bin
 * for another reason).  After every wakeup each metric loses an eighth of
 * its value (a metric smaller than eight drops to zero) and the event adds
 * 1024 to one of them.  One more metric decays the same way: *short
 * idles* (less than 15 us).
 *
 * The measured idle duration is the core's residency less half the exit
 * latency of the state entered (the typical share of it spent before the
 * CPU runs again); a wakeup is a hit if that duration is in the sleep
 * length's bin and within half the exit latency of the sleep length.
 *
 * Wakeups by the tick or by a polling state's time limit are *artificial*:
 * the CPU could have stayed idle until the next timer, so each counts as a
 * hit in the sleep length's bin (the deepest bin if the sleep length was not
 * asked for).  Counting a tick wakeup where it happened would make a kept
 * tick look like a stream of early wakeups, which keeps the tick, which
 * makes more of them: with a long tick period that loop holds the CPU in a
 * shallow state.
 *
 * Selection
 * ---------
 *
 * A state is *usable* if it is enabled and its exit latency is within the
 * CPU's latency limit (global and per-CPU PM QoS).  Every step below picks
 * among usable states only.
 *
 * 1. The candidate is the deepest usable state.  If no state is usable,
 *    the shallowest enabled state (or state 0) is used with the tick kept.
 *    If one state is usable, it is used, and the tick is stopped unless it
 *    polls or its target residency is below the tick period.
 *
 * 2. If the intercepts in the bins below the candidate are over half of
 *    the events in the candidate's bin and above (hits below the candidate
 *    are left out: the sleep length finds those), the governor walks down
 *    from the candidate summing intercepts, and stops at the first usable
 *    state at which they exceed half of the intercepts below the candidate
 *    and that is not deeper than the bin with the most intercepts.
 *    That state is not taken, though, if it does not poll, the last
 *    wakeup was artificial and the CPU has been idle since the last real
 *    wakeup for at least the upper edge of the median intercept's bin (the
 *    target residency of the state above that bin): the early wakeup it
 *    would wait for did not come when such wakeups do, and a kept tick
 *    would otherwise hold the CPU shallow tick after tick.  A polling state
 *    is left out of that rule (its time limit is the next state's target
 *    residency, so the rule would always apply), and polling is cheap to
 *    leave.
 *
 *    Utilization (step 2a): on a utilized CPU (see below), when the last
 *    wakeup was not artificial, the governor also asks the wakeup pattern
 *    what comes next.  If it says "early" and step 2 did not pick a
 *    shallower state, the governor picks for the bin the last early wakeup
 *    ended in: the deepest usable state that does not poll and fits it, or
 *    the shallowest such state above it; never a polling state.  If it says
 *    "timer" and step 2 did pick a shallower state, the candidate stands.
 *
 * 3. (The latency limit needs no step of its own: no state over it is
 *    ever considered.)
 *
 * 4. With the tick running, a state below 15 us (or state 0) needs no sleep
 *    length if short idles are at least half of all events or the latency
 *    limit is below 7.5 us: it is used and the tick is kept.
 *
 * 5. Otherwise the sleep length is asked for.  With the tick already
 *    stopped and no timer within two tick periods, a state whose target
 *    residency is below the tick period is replaced by the deepest usable
 *    state that fits the sleep length, so that the CPU does not sit
 *    shallow with nothing to wake it.
 *
 * 6. State 0 keeps the tick.  Any other state deeper than the sleep length
 *    allows is replaced by the deepest usable shallower state that fits
 *    it.
 *
 * 7. The tick is never stopped for a polling state.  For any other, it is
 *    stopped if it is stopped already, or if the next timer comes after the
 *    next tick (judged by *delta_tick*, the time actually left until that
 *    tick, not by the tick period: when the timer comes later than the tick, a
 *    kept tick can only cut the idle period short).  The tick is kept, though,
 *    if step 2 picked a shallower state and the upper edge of the median
 *    intercept's bin is not beyond one tick period: most early wakeups come
 *    within a tick, and the tick is insurance against one that does not come.
 *    If they come later, a kept tick would only cut short the very idle
 *    periods they end.  A state step 2a picked always keeps the tick.
 *    When the tick stays, a state deeper than the time left until the next
 *    tick is replaced by the deepest usable shallower state that fits it.
 *
 * Utilization awareness
 * ---------------------
 *
 * A CPU is *utilized* when sched_cpu_util() exceeds 1/64 of its capacity
 * (arch_scale_cpu_capacity(); the threshold of the 6.3 version); without
 * CONFIG_SMP it never is.  Interactive work comes in bursts of early
 * wakeups (input, GPU, network, ping-pong between CPUs), and the decaying
 * metrics take several wakeups to notice the start of a burst, each of them
 * spent in a state too deep, and several more to notice its end.  They also
 * blur a rhythm: a frame that waits for the GPU three times and then for
 * the next vsync timer shows three intercepts in four wakeups, so step 2
 * keeps every idle period shallow, the vsync one too.
 *
 * Wakeup patterns capture the rhythm.  A wakeup is *early* here if it was an
 * intercept that ended below the deepest bin: an interrupt that would have
 * come as soon had the next timer been far, and a shallower state would then
 * have been right.  (Judged by the sleep length's bin instead, an interrupt
 * before a near timer would count as not early, and a CPU whose interrupts
 * come whatever its timers do would be told "timer".)  The governor keeps the
 * length of the current *run* (wakeups in a row that all were early, or all
 * were not; artificial wakeups are left out), the decaying mean duration t of
 * the early wakeups and, for each kind and length of run up to 31, how many
 * of the n wakeups that followed such a run were early, k (both halved when n
 * reaches 64, so old habits fade; the counts fit a byte).
 *
 * The rule weighs what the pattern has seen in energy.  The target
 * residency of the candidate C is, by its definition, the idle time from
 * which C saves energy over a shallower state S, so in units of the power S
 * draws over C:
 *
 * - C for an early wakeup loses b = res(C) - t;
 * - S for a wakeup that is not early loses the time spent in S before the
 *   CPU gets to C, at most a = one tick period, because a state step 2a
 *   picks keeps the tick (after a tick wakeup the pattern is not asked).
 *
 * Over the n wakeups the pattern has seen, S would have saved k * b -
 * (n - k) * a.  If early wakeups had exactly the break-even odds, a / (a +
 * b), that sum would be 0 give or take sqrt(n * a * b), one standard error.
 * The pattern says "early" if the sum exceeds two standard errors, and
 * "timer" if it is below minus two and the early wakeups are also clearly
 * (by two standard errors, sqrt(n) / 2 each) fewer than half of the n:
 * step 2 acts on a majority of early wakeups, and a pattern that does not
 * contradict that majority adds nothing to it but a deeper state, whose
 * latency a utilized CPU would pay.  Otherwise the metrics decide.
 * With the tick stopped already, S could last until the next timer, which
 * no evidence pays for, so "early" is not acted on.
 *
 * The cost of a wrong guess is therefore bounded: a wrong "early" keeps the
 * CPU shallow for one tick period at most, a wrong "timer" costs at most C's
 * target residency and exit latency, and either is made only on evidence
 * two standard errors clear of break-even.  A longer tick makes "early"
 * need better odds, a deeper C or shorter early wakeups make it need worse.
 *
 * Utilization is a permission, not evidence: without early wakeups that
 * pay it changes nothing, and the sleep length can still make the choice
 * shallower.  That is what keeps clear of the three problems that had
 * utilization awareness reverted from Linux 6.11, which picked a shallower
 * state whenever the CPU was utilized, and of random interrupts:
 *
 * - a light periodic task on a CPU with only WFI and CPU-off kept it in WFI
 *   with the tick running: here, a CPU woken only by timers has patterns
 *   with k = 0, which never say "early", so it picks CPU-off and stops the
 *   tick as if it were not utilized;
 * - utilization decays for about 150 ms after a burst, and low-activity use
 *   (video playback) lost power in shallow states all that time: here, the
 *   patterns after a burst soon show no early wakeups and say "timer", which
 *   makes the choice deeper if anything;
 * - on x86 the polling state 0 burned power when picked for utilization:
 *   here, utilization never picks a polling state;
 * - interrupts that come at random say "early" only as often as they come,
 *   in every pattern alike: below the break-even odds the rule acts on
 *   them only by chance, in about 2% of the decisions (the one-sided odds
 *   of two standard errors), and above those odds S does save energy.
 *
 * Tracing
 * -------
 *
 * Two trace events, in the ``teo`` group, show why the governor picked each
 * state, for example with ``trace-cmd record -e teo -e power:cpu_idle``
 * (times are in nanoseconds; -1 stands for a time that was not asked for).
 *
 * ``teo_select``, at every selection, gives the CPU, the candidate
 * (``cand``: the deepest usable state, -1 if none is), the state picked
 * (``state``) and the reason for it, the sleep length and the time left
 * until the next tick (when the sleep length was asked for), the latency
 * limit, whether the tick was stopped before (``tick_stopped``) and may be
 * stopped now (``stop_tick``), and whether the CPU was found utilized
 * (asked for only when it would change the choice).  The reason is that
 * of the last step that changed the state:
 *
 * - ``timer``: nothing predicted a wakeup before the next timer, so the
 *   candidate stands or, with the sleep length, the deepest state that fits
 *   it is picked (steps 5 and 6);
 * - ``latency``: the candidate stands, and the latency limit left out a
 *   deeper enabled state;
 * - ``intercepts``: step 2 picked a shallower state;
 * - ``util``: step 2a, on a utilized CPU;
 * - ``tick``: the deepest state that fits before the kept tick (step 7);
 * - ``single``: at most one state is usable (step 1).
 *
 * ``teo_update``, when the next selection counts the last wakeup, gives the
 * CPU, the state that was entered, the idle time the cpuidle core measured
 * (``residency``), the sleep length found when that state was picked, the
 * idle duration the governor took the wakeup for (``idle``: the measured
 * one up to the sleep length, the sleep length for an artificial wakeup),
 * the bin it was counted in and how (``hit``, ``intercept`` or
 * ``artificial``).
 */

/*
 * Structure (for developers; the DOC block above is what the admin guide
 * shows): teo_decide_early() (steps 1-4), teo_decide_late() (steps 5-7) and
 * teo_account() (the update after wakeup) are pure functions of explicit
 * inputs: the state table, the disabled states, the latency limit, the tick
 * period and state, whether the CPU is utilized, the metrics and, when
 * asked for, the sleep length.  The cpuidle callbacks gather those inputs
 * and call them (asking for utilization only when the decision without it
 * says that it would change the decision) and emit the trace events of
 * teo_trace.h; the KUnit suite and the userspace replay harness call the
 * very same functions.
 */

#include <kunit/static_stub.h>
#include <kunit/visibility.h>
#include <linux/cpuidle.h>
#include <linux/kernel.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/sched/topology.h>
#include <linux/tick.h>

#include "gov.h"
#include "teo.h"

#define CREATE_TRACE_POINTS
#include "teo_trace.h"

/* Below this exit latency limit, step 4 needs no sleep length. */
#define TEO_LATENCY_THRESHOLD_NS	(RESIDENCY_THRESHOLD_NS / 2)

/**
 * struct teo_cpu - Per-CPU data of the governor.
 * @metrics: Wakeup history, binned by idle state.
 * @sleep_length_ns: Sleep length found at the last selection, or KTIME_MAX
 *	if it was not asked for.
 * @tick_wakeup: The last idle period was ended by the tick.
 */
struct teo_cpu {
	struct teo_metrics metrics;
	s64 sleep_length_ns;
	bool tick_wakeup;
};

static DEFINE_PER_CPU(struct teo_cpu, teo_cpus);

static s64 teo_residency(const struct teo_input *in, int i)
{
	return in->states[i].target_residency_ns;
}

static bool teo_enabled(const struct teo_input *in, int i)
{
	return !in->usage[i].disable;
}

static bool teo_polls(const struct teo_input *in, int i)
{
	return in->states[i].flags & CPUIDLE_FLAG_POLLING;
}

static bool teo_usable(const struct teo_input *in, int i)
{
	return teo_enabled(in, i) &&
	       in->states[i].exit_latency_ns <= in->latency_req_ns;
}

/*
 * The deepest usable state below @idx whose target residency fits in
 * @duration_ns or, if none does, the shallowest usable state below @idx
 * (@idx itself if there is none).
 *
 * Like teo_tick_rule(), inlined: the selection calls both from more than
 * one place, and a call would cost it about as much as the work.
 */
static __always_inline int teo_shallower(const struct teo_input *in, int idx,
					 s64 duration_ns)
{
	int i;

	for (i = idx - 1; i >= 0; i--) {
		if (!teo_usable(in, i))
			continue;
		idx = i;
		if (teo_residency(in, i) <= duration_ns)
			break;
	}
	return idx;
}

/*
 * Step 7: the tick is stopped, unless the state polls, if it is already or
 * if @stop; a kept tick needs a state that fits before it.
 */
static __always_inline void teo_tick_rule(const struct teo_input *in, bool stop,
					  s64 delta_tick_ns,
					  struct teo_decision *d)
{
	int idx = d->idx;
	bool polls = teo_polls(in, idx);

	d->need_sleep_length = false;
	d->stop_tick = !polls;
	if (in->tick_stopped || (stop && !polls))
		return;

	/* There is a usable state below: the first one is. */
	if (idx > d->first_idx && teo_residency(in, idx) > delta_tick_ns) {
		d->idx = teo_shallower(in, idx, delta_tick_ns);
		d->reason = TEO_REASON_TICK;
	}
	d->stop_tick = false;
}

/* Costs are weighed in units of 1024 ns, up to about a second. */
#define TEO_COST_SHIFT		10
#define TEO_COST_MAX		(NSEC_PER_SEC >> TEO_COST_SHIFT)

/*
 * Step 2a: whether the pattern of the current run overrules step 2, whether
 * or not the CPU is utilized: if step 2 picked a state shallower than
 * @cand (@shallower), whether it clearly says "timer", else whether it
 * clearly says "early" (see the DOC block).
 */
static bool teo_pattern_overrules(const struct teo_input *in,
				  const struct teo_metrics *m, int cand,
				  bool shallower)
{
	const struct teo_pattern *p = &m->patterns[m->context];
	s64 k = p->early, n = p->seen, lead = n - 2 * k, a, b, saved;

	if (!IS_ENABLED(CONFIG_SMP) || m->artificial || !n)
		return false;
	if (shallower) {
		/* Step 2 acts on a majority of early wakeups: clearly none. */
		if (lead <= 0 || lead * lead <= TEO_CONFIDENCE_Z2 * n)
			return false;
	} else if (!k || in->tick_stopped) {
		return false;
	}
	a = clamp_t(s64, in->tick_period_ns >> TEO_COST_SHIFT, 1, TEO_COST_MAX);
	b = clamp_t(s64, (teo_residency(in, cand) - m->early_ns) >>
			 TEO_COST_SHIFT, 0, TEO_COST_MAX);
	/* That is k * b - (n - k) * a; its sign settles most cases. */
	saved = k * (a + b) - n * a;
	if (shallower ? saved >= 0 : saved <= 0)
		return false;
	return saved * saved > TEO_CONFIDENCE_Z2 * n * a * b;
}

/* A state utilization may pick: usable, and not polling. */
static bool teo_sleeps(const struct teo_input *in, int i)
{
	return teo_usable(in, i) && !teo_polls(in, i);
}

/*
 * Step 2a, early wakeup guessed: the deepest usable state that does not
 * poll and fits the bin the last intercept ended in or, if there is none,
 * the shallowest such state above that bin, but shallower than @cand; @cand
 * if there is none.
 */
static int teo_burst_choice(const struct teo_input *in,
			    const struct teo_metrics *m, int cand)
{
	int i, bin = m->early_bin;

	if (bin < 0 || bin >= cand)
		return cand;
	for (i = bin; i >= 0; i--) {
		if (teo_sleeps(in, i))
			return i;
	}
	for (i = bin + 1; i < cand; i++) {
		if (teo_sleeps(in, i))
			return i;
	}
	return cand;
}

/*
 * The candidate (the deepest usable state) and the shallowest usable state
 * into @d; if no state is usable, -1 for the candidate and the shallowest
 * enabled state (or 0) for the shallowest.  The reason for the candidate is
 * the latency limit if it left out a deeper enabled state.
 */
static int teo_scan(const struct teo_input *in, struct teo_decision *d)
{
	int i, cand;

	/* From both ends: the states sought are nearly always the first tried. */
	d->reason = TEO_REASON_TIMER;
	for (cand = in->state_count - 1; cand >= 0; cand--) {
		if (teo_usable(in, cand))
			break;
		if (teo_enabled(in, cand))
			d->reason = TEO_REASON_LATENCY;
	}
	for (i = 0; i < in->state_count; i++) {
		if (cand >= 0 ? teo_usable(in, i) : teo_enabled(in, i))
			break;
	}
	d->first_idx = i < in->state_count ? i : 0;
	return cand;
}

/*
 * The bin with the most intercepts among all but the last one, the deeper
 * of equals (-1 for a single-state table): @bin, the busiest of the bins
 * below @from, or one of those from @from on.
 */
static int teo_busiest(const struct teo_input *in, const struct teo_metrics *m,
		       int from, int bin)
{
	unsigned int most = bin >= 0 ? m->bins[bin].intercepts : 0;
	int i;

	for (i = from; i + 1 < in->state_count; i++) {
		if (m->bins[i].intercepts >= most) {
			most = m->bins[i].intercepts;
			bin = i;
		}
	}
	return bin;
}

/*
 * Step 2: walking down from below @cand, the first usable state at which
 * the intercepts of the bins passed (the other states' included) are over
 * half of @early, all intercepts below @cand, and that is not deeper than
 * @busiest; the last usable state passed if none is.  *@bin is set to the
 * bin at which the intercepts passed first exceed half of @early (no
 * deeper than @busiest): the median intercept's bin, whether or not its
 * state is usable; to the returned state if there is none.
 */
static int teo_intercept_walk(const struct teo_input *in,
			      const struct teo_metrics *m, int cand,
			      unsigned int early, int busiest, int *bin)
{
	unsigned int passed = 0;
	int i, idx = cand;

	*bin = -1;
	for (i = cand - 1; i >= 0; i--) {
		passed += m->bins[i].intercepts;
		if (*bin < 0 && 2 * passed > early && i <= busiest)
			*bin = i;
		if (!teo_usable(in, i))
			continue;
		idx = i;
		if (*bin >= 0)
			break;
	}
	if (*bin < 0)
		*bin = idx;
	return idx;
}

/*
 * Step 4: whether the sleep length is needed for @idx: always with the tick
 * stopped, else unless @idx is shallow and idles are short (or the latency
 * limit is tiny).
 */
static bool teo_query_needed(const struct teo_input *in,
			     const struct teo_metrics *m, int idx)
{
	return in->tick_stopped ||
	       (idx && teo_residency(in, idx) >= RESIDENCY_THRESHOLD_NS) ||
	       (2 * m->brief_idles < m->events &&
		in->latency_req_ns >= TEO_LATENCY_THRESHOLD_NS);
}

/*
 * Step 2a on a utilized CPU: take the pattern's choice.  A shallower one is
 * for the bin of the last early wakeup and always keeps the tick (its
 * bound is at most one tick period); the candidate kept against step 2's
 * intercepts has no early wakeup to wait for.
 */
static __always_inline void teo_use_util(const struct teo_input *in,
					 const struct teo_metrics *m,
					 struct teo_decision *d)
{
	if (d->util_idx < d->idx)
		d->intercept_bound_ns = min(teo_residency(in, m->early_bin + 1),
					    in->tick_period_ns);
	else
		d->intercept_bound_ns = KTIME_MAX;
	d->idx = d->util_idx;
	d->reason = TEO_REASON_UTIL;
	d->utilized = true;
	d->need_sleep_length = teo_query_needed(in, m, d->idx);
}

/**
 * teo_decide_early - Select an idle state without the sleep length.
 * @in: State table, limits and tick state.
 * @m: Wakeup history of the CPU.
 * @d: Decision to fill in.
 *
 * Steps 1 to 4 of the selection in the DOC block.  On return @d->idx and
 * @d->stop_tick are final unless @d->need_sleep_length is set, in which case
 * the caller must query the sleep length and complete the decision with
 * teo_decide_late().
 */
VISIBLE_IF_KUNIT void teo_decide_early(const struct teo_input *in,
				       const struct teo_metrics *m,
				       struct teo_decision *d)
{
	unsigned int early = 0, rest = m->events, most = 0;
	int i, bin, busiest = -1, cand = teo_scan(in, d);

	d->cand = cand;
	d->need_sleep_length = false;
	d->stop_tick = false;
	d->intercept_bound_ns = KTIME_MAX;
	d->utilized = false;
	d->util_matters = false;

	/* Step 1. */
	d->idx = cand >= 0 ? cand : d->first_idx;
	if (cand <= d->first_idx) {
		d->reason = TEO_REASON_SINGLE;
		if (cand >= 0)
			teo_tick_rule(in, teo_residency(in, cand) >=
					  in->tick_period_ns,
				      in->tick_period_ns / 2, d);
		return;
	}

	/*
	 * Step 2: the intercepts below the candidate against everything but
	 * the hits below it (and the busiest bin below it, on the way).
	 */
	for (i = 0; i < cand; i++) {
		unsigned int intercepts = m->bins[i].intercepts;

		early += intercepts;
		rest -= m->bins[i].hits;
		if (intercepts >= most) {
			most = intercepts;
			busiest = i;
		}
	}
	if (2 * early > rest) {
		i = teo_intercept_walk(in, m, cand, early,
				       teo_busiest(in, m, cand, busiest), &bin);
		/* Unless the CPU has already waited that long for nothing. */
		if (!m->artificial || i == cand ||
		    teo_polls(in, i) ||
		    teo_residency(in, bin + 1) > m->outlived_ns) {
			d->idx = i;
			if (i < cand) {
				d->intercept_bound_ns = teo_residency(in, bin + 1);
				d->reason = TEO_REASON_INTERCEPTS;
			}
		}
	}

	/*
	 * Step 2a: a timer wakeup that step 2's intercepts do not foresee, or
	 * an early wakeup that they do not foresee yet.
	 */
	if ((d->idx < cand || m->early_bin < cand) &&
	    teo_pattern_overrules(in, m, cand, d->idx < cand)) {
		if (d->idx < cand)
			d->util_idx = cand;
		else
			d->util_idx = teo_burst_choice(in, m, cand);
		d->util_matters = d->util_idx != d->idx;
	}

	if (in->utilized && d->util_matters)
		teo_use_util(in, m, d);
	else
		d->need_sleep_length = teo_query_needed(in, m, d->idx);
}
EXPORT_SYMBOL_IF_KUNIT(teo_decide_early);

/**
 * teo_decide_late - Complete a selection once the sleep length is known.
 * @in: State table, limits and tick state (as given to teo_decide_early()).
 * @sleep_length_ns: Time till the next timer event.
 * @delta_tick_ns: Time till the next tick if the tick is not stopped.
 * @d: Decision made by teo_decide_early(), updated in place.
 *
 * Steps 5 to 7 of the selection in the DOC block.
 */
VISIBLE_IF_KUNIT void teo_decide_late(const struct teo_input *in,
				      s64 sleep_length_ns, s64 delta_tick_ns,
				      struct teo_decision *d)
{
	s64 duration_ns = sleep_length_ns;
	bool insure;
	int i;

	d->need_sleep_length = false;
	d->stop_tick = true;

	/*
	 * Step 5: nothing would wake the CPU from a shallow state soon (no
	 * timer within SAFE_TIMER_RANGE_NS, two ticks of the input's period).
	 */
	if (in->tick_stopped && duration_ns > 2 * in->tick_period_ns &&
	    teo_residency(in, d->idx) < in->tick_period_ns) {
		for (i = in->state_count - 1; i > d->idx; i--) {
			if (teo_usable(in, i) && teo_residency(in, i) <= duration_ns) {
				d->idx = i;
				d->reason = TEO_REASON_TIMER;
				break;
			}
		}
		teo_tick_rule(in, true, delta_tick_ns, d);
		return;
	}

	/* Step 6. */
	if (!d->idx) {
		d->stop_tick = false;
		return;
	}
	/* As in teo_tick_rule(): above the first state, a usable one is below. */
	if (d->idx > d->first_idx && teo_residency(in, d->idx) > duration_ns) {
		d->idx = teo_shallower(in, d->idx, duration_ns);
		d->reason = TEO_REASON_TIMER;
	}

	/* Step 7. */
	insure = d->intercept_bound_ns <= in->tick_period_ns;
	teo_tick_rule(in, !insure && duration_ns > delta_tick_ns,
		      delta_tick_ns, d);
}
EXPORT_SYMBOL_IF_KUNIT(teo_decide_late);

static void teo_decay(unsigned int *metric)
{
	unsigned int delta = *metric >> TEO_DECAY_SHIFT;

	*metric = delta ? *metric - delta : 0;
}

/*
 * The idle duration the wakeup stands for: endless for an artificial one;
 * otherwise the residency less half the exit latency (the typical share of
 * it spent waking up), or half the residency if it is shorter than the exit
 * latency.
 */
static s64 teo_measured(const struct teo_wakeup *w)
{
	if (w->artificial)
		return S64_MAX;
	if (w->residency_ns < w->exit_latency_ns)
		return w->residency_ns / 2;
	return w->residency_ns - w->exit_latency_ns / 2;
}

/*
 * A wakeup that was not artificial (@early: an intercept that ended in
 * @bin, below the deepest bin, after @idle_ns) counts in the pattern of the
 * run before it, and extends that run or starts a new one.  Only
 * utilization awareness reads the patterns, so they are left alone without
 * CONFIG_SMP.
 */
static void teo_learn(struct teo_metrics *m, bool early, int bin, s64 idle_ns)
{
	unsigned int context = m->context, seen, halve;
	struct teo_pattern *p = &m->patterns[context];

	if (!IS_ENABLED(CONFIG_SMP))
		return;
	/* Halved when the window is full, with no branch to mispredict. */
	seen = p->seen + 1;
	halve = seen >= TEO_PATTERN_WINDOW;
	p->early = (p->early + early) >> halve;
	p->seen = seen >> halve;
	/* A run of the other kind starts, or this one grows (to a limit). */
	if (early != context / TEO_RUN_MAX)
		context = TEO_CONTEXT(early, 0);
	m->context = context + (context % TEO_RUN_MAX < TEO_RUN_MAX - 1);
	if (early) {
		m->early_bin = bin;
		m->early_ns += (idle_ns >> TEO_DECAY_SHIFT) -
			       (m->early_ns >> TEO_DECAY_SHIFT);
	}
}

/**
 * teo_account - Update the wakeup history after an idle period.
 * @in: State table (only the target residencies and the tick period are
 *	used).
 * @m: Wakeup history to update.
 * @w: What happened in the idle period.
 *
 * Decays every metric and counts the wakeup as the DOC block describes.
 *
 * Return: where and how the wakeup was counted (for the trace event).
 */
VISIBLE_IF_KUNIT struct teo_count teo_account(const struct teo_input *in,
					      struct teo_metrics *m,
					      const struct teo_wakeup *w)
{
	s64 measured_ns = teo_measured(w);
	s64 idle_ns = min(w->sleep_length_ns, measured_ns);
	int i, timer_bin = 0, idle_bin = 0;
	struct teo_count c;
	bool early;

	/* The idle time artificial wakeups cut short since the last real one. */
	m->artificial = w->artificial;
	if (!w->artificial)
		m->outlived_ns = 0;
	else if (w->residency_ns > 0)
		m->outlived_ns += min(w->residency_ns,
				      KTIME_MAX - m->outlived_ns);

	/* A wakeup within the exit latency counts as short whatever it was. */
	teo_decay(&m->brief_idles);
	if (!w->artificial && (w->residency_ns < w->exit_latency_ns ||
			       measured_ns < RESIDENCY_THRESHOLD_NS))
		m->brief_idles += TEO_PULSE;

	/* One pass: decay, and find the sleep length's and the idle bin. */
	m->events = TEO_PULSE;
	for (i = 0; i < in->state_count; i++) {
		teo_decay(&m->bins[i].hits);
		teo_decay(&m->bins[i].intercepts);
		if (teo_residency(in, i) <= w->sleep_length_ns)
			timer_bin = i;
		if (teo_residency(in, i) <= idle_ns)
			idle_bin = i;
		m->events += m->bins[i].hits + m->bins[i].intercepts;
	}

	/*
	 * A hit: in the sleep length's bin and close to the sleep length (an
	 * artificial wakeup always is).
	 */
	early = !w->artificial &&
		(idle_bin != timer_bin ||
		 w->sleep_length_ns - measured_ns >= w->exit_latency_ns / 2);
	if (early)
		m->bins[idle_bin].intercepts += TEO_PULSE;
	else
		m->bins[timer_bin].hits += TEO_PULSE;
	if (!w->artificial)
		teo_learn(m, early && idle_bin < in->state_count - 1, idle_bin,
			  idle_ns);

	c.idle_ns = idle_ns;
	c.bin = early ? idle_bin : timer_bin;
	c.kind = w->artificial ? TEO_KIND_ARTIFICIAL :
		 early ? TEO_KIND_INTERCEPT : TEO_KIND_HIT;
	return c;
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

/**
 * teo_latency_req - Exit latency limit of a CPU.
 * @cpu: The CPU.
 *
 * Return: cpuidle_governor_latency_req() (global and per-CPU QoS), or what
 * a KUnit stub says.
 */
VISIBLE_IF_KUNIT s64 teo_latency_req(int cpu)
{
	KUNIT_STATIC_STUB_REDIRECT(teo_latency_req, cpu);
	return cpuidle_governor_latency_req(cpu);
}
EXPORT_SYMBOL_IF_KUNIT(teo_latency_req);

static void teo_gather(struct cpuidle_driver *drv, struct cpuidle_device *dev,
		       struct teo_input *in)
{
	in->states = drv->states;
	in->state_count = drv->state_count;
	in->usage = dev->states_usage;
	in->latency_req_ns = teo_latency_req(dev->cpu);
	in->tick_period_ns = TICK_NSEC;
	in->tick_stopped = teo_tick_stopped();
	in->utilized = false;
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
	ktime_t delta_tick = KTIME_MAX;
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
		struct teo_count c;

		dev->poll_time_limit = false;
		c = teo_account(&in, &cpu_data->metrics, &w);
		trace_teo_update(dev->cpu, dev->last_state_idx, w.residency_ns,
				 w.sleep_length_ns, c.idle_ns, c.bin, c.kind);
		dev->last_state_idx = -1;
	}

	/* Utilization is asked for only if it would change the decision. */
	cpu_data->sleep_length_ns = KTIME_MAX;
	teo_decide_early(&in, &cpu_data->metrics, &d);
	if (IS_ENABLED(CONFIG_SMP) && d.util_matters &&
	    teo_cpu_utilized(dev->cpu)) {
		in.utilized = true;
		teo_use_util(&in, &cpu_data->metrics, &d);
	}
	if (d.need_sleep_length) {
		cpu_data->sleep_length_ns = teo_sleep_length(&delta_tick);
		teo_decide_late(&in, cpu_data->sleep_length_ns, delta_tick,
				&d);
	}

	trace_teo_select(dev->cpu, d.cand, d.idx, d.reason,
			 cpu_data->sleep_length_ns, delta_tick,
			 in.latency_req_ns, in.tick_stopped, d.stop_tick,
			 in.utilized);
	if (!d.stop_tick)
		*stop_tick = false;
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
	memset(per_cpu_ptr(&teo_cpus, dev->cpu), 0, sizeof(struct teo_cpu));
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
