// SPDX-License-Identifier: GPL-2.0
/*
 * The governors built in (each object registers its own at start-up,
 * see shim.h), the forced-utilization variants of their names, the bounds
 * that stand beside them in a replay (the oracles, the shallowest state,
 * the null governor) and the steps of the series among them.
 */
#include "replay.h"

struct gov govs[MAX_GOVS];
int ngovs;

int shim_register_governor(const char *tag, struct cpuidle_governor *ops)
{
	if (ngovs == MAX_GOVS) {
		fprintf(stderr,
			"cpuidle-replay: more than %d governors built in, %s left out: raise MAX_GOVS\n",
			MAX_GOVS, tag);
		exit(2);
	}
	govs[ngovs].name = tag;
	govs[ngovs].ops = ops;
	ngovs++;
	return 0;
}

bool usable(const struct cpuidle_driver *drv,
	    const struct cpuidle_device *dev, int i, s64 lat_ns)
{
	return !dev->states_usage[i].disable &&
	       drv->states[i].exit_latency_ns <= lat_ns;
}

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

const struct gov *find_gov(const char *name)
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

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * The series' intermediate steps built in (teo-stepNN), in order, into
 * @names (room for MAX_GOVS); returns how many.
 */
int series_steps(const char **names)
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
 * The step of the series before @step: mainline teo (teo-7.3) before the
 * first, "teo-step??" if @step is none of them.
 */
const char *step_before(const char *step)
{
	const char *names[MAX_GOVS];
	int n = series_steps(names), i;

	for (i = 0; i < n; i++) {
		if (!strcmp(names[i], step))
			return i ? names[i - 1] : "teo-7.3";
	}
	return "teo-step??";
}
