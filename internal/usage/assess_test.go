package usage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/managedfields"
	"github.com/crdversion/kubectl-crdversion/internal/usage/auditlog"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func TestMatchInstances(t *testing.T) {
	lease := func(name, host, peer string, age time.Duration) IdentityLease {
		return IdentityLease{Name: name, Hostname: host, PeerAddress: peer, RenewTime: t0.Add(-age)}
	}
	for _, tc := range []struct {
		name      string
		leases    []IdentityLease
		endpoints []Endpoint
		lErr      error
		want      string // instances, comma-separated
		unseen    string
	}{
		{name: "one and one", leases: []IdentityLease{lease("apiserver-a", "", "", time.Second)}, endpoints: []Endpoint{{Address: "10.0.0.1:6443"}},
			want: "apiserver-a at 10.0.0.1:6443"},
		{name: "by peer address", leases: []IdentityLease{lease("apiserver-b", "", "10.0.0.2:6443", 0), lease("apiserver-a", "", "10.0.0.1:6443", 0)},
			endpoints: []Endpoint{{Address: "10.0.0.1:6443"}, {Address: "10.0.0.2:6443"}},
			want:      "apiserver-a at 10.0.0.1:6443, apiserver-b at 10.0.0.2:6443"},
		{name: "by host name", leases: []IdentityLease{lease("apiserver-a", "cp-1", "", 0), lease("apiserver-b", "cp-2", "", 0)},
			endpoints: []Endpoint{{Address: "10.0.0.2:6443", NodeName: "cp-2"}, {Address: "10.0.0.1:6443", NodeName: "cp-1"}},
			want:      "apiserver-a at 10.0.0.1:6443, apiserver-b at 10.0.0.2:6443"},
		{name: "unmatched, same count", leases: []IdentityLease{lease("apiserver-a", "", "", 0), lease("apiserver-b", "", "", 0)},
			endpoints: []Endpoint{{Address: "10.0.0.1:6443"}, {Address: "10.0.0.2:6443"}},
			want:      "the instance at 10.0.0.1:6443, the instance at 10.0.0.2:6443, apiserver-a, apiserver-b"},
		{name: "a stale lease does not count", leases: []IdentityLease{lease("apiserver-a", "", "", 0), lease("apiserver-old", "", "", time.Hour)},
			endpoints: []Endpoint{{Address: "10.0.0.1:6443"}}, want: "apiserver-a at 10.0.0.1:6443"},
		{name: "more leases than endpoints", leases: []IdentityLease{lease("apiserver-a", "", "", 0), lease("apiserver-b", "", "", 0)},
			endpoints: []Endpoint{{Address: "10.0.0.1:6443"}},
			want:      "the instance at 10.0.0.1:6443, apiserver-a, apiserver-b", unseen: "2 API server identity lease(s) (apiserver-a, apiserver-b) but the kubernetes Service lists 1 endpoint(s)"},
		{name: "leases forbidden", lErr: errors.New("leases.coordination.k8s.io is forbidden"), endpoints: []Endpoint{{Address: "10.0.0.1:6443"}},
			want: "the instance at 10.0.0.1:6443", unseen: "identity leases in kube-system cannot be read (leases.coordination.k8s.io is forbidden)"},
		{name: "one lease, no endpoint reconciler", leases: []IdentityLease{lease("apiserver-a", "", "", 0)}, want: "apiserver-a"},
		{name: "two leases, no endpoint", leases: []IdentityLease{lease("apiserver-a", "", "", 0), lease("apiserver-b", "", "", 0)},
			want: "apiserver-a, apiserver-b", unseen: "2 API server identity lease(s) (apiserver-a, apiserver-b) but the kubernetes Service lists 0 endpoint(s)"},
		{name: "nothing", unseen: "no API server instance found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := MatchInstances(tc.leases, tc.lErr, tc.endpoints, nil, t0)
			var got []string
			for _, in := range set.Instances {
				got = append(got, in.String())
			}
			if strings.Join(got, ", ") != tc.want {
				t.Errorf("instances %q, want %q", strings.Join(got, ", "), tc.want)
			}
			if u := strings.Join(set.Unseen, "\n"); (tc.unseen == "") != (u == "") || !strings.Contains(u, tc.unseen) {
				t.Errorf("unseen %q, want %q", u, tc.unseen)
			}
		})
	}
}

func mustMetrics(t *testing.T, text string, at time.Time) *Metrics {
	t.Helper()
	m, err := ParseMetrics(strings.NewReader(text), at)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestAssessInstancesPartial: the metrics source never says NotInUse when
// an instance was not read, restarted between the reads, or the window
// is 0, or (with a history span) counted requests before the window that
// the window does not explain (issue 33: a client that lists every 10 s
// passed a 3 s window); it sums what every instance saw.
func TestAssessInstancesPartial(t *testing.T) {
	g := schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "crontabs"}
	set := InstanceSet{Instances: []Instance{{Lease: "apiserver-a", Address: "10.0.0.1:6443"}, {Lease: "apiserver-b", Address: "10.0.0.2:6443"}}, Leases: 2, Endpoints: 2}
	quiet := func(at time.Time) *Metrics { return mustMetrics(t, metrics(4, 0, 0, 0, false, "1.7e+09"), at) }
	busy := func(at time.Time) *Metrics { return mustMetrics(t, metrics(9, 0, 0, 0, false, "1.7e+09"), at) }
	restarted := func(at time.Time) *Metrics { return mustMetrics(t, metrics(1, 0, 0, 0, false, "1.8e+09"), at) }
	never := func(at time.Time) *Metrics { return mustMetrics(t, metrics(0, 0, 0, 0, false, "1.7e+09"), at) }
	young := func(at time.Time) *Metrics { return mustMetrics(t, metrics(0, 0, 0, 0, false, "1796119140"), at) }
	t1 := t0.Add(10 * time.Second)
	a, b := set.Instances[0], set.Instances[1]
	const day = 24 * time.Hour
	for _, tc := range []struct {
		name    string
		samples []InstanceSample
		window  time.Duration
		history time.Duration
		verdict Verdict
		want    string
	}{
		{"requests before the window, with a history", []InstanceSample{{Instance: a, First: never(t0), Second: never(t1)}, {Instance: b, First: quiet(t0), Second: quiet(t1)}}, 10 * time.Second, day, Unknown,
			"apiserver-b at 10.0.0.2:6443: 4 request(s) to stable.example.com/v1 since it started at 2023-11-14T22:13:20Z came before the last 10s (LIST 4); the counters carry no time, so they may be a client that calls less often than once every 10s and will call again"},
		{"never requested, with a history", []InstanceSample{{Instance: a, First: never(t0), Second: never(t1)}, {Instance: b, First: never(t0), Second: never(t1)}}, 10 * time.Second, day, NotInUse, "apiserver-b at 10.0.0.2:6443: no request in the last 10s"},
		// A restart a minute before: the counters hold nothing of the
		// day before it (the reviewer's scenario: a rolling upgrade, then
		// a client that lists every 10 minutes).
		{"never requested since a restart inside the history", []InstanceSample{{Instance: a, First: never(t0), Second: never(t1)}, {Instance: b, First: young(t0), Second: young(t1)}}, 10 * time.Second, day, Unknown,
			"apiserver-b at 10.0.0.2:6443: its counters cover only the time since it started, and it started at 2026-12-01T09:59:00Z, 1m0s before the first read, inside the 24h0m0s history"},
		{"never requested since a restart, no history", []InstanceSample{{Instance: a, First: never(t0), Second: never(t1)}, {Instance: b, First: young(t0), Second: young(t1)}}, 10 * time.Second, 0, NotInUse, "no request in the last 10s"},
		{"requests inside the window only, with a history", []InstanceSample{{Instance: a, First: never(t0), Second: never(t1)}, {Instance: b, First: never(t0), Second: quiet(t1)}}, 10 * time.Second, day, InUse, "apiserver-b at 10.0.0.2:6443: requests in the last 10s: LIST 4"},
		{"requests before and inside the window, with a history", []InstanceSample{{Instance: a, First: never(t0), Second: never(t1)}, {Instance: b, First: quiet(t0), Second: busy(t1)}}, 10 * time.Second, day, InUse, "4 request(s) to stable.example.com/v1 since it started"},
		{"requests before the window, restarted, with a history", []InstanceSample{{Instance: a, First: never(t0), Second: never(t1)}, {Instance: b, First: quiet(t0), Second: restarted(t1)}}, 10 * time.Second, day, Unknown, "the two samples came from API server instances started at different times"},
		{"both quiet", []InstanceSample{{Instance: a, First: quiet(t0), Second: quiet(t1)}, {Instance: b, First: quiet(t0), Second: quiet(t1)}}, 10 * time.Second, 0, NotInUse, "apiserver-b at 10.0.0.2:6443: no request in the last 10s"},
		{"the second busy", []InstanceSample{{Instance: a, First: quiet(t0), Second: quiet(t1)}, {Instance: b, First: quiet(t0), Second: busy(t1)}}, 10 * time.Second, 0, InUse, "apiserver-b at 10.0.0.2:6443: requests in the last 10s: LIST 5"},
		{"the second unread", []InstanceSample{{Instance: a, First: quiet(t0), Second: quiet(t1)}, {Instance: b, Err: errors.New("dial tcp 10.0.0.2:6443: connect: connection refused")}}, 10 * time.Second, 0, Unknown, "apiserver-b at 10.0.0.2:6443: its /metrics cannot be read: dial tcp"},
		{"the second unread, the first busy", []InstanceSample{{Instance: a, First: quiet(t0), Second: busy(t1)}, {Instance: b, Err: errors.New("x509")}}, 10 * time.Second, 0, InUse, "LIST 5"},
		{"the second restarted", []InstanceSample{{Instance: a, First: quiet(t0), Second: quiet(t1)}, {Instance: b, First: quiet(t0), Second: restarted(t1)}}, 10 * time.Second, 0, Unknown, "apiserver-b at 10.0.0.2:6443: the two samples came from API server instances started at different times"},
		{"a zero window", []InstanceSample{{Instance: a, First: quiet(t0)}, {Instance: b, First: quiet(t0)}}, 0, 0, Unknown, "the window is 0"},
		{"no sample", nil, 10 * time.Second, 0, Unknown, "no API server instance was read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := set
			if tc.samples == nil {
				s = InstanceSet{}
			}
			r := AssessInstances(g, s, tc.samples, tc.window, tc.history)
			if r.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s: %+v", r.Verdict, tc.verdict, r)
			}
			// The requests before the window are named only with a
			// history span, and their ways out come with them.
			before := strings.Contains(strings.Join(r.Unseen, "\n"), "came before the last")
			if want := tc.history > 0 && strings.Contains(tc.want, "came before the last"); before != want && tc.verdict != InUse {
				t.Errorf("requests before the window named: %t, want %t: %v", before, want, r.Unseen)
			}
			if before && !slices.ContainsFunc(r.WaysOut, func(w string) bool {
				return strings.HasPrefix(w, "once you know what sent the requests before the window") && strings.Contains(w, "--usage-history 0 looks at the window only")
			}) {
				t.Errorf("ways out: %v", r.WaysOut)
			}
			if all := strings.Join(append(r.Seen, r.Unseen...), "\n"); !strings.Contains(all, tc.want) {
				t.Errorf("evidence lacks %q:\n%s", tc.want, all)
			}
			// An instance restarted between the reads saw an unknown
			// number of requests, not none (issue 33).
			for _, line := range r.Seen {
				if tc.name == "the second restarted" && strings.HasPrefix(line, "apiserver-b") && !strings.Contains(line, "the requests of the last 10s are not known (its counters restarted between the reads)") {
					t.Errorf("the restarted instance's line: %q", line)
				}
			}
		})
	}
	r := AssessInstances(g, set, []InstanceSample{{Instance: a, First: quiet(t0), Second: quiet(t1)}, {Instance: b, Err: errors.New("403"), Forbidden: true}}, time.Second, 0)
	if w := strings.Join(r.WaysOut, "\n"); !strings.Contains(w, "--prometheus-url") || !strings.Contains(w, "nonResourceURLs") {
		t.Errorf("ways out of a forbidden instance: %s", w)
	}
}

func TestCombine(t *testing.T) {
	g := schema.GroupVersionResource{Group: "g.example.com", Version: "v1", Resource: "things"}
	counted := SourceReport{Source: SourceMetrics, Name: "/metrics of 2 API server instance(s)"}
	unseenCount := SourceReport{Source: SourceMetrics, Name: "/metrics of 2 API server instance(s)", Unseen: []string{"the instance at 10.0.0.2:6443: its /metrics cannot be read"}}
	who := SourceReport{Source: SourceManagedFields, Name: "managedFields of things"}
	whoActive := SourceReport{Source: SourceManagedFields, Name: "managedFields of things", Clients: []Client{{Manager: "op", InWindow: true}}}
	whoUnseen := SourceReport{Source: SourceAuditLog, Name: "audit log a.log", Unseen: []string{"a.log: 3 malformed line(s)"}}
	for _, tc := range []struct {
		name    string
		sources []SourceReport
		verdict Verdict
		message string
	}{
		{"counted, nothing", []SourceReport{counted, who}, NotInUse, "no client of g.example.com/v1 things seen in the last 10s (/metrics of 2 API server instance(s) and managedFields of things)"},
		{"a counting source unseen", []SourceReport{unseenCount, who}, Unknown, "whether clients still use g.example.com/v1 things is unknown: /metrics of 2 API server instance(s): the instance at 10.0.0.2:6443"},
		{"a who source unseen", []SourceReport{counted, whoUnseen}, Unknown, "audit log a.log: a.log: 3 malformed line(s)"},
		{"no counting source", []SourceReport{who}, Unknown, "no source that counts every request"},
		{"a writer in the window wins over unseen", []SourceReport{unseenCount, whoActive}, InUse, "clients still use g.example.com/v1 things (seen by: managedFields of things)"},
		{"no source", nil, Unknown, "no source that counts every request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Combine(g, 10*time.Second, tc.sources...)
			if a.Verdict != tc.verdict || !strings.Contains(a.Message(), tc.message) {
				t.Errorf("%s: %s; want %s: %s", a.Verdict, a.Message(), tc.verdict, tc.message)
			}
			ways := a.WaysOut()
			if tc.verdict == Unknown && (len(ways) == 0 || !strings.Contains(ways[len(ways)-1], "--skip-usage-check")) {
				t.Errorf("ways out %v: want --skip-usage-check last", ways)
			}
			if tc.verdict != Unknown && len(ways) > 0 {
				t.Errorf("ways out on %s: %v", tc.verdict, ways)
			}
		})
	}
}

// fakeProm answers queries by their first word (or the whole query) with
// canned values; err fails every query.
type fakeProm struct {
	answers map[string]model.Value
	err     error
	asked   []string
}

func (f *fakeProm) Query(_ context.Context, q string, _ time.Time) (model.Value, error) {
	f.asked = append(f.asked, q)
	if f.err != nil {
		return nil, f.err
	}
	// The longest prefix that matches answers.
	var v model.Value = model.Vector{}
	longest := -1
	for prefix, a := range f.answers {
		if strings.HasPrefix(q, prefix) && len(prefix) > longest {
			v, longest = a, len(prefix)
		}
	}
	return v, nil
}

func upSeries(instance string, from, to time.Time, every time.Duration, fail ...time.Time) *model.SampleStream {
	s := &model.SampleStream{Metric: model.Metric{"__name__": "up", "job": "apiserver", "instance": model.LabelValue(instance)}}
	for at := from; !at.After(to); at = at.Add(every) {
		v := model.SampleValue(1)
		for _, f := range fail {
			if f.Equal(at) {
				v = 0
			}
		}
		s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(at.UnixNano()), Value: v})
	}
	return s
}

// counter is a request counter series of verb: pairs of seconds after
// at and values.
func counter(verb string, at time.Time, secondsValues ...float64) *model.SampleStream {
	s := &model.SampleStream{Metric: model.Metric{"__name__": "apiserver_request_total", "verb": model.LabelValue(verb)}}
	for i := 0; i < len(secondsValues); i += 2 {
		ts := at.Add(time.Duration(secondsValues[i] * float64(time.Second)))
		s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(ts.UnixNano()), Value: model.SampleValue(secondsValues[i+1])})
	}
	return s
}

// firsts is the answer of the reach-back query: the first scrapes of the
// two targets.
func firsts(a, b time.Time) model.Vector {
	return model.Vector{
		{Metric: model.Metric{"job": "apiserver", "instance": "10.0.0.1:6443"}, Value: model.SampleValue(float64(a.UnixMilli()) / 1000)},
		{Metric: model.Metric{"job": "apiserver", "instance": "10.0.0.2:6443"}, Value: model.SampleValue(float64(b.UnixMilli()) / 1000)},
	}
}

func vec(verbValues ...any) model.Vector {
	var out model.Vector
	for i := 0; i < len(verbValues); i += 2 {
		out = append(out, &model.Sample{Metric: model.Metric{"verb": model.LabelValue(verbValues[i].(string))}, Value: model.SampleValue(verbValues[i+1].(float64))})
	}
	return out
}

// TestAssessPrometheus: requests and watches from the queries; the
// coverage of every API server target; no NotInUse on partial scrapes.
func TestAssessPrometheus(t *testing.T) {
	g := schema.GroupVersionResource{Group: "stable.example.com", Version: "v1beta1", Resource: "crontabs"}
	window := 10 * time.Minute
	now := t0
	start := now.Add(-window)
	targets := model.Vector{
		{Metric: model.Metric{"job": "apiserver", "instance": "10.0.0.1:6443"}, Value: 1},
		{Metric: model.Metric{"job": "apiserver", "instance": "10.0.0.2:6443"}, Value: 1},
	}
	full := model.Matrix{upSeries("10.0.0.1:6443", start, now, 30*time.Second), upSeries("10.0.0.2:6443", start, now, 30*time.Second)}
	set := &InstanceSet{Instances: []Instance{{Address: "10.0.0.1:6443"}, {Address: "10.0.0.2:6443"}}, Leases: 2, Endpoints: 2}
	base := func() map[string]model.Value {
		return map[string]model.Value{"group by (job, instance)": targets, "up{": full, "min by (job, instance) (min_over_time(timestamp(up": firsts(now.Add(-48*time.Hour), now.Add(-48*time.Hour))}
	}
	for _, tc := range []struct {
		name    string
		edit    func(map[string]model.Value)
		set     *InstanceSet
		err     error
		window  time.Duration
		history time.Duration
		verdict Verdict
		want    string
		way     string
	}{
		{name: "quiet", verdict: NotInUse, want: "2 API server target(s) scraped every 30s"},
		{name: "requests", edit: func(m map[string]model.Value) { m["sum by (verb) (increase("] = vec("LIST", 2.6) }, verdict: InUse, want: "requests to stable.example.com/v1beta1 crontabs in the last 10m0s: LIST 3"},
		{name: "a series born in the window", edit: func(m map[string]model.Value) { m["sum by (verb) (last_over_time("] = vec("GET", 1.0) }, verdict: InUse, want: "GET 1"},
		{name: "a watch open during the window", edit: func(m map[string]model.Value) { m["sum by (verb) (max_over_time("] = vec("WATCH", 1.0) }, verdict: InUse, want: "open during the window, at most: WATCH 1"},
		{name: "a gap", edit: func(m map[string]model.Value) {
			s := upSeries("10.0.0.2:6443", start, now, 30*time.Second)
			s.Values = append(s.Values[:5], s.Values[10:]...)
			m["up{"] = model.Matrix{full[0], s}
		}, verdict: Unknown, want: "has 1 gap(s) longer than two scrape intervals"},
		{name: "a failed scrape", edit: func(m map[string]model.Value) {
			m["up{"] = model.Matrix{full[0], upSeries("10.0.0.2:6443", start, now, 30*time.Second, start.Add(time.Minute))}
		}, verdict: Unknown, want: "1 scrape(s) of API server target 10.0.0.2:6443 (job apiserver) failed"},
		{name: "scraped from mid-window", edit: func(m map[string]model.Value) {
			m["up{"] = model.Matrix{full[0], upSeries("10.0.0.2:6443", start.Add(5*time.Minute), now, 30*time.Second)}
		}, verdict: Unknown, want: "was scraped only from", way: "a --usage-window within the scrapes Prometheus holds of every API server target (from 2026-12-01T09:55:00Z): at most 5m"},
		{name: "an instance not scraped", edit: func(m map[string]model.Value) {
			m["up{"] = model.Matrix{full[0]}
		}, verdict: Unknown, want: "Prometheus does not scrape the instance at 10.0.0.2:6443"},
		{name: "fewer targets than instances, other labels", set: &InstanceSet{Instances: []Instance{{Lease: "a"}, {Lease: "b"}, {Lease: "c"}}, Leases: 3}, verdict: Unknown, want: "the cluster has 3 API server instance(s) and Prometheus scrapes 2"},
		{name: "no API server metrics", edit: func(m map[string]model.Value) { m["group by (job, instance)"] = model.Vector{} }, verdict: Unknown, want: "Prometheus has no API server metrics"},
		{name: "unreachable", err: errors.New(`Post "http://127.0.0.1:1/api/v1/query": dial tcp 127.0.0.1:1: connect: connection refused`), verdict: Unknown, want: "Prometheus cannot be queried: Post"},
		{name: "a window shorter than two scrapes", window: 45 * time.Second, verdict: Unknown, want: "shorter than two scrape intervals (30s)"},
		{name: "a zero window", window: -1, verdict: Unknown, want: "the window is 0"},
		// Issue 33: requests before the window, inside the history span,
		// are a client with a longer period; none there leaves the
		// window's verdict.
		{name: "requests before the window", history: 24 * time.Hour, edit: func(m map[string]model.Value) {
			m[`sum by (verb) (increase(apiserver_request_total{group="stable.example.com",version="v1beta1",resource="crontabs"}[23h50m])`] = vec("LIST", 0.4)
		}, verdict: Unknown, want: "requests to stable.example.com/v1beta1 crontabs from 2026-11-30T10:00:00Z to 2026-12-01T09:50:00Z, before the window (LIST 1): a client that calls less often than once every 10m0s may call again"},
		{name: "a series born before the window", history: 24 * time.Hour, edit: func(m map[string]model.Value) {
			m[`sum by (verb) (last_over_time(apiserver_request_total{group="stable.example.com",version="v1beta1",resource="crontabs"}[23h50m])`] = vec("GET", 2.0)
		}, verdict: Unknown, want: "before the window (GET 2)"},
		{name: "quiet before the window too", history: 24 * time.Hour, verdict: NotInUse, want: "2 API server target(s) scraped every 30s"},
		// Issue 33: zero requests before the window proves nothing over
		// a part of the span Prometheus does not hold.
		{name: "a retention shorter than the history", history: 24 * time.Hour, edit: func(m map[string]model.Value) {
			m["min by (job, instance) (min_over_time(timestamp(up"] = firsts(now.Add(-2*time.Hour), now.Add(-2*time.Hour))
		}, verdict: Unknown, want: "Prometheus holds the scrapes of API server target 10.0.0.1:6443 (job apiserver) only from 2026-12-01T08:00:00Z, after the start of the span before the window (--usage-history, from 2026-11-30T10:00:00Z to 2026-12-01T09:50:00Z): requests it answered before are not known",
			way: "a --usage-history within the scrapes Prometheus holds of every API server target (from 2026-12-01T08:00:00Z): at most 2h"},
		{name: "one target scraped from later", history: 24 * time.Hour, edit: func(m map[string]model.Value) {
			m["min by (job, instance) (min_over_time(timestamp(up"] = firsts(now.Add(-48*time.Hour), now.Add(-3*time.Hour))
		}, verdict: Unknown, want: "target 10.0.0.2:6443 (job apiserver) only from 2026-12-01T07:00:00Z", way: "at most 3h"},
		{name: "a target beginning within two scrapes of the history's start", history: 24 * time.Hour, edit: func(m map[string]model.Value) {
			m["min by (job, instance) (min_over_time(timestamp(up"] = firsts(now.Add(-24*time.Hour+time.Minute), now.Add(-48*time.Hour))
		}, verdict: NotInUse, want: "no request to stable.example.com/v1beta1 crontabs in the last 10m0s"},
		{name: "nothing held before the window", history: 24 * time.Hour, edit: func(m map[string]model.Value) {
			m["min by (job, instance) (min_over_time(timestamp(up"] = model.Vector{}
		}, verdict: Unknown, want: "Prometheus holds no scrape of the API servers (jobs apiserver) in the span before the window", way: "at most 10m"},
		{name: "requests before the window and a short retention", history: 24 * time.Hour, edit: func(m map[string]model.Value) {
			m["min by (job, instance) (min_over_time(timestamp(up"] = firsts(now.Add(-2*time.Hour), now.Add(-2*time.Hour))
			m[`sum by (verb) (increase(apiserver_request_total{group="stable.example.com",version="v1beta1",resource="crontabs"}[23h50m])`] = vec("LIST", 3.0)
		}, verdict: Unknown, want: "before the window (LIST 3)", way: "--usage-history 0 looks at the window only"},
		{name: "a short retention, no history", edit: func(m map[string]model.Value) {
			m["min by (job, instance) (min_over_time(timestamp(up"] = model.Vector{}
		}, verdict: NotInUse, want: "no request to stable.example.com/v1beta1 crontabs in the last 10m0s"},
		// The rise between the last sample before the window and the
		// first inside it, which neither increase() sees.
		{name: "a rise across the window's start", edit: func(m map[string]model.Value) {
			m["apiserver_request_total{"] = model.Matrix{counter("LIST", start, -20, 3, 10, 4, 40, 4), counter("GET", start, -250, 1, -10, 1, 20, 1)}
		}, verdict: Unknown, want: "requests to stable.example.com/v1beta1 crontabs between the scrapes at 2026-12-01T09:49:40Z and 2026-12-01T09:50:10Z, across the window's start (2026-12-01T09:50:00Z): LIST 1; Prometheus cannot tell whether they came before the window or in it",
			way: "a --usage-window of at least 10m21s holds them whole"},
		{name: "a counter reset across the window's start", edit: func(m map[string]model.Value) {
			m["apiserver_request_total{"] = model.Matrix{counter("WATCH", start, -280, 5, 15, 2)}
		}, verdict: Unknown, want: "between the scrapes at 2026-12-01T09:45:20Z and 2026-12-01T09:50:15Z, across the window's start (2026-12-01T09:50:00Z): WATCH 2"},
		{name: "a rise across the start and before the window", history: 24 * time.Hour, edit: func(m map[string]model.Value) {
			m["apiserver_request_total{"] = model.Matrix{counter("LIST", start, -20, 3, 10, 4)}
		}, verdict: Unknown, want: "across the window's start (2026-12-01T09:50:00Z): LIST 1"},
		{name: "no rise across the window's start", edit: func(m map[string]model.Value) {
			m["apiserver_request_total{"] = model.Matrix{counter("LIST", start, -20, 3, 10, 3), counter("GET", start, 10, 1, 40, 1), counter("PATCH", start, -40, 1, -10, 2)}
		}, verdict: NotInUse, want: "no request to stable.example.com/v1beta1 crontabs in the last 10m0s"},
		{name: "requests before the window, no history", edit: func(m map[string]model.Value) {
			m[`sum by (verb) (increase(apiserver_request_total{group="stable.example.com",version="v1beta1",resource="crontabs"}[23h50m])`] = vec("LIST", 4.0)
		}, verdict: NotInUse, want: "no request to stable.example.com/v1beta1 crontabs in the last 10m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answers := base()
			if tc.edit != nil {
				tc.edit(answers)
			}
			w := window
			if tc.window > 0 {
				w = tc.window
				s := now.Add(-w)
				answers["up{"] = model.Matrix{upSeries("10.0.0.1:6443", s, now, 30*time.Second), upSeries("10.0.0.2:6443", s, now, 30*time.Second)}
			} else if tc.window < 0 {
				w = 0
			}
			s := set
			if tc.set != nil {
				s = tc.set
			}
			r := AssessPrometheus(context.Background(), &fakeProm{answers: answers, err: tc.err}, "Prometheus http://p", g, w, tc.history, now, s)
			if r.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s: seen %v unseen %v", r.Verdict, tc.verdict, r.Seen, r.Unseen)
			}
			if all := strings.Join(append(r.Seen, r.Unseen...), "\n"); !strings.Contains(all, tc.want) {
				t.Errorf("evidence lacks %q:\n%s", tc.want, all)
			}
			if ways := strings.Join(r.WaysOut, "\n"); !strings.Contains(ways, tc.way) {
				t.Errorf("ways out lack %q:\n%s", tc.way, ways)
			}
			// An instance restarted between the reads saw an unknown
			// number of requests, not none (issue 33).
			for _, line := range r.Seen {
				if tc.name == "the second restarted" && strings.HasPrefix(line, "apiserver-b") && !strings.Contains(line, "the requests of the last 10s are not known (its counters restarted between the reads)") {
					t.Errorf("the restarted instance's line: %q", line)
				}
			}
		})
	}
	// The queries name the resource version and the window.
	f := &fakeProm{answers: base()}
	AssessPrometheus(context.Background(), f, "p", g, 7*24*time.Hour, 0, now, nil)
	if q := strings.Join(f.asked, "\n"); !strings.Contains(q, `increase(apiserver_request_total{group="stable.example.com",version="v1beta1",resource="crontabs"}[1w])`) {
		t.Errorf("queries:\n%s", q)
	}
	// The samples across the window's start: three scrape intervals
	// after it and the lookback before.
	if q := strings.Join(f.asked, "\n"); !strings.Contains(q, `apiserver_request_total{group="stable.example.com",version="v1beta1",resource="crontabs"}[6m30s]`) {
		t.Errorf("queries:\n%s", q)
	}
}

func TestParseWindow(t *testing.T) {
	for in, want := range map[string]time.Duration{"90s": 90 * time.Second, "1h30m": 90 * time.Minute, "7d": 7 * 24 * time.Hour, "2w": 14 * 24 * time.Hour, "0": 0} {
		if got, err := ParseWindow(in); err != nil || got != want {
			t.Errorf("ParseWindow(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1m", "seven days", "7x"} {
		if _, err := ParseWindow(bad); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseWindow(%q): %v, want a one-line error", bad, err)
		}
	}
}

func TestAssessManagedFields(t *testing.T) {
	g := schema.GroupVersionResource{Group: "stable.example.com", Version: "v1beta1", Resource: "crontabs"}
	writers := []managedfields.Writer{
		{Manager: "my-operator", Operation: "Update", Objects: 37, Last: t0.Add(-time.Minute)},
		{Manager: "old-tool", Operation: "Apply", Objects: 2, Last: t0.Add(-48 * time.Hour)},
		{Manager: Self, Operation: "Update", Objects: 5, Last: t0},
	}
	r := AssessManagedFields(g, writers, 100, nil, 10*time.Minute, 0, t0)
	if r.Verdict != InUse || len(r.Clients) != 2 {
		t.Fatalf("%s %+v", r.Verdict, r.Clients)
	}
	ev := strings.Join(r.Seen, "\n")
	for _, want := range []string{"manager my-operator (Update) wrote 37 object(s) through stable.example.com/v1beta1, last 2026-12-01T09:59:00Z (inside the window)", "manager old-tool (Apply) wrote 2 object(s)", "entries of kubectl-crdversion (this tool) on 5 object(s) left out"} {
		if !strings.Contains(ev, want) {
			t.Errorf("lacks %q:\n%s", want, ev)
		}
	}
	if r := AssessManagedFields(g, writers[1:], 100, nil, 10*time.Minute, 0, t0); r.Verdict != NotInUse {
		t.Errorf("old writers only: %s", r.Verdict)
	}
	// A write before the window but inside the history span is a client
	// whatever the window (issue 33: an operator that applies the same
	// object every 10 s changes nothing, and its entry keeps the time of
	// its last change); one older than the span is not.
	for _, tc := range []struct {
		history time.Duration
		verdict Verdict
		note    string
	}{
		{47 * time.Hour, NotInUse, ""},
		{49 * time.Hour, InUse, "manager old-tool (Apply) wrote 2 object(s) through stable.example.com/v1beta1, last 2026-11-29T10:00:00Z (before the window, inside the 49h0m0s history: it may call again)"},
	} {
		r := AssessManagedFields(g, writers[1:], 100, nil, 10*time.Minute, tc.history, t0)
		if r.Verdict != tc.verdict || r.HistorySeconds != tc.history.Seconds() || (tc.note != "") != r.Clients[0].InHistory || r.Clients[0].InWindow {
			t.Errorf("history %s: %s %+v", tc.history, r.Verdict, r.Clients)
		}
		if tc.note != "" && !slices.Contains(r.Seen, tc.note) {
			t.Errorf("history %s: seen %q", tc.history, r.Seen)
		}
	}
	// An entry without a time may be of any age: unknown, never old.
	if r := AssessManagedFields(g, []managedfields.Writer{{Manager: "timeless", Operation: "Update", Objects: 1}}, 1, nil, 10*time.Minute, 24*time.Hour, t0); r.Verdict != Unknown || len(r.Clients) != 0 || !strings.Contains(strings.Join(r.Unseen, "\n"), "manager timeless (Update) wrote 1 object(s) through stable.example.com/v1beta1, at no recorded time") {
		t.Errorf("an entry without a time: %s %v %v", r.Verdict, r.Clients, r.Unseen)
	}
	if r := AssessManagedFields(g, nil, 0, errors.New(`crontabs.stable.example.com is forbidden: User "bob" cannot list`), 10*time.Minute, 0, t0); r.Verdict != Unknown || !strings.Contains(r.Unseen[0], "cannot be listed") {
		t.Errorf("list forbidden: %s %v", r.Verdict, r.Unseen)
	}
}

func auditSummary(name string, first, last time.Time, ids []string, clients ...*auditlog.Client) *auditlog.Summary {
	g := schema.GroupVersionResource{Group: "stable.example.com", Version: "v1beta1", Resource: "crontabs"}
	return &auditlog.Summary{Name: name, Events: 1000, First: first, Last: last, Identities: ids, Use: map[schema.GroupVersionResource]*auditlog.Use{g: {Clients: clients}}}
}

// TestAssessAudit: the logs must span the window and, on several
// instances, come from each of them; a log of another cluster or of
// another week is Unknown; malformed lines make it Unknown.
func TestAssessAudit(t *testing.T) {
	g := schema.GroupVersionResource{Group: "stable.example.com", Version: "v1beta1", Resource: "crontabs"}
	set := &InstanceSet{Instances: []Instance{{Lease: "apiserver-a", Address: "10.0.0.1:6443"}, {Lease: "apiserver-b", Address: "10.0.0.2:6443"}}, Leases: 2, Endpoints: 2}
	window := 24 * time.Hour
	from := t0.Add(-48 * time.Hour)
	alice := &auditlog.Client{User: "alice", UserAgent: "backup/1.0", Verb: "LIST", Requests: 3, Last: t0.Add(-time.Hour)}
	oldAlice := &auditlog.Client{User: "alice", UserAgent: "backup/1.0", Verb: "LIST", Requests: 3, Last: t0.Add(-40 * time.Hour)}
	for _, tc := range []struct {
		name    string
		logs    []*auditlog.Summary
		verdict Verdict
		want    string
	}{
		{"both instances, a client", []*auditlog.Summary{auditSummary("a.log", from, t0, []string{"apiserver-a"}, alice), auditSummary("b.log", from, t0, []string{"apiserver-b"})}, InUse, `user alice, agent "backup/1.0": LIST 3, last 2026-12-01T09:00:00Z (inside the window)`},
		{"both instances, an old client", []*auditlog.Summary{auditSummary("a.log", from, t0, []string{"apiserver-a"}, oldAlice), auditSummary("b.log", from, t0, []string{"apiserver-b"})}, NotInUse, "LIST 3, last 2026-11-29T18:00:00Z"},
		{"both instances, an old client inside the history", []*auditlog.Summary{auditSummary("a.log", from, t0, []string{"apiserver-a"}, oldAlice), auditSummary("b.log", from, t0, []string{"apiserver-b"})}, InUse, "LIST 3, last 2026-11-29T18:00:00Z (before the window, inside the 48h0m0s history: it may call again)"},
		{"one instance's log only", []*auditlog.Summary{auditSummary("a.log", from, t0, []string{"apiserver-a"}, oldAlice)}, Unknown, "no audit log of apiserver-b at 10.0.0.2:6443"},
		{"logs of no identity", []*auditlog.Summary{auditSummary("a.log", from, t0, nil)}, Unknown, "which instances wrote them is unknown"},
		{"another week", []*auditlog.Summary{auditSummary("a.log", t0.Add(-14*24*time.Hour), t0.Add(-7*24*time.Hour), []string{"apiserver-a"}), auditSummary("b.log", t0.Add(-14*24*time.Hour), t0.Add(-7*24*time.Hour), []string{"apiserver-b"})}, Unknown, "the audit logs do not span the window"},
		{"ending an hour ago", []*auditlog.Summary{auditSummary("a.log", from, t0.Add(-time.Hour), []string{"apiserver-a"}), auditSummary("b.log", from, t0.Add(-time.Hour), []string{"apiserver-b"})}, Unknown, "they cover it only up to 2026-12-01T09:00:00Z"},
		{"rotated files with a hole", []*auditlog.Summary{auditSummary("a.1.log", from, t0.Add(-20*time.Hour), []string{"apiserver-a", "apiserver-b"}), auditSummary("a.log", t0.Add(-10*time.Hour), t0, []string{"apiserver-a", "apiserver-b"})}, Unknown, "they cover it only up to 2026-11-30T14:00:00Z"},
		{"another cluster", []*auditlog.Summary{auditSummary("x.log", from, t0, []string{"apiserver-zzz"}, alice)}, Unknown, "x.log was written by API server instance(s) apiserver-zzz, none of which belongs to this cluster (apiserver-a, apiserver-b)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var history time.Duration
			if strings.HasSuffix(tc.name, "inside the history") {
				history = 48 * time.Hour
			}
			r := AssessAudit(g, tc.logs, window, history, t0, set)
			if r.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s: seen %v unseen %v", r.Verdict, tc.verdict, r.Seen, r.Unseen)
			}
			if all := strings.Join(append(r.Seen, r.Unseen...), "\n"); !strings.Contains(all, tc.want) {
				t.Errorf("evidence lacks %q:\n%s", tc.want, all)
			}
		})
	}
	bad := auditSummary("a.log", from, t0, []string{"apiserver-a", "apiserver-b"})
	bad.Malformed, bad.FirstMalformed = 2, 17
	if r := AssessAudit(g, []*auditlog.Summary{bad}, window, 0, t0, set); r.Verdict != Unknown || !strings.Contains(strings.Join(r.Unseen, "\n"), "2 malformed line(s) (the first: line 17)") {
		t.Errorf("malformed: %s %v", r.Verdict, r.Unseen)
	}
}

// fakeCluster is an InstanceReader over canned metrics texts per address.
type fakeCluster struct {
	set InstanceSet
	// end, when set, is the set found from the second look on (the end
	// of the window).
	end   *InstanceSet
	looks int
	texts map[string][]string // address → successive reads
	errs  map[string]error
	mu    sync.Mutex // Measure reads the instances concurrently
	reads map[string]int
}

func (f *fakeCluster) Instances(context.Context) InstanceSet {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.looks++
	if f.end != nil && f.looks > 1 {
		return *f.end
	}
	return f.set
}

func (f *fakeCluster) ReadMetrics(_ context.Context, in Instance) (*Metrics, error) {
	if err := f.errs[in.Address]; err != nil {
		return nil, &ReadError{Err: err, Forbidden: strings.Contains(err.Error(), "forbidden")}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reads == nil {
		f.reads = map[string]int{}
	}
	texts := f.texts[in.Address]
	text := texts[min(f.reads[in.Address], len(texts)-1)]
	f.reads[in.Address]++
	return ParseMetrics(strings.NewReader(text), time.Now())
}

type fakeManagedFields struct {
	writers []managedfields.Writer
	err     error
}

func (f fakeManagedFields) Writers(context.Context, schema.GroupVersionResource) ([]managedfields.Writer, int, error) {
	return f.writers, 10, f.err
}

// TestMeasureNoSourcePassesOnPartialEvidence: for each source, Measure's
// verdict is Unknown — never NotInUse — when that source could not see
// everything, though every other source saw nothing.
func TestMeasureNoSourcePassesOnPartialEvidence(t *testing.T) {
	g := schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "crontabs"}
	quiet := metrics(4, 0, 0, 0, false, "1.7e+09")
	set := InstanceSet{Instances: []Instance{{Lease: "apiserver-a", Address: "10.0.0.1:6443"}, {Lease: "apiserver-b", Address: "10.0.0.2:6443"}}, Leases: 2, Endpoints: 2}
	healthy := func() *fakeCluster {
		return &fakeCluster{set: set, texts: map[string][]string{"10.0.0.1:6443": {quiet}, "10.0.0.2:6443": {quiet}}}
	}
	now := time.Now()
	promAnswers := map[string]model.Value{
		"group by (job, instance)": model.Vector{{Metric: model.Metric{"job": "apiserver", "instance": "10.0.0.1:6443"}}, {Metric: model.Metric{"job": "apiserver", "instance": "10.0.0.2:6443"}}},
		"up{":                      model.Matrix{upSeries("10.0.0.1:6443", now.Add(-time.Hour), now, 15*time.Second), upSeries("10.0.0.2:6443", now.Add(-time.Hour), now, 15*time.Second)},
	}
	dir := t.TempDir()
	logOf := func(name string, from, to time.Time) string {
		path := dir + "/" + name
		var b strings.Builder
		for at := from; !at.After(to); at = at.Add(time.Minute) {
			for _, id := range []string{"apiserver-a", "apiserver-b"} {
				fmt.Fprintf(&b, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"x","stage":"ResponseComplete","requestURI":"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/%s","verb":"update","user":{"username":"system:apiserver"},"objectRef":{"resource":"leases","namespace":"kube-system","name":%q,"apiGroup":"coordination.k8s.io","apiVersion":"v1"},"requestReceivedTimestamp":%q,"stageTimestamp":%q}`+"\n",
					id, id, at.UTC().Format("2006-01-02T15:04:05.000000Z07:00"), at.UTC().Format("2006-01-02T15:04:05.000000Z07:00"))
			}
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	window := 30 * time.Minute
	goodLog := logOf("good.log", now.Add(-time.Hour), now.Add(time.Minute))
	weekOld := logOf("week-old.log", now.Add(-8*24*time.Hour), now.Add(-7*24*time.Hour))

	for _, tc := range []struct {
		name string
		src  func() Sources
		want Verdict
	}{
		{"all seen", func() Sources {
			return Sources{Cluster: healthy(), ManagedFields: fakeManagedFields{}, AuditLogs: []string{goodLog}}
		}, NotInUse},
		{"metrics: an instance unread", func() Sources {
			c := healthy()
			c.errs = map[string]error{"10.0.0.2:6443": errors.New("x509: certificate is valid for 10.0.0.1, not 10.0.0.2")}
			return Sources{Cluster: c, ManagedFields: fakeManagedFields{}}
		}, Unknown},
		{"metrics: instances miscounted", func() Sources {
			c := healthy()
			c.set.Unseen = []string{"the cluster has 3 API server identity lease(s) but the kubernetes Service lists 2 endpoint(s)"}
			return Sources{Cluster: c}
		}, Unknown},
		{"metrics: an instance appeared during the window", func() Sources {
			c := healthy()
			end := c.set
			end.Instances = append(slices.Clone(end.Instances), Instance{Lease: "apiserver-c", Address: "10.0.0.3:6443"})
			end.Leases, end.Endpoints = 3, 3
			c.end = &end
			return Sources{Cluster: c, ManagedFields: fakeManagedFields{}}
		}, Unknown},
		{"metrics: an instance replaced during the window (same address, new lease)", func() Sources {
			c := healthy()
			end := c.set
			end.Instances = []Instance{c.set.Instances[0], {Lease: "apiserver-z", Address: "10.0.0.2:6443"}}
			c.end = &end
			return Sources{Cluster: c}
		}, Unknown},
		{"metrics: the leases unreadable at the end of the window", func() Sources {
			c := healthy()
			end := c.set
			end.Unseen = []string{"the API server identity leases in kube-system cannot be read (forbidden)"}
			c.end = &end
			return Sources{Cluster: c}
		}, Unknown},
		{"metrics: an instance gone at the end is not new", func() Sources {
			c := healthy()
			end := c.set
			end.Instances = c.set.Instances[:1]
			end.Leases, end.Endpoints = 1, 1
			c.end = &end
			return Sources{Cluster: c, ManagedFields: fakeManagedFields{}}
		}, NotInUse},
		{"prometheus: all seen", func() Sources {
			return Sources{Cluster: healthy(), Prometheus: &fakeProm{answers: promAnswers}, PrometheusName: "Prometheus p"}
		}, NotInUse},
		{"prometheus: an instance missing from the scrape", func() Sources {
			a := map[string]model.Value{"group by (job, instance)": promAnswers["group by (job, instance)"], "up{": promAnswers["up{"].(model.Matrix)[:1]}
			return Sources{Cluster: healthy(), Prometheus: &fakeProm{answers: a}, PrometheusName: "Prometheus p"}
		}, Unknown},
		{"managedFields: the objects cannot be listed", func() Sources {
			return Sources{Cluster: healthy(), ManagedFields: fakeManagedFields{err: errors.New("forbidden")}}
		}, Unknown},
		{"audit log: of another week", func() Sources { return Sources{Cluster: healthy(), AuditLogs: []string{weekOld}} }, Unknown},
		{"no counting source", func() Sources { return Sources{ManagedFields: fakeManagedFields{}} }, Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			immediate := func(time.Duration) <-chan time.Time {
				c := make(chan time.Time, 1)
				c <- now
				return c
			}
			as, err := Measure(context.Background(), tc.src(), []schema.GroupVersionResource{g}, Options{Window: window, Now: func() time.Time { return now }, After: immediate})
			if err != nil {
				t.Fatal(err)
			}
			a := as[g]
			if a.Verdict != tc.want {
				t.Errorf("verdict %s, want %s:\n%s\n%s", a.Verdict, tc.want, a.Message(), strings.Join(a.Evidence(), "\n"))
			}
		})
	}
}

// TestInUseWaysOut (issue 17): unserve refused a version whose objects'
// managedFields showed writes through it inside the window with "move
// them to another version first (or, once they moved, re-run)": a re-run
// right after moving still fails (the entry keeps its time), and nothing
// said that cleaning managedFields (retire's --clean-managed-fields) is no
// way out. The ways out now name when the entries stop counting.
func TestInUseWaysOut(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	mf := SourceReport{Source: SourceManagedFields, Name: "managedFields of widgets", Clients: []Client{
		{Manager: "old-operator", Operation: "Update", Count: 3, Last: t0.Add(-time.Hour)},
		{Manager: "kubectl-annotate", Operation: "Update", Count: 1, Last: t0, InWindow: true},
	}}
	metrics := SourceReport{Source: SourceMetrics, Name: "/metrics of 1 API server instance(s)"}
	a := Combine(gvr, 5*time.Minute, metrics, mf)
	ways := strings.Join(a.InUseWaysOut(), "\n")
	for _, want := range []string{
		"move the clients to another version, then re-run",
		"the managedFields entries of kubectl-annotate record writes through example.com/v1 in the last 5m0s, the last at 2026-12-01T10:00:00Z",
		"a re-run after 2026-12-01T10:05:00Z",
		"retire's --clean-managed-fields relabels entries for the removal, unserve has none",
		"--skip-usage-check",
	} {
		if !strings.Contains(ways, want) {
			t.Errorf("ways out lack %q:\n%s", want, ways)
		}
	}
	if strings.Contains(ways, "old-operator") {
		t.Errorf("a write outside the window is named:\n%s", ways)
	}
	if strings.Contains(ways, "--usage-history") {
		t.Errorf("without a history span, a shorter one is offered:\n%s", ways)
	}
	// With a history span, a write before the window counts until it is
	// older than the span, and a span that leaves it out is the way to
	// say that the manager stopped (issue 33).
	mf.HistorySeconds = (2 * time.Hour).Seconds()
	mf.Clients[0].InHistory = true
	ways = strings.Join(Combine(gvr, 5*time.Minute, metrics, mf).InUseWaysOut(), "\n")
	for _, want := range []string{
		"the managedFields entries of old-operator and kubectl-annotate record writes through example.com/v1 in the last 2h0m0s, the last at 2026-12-01T10:00:00Z",
		"a re-run after 2026-12-01T12:00:00Z",
		"when you know that old-operator no longer write(s) through example.com/v1 (a one-off apply, a controller since upgraded), a --usage-history that does not reach back to 2026-12-01T09:00:00Z says so (with the API servers' /metrics as the counting source only 0 does",
	} {
		if !strings.Contains(ways, want) {
			t.Errorf("ways out lack %q:\n%s", want, ways)
		}
	}
	if got := Combine(gvr, 5*time.Minute, metrics).InUseWaysOut(); got != nil {
		t.Errorf("ways out of a NotInUse verdict: %v", got)
	}
}

// TestMeasureBelowTheFloor (issue 33, the third attack): a window shorter
// than the floor (Options.MinWindow) cannot prove that no client uses the
// version — a 1 ns window passed — though it can still show one that does.
func TestMeasureBelowTheFloor(t *testing.T) {
	g := schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "crontabs"}
	quiet := metrics(4, 0, 0, 0, false, "1.7e+09")
	busy := metrics(9, 0, 0, 0, false, "1.7e+09")
	one := InstanceSet{Instances: []Instance{{Lease: "apiserver-a", Address: "10.0.0.1:6443"}}, Leases: 1, Endpoints: 1}
	for _, tc := range []struct {
		name           string
		window, floor  time.Duration
		second         string
		want           Verdict
		unseen, wayOut string
	}{
		{"a nanosecond under a 15 s floor", time.Nanosecond, 15 * time.Second, quiet, Unknown,
			"the window of 1ns is shorter than the floor of 15s", "look back at least 15s: --usage-window 15s or longer"},
		{"3 s under a minute", 3 * time.Second, time.Minute, quiet, Unknown, "the window of 3s is shorter than the floor of 1m0s", "--usage-window 1m0s or longer"},
		{"at the floor", 15 * time.Second, 15 * time.Second, quiet, NotInUse, "", ""},
		{"no floor", time.Nanosecond, 0, quiet, NotInUse, "", ""},
		{"a client seen in a short window is still a client", time.Nanosecond, 15 * time.Second, busy, InUse, "shorter than the floor", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &fakeCluster{set: one, texts: map[string][]string{"10.0.0.1:6443": {quiet, tc.second}}}
			immediate := func(time.Duration) <-chan time.Time {
				ch := make(chan time.Time, 1)
				ch <- time.Now()
				return ch
			}
			as, err := Measure(context.Background(), Sources{Cluster: c}, []schema.GroupVersionResource{g}, Options{Window: tc.window, MinWindow: tc.floor, After: immediate})
			if err != nil {
				t.Fatal(err)
			}
			a := as[g]
			if a.Verdict != tc.want {
				t.Fatalf("verdict %s, want %s: %s", a.Verdict, tc.want, a.Message())
			}
			unseen := strings.Join(a.Unseen(), "\n")
			if tc.unseen == "" && strings.Contains(unseen, "floor") || tc.unseen != "" && !strings.Contains(unseen, tc.unseen) {
				t.Errorf("unseen %q, want %q", unseen, tc.unseen)
			}
			if ways := strings.Join(a.WaysOut(), "\n"); tc.wayOut != "" && !strings.Contains(ways, tc.wayOut) {
				t.Errorf("ways out %q, want %q", ways, tc.wayOut)
			}
		})
	}
}

// TestMeasureHistory (issue 33, the first two attacks): Measure hands
// Options.History to every source, so that requests an instance counted
// before the window make the verdict Unknown, a managedFields write
// before the window but inside the span is a client, and the assessment
// records the span; with no history only the window counts.
func TestMeasureHistory(t *testing.T) {
	g := schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "crontabs"}
	quiet := metrics(4, 0, 0, 0, false, "1.7e+09")
	never := metrics(0, 0, 0, 0, false, "1.7e+09")
	one := InstanceSet{Instances: []Instance{{Lease: "apiserver-a", Address: "10.0.0.1:6443"}}, Leases: 1, Endpoints: 1}
	start := time.Now()
	applier := []managedfields.Writer{{Manager: "my-operator", Operation: "Apply", Objects: 1, Last: start.Add(-2 * time.Minute)}}
	for _, tc := range []struct {
		name    string
		history time.Duration
		text    string
		writers []managedfields.Writer
		want    Verdict
		says    string
	}{
		{"a lister with a longer period", 24 * time.Hour, quiet, nil, Unknown, "4 request(s) to stable.example.com/v1 since it started at 2023-11-14T22:13:20Z came before the last"},
		{"a lister with a longer period, no history", 0, quiet, nil, NotInUse, "no client of stable.example.com/v1 crontabs seen"},
		{"an applier that changes nothing", 24 * time.Hour, never, applier, InUse, "clients still use stable.example.com/v1 crontabs (seen by: managedFields of crontabs)"},
		{"an applier that changes nothing, no history", 0, never, applier, NotInUse, "no client of stable.example.com/v1 crontabs seen"},
		{"never used", 24 * time.Hour, never, nil, NotInUse, "no client of stable.example.com/v1 crontabs seen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &fakeCluster{set: one, texts: map[string][]string{"10.0.0.1:6443": {tc.text, tc.text}}}
			immediate := func(time.Duration) <-chan time.Time {
				ch := make(chan time.Time, 1)
				ch <- time.Now()
				return ch
			}
			mf := fakeWriters(tc.writers)
			as, err := Measure(context.Background(), Sources{Cluster: c, ManagedFields: mf}, []schema.GroupVersionResource{g},
				Options{Window: 15 * time.Second, MinWindow: 15 * time.Second, History: tc.history, After: immediate, Now: func() time.Time { return start }})
			if err != nil {
				t.Fatal(err)
			}
			a := as[g]
			if a.Verdict != tc.want || !strings.Contains(a.Message(), tc.says) {
				t.Errorf("verdict %s, want %s: %s", a.Verdict, tc.want, a.Message())
			}
			if a.HistorySeconds != tc.history.Seconds() {
				t.Errorf("historySeconds %v", a.HistorySeconds)
			}
			for _, s := range a.Sources {
				if s.HistorySeconds != tc.history.Seconds() {
					t.Errorf("%s: historySeconds %v", s.Name, s.HistorySeconds)
				}
			}
		})
	}
}

type fakeWriters []managedfields.Writer

func (f fakeWriters) Writers(context.Context, schema.GroupVersionResource) ([]managedfields.Writer, int, error) {
	return f, 1, nil
}

// TestMeasureTellsOfItsWait: the wait between the two /metrics reads is
// announced with its window and its end is told however it ends (the
// second read, or the context's end), once; a window of 0 does not wait
// and tells nothing.
func TestMeasureTellsOfItsWait(t *testing.T) {
	g := schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "crontabs"}
	quiet := metrics(4, 0, 0, 0, false, "1.7e+09")
	one := InstanceSet{Instances: []Instance{{Lease: "apiserver-a", Address: "10.0.0.1:6443"}}, Leases: 1, Endpoints: 1}
	for _, tc := range []struct {
		name   string
		window time.Duration
		cancel bool
		want   string
	}{
		{"a window", 15 * time.Second, false, "wait 15s, done 1"},
		{"interrupted inside the window", 15 * time.Second, true, "wait 15s, done 1"},
		{"no window", 0, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &fakeCluster{set: one, texts: map[string][]string{"10.0.0.1:6443": {quiet, quiet}}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var told []string
			dones := 0
			after := func(time.Duration) <-chan time.Time {
				ch := make(chan time.Time, 1)
				if tc.cancel {
					cancel()
				} else {
					ch <- time.Now()
				}
				return ch
			}
			waiting := func(w time.Duration) func() {
				told = append(told, "wait "+w.String())
				return func() { dones++ }
			}
			_, err := Measure(ctx, Sources{Cluster: c}, []schema.GroupVersionResource{g}, Options{Window: tc.window, After: after, Waiting: waiting})
			if tc.cancel != (err != nil) {
				t.Fatalf("err %v, want one only when interrupted", err)
			}
			got := ""
			if len(told) > 0 || dones > 0 {
				got = fmt.Sprintf("%s, done %d", strings.Join(told, " "), dones)
			}
			if got != tc.want {
				t.Errorf("told %q, want %q", got, tc.want)
			}
		})
	}
}
