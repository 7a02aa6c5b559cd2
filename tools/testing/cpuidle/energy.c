// SPDX-License-Identifier: GPL-2.0
/*
 * The energy models (a state's power over its residency, plus the cost of
 * entering and leaving it) and the oracles, which know the whole trace and
 * use the least energy of a model.
 */
#include <math.h>

#include "replay.h"

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
void model_costs(const struct cpuidle_driver *drv, double *peak,
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

double model_energy(const struct cpuidle_driver *drv,
		    const double *cost, int idx, s64 ns)
{
	return (drv->states[idx].power_usage * (double)ns + cost[idx]) / 1e6;
}

/*
 * The power at which the CPU runs the tick's stop and restart: the table's
 * highest, as the default model charges waking up at.
 */
int running_mw(const struct cpuidle_driver *drv)
{
	int i, top = 0;

	for (i = 0; i < drv->state_count; i++)
		top = max(top, drv->states[i].power_usage);
	return top;
}

/* What one stop of the tick and its restart cost, in uJ. */
double tick_stop_uj(const struct cpuidle_driver *drv,
		    const struct replay_cfg *cfg)
{
	return running_mw(drv) * (double)cfg->tick_cost_ns / 1e6;
}

/*
 * The part of a state's exit latency spent waking up, which the residency
 * includes: a table may claim any exit latency, but waking up takes at most
 * a second here.
 */
s64 exit_share(const struct cpuidle_state *s,
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
int cheapest(const struct cpuidle_driver *drv,
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
int trace_cpus(const struct trace *t)
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
double make_plan(const struct cpuidle_driver *drv,
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
		st[k].uj[0] = INFINITY;
		st[k].uj[1] = INFINITY;
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
int oracle(const struct call *c, bool *stop_tick)
{
	bool stop = !c->stopped && c->elapsed_ns >= plan.stop_at[c->k];
	bool cut = !c->stopped && !stop && c->tick_cut_ns < c->idle_ns;
	double uj;

	*stop_tick = c->stopped || stop;
	return cheapest(c->drv, c->dev, plan.cost, plan.cfg, c->lat_ns,
			cut ? c->tick_cut_ns : c->idle_ns, cut || !c->recorded,
			&uj);
}
