package usage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/managedfields"
	"github.com/crdversion/kubectl-crdversion/internal/usage/auditlog"
)

// InstanceReader is the cluster side of the metrics source (and of the
// instance checks of the Prometheus and audit-log sources).
type InstanceReader interface {
	// Instances finds the API server instances: identity leases and the
	// kubernetes Service's endpoints (MatchInstances).
	Instances(ctx context.Context) InstanceSet
	// ReadMetrics reads one instance's /metrics. Errors should be
	// *ReadError so that a 403 is told apart.
	ReadMetrics(ctx context.Context, in Instance) (*Metrics, error)
}

// ReadError is why an instance's /metrics could not be read.
type ReadError struct {
	Err error
	// Forbidden: the API server answered 403 (no get on /metrics).
	Forbidden bool
}

func (e *ReadError) Error() string { return e.Err.Error() }
func (e *ReadError) Unwrap() error { return e.Err }

// ManagedFieldsReader is the cluster side of the managedFields source.
type ManagedFieldsReader interface {
	// Writers lists every object of gvr's resource (metadata only,
	// through any version: managedFields are the same in all) and returns
	// the writers through gvr's group/version and the number of objects.
	Writers(ctx context.Context, gvr schema.GroupVersionResource) ([]managedfields.Writer, int, error)
}

// Sources are where Measure looks. A nil or empty field is a source not
// consulted.
type Sources struct {
	// Cluster finds the API server instances. When Prometheus is nil,
	// each instance's /metrics is read twice, Options.Window apart.
	Cluster InstanceReader
	// Prometheus replaces the /metrics reads: the window is then looked
	// up in its history, with no waiting. PrometheusName names it
	// ("Prometheus http://…").
	Prometheus     PromQuerier
	PrometheusName string
	// ManagedFields names the writers of each version.
	ManagedFields ManagedFieldsReader
	// AuditLogs are audit log files (plain or gzip) naming the clients.
	AuditLogs []string
}

// Options of Measure.
type Options struct {
	// Window is how far back to look (Prometheus, managedFields, audit
	// logs) and how long to wait between the two /metrics reads.
	Window time.Duration
	// MinWindow is the floor of proof: a source that counts every request
	// (metrics, Prometheus) looking at a shorter Window than MinWindow
	// cannot say NotInUse — a client that calls less often than once a
	// window falls between its reads — and is Unknown. 0: no floor.
	MinWindow time.Duration
	// History is how far back from the measurement's start evidence of a
	// client still counts when it is older than the window
	// (--usage-history): managedFields writes and audited requests inside
	// it are clients (Client.InHistory), and the requests each instance's
	// counters hold from before the window make the metrics source
	// Unknown (they carry no time), as do the requests Prometheus counted
	// in the span before the window. 0 looks at the window only.
	History time.Duration
	// Now is the clock (time.Now when nil), and After waits (time.After
	// when nil).
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
	// Waiting, when set, is called as the wait of Window between the two
	// /metrics reads starts (not when Window is 0, nor with a Prometheus
	// source, which does not wait), and the function it returns when the
	// wait ends, however it ends: a terminal shows the wait's progress.
	Waiting func(window time.Duration) (done func())
}

// Assessments are the verdicts of Measure, one per target.
type Assessments map[schema.GroupVersionResource]Assessment

// Measure assesses whether clients use each of targets, from every source
// in src, over opts.Window, and returns one Assessment per target. The
// audit logs are read first, so that a file that is not an audit log
// fails at once (a *auditlog.NotAuditLogError, or the error opening it);
// every other problem of a source is part of its report (Unseen), never
// an error. The /metrics reads wait opts.Window between them; nothing else
// waits. The instances are found again after the second read: an
// instance that appeared during the window (a rolling upgrade, a
// scale-out) was not read at its start, and makes the metrics source
// Unknown (InstanceSet.Joined). It sends no request to the targets themselves.
func Measure(ctx context.Context, src Sources, targets []schema.GroupVersionResource, opts Options) (Assessments, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	// The history sources (Prometheus, managedFields, audit logs) look at
	// the window that ends when the measurement starts; what happens
	// during the measurement counts too.
	start := now()
	var logs []*auditlog.Summary
	for _, path := range src.AuditLogs {
		s, err := auditlog.ReadFile(path, targets, IsSelfUserAgent)
		var notLog *auditlog.NotAuditLogError
		switch {
		case errors.As(err, &notLog):
			return nil, fmt.Errorf("--audit-log %w", err) // it names the file and says what it is not
		case err != nil:
			return nil, fmt.Errorf("reading the audit log: %w", err)
		}
		logs = append(logs, s)
	}
	var set *InstanceSet
	if src.Cluster != nil {
		s := src.Cluster.Instances(ctx)
		set = &s
	}

	reports := map[schema.GroupVersionResource][]SourceReport{}
	var mu sync.Mutex
	add := func(gvr schema.GroupVersionResource, r SourceReport) {
		mu.Lock()
		reports[gvr] = append(reports[gvr], r)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	if src.ManagedFields != nil {
		// Listed while the metrics window runs.
		for _, gvr := range targets {
			wg.Go(func() {
				writers, n, err := src.ManagedFields.Writers(ctx, gvr)
				add(gvr, AssessManagedFields(gvr, writers, n, err, opts.Window, opts.History, start))
			})
		}
	}
	var counted map[schema.GroupVersionResource]SourceReport
	switch {
	case src.Prometheus != nil:
		counted = map[schema.GroupVersionResource]SourceReport{}
		for _, gvr := range targets {
			counted[gvr] = AssessPrometheus(ctx, src.Prometheus, src.PrometheusName, gvr, opts.Window, opts.History, start, set)
		}
	case set != nil:
		after := opts.After
		if after == nil {
			after = time.After
		}
		samples, err := readInstances(ctx, src.Cluster, set.Instances, opts.Window, after, opts.Waiting)
		if err != nil {
			wg.Wait()
			return nil, err
		}
		// The instances at the end of the window: one that was not there
		// at the start was not read at both ends.
		seen := *set
		if opts.Window > 0 {
			seen.Changed = set.Joined(src.Cluster.Instances(ctx))
		}
		counted = map[schema.GroupVersionResource]SourceReport{}
		for _, gvr := range targets {
			counted[gvr] = AssessInstances(gvr, seen, samples, opts.Window, opts.History)
		}
	}
	wg.Wait()
	out := Assessments{}
	for _, gvr := range targets {
		var rs []SourceReport
		if r, ok := counted[gvr]; ok {
			rs = append(rs, belowFloor(r, opts.Window, opts.MinWindow))
		}
		rs = append(rs, reports[gvr]...)
		if len(logs) > 0 {
			rs = append(rs, AssessAudit(gvr, logs, opts.Window, opts.History, start, set))
		}
		a := Combine(gvr, opts.Window, rs...)
		a.HistorySeconds = opts.History.Seconds()
		out[gvr] = a
	}
	return out, nil
}

// readInstances reads every instance's /metrics at once, waits window,
// and reads them again (once when window is 0). An instance that fails
// the first read is not read again. waiting, when not nil, is told of the
// wait (see Options.Waiting). Only ctx's end is an error.
func readInstances(ctx context.Context, c InstanceReader, instances []Instance, window time.Duration, after func(time.Duration) <-chan time.Time,
	waiting func(time.Duration) func()) ([]InstanceSample, error) {
	samples := make([]InstanceSample, len(instances))
	readAll := func(second bool) {
		var wg sync.WaitGroup
		for i := range samples {
			s := &samples[i]
			s.Instance = instances[i]
			if s.Err != nil || s.Instance.Address == "" && s.Instance.Via == "" {
				if s.Err == nil {
					s.Err = errors.New("no address: the kubernetes Service lists no endpoint for it")
				}
				continue
			}
			wg.Go(func() {
				m, err := c.ReadMetrics(ctx, s.Instance)
				if err == nil && !m.HasRequestMetric() {
					err = errors.New("its /metrics has no apiserver_request_total: not an API server's metrics")
				}
				if err != nil {
					var re *ReadError
					s.Forbidden = errors.As(err, &re) && re.Forbidden
					s.Err = err
					return
				}
				if second {
					s.Second = m
				} else {
					s.First = m
				}
			})
		}
		wg.Wait()
	}
	readAll(false)
	if window > 0 {
		done := func() {}
		if waiting != nil {
			done = waiting(window)
		}
		select {
		case <-ctx.Done():
			done()
			return nil, ctx.Err()
		case <-after(window):
		}
		done()
		readAll(true)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return samples, nil
}

// belowFloor is r, Unknown when its window is shorter than floor (see
// Options.MinWindow). A window of 0 is left as it is: its report already
// says that one read sees open watches only.
func belowFloor(r SourceReport, window, floor time.Duration) SourceReport {
	if window <= 0 || window >= floor {
		return r
	}
	r.Unseen = append(slices.Clone(r.Unseen), fmt.Sprintf("the window of %s is shorter than the floor of %s (--usage-min-window): a client that calls less often than once a window falls between the reads", window, floor))
	r.WaysOut = append(slices.Clone(r.WaysOut), fmt.Sprintf("look back at least %s: --usage-window %s or longer", floor, floor))
	return r
}
