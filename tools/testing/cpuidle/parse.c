// SPDX-License-Identifier: GPL-2.0
/*
 * The state table and trace formats (README in this directory): parsing,
 * with one message naming the file, line and field for what is wrong.
 */
#include <errno.h>
#include <stdarg.h>

#include "replay.h"

char errbuf[512];

int fail(const char *file, int line, const char *fmt, ...)
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
		return fail(name, line,
			    "want 5 fields (name exit_latency_us target_residency_us flags power_mw), got %d",
			    n);
	if (drv->state_count == CPUIDLE_STATE_MAX)
		return fail(name, line, "more than %d states", CPUIDLE_STATE_MAX);
	if (!parse_num(w[1], -2, &lat) || !parse_num(w[2], -2, &res) ||
	    !parse_num(w[4], -2, &power) || lat > INT_MAX || res > INT_MAX ||
	    power > INT_MAX)
		return fail(name, line,
			    "latency, residency and power must be whole numbers from 0 to %d",
			    INT_MAX);
	if (strcmp(w[3], "poll") && strcmp(w[3], "-"))
		return fail(name, line, "flags must be \"poll\" or \"-\", not \"%s\"", w[3]);
	if (strlen(w[0]) >= CPUIDLE_NAME_LEN)
		return fail(name, line,
			    "state name longer than %d characters",
			    CPUIDLE_NAME_LEN - 1);
	if (drv->state_count &&
	    res < drv->states[drv->state_count - 1].target_residency)
		return fail(name, line,
			    "target residency below the previous state's: states go shallowest first");

	st = &drv->states[drv->state_count++];
	memset(st, 0, sizeof(*st));
	memcpy(st->name, w[0], strlen(w[0]) + 1);
	st->exit_latency = lat;
	st->target_residency = res;
	st->exit_latency_ns = lat * NSEC_PER_USEC;
	st->target_residency_ns = res * NSEC_PER_USEC;
	st->power_usage = power;
	st->flags = strcmp(w[3], "poll") ? 0 : CPUIDLE_FLAG_POLLING;
	return 0;
}

int parse_table(const char *name, const char *text,
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

int trace_line(void *ctx, const char *name, int line, char *s)
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

int parse_trace(const char *name, const char *text, struct trace *t)
{
	memset(t, 0, sizeof(*t));
	return read_lines(name, text, "teo-trace", ARRAY_SIZE(trace_fields) - 1,
			  &t->version, trace_line, t);
}

char *slurp(const char *path)
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
			if (!buf)
				out_of_memory();
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
	} while (got);
	fclose(f);
	buf[len] = 0;
	return buf;
}
