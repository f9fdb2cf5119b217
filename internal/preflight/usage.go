package preflight

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/access"
	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// CheckClientUsage is the name of the client-usage check.
const CheckClientUsage = "ClientUsage"

// UsageConfig are the inputs of the client-usage check that unserve,
// retire (step 1) and doctor share: the --usage-window,
// --skip-usage-check, --prometheus-url, --prometheus-service and
// --audit-log flags.
type UsageConfig struct {
	// Window is how far back to look (Prometheus, managedFields, audit
	// logs), and how long to wait between the two reads of every
	// instance's /metrics when no Prometheus is given.
	Window time.Duration
	// MinWindow is the floor of proof (--usage-min-window): a shorter
	// Window cannot show that no client uses the version, only that one
	// does (usage.Options.MinWindow).
	MinWindow time.Duration
	// History is how far back evidence older than the window still names
	// a client (--usage-history, usage.Options.History): managedFields
	// writes and audited requests inside it, and requests the instances
	// counted since they started. 0 looks at the window only.
	History time.Duration
	// Skip skips the check; the output records it.
	Skip bool
	// PrometheusURL or PrometheusService (NAMESPACE/NAME:PORT, through
	// the API server's service proxy) replaces the /metrics reads by the
	// history of a Prometheus server scraping the API servers.
	PrometheusURL, PrometheusService string
	// AuditLogs are audit log files (plain or gzip) that name the clients.
	AuditLogs []string
}

// MaxMetricsWindow is the longest --usage-window measured by reading every
// instance's /metrics twice, that far apart: the command waits the whole
// window, so longer windows (the days that catch weekly jobs) need a
// Prometheus source, which answers from its history at once.
const MaxMetricsWindow = 30 * time.Minute

// Validate checks the configuration without contacting anything: a
// window that is not negative and, without Prometheus, not longer than
// MaxMetricsWindow; at most one Prometheus, a URL or service reference
// that parses, audit logs that exist.
func (u UsageConfig) Validate() error {
	switch {
	case u.Window < 0:
		return fmt.Errorf("--usage-window must not be negative, got %s", u.Window)
	case u.MinWindow < 0:
		return fmt.Errorf("--usage-min-window must not be negative, got %s", u.MinWindow)
	case u.History < 0:
		return fmt.Errorf("--usage-history must not be negative, got %s", u.History)
	case !u.Skip && u.Window > MaxMetricsWindow && u.PrometheusURL == "" && u.PrometheusService == "":
		return fmt.Errorf("--usage-window %s would wait that long between two reads of each API server's /metrics; over %s, give --prometheus-url or --prometheus-service", u.Window, MaxMetricsWindow)
	case u.PrometheusURL != "" && u.PrometheusService != "":
		return errors.New("give --prometheus-url or --prometheus-service, not both")
	}
	if u.PrometheusURL != "" {
		if _, err := cluster.NewPrometheus(u.PrometheusURL); err != nil {
			return err
		}
	}
	if u.PrometheusService != "" {
		if _, _, err := cluster.ParseServiceRef(u.PrometheusService); err != nil {
			return err
		}
	}
	for _, f := range u.AuditLogs {
		st, err := os.Stat(f)
		switch {
		case err != nil:
			return fmt.Errorf("--audit-log %s: %w", f, errors.Unwrap(err))
		case st.IsDir():
			return fmt.Errorf("--audit-log %s is a directory, not an audit log file", f)
		}
	}
	return nil
}

// Usage is the client-usage check on one cluster, from every source its
// configuration names: every API server instance's /metrics (or
// Prometheus), the managedFields of the objects, and audit logs.
type Usage struct {
	Config  UsageConfig
	Sources usage.Sources
	// Waiting, when set, is told when Measure starts to wait between the
	// two /metrics reads, and returns what to call when the wait ends
	// (usage.Options.Waiting): the CLI's progress on a terminal.
	Waiting func(window time.Duration) (done func())
}

// NewUsage assembles the sources of cfg on c. mf is the managedFields
// source to share with a later step of the same run (retire's
// managedFields step); nil makes one of its own. It contacts nothing.
func NewUsage(c *cluster.Client, cfg UsageConfig, mf *cluster.ManagedFieldsSource) (*Usage, error) {
	if mf == nil {
		mf = c.ManagedFieldsSource(cluster.ChunkSize, nil)
	}
	src := usage.Sources{Cluster: c, ManagedFields: mf, AuditLogs: cfg.AuditLogs}
	var p *cluster.Prometheus
	var err error
	switch {
	case cfg.PrometheusURL != "":
		p, err = cluster.NewPrometheus(cfg.PrometheusURL)
	case cfg.PrometheusService != "":
		p, err = c.PrometheusThroughService(cfg.PrometheusService)
	}
	if err != nil {
		return nil, err
	}
	if p != nil {
		src.Prometheus, src.PrometheusName = p, p.Name
	}
	return &Usage{Config: cfg, Sources: src}, nil
}

// Describe says where the check looks and how long it takes, for the
// line printed before it: "every API server instance's /metrics, read
// 15s apart, the objects' managedFields and 1 audit log(s)".
func (u *Usage) Describe() string {
	var parts []string
	if u.Sources.Prometheus != nil {
		parts = append(parts, fmt.Sprintf("%s over the last %s", u.Sources.PrometheusName, u.Config.Window))
	} else if u.Sources.Cluster != nil {
		parts = append(parts, fmt.Sprintf("every API server instance's /metrics, read %s apart", u.Config.Window))
	}
	if u.Sources.ManagedFields != nil {
		parts = append(parts, "the objects' managedFields")
	}
	if n := len(u.Sources.AuditLogs); n > 0 {
		parts = append(parts, fmt.Sprintf("%d audit log(s)", n))
	}
	switch len(parts) {
	case 0:
		return "no source"
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// Needs is everything the sources need of the user on crd, so that a
// refusal names it all at once: get on /metrics of every API server
// instance when they read it (no Prometheus given), list on the identity
// leases and the kubernetes Service's EndpointSlices (finding the
// instances, with or without Prometheus), and list on crd's objects for
// the managedFields source.
func (u *Usage) Needs(crd *apiextensionsv1.CustomResourceDefinition) []access.Need {
	var out []access.Need
	if u.Sources.Cluster != nil {
		if u.Sources.Prometheus == nil {
			out = append(out, access.Metrics()...)
		}
		out = append(out, access.Instances()...)
	}
	if u.Sources.ManagedFields != nil {
		out = append(out, access.ManagedFieldsSource(crd)...)
	}
	return out
}

// Measure assesses each of targets from every source (usage.Measure over
// Config.Window). Its errors are one line: an audit log that is not one,
// or the end of ctx; everything a source could not see is in the
// assessments, never an error.
func (u *Usage) Measure(ctx context.Context, targets ...schema.GroupVersionResource) (usage.Assessments, error) {
	return usage.Measure(ctx, u.Sources, targets, usage.Options{Window: u.Config.Window, MinWindow: u.Config.MinWindow, History: u.Config.History, Waiting: u.Waiting})
}

// Writers is the managedFields source alone on gvr, over Config.Window
// and Config.History, at now: the field managers that wrote through
// gvr's version and whether each wrote inside the window or the history
// span (usage.AssessManagedFields). It serves a version no longer served,
// whose clients the counters cannot show, but whose recent writers are
// still named by their entries. Without a managedFields source, the
// report says it was not consulted (Unseen).
func (u *Usage) Writers(ctx context.Context, gvr schema.GroupVersionResource) usage.SourceReport {
	if u.Sources.ManagedFields == nil {
		return usage.SourceReport{Source: usage.SourceManagedFields, Name: "managedFields of " + gvr.Resource, Unseen: []string{"the managedFields source was not consulted"}}
	}
	writers, n, err := u.Sources.ManagedFields.Writers(ctx, gvr)
	return usage.AssessManagedFields(gvr, writers, n, err, u.Config.Window, u.Config.History, time.Now())
}

// ClientUsage is the client-usage check of one version from its
// assessment: a client seen fails it, an unknown verdict fails it
// (unknown is not pass), no client seen passes it. The message is the
// verdict's, naming the sources it rests on; the details are what each
// source saw and could not see, and, when unknown, the ways out.
func ClientUsage(a usage.Assessment) edit.Check {
	c := edit.Check{Name: CheckClientUsage, Details: a.Evidence()}
	switch a.Verdict {
	case usage.InUse:
		c.Outcome, c.Message = edit.Fail, a.Message()+"; ways out: "+strings.Join(a.InUseWaysOut(), "; ")
	case usage.Unknown:
		c.Outcome, c.Message = edit.Fail, a.Message()
		for _, w := range a.WaysOut() {
			c.Details = append(c.Details, "way out: "+w)
		}
	default:
		c.Outcome, c.Message = edit.Pass, a.Message()
	}
	return c
}

// ClientUsageSkipped is the check when --skip-usage-check was given: a
// warning the output records.
func ClientUsageSkipped(gv string) edit.Check {
	return edit.Check{Name: CheckClientUsage, Outcome: edit.Warn, Message: "client usage of " + gv + " was NOT checked (--skip-usage-check)"}
}
