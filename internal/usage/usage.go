// Package usage tells whether clients still use one version of a custom
// resource, from the API server's own metrics (its /metrics endpoint, in the
// Prometheus text format), without sending a request to that version.
//
// The evidence, per the Kubernetes API server's instrumentation:
//
//   - apiserver_request_total{group,version,resource,verb,…}: a counter of
//     finished requests. Two samples a window apart tell live traffic from
//     history; one sample gives the lifetime totals since the server started.
//   - apiserver_longrunning_requests{group,version,resource,verb,…}: a gauge of
//     requests open now, chiefly WATCH — an informer on the version holds one
//     open and sends nothing else for long stretches.
//   - apiserver_requested_deprecated_apis{group,version,resource,…}: set to 1
//     once a version marked deprecated: true has been requested.
//   - process_start_time_seconds: when the instance started, so a restart (or
//     a second instance behind a load balancer) between samples is detected.
//
// Counters are per API server instance: with several instances, each has its
// own, and one /metrics request reaches only one of them.
//
// Measure assesses a version from every source it is given — every
// instance's /metrics, Prometheus, managedFields and audit logs (see
// docs/usage.md) — into an Assessment whose verdict is never NotInUse on
// partial evidence; Message, Evidence and WaysOut are the words every
// command shows. The cluster side of the sources is in internal/cluster
// (Client.Instances, ReadMetrics, NewPrometheus, PrometheusThroughService,
// ManagedFieldsSource).
package usage

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Metric names read from the API server.
const (
	requestTotal       = "apiserver_request_total"
	longRunning        = "apiserver_longrunning_requests"
	requestedDeprecate = "apiserver_requested_deprecated_apis"
	processStart       = "process_start_time_seconds"
)

// Snapshot is what one read of /metrics says about one group/version/resource.
type Snapshot struct {
	// Taken is when the sample was read (the caller's clock).
	Taken time.Time
	// Requests counts finished requests by verb (LIST, GET, WATCH, CREATE,
	// UPDATE, PATCH, APPLY, DELETE, …), summed over response codes, scopes,
	// subresources and components.
	Requests map[string]int64
	// Open counts requests open at the time of the sample by verb (WATCH
	// mostly), from apiserver_longrunning_requests.
	Open map[string]int64
	// DeprecatedRequested is true when apiserver_requested_deprecated_apis
	// has a series for the version.
	DeprecatedRequested bool
	// ServerStart is process_start_time_seconds, zero when absent.
	ServerStart time.Time
	// HasRequestMetric is false when the text holds no
	// apiserver_request_total at all (not an API server's /metrics).
	HasRequestMetric bool
}

// Metrics is one read of /metrics, from which snapshots of any number of
// group/version/resources are taken without reading it again.
type Metrics struct {
	taken    time.Time
	families map[string]*dto.MetricFamily
}

// ParseMetrics reads a /metrics text (Prometheus text exposition format)
// taken at taken. It fails when the text does not parse.
func ParseMetrics(r io.Reader, taken time.Time) (*Metrics, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing the API server's metrics: %w", err)
	}
	return &Metrics{taken: taken, families: families}, nil
}

// HasRequestMetric is false when the text holds no apiserver_request_total
// at all (not an API server's /metrics).
func (m *Metrics) HasRequestMetric() bool { return m.families[requestTotal] != nil }

// Snapshot keeps the series of gvr.
func (m *Metrics) Snapshot(gvr schema.GroupVersionResource) *Snapshot {
	s := &Snapshot{Taken: m.taken, Requests: map[string]int64{}, Open: map[string]int64{}}
	if f := m.families[requestTotal]; f != nil {
		s.HasRequestMetric = true
		sumByVerb(f, gvr, s.Requests)
	}
	if f := m.families[longRunning]; f != nil {
		sumByVerb(f, gvr, s.Open)
	}
	if f := m.families[requestedDeprecate]; f != nil {
		for _, metric := range f.GetMetric() {
			if matches(metric, gvr) && value(metric) > 0 {
				s.DeprecatedRequested = true
			}
		}
	}
	if f := m.families[processStart]; f != nil && len(f.GetMetric()) > 0 {
		sec := value(f.GetMetric()[0])
		s.ServerStart = time.Unix(0, int64(sec*float64(time.Second))).UTC()
	}
	return s
}

// Parse reads a /metrics text and keeps the series for gvr
// (ParseMetrics, then Snapshot).
func Parse(r io.Reader, gvr schema.GroupVersionResource, taken time.Time) (*Snapshot, error) {
	m, err := ParseMetrics(r, taken)
	if err != nil {
		return nil, err
	}
	return m.Snapshot(gvr), nil
}

// CompareMetrics is Compare over two reads of /metrics (second may be nil).
func CompareMetrics(gvr schema.GroupVersionResource, first, second *Metrics) Report {
	var s2 *Snapshot
	if second != nil {
		s2 = second.Snapshot(gvr)
	}
	return Compare(gvr, first.Snapshot(gvr), s2)
}

func sumByVerb(f *dto.MetricFamily, gvr schema.GroupVersionResource, into map[string]int64) {
	for _, m := range f.GetMetric() {
		if !matches(m, gvr) {
			continue
		}
		if v := int64(value(m)); v > 0 {
			into[label(m, "verb")] += v
		}
	}
}

func matches(m *dto.Metric, gvr schema.GroupVersionResource) bool {
	return label(m, "group") == gvr.Group && label(m, "version") == gvr.Version && label(m, "resource") == gvr.Resource
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Untyped != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// Verdict of a usage check.
type Verdict string

const (
	// InUse means requests to the version finished during the window, or are
	// open (watches) at its end.
	InUse Verdict = "InUse"
	// NotInUse means no request during the window and none open. Lifetime totals
	// may still show earlier use (see Report.Lifetime).
	NotInUse Verdict = "NotInUse"
	// Unknown means the samples cannot be compared (the server restarted or a
	// different instance answered between them).
	Unknown Verdict = "Unknown"
)

// Report compares two snapshots of one version, taken a window apart.
type Report struct {
	Group    string `json:"group"`
	Version  string `json:"version"`
	Resource string `json:"resource"`
	// WindowSeconds is the time between the two samples, in seconds (0: a
	// single sample; only open requests then tell live use).
	WindowSeconds float64 `json:"windowSeconds"`
	// Window counts requests by verb that finished between the samples.
	Window map[string]int64 `json:"window,omitempty"`
	// Open counts requests open at the second sample by verb (WATCH).
	Open map[string]int64 `json:"open,omitempty"`
	// Lifetime counts requests by verb since the instance started.
	Lifetime map[string]int64 `json:"lifetime,omitempty"`
	// ServerStart is when the instance that answered started.
	ServerStart *time.Time `json:"serverStart,omitempty"`
	// DeprecatedRequested: apiserver_requested_deprecated_apis names it.
	DeprecatedRequested bool `json:"deprecatedRequested,omitempty"`
	// APIServers is how many API server instances the cluster has (the
	// endpoints of the default/kubernetes Service); 0 when unknown.
	APIServers int     `json:"apiServers,omitempty"`
	Verdict    Verdict `json:"verdict"`
	// Reason explains an Unknown verdict.
	Reason string `json:"reason,omitempty"`
}

// Compare builds the report for gvr from a first and a second sample
// (second may be nil for a single-sample check, a zero window).
func Compare(gvr schema.GroupVersionResource, first, second *Snapshot) Report {
	last := first
	if second != nil {
		last = second
	}
	r := Report{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource,
		Open: nonZero(last.Open), Lifetime: nonZero(last.Requests),
		DeprecatedRequested: last.DeprecatedRequested || first.DeprecatedRequested, Verdict: NotInUse}
	if !last.ServerStart.IsZero() {
		t := last.ServerStart
		r.ServerStart = &t
	}
	if second != nil {
		r.WindowSeconds = second.Taken.Sub(first.Taken).Seconds()
		if !first.ServerStart.Equal(second.ServerStart) {
			r.Verdict = Unknown
			r.Reason = "the two samples came from API server instances started at different times (a restart, or several instances behind a load balancer), so their counters cannot be compared"
			return r
		}
		window := map[string]int64{}
		for verb, n := range second.Requests {
			if d := n - first.Requests[verb]; d > 0 {
				window[verb] = d
			} else if d < 0 {
				r.Verdict = Unknown
				r.Reason = "a request counter went down between the samples (the API server restarted), so they cannot be compared"
				return r
			}
		}
		r.Window = nonZero(window)
	}
	if len(r.Window) > 0 || len(r.Open) > 0 {
		r.Verdict = InUse
	}
	return r
}

func nonZero(m map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		if v > 0 {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Evidence is the report in a few lines for people: what was measured and
// what it shows.
func (r Report) Evidence() []string {
	gv := r.Group + "/" + r.Version
	var lines []string
	switch {
	case r.WindowSeconds > 0 && len(r.Window) > 0:
		lines = append(lines, fmt.Sprintf("requests to %s %s in the last %s: %s", gv, r.Resource, roundDuration(r.WindowSeconds), byVerb(r.Window)))
	case r.WindowSeconds > 0:
		lines = append(lines, fmt.Sprintf("no request to %s %s in the last %s", gv, r.Resource, roundDuration(r.WindowSeconds)))
	}
	if len(r.Open) > 0 {
		lines = append(lines, fmt.Sprintf("open now: %s (a client, e.g. an informer, is watching %s)", byVerb(r.Open), gv))
	} else {
		lines = append(lines, "no open watch on "+gv)
	}
	since := "since the API server started"
	if r.ServerStart != nil {
		since = "since the API server started at " + r.ServerStart.Format(time.RFC3339)
	}
	if len(r.Lifetime) > 0 {
		lines = append(lines, fmt.Sprintf("lifetime %s: %s", since, byVerb(r.Lifetime)))
	} else {
		lines = append(lines, "no request at all "+since)
	}
	if r.DeprecatedRequested {
		lines = append(lines, "apiserver_requested_deprecated_apis records requests to "+gv+" as a deprecated version")
	}
	switch {
	case r.APIServers == 1:
		lines = append(lines, "1 API server instance: its counters see every client")
	case r.APIServers > 1:
		lines = append(lines, fmt.Sprintf("the cluster has %d API server instances and these counters are from one of them: clients of the others are not seen", r.APIServers))
	case r.APIServers == 0:
		lines = append(lines, "the number of API server instances is unknown; counters are per instance")
	}
	if r.Reason != "" {
		lines = append(lines, r.Reason)
	}
	return lines
}

func byVerb(m map[string]int64) string {
	verbs := slices.Sorted(maps.Keys(m))
	parts := make([]string, 0, len(verbs))
	for _, v := range verbs {
		parts = append(parts, fmt.Sprintf("%s %d", v, m[v]))
	}
	return strings.Join(parts, ", ")
}

func roundDuration(seconds float64) string {
	return (time.Duration(seconds * float64(time.Second))).Round(100 * time.Millisecond).String()
}
