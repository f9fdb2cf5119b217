package usage

import (
	"context"
	"fmt"
	"math"
	"net"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// PromQuerier evaluates instant PromQL queries: the one call of the
// Prometheus HTTP API (/api/v1/query) this source needs.
type PromQuerier interface {
	Query(ctx context.Context, query string, ts time.Time) (model.Value, error)
}

// ParseWindow parses a usage window: Go durations ("90s", "1h30m") and
// Prometheus durations ("7d", "2w", "1y") alike. It fails on a negative
// or malformed value.
func ParseWindow(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return 0, fmt.Errorf("a duration here must not be negative, got %s", s)
		}
		return d, nil
	}
	d, err := model.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (for example 30s, 10m, 24h, 7d)", s)
	}
	return time.Duration(d), nil
}

// promDuration is d in PromQL's notation, whole seconds at least 1s.
func promDuration(d time.Duration) string {
	return model.Duration(max(d.Round(time.Second), time.Second)).String()
}

// AssessPrometheus is the Prometheus source for gvr over [now-window,
// now]: requests by verb summed over every API server instance Prometheus
// scraped (increase of apiserver_request_total, and the whole value of a
// series born inside the window, whose first request increase cannot
// see), watches open at now and at most during the window
// (apiserver_longrunning_requests), and whether every API server instance
// was scraped throughout the window. The API server targets are the
// (job, instance) pairs with apiserver_request_total series at either end
// of the window; every `up` series of their jobs must have a sample at
// both ends of the window, no gap longer than two scrape intervals and no
// failed scrape. When set is non-nil, every instance it names must be
// among the scraped targets (matched by address, else by count). name
// names the server for people ("Prometheus http://…").
//
// The rise of each request counter series between its last sample
// before the window and its first inside it, which increase() over
// neither span sees, makes the source Unknown: those requests may be in
// the window or before it. With it every rise between two consecutive
// samples is counted once.
//
// With a history span longer than the window (--usage-history), the
// requests Prometheus counted in [now-history, now-window] make the
// source Unknown: a client whose period is longer than the window may
// call again. Their absence counts only where Prometheus holds the span:
// an up series of the API server jobs that begins after now-history
// (retention, a scrape begun later) makes the source Unknown too, naming
// when it begins. Gaps and failed scrapes are checked over the window
// only (a counter's rise across a gap is still counted).
func AssessPrometheus(ctx context.Context, q PromQuerier, name string, gvr schema.GroupVersionResource, window, history time.Duration, now time.Time, set *InstanceSet) (r SourceReport) {
	r = SourceReport{Source: SourcePrometheus, Name: name, WindowSeconds: window.Seconds(), HistorySeconds: history.Seconds()}
	defer r.Settle()
	fail := func(what string, err error) SourceReport {
		r.Unseen = append(r.Unseen, fmt.Sprintf("%s: %s", what, oneLine(err)))
		r.WaysOut = append(r.WaysOut, "check the Prometheus URL or service (--prometheus-url, --prometheus-service) and that it answers /api/v1/query")
		return r
	}
	if window <= 0 {
		r.Unseen = append(r.Unseen, "the window is 0: Prometheus needs a window to count requests in")
		return r
	}
	w := promDuration(window)
	start := now.Add(-window)

	// The API server targets, at both ends of the window.
	targets := map[target]bool{}
	for _, at := range []time.Time{now, start} {
		v, err := q.Query(ctx, `group by (job, instance) (apiserver_request_total)`, at)
		if err != nil {
			return fail("Prometheus cannot be queried", err)
		}
		for _, s := range asVector(v) {
			targets[target{job: string(s.Metric["job"]), instance: string(s.Metric["instance"])}] = true
		}
	}
	if len(targets) == 0 {
		r.Unseen = append(r.Unseen, fmt.Sprintf("Prometheus has no API server metrics (no apiserver_request_total series) at %s or %s: it does not scrape the API servers", start.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339)))
		r.WaysOut = append(r.WaysOut, "have Prometheus scrape every API server instance's /metrics (for example the kubernetes-apiservers job of the Prometheus Helm chart, or kube-prometheus' apiserver ServiceMonitor)")
		return r
	}
	jobs := map[string]bool{}
	for t := range targets {
		jobs[t.job] = true
	}

	// Coverage: every up series of those jobs, sample by sample.
	upQuery := fmt.Sprintf(`up{job=~%s}[%s]`, strconv.Quote(regexAlternatives(sortedKeys(jobs))), w)
	v, err := q.Query(ctx, upQuery, now)
	if err != nil {
		return fail("Prometheus cannot be queried", err)
	}
	cov := coverage(asMatrix(v), start, now)
	if cov.interval == 0 {
		// Fewer than two scrapes in the window: tell the scrape interval
		// from a longer stretch, to say whether the window is too short.
		longer := max(10*window, 5*time.Minute)
		if v, err := q.Query(ctx, fmt.Sprintf(`up{job=~%s}[%s]`, strconv.Quote(regexAlternatives(sortedKeys(jobs))), promDuration(longer)), now); err == nil {
			cov.interval = coverage(asMatrix(v), now.Add(-longer), now).interval
		}
	}
	r.Seen = append(r.Seen, cov.seen...)
	r.Unseen = append(r.Unseen, cov.unseen...)
	if cov.interval > 0 && window < 2*cov.interval {
		r.Unseen = append(r.Unseen, fmt.Sprintf("the window (%s) is shorter than two scrape intervals (%s): Prometheus cannot see a counter rise in it; use a window of at least %s", roundDuration(window.Seconds()), cov.interval, promDuration(4*cov.interval)))
	}
	if set != nil {
		r.Unseen = append(r.Unseen, crossCheck(set, cov.upNow)...)
	}

	sel := fmt.Sprintf(`{group=%s,version=%s,resource=%s}`, strconv.Quote(gvr.Group), strconv.Quote(gvr.Version), strconv.Quote(gvr.Resource))
	queries := []struct {
		into  *map[string]int64
		query string
	}{
		{&r.Requests, fmt.Sprintf(`sum by (verb) (increase(apiserver_request_total%s[%s]) and apiserver_request_total%s offset %s)`, sel, w, sel, w)},
		{&r.Requests, fmt.Sprintf(`sum by (verb) (last_over_time(apiserver_request_total%s[%s]) unless apiserver_request_total%s offset %s)`, sel, w, sel, w)},
		{&r.Open, fmt.Sprintf(`sum by (verb) (apiserver_longrunning_requests%s)`, sel)},
		{&r.MaxOpen, fmt.Sprintf(`sum by (verb) (max_over_time(apiserver_longrunning_requests%s[%s]))`, sel, w)},
	}
	for _, qq := range queries {
		v, err := q.Query(ctx, qq.query, now)
		if err != nil {
			return fail("Prometheus cannot be queried", err)
		}
		for _, s := range asVector(v) {
			n := int64(math.Round(float64(s.Value)))
			if n == 0 && s.Value > 0 {
				n = 1 // a rise, however extrapolated, is a request
			}
			if n > 0 {
				if *qq.into == nil {
					*qq.into = map[string]int64{}
				}
				(*qq.into)[string(s.Metric["verb"])] += n
			}
		}
	}
	if cov.from.After(start) {
		r.WaysOut = append(r.WaysOut, fmt.Sprintf("a --usage-window within the scrapes Prometheus holds of every API server target (from %s): at most %s; or another source that spans the window (--audit-log)",
			cov.from.UTC().Format(time.RFC3339), promDuration(now.Sub(cov.from).Truncate(time.Second))))
	}
	gv := schema.GroupVersion{Group: gvr.Group, Version: gvr.Version}.String()
	if cov.interval > 0 {
		// The rise between each series' last sample before the window
		// and its first inside, which neither increase() sees.
		at := start.Add(3 * cov.interval)
		if at.After(now) {
			at = now
		}
		v, err := q.Query(ctx, fmt.Sprintf(`apiserver_request_total%s[%s]`, sel, promDuration(at.Sub(start)+promLookback)), at)
		if err != nil {
			return fail("Prometheus cannot be queried", err)
		}
		if b := boundaryRise(asMatrix(v), start); len(b.requests) > 0 {
			r.Unseen = append(r.Unseen, fmt.Sprintf("requests to %s %s between the scrapes at %s and %s, across the window's start (%s): %s; Prometheus cannot tell whether they came before the window or in it",
				gv, gvr.Resource, b.from.UTC().Format(time.RFC3339), b.to.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339), byVerb(b.requests)))
			r.WaysOut = append(r.WaysOut, fmt.Sprintf("a --usage-window of at least %s holds them whole; the audit logs of that time (--audit-log) say when they came and who sent them", promDuration(now.Sub(b.from)+time.Second)))
		}
	}
	if history > window {
		// Zero requests before the window proves nothing over a part of
		// the span Prometheus does not hold (retention, a scrape begun
		// later): where each target's up series begins in it.
		reach, err := reachBack(ctx, q, sortedKeys(jobs), now.Add(-history), start, cov.interval)
		if err != nil {
			return fail("Prometheus cannot be queried", err)
		}
		r.Unseen = append(r.Unseen, reach.unseen...)
		if !reach.from.IsZero() {
			r.WaysOut = append(r.WaysOut, fmt.Sprintf("a --usage-history within the scrapes Prometheus holds of every API server target (from %s): at most %s; or another source that spans the history (--audit-log)",
				reach.from.UTC().Format(time.RFC3339), promDuration(now.Sub(reach.from).Truncate(time.Second))))
		}
		// The requests before the window: the same two queries over
		// [now-history, start], evaluated at start.
		earlier := promDuration(history - window)
		var before map[string]int64
		for _, query := range []string{
			fmt.Sprintf(`sum by (verb) (increase(apiserver_request_total%s[%s]) and apiserver_request_total%s offset %s)`, sel, earlier, sel, earlier),
			fmt.Sprintf(`sum by (verb) (last_over_time(apiserver_request_total%s[%s]) unless apiserver_request_total%s offset %s)`, sel, earlier, sel, earlier),
		} {
			v, err := q.Query(ctx, query, start)
			if err != nil {
				return fail("Prometheus cannot be queried", err)
			}
			for _, s := range asVector(v) {
				if s.Value <= 0 {
					continue
				}
				if before == nil {
					before = map[string]int64{}
				}
				// A rise, however extrapolated, is a request.
				before[string(s.Metric["verb"])] += max(int64(math.Round(float64(s.Value))), 1)
			}
		}
		if len(before) > 0 {
			r.Unseen = append(r.Unseen, fmt.Sprintf("requests to %s %s from %s to %s, before the window (%s): a client that calls less often than once every %s may call again",
				gv, gvr.Resource, now.Add(-history).UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339), byVerb(before), roundDuration(window.Seconds())))
			r.WaysOut = append(r.WaysOut, "find who sent them: the API servers' audit logs of that time name each request's user and user agent (--audit-log)",
				fmt.Sprintf("once you know what sent the requests before the window (the objects' creation, this tool's own reads at %s while it migrated, a job that has finished): --usage-history 0 looks at the window only", gv))
		}
	}
	if len(r.Requests) > 0 {
		r.Seen = append(r.Seen, fmt.Sprintf("requests to %s %s in the last %s: %s", gv, gvr.Resource, roundDuration(window.Seconds()), byVerb(r.Requests)))
	} else {
		r.Seen = append(r.Seen, fmt.Sprintf("no request to %s %s in the last %s", gv, gvr.Resource, roundDuration(window.Seconds())))
	}
	if len(r.Open) > 0 {
		r.Seen = append(r.Seen, "open now: "+byVerb(r.Open))
	}
	if len(r.MaxOpen) > 0 {
		r.Seen = append(r.Seen, "open during the window, at most: "+byVerb(r.MaxOpen))
	}
	if len(r.Unseen) > 0 && len(r.WaysOut) == 0 {
		r.WaysOut = append(r.WaysOut, "have Prometheus scrape every API server instance for the whole window, or use a window it covers (--usage-window)")
	}
	return r
}

type target struct{ job, instance string }

// promLookback is PromQL's default lookback delta: how far before a time
// an instant selector (apiserver_request_total offset W) finds a sample.
const promLookback = 5 * time.Minute

// promBoundary is the rise of the request counters across a window's
// start.
type promBoundary struct {
	requests map[string]int64
	// from and to are the earliest sample before the start and the
	// latest after it among the series that rose.
	from, to time.Time
}

// boundaryRise sums, by verb, each series' rise from its last sample at
// or before start to its first after it (the whole value after a counter
// reset). increase() over the window starts at the first sample inside
// it, and the span before the window ends at the last one before, so
// this rise is the one both miss: with it every rise between two
// consecutive samples is counted once.
func boundaryRise(series model.Matrix, start time.Time) promBoundary {
	var b promBoundary
	for _, s := range series {
		var before, after *model.SamplePair
		for i := range s.Values {
			p := &s.Values[i]
			if !p.Timestamp.Time().After(start) {
				before = p
			} else if after == nil {
				after = p
			}
		}
		if before == nil || after == nil {
			continue
		}
		rise := after.Value - before.Value
		if after.Value < before.Value {
			rise = after.Value
		}
		if rise <= 0 {
			continue
		}
		if b.requests == nil {
			b.requests = map[string]int64{}
		}
		// A rise, however small, is a request.
		b.requests[string(s.Metric["verb"])] += max(int64(math.Round(float64(rise))), 1)
		if t := before.Timestamp.Time(); b.from.IsZero() || t.Before(b.from) {
			b.from = t
		}
		if t := after.Timestamp.Time(); t.After(b.to) {
			b.to = t
		}
	}
	return b
}

// promReach is where Prometheus' scrapes of the API servers begin in a
// span before the window.
type promReach struct {
	// from is the latest first scrape of a target that begins after the
	// span's start (zero when every target reaches back to it).
	from   time.Time
	unseen []string
}

// reachBack finds, for every up series of jobs, its first scrape in
// [spanStart, spanEnd] (min_over_time of timestamp(up) over a subquery
// whose step is the scrape interval, so to within one interval), and
// names each series that begins more than two intervals after
// spanStart: Prometheus' retention or its scrape of that target does not
// reach back over the span, and a count of zero proves nothing over the
// part it does not hold. A span in which it holds no scrape at all is
// named too.
func reachBack(ctx context.Context, q PromQuerier, jobs []string, spanStart, spanEnd time.Time, interval time.Duration) (promReach, error) {
	var out promReach
	step := interval
	if step <= 0 {
		step = time.Minute
	}
	query := fmt.Sprintf(`min by (job, instance) (min_over_time(timestamp(up{job=~%s})[%s:%s]))`,
		strconv.Quote(regexAlternatives(jobs)), promDuration(spanEnd.Sub(spanStart)), promDuration(step))
	v, err := q.Query(ctx, query, spanEnd)
	if err != nil {
		return out, err
	}
	firsts := asVector(v)
	span := fmt.Sprintf("the span before the window (--usage-history, from %s to %s)", spanStart.UTC().Format(time.RFC3339), spanEnd.UTC().Format(time.RFC3339))
	if len(firsts) == 0 {
		out.from = spanEnd
		out.unseen = append(out.unseen, fmt.Sprintf("Prometheus holds no scrape of the API servers (jobs %s) in %s: requests in it are not known", strings.Join(jobs, ", "), span))
		return out, nil
	}
	sort.Slice(firsts, func(i, j int) bool { return firsts[i].Metric.String() < firsts[j].Metric.String() })
	for _, s := range firsts {
		first := time.Unix(0, int64(float64(s.Value)*float64(time.Second))).Round(time.Millisecond)
		if first.Sub(spanStart) <= 2*step {
			continue
		}
		if first.After(out.from) {
			out.from = first
		}
		out.unseen = append(out.unseen, fmt.Sprintf("Prometheus holds the scrapes of API server target %s (job %s) only from %s, after the start of %s: requests it answered before are not known (Prometheus' retention or its scrape of it does not reach back)",
			s.Metric["instance"], s.Metric["job"], first.UTC().Format(time.RFC3339), span))
	}
	return out, nil
}

// promCoverage is what the up series say about the scrape of the API
// servers over a window.
type promCoverage struct {
	interval time.Duration
	// from is the latest first scrape of a target that begins after the
	// window's start (zero when every target reaches back to it).
	from time.Time
	// upNow are the instances whose last scrape, at the end of the window,
	// succeeded.
	upNow  []string
	seen   []string
	unseen []string
}

// coverage checks that each up series has a sample near both ends of
// [start, end], no gap longer than two scrape intervals and no failed
// scrape (up 0).
func coverage(series model.Matrix, start, end time.Time) promCoverage {
	var c promCoverage
	var deltas []time.Duration
	for _, s := range series {
		for i := 1; i < len(s.Values); i++ {
			deltas = append(deltas, s.Values[i].Timestamp.Time().Sub(s.Values[i-1].Timestamp.Time()))
		}
	}
	if len(deltas) == 0 {
		c.unseen = append(c.unseen, "Prometheus holds fewer than two scrapes of the API servers in the window, so it cannot tell whether requests were made in it")
		return c
	}
	slices.Sort(deltas)
	c.interval = deltas[len(deltas)/2].Round(time.Millisecond)
	// A gap is more than two intervals without a sample; at the end of
	// the window a scrape may also be under way.
	tolerance := 2 * c.interval
	sort.Slice(series, func(i, j int) bool { return series[i].Metric.String() < series[j].Metric.String() })
	for _, s := range series {
		name := fmt.Sprintf("%s (job %s)", s.Metric["instance"], s.Metric["job"])
		vals := s.Values
		if len(vals) == 0 {
			continue
		}
		first, last := vals[0].Timestamp.Time(), vals[len(vals)-1].Timestamp.Time()
		if first.Sub(start) > tolerance {
			if first.After(c.from) {
				c.from = first
			}
			c.unseen = append(c.unseen, fmt.Sprintf("API server target %s was scraped only from %s, after the window's start %s", name, first.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339)))
		}
		if end.Sub(last) > tolerance+c.interval {
			c.unseen = append(c.unseen, fmt.Sprintf("API server target %s was last scraped at %s, before the window's end %s", name, last.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339)))
		}
		failed, gaps := 0, 0
		var firstGap string
		for i, p := range vals {
			if p.Value == 0 {
				failed++
			}
			if i > 0 {
				if d := p.Timestamp.Time().Sub(vals[i-1].Timestamp.Time()); d > tolerance {
					if gaps == 0 {
						firstGap = fmt.Sprintf("%s after %s", d.Round(time.Second), vals[i-1].Timestamp.Time().UTC().Format(time.RFC3339))
					}
					gaps++
				}
			}
		}
		if failed > 0 {
			c.unseen = append(c.unseen, fmt.Sprintf("%d scrape(s) of API server target %s failed in the window (up 0)", failed, name))
		}
		if gaps > 0 {
			c.unseen = append(c.unseen, fmt.Sprintf("API server target %s has %d gap(s) longer than two scrape intervals in the window (the first: %s)", name, gaps, firstGap))
		}
		if vals[len(vals)-1].Value == 1 && end.Sub(last) <= tolerance+c.interval {
			c.upNow = append(c.upNow, string(s.Metric["instance"]))
		}
	}
	c.seen = append(c.seen, fmt.Sprintf("%d API server target(s) scraped every %s: %s", len(series), c.interval, strings.Join(instancesOf(series), ", ")))
	return c
}

func instancesOf(m model.Matrix) []string {
	var out []string
	for _, s := range m {
		out = append(out, string(s.Metric["instance"]))
	}
	return out
}

// crossCheck compares the cluster's instances with the targets Prometheus
// scraped at the end of the window: by address (instance label host:port
// against the endpoint address) when the labels are addresses, else by
// count.
func crossCheck(set *InstanceSet, upNow []string) []string {
	var out []string
	if len(set.Unseen) > 0 {
		for _, u := range set.Unseen {
			out = append(out, "the cluster's API server instances: "+u)
		}
	}
	scraped := map[string]bool{}
	for _, i := range upNow {
		scraped[i] = true
		if host, port, err := net.SplitHostPort(i); err == nil {
			scraped[net.JoinHostPort(host, port)] = true
		}
	}
	var missing []string
	for _, in := range set.Instances {
		if in.Address != "" && !scraped[in.Address] {
			missing = append(missing, in.String())
		}
	}
	total := max(set.Leases, set.Endpoints)
	switch {
	case len(missing) > 0 && len(missing) < len(set.Instances):
		out = append(out, fmt.Sprintf("the cluster has %d API server instance(s) and Prometheus does not scrape %s: clients of the instance(s) it does not scrape are not seen", total, joinAnd(missing)))
	case len(upNow) < total:
		out = append(out, fmt.Sprintf("the cluster has %d API server instance(s) and Prometheus scrapes %d (%s): clients of the others are not seen", total, len(upNow), strings.Join(upNow, ", ")))
	}
	return out
}

func asVector(v model.Value) model.Vector {
	if vec, ok := v.(model.Vector); ok {
		return vec
	}
	return nil
}

func asMatrix(v model.Value) model.Matrix {
	if m, ok := v.(model.Matrix); ok {
		return m
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// regexAlternatives is a RE2 alternation matching exactly the given
// strings.
func regexAlternatives(ss []string) string {
	quoted := make([]string, len(ss))
	for i, s := range ss {
		quoted[i] = regexp.QuoteMeta(s)
	}
	return strings.Join(quoted, "|")
}
