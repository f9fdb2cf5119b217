package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/preflight"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
	"github.com/crdversion/kubectl-crdversion/internal/view"
)

// UsageFlags are the client-usage check's flags, shared by unserve,
// retire and doctor.
type UsageFlags struct {
	UsageWindow       time.Duration
	UsageMinWindow    time.Duration
	UsageHistory      time.Duration
	SkipUsageCheck    bool
	PrometheusURL     string
	PrometheusService string
	AuditLogs         []string
}

func (u *UsageFlags) addFlags(cmd *cobra.Command, window time.Duration) {
	u.UsageWindow = window
	f := cmd.Flags()
	f.Var(&windowValue{d: &u.UsageWindow, flag: "--usage-window"}, "usage-window", "How far back to look for clients of the version: the time between two reads of every API server instance's /metrics (the command waits that long; at most 30m), or, with a Prometheus source, the history it queries (7d, 24h); also the window of the managedFields and audit-log sources.")
	u.UsageMinWindow = DefaultUsageMinWindow
	f.Var(&windowValue{d: &u.UsageMinWindow, flag: "--usage-min-window"}, "usage-min-window", "The floor of proof: a --usage-window shorter than this cannot show that no client uses the version (a client calling less often falls between the reads), only that one does; the verdict is then unknown. Lower it only when you know every client's period.")
	u.UsageHistory = DefaultUsageHistory
	f.Var(&windowValue{d: &u.UsageHistory, flag: "--usage-history"}, "usage-history", "How far back evidence older than --usage-window still counts as a client that may call again: a managedFields write or an audited request through the version in that time is a client, and requests that an API server counted since it started, before the window, make the verdict unknown (its counters carry no time). 0 looks at the window only: give it once you know who sent the earlier requests.")
	f.BoolVar(&u.SkipUsageCheck, "skip-usage-check", false, "Do not check for clients of the version (the output records that the check was skipped).")
	f.StringVar(&u.PrometheusURL, "prometheus-url", "", "Read the API servers' request counters over --usage-window from this Prometheus server (http(s)://HOST:PORT[/PREFIX]), which must scrape every API server instance, instead of reading each instance's /metrics.")
	f.StringVar(&u.PrometheusService, "prometheus-service", "", "Like --prometheus-url, through the API server's service proxy to this Service: NAMESPACE/NAME:PORT (for example monitoring/prometheus-k8s:9090; NAMESPACE/https:NAME:PORT for TLS).")
	f.StringArrayVar(&u.AuditLogs, "audit-log", nil, "An API server audit log (audit.k8s.io/v1 events, one JSON object a line, plain or gzip) that names the clients of the version by user and user agent; repeat for every instance's log and rotated files.")
}

// usageFlagNames are the usage check's flags that choose its sources and
// spans, in the order printed commands carry them.
var usageFlagNames = []string{"usage-window", "usage-min-window", "usage-history", "prometheus-url", "prometheus-service", "audit-log"}

// usageFlagsGiven are the usage check's flags the user typed in fs, for
// the commands a run prints to carry (see retire.Options.UsageFlags).
func usageFlagsGiven(fs *pflag.FlagSet) []lifecycle.Flag { return changedFlags(fs, usageFlagNames) }

// waitProgress shows on w, a terminal, the wait of window between the
// usage check's two reads of the API servers' /metrics.
func waitProgress(w io.Writer, window time.Duration) func(time.Duration) func() {
	return view.WaitProgress(w, fmt.Sprintf("counting requests between the two reads of /metrics (--usage-window %s)", window))
}

// config is the check's configuration for preflight.
func (u *UsageFlags) config() preflight.UsageConfig {
	return preflight.UsageConfig{Window: u.UsageWindow, MinWindow: u.UsageMinWindow, History: u.UsageHistory, Skip: u.SkipUsageCheck, PrometheusURL: u.PrometheusURL,
		PrometheusService: u.PrometheusService, AuditLogs: u.AuditLogs}
}

// DefaultUsageMinWindow is --usage-min-window's default: unserve's and
// retire's default --usage-window, the shortest window that may pass.
const DefaultUsageMinWindow = 15 * time.Second

// DefaultUsageHistory is --usage-history's default: a day holds the
// periods of ordinary periodic clients (CronJobs up to daily, dashboards,
// reconcile loops on a timer) and of a GitOps tool that applies the same
// manifests again and again (issue 33).
const DefaultUsageHistory = 24 * time.Hour

// windowValue is a duration flag that also takes Prometheus durations
// (7d, 2w); flag names it in errors.
type windowValue struct {
	d    *time.Duration
	flag string
	// text is the value as typed, which printed commands repeat.
	text string
}

func (w *windowValue) String() string {
	switch {
	case w.d == nil: // pflag's zero value, for its help
		return "0s"
	case w.text != "":
		return w.text
	}
	return w.d.String()
}
func (w *windowValue) Type() string { return "duration" }
func (w *windowValue) Set(s string) error {
	if strings.HasPrefix(s, "-") {
		return fmt.Errorf("%s must not be negative, got %s", w.flag, s)
	}
	d, err := usage.ParseWindow(s)
	if err != nil {
		return err
	}
	*w.d, w.text = d, s
	return nil
}
