package usage

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Source names where a piece of evidence comes from.
type Source string

const (
	// SourceMetrics is every API server instance's own /metrics, read
	// twice a window apart: it counts every request to the version, by
	// verb, but names no client, and sees only what happened between the
	// two reads.
	SourceMetrics Source = "metrics"
	// SourcePrometheus is a Prometheus server that scrapes the API
	// servers: the same counters as SourceMetrics, over any window its
	// retention holds, as long as it scraped every instance throughout.
	SourcePrometheus Source = "prometheus"
	// SourceManagedFields is the managedFields of every object of the
	// resource: the field managers that wrote through the version and
	// when they last did. It sees writes only, never reads.
	SourceManagedFields Source = "managedFields"
	// SourceAuditLog is the API servers' audit log (audit.k8s.io/v1
	// Events, one JSON object a line): every request the audit policy
	// records, by user, user agent and verb.
	SourceAuditLog Source = "auditLog"
)

// Counts reports whether the source counts every request to the version
// (SourceMetrics, SourcePrometheus), so that its NotInUse can stand for
// "no client": the other sources only name clients.
func (s Source) Counts() bool { return s == SourceMetrics || s == SourcePrometheus }

// Client is a named client of a version: a field manager (managedFields)
// or a user with its user agent and verb (audit log).
type Client struct {
	// Manager and Operation (Apply or Update) of a managedFields entry.
	Manager   string `json:"manager,omitempty"`
	Operation string `json:"operation,omitempty"`
	// User, UserAgent and Verb of audited requests.
	User      string `json:"user,omitempty"`
	UserAgent string `json:"userAgent,omitempty"`
	Verb      string `json:"verb,omitempty"`
	// Count is the number of objects (managedFields) or requests (audit
	// log) seen.
	Count int64 `json:"count"`
	// Last is the latest write (managedFields entry time) or request.
	Last time.Time `json:"last"`
	// InWindow is true when Last is inside the measured window: the client
	// is in use now.
	InWindow bool `json:"inWindow"`
	// InHistory is true when Last is before the window but inside the
	// history span (Options.History, --usage-history): a client whose
	// period is longer than the window, which may call again. It counts
	// as in use, as InWindow does.
	InHistory bool `json:"inHistory,omitempty"`
}

// Active reports whether the client counts as in use: its last request
// or write is inside the window or the history span.
func (c Client) Active() bool { return c.InWindow || c.InHistory }

// note is the client's place in time for people: " (inside the
// window)", " (before the window, inside the 24h0m0s history)" or "".
func (c Client) note(history time.Duration) string {
	switch {
	case c.InWindow:
		return " (inside the window)"
	case c.InHistory:
		return fmt.Sprintf(" (before the window, inside the %s history: it may call again)", roundDuration(history.Seconds()))
	}
	return ""
}

// String is the client in one line, e.g. `manager my-operator (Update)
// wrote 37 objects through stable.example.com/v1beta1, last
// 2026-11-30T10:02:11Z` or `user alice, agent curl/8.5.0: LIST 3, last …`.
func (c Client) String(gv string) string {
	last := c.Last.UTC().Format(time.RFC3339)
	if c.Manager != "" || c.Operation != "" {
		return fmt.Sprintf("manager %s (%s) wrote %d object(s) through %s, last %s", c.Manager, c.Operation, c.Count, gv, last)
	}
	return fmt.Sprintf("user %s, agent %q: %s %d, last %s", c.User, c.UserAgent, c.Verb, c.Count, last)
}

// SourceReport is what one source saw of one version.
type SourceReport struct {
	Source Source `json:"source"`
	// Name says which one, for people: "2 API server instances",
	// "Prometheus http://prometheus:9090", "audit log /var/log/audit.log".
	Name string `json:"name"`
	// Verdict is InUse when the source saw a client in the window (or a
	// named client in the history span), Unknown when it saw none but
	// could not see everything (Unseen), and NotInUse otherwise. It is
	// computed by Settle, never set by hand.
	Verdict Verdict `json:"verdict"`
	// WindowSeconds is the time the source looked at, in seconds.
	WindowSeconds float64 `json:"windowSeconds"`
	// HistorySeconds is the span before the end of the window, in
	// seconds, in which this source's evidence of a client still counts
	// (--usage-history): managedFields writes and audited requests with
	// their times, and the request counters since each instance started
	// (which carry no time). 0: the window only.
	HistorySeconds float64 `json:"historySeconds,omitempty"`
	// Requests counts requests by verb that finished in the window,
	// summed over every instance the source saw.
	Requests map[string]int64 `json:"requests,omitempty"`
	// Open counts requests open at the end of the window (WATCH), by verb;
	// MaxOpen the most that were open at once during it (Prometheus).
	Open    map[string]int64 `json:"open,omitempty"`
	MaxOpen map[string]int64 `json:"maxOpen,omitempty"`
	// Clients are the named clients (managedFields, audit log).
	Clients []Client `json:"clients,omitempty"`
	// Seen are the observations, one line each.
	Seen []string `json:"seen,omitempty"`
	// Unseen says what the source could not see, one line each; a source
	// with anything unseen never says NotInUse.
	Unseen []string `json:"unseen,omitempty"`
	// WaysOut are the ways to see what is unseen.
	WaysOut []string `json:"waysOut,omitempty"`
}

// Settle sets the verdict from what the source saw: InUse when a request
// finished or was open in the window or a named client was active in it
// or in the history span (Client.Active), else Unknown when anything is
// unseen, else NotInUse.
func (s *SourceReport) Settle() {
	s.Verdict = NotInUse
	if len(s.Unseen) > 0 {
		s.Verdict = Unknown
	}
	inUse := positive(s.Requests) || positive(s.Open) || positive(s.MaxOpen)
	for _, c := range s.Clients {
		inUse = inUse || c.Active()
	}
	if inUse {
		s.Verdict = InUse
	}
}

func positive(m map[string]int64) bool {
	for _, v := range m {
		if v > 0 {
			return true
		}
	}
	return false
}

// Assessment is the usage verdict of one version from every source
// consulted: what unserve, retire (step 1), doctor and the JSON reports
// show.
type Assessment struct {
	Group    string `json:"group"`
	Version  string `json:"version"`
	Resource string `json:"resource"`
	// WindowSeconds is the window asked for, in seconds.
	WindowSeconds float64 `json:"windowSeconds"`
	// HistorySeconds is the history span asked for (--usage-history), in
	// seconds; each source's own is in Sources.
	HistorySeconds float64 `json:"historySeconds,omitempty"`
	// Verdict: InUse when any source saw a client in the window (or, for
	// the sources that name clients with times, in the history span); else
	// Unknown when any source could not see everything, or no source that
	// counts every request (metrics, Prometheus) was consulted; else
	// NotInUse.
	Verdict Verdict        `json:"verdict"`
	Sources []SourceReport `json:"sources"`
}

// Combine settles each source and assesses gvr over window from them
// (see Assessment.Verdict). The history span, when the caller looked at
// one, is set on the result by Measure.
func Combine(gvr schema.GroupVersionResource, window time.Duration, sources ...SourceReport) Assessment {
	a := Assessment{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, WindowSeconds: window.Seconds(), Verdict: NotInUse}
	counted := false
	for _, s := range sources {
		s.Settle()
		a.Sources = append(a.Sources, s)
		counted = counted || s.Source.Counts()
		switch {
		case s.Verdict == InUse:
			a.Verdict = InUse
		case s.Verdict == Unknown && a.Verdict != InUse:
			a.Verdict = Unknown
		}
	}
	if !counted && a.Verdict == NotInUse {
		a.Verdict = Unknown
	}
	return a
}

// GroupVersion is group/version ("v1" for the core group).
func (a Assessment) GroupVersion() string {
	return schema.GroupVersion{Group: a.Group, Version: a.Version}.String()
}

// Clients are the clients the sources name, one line each, the sources
// that count requests left out (they name no client).
func (a Assessment) Clients() []string {
	var out []string
	for _, s := range a.Sources {
		history := time.Duration(s.HistorySeconds * float64(time.Second))
		for _, c := range s.Clients {
			out = append(out, c.String(a.GroupVersion())+c.note(history))
		}
	}
	return out
}

// sourcesSaying names the sources with verdict v, "the metrics of 2 API
// server instances and managedFields".
func (a Assessment) sourcesSaying(v Verdict) string {
	var names []string
	for _, s := range a.Sources {
		if s.Verdict == v {
			names = append(names, s.Name)
		}
	}
	return joinAnd(names)
}

// Message is the verdict in one line, the same wherever it is shown:
//
//	InUse:    clients still use G/V RESOURCE (seen by: …)
//	Unknown:  whether clients still use G/V RESOURCE is unknown: <first thing unseen>
//	NotInUse: no client of G/V RESOURCE seen in the last W (…)
func (a Assessment) Message() string {
	gv := a.GroupVersion() + " " + a.Resource
	switch a.Verdict {
	case InUse:
		return fmt.Sprintf("clients still use %s (seen by: %s)", gv, a.sourcesSaying(InUse))
	case Unknown:
		return fmt.Sprintf("whether clients still use %s is unknown: %s", gv, strings.Join(a.Unseen(), "; "))
	default:
		return fmt.Sprintf("no client of %s seen in the last %s (%s)", gv, roundDuration(a.WindowSeconds), a.sourcesSaying(NotInUse))
	}
}

// Unseen is everything the sources could not see, each line prefixed by
// its source's name; when no source counts every request, it says so.
func (a Assessment) Unseen() []string {
	var out []string
	counted := false
	for _, s := range a.Sources {
		counted = counted || s.Source.Counts()
		for _, u := range s.Unseen {
			out = append(out, s.Name+": "+u)
		}
	}
	if !counted {
		out = append(out, "no source that counts every request (the API servers' /metrics, Prometheus) was consulted")
	}
	return out
}

// Evidence is what each source saw and could not see, one line each,
// prefixed by the source's name and verdict.
func (a Assessment) Evidence() []string {
	var out []string
	for _, s := range a.Sources {
		head := fmt.Sprintf("%s [%s]", s.Name, s.Verdict)
		if len(s.Seen) == 0 && len(s.Unseen) == 0 {
			out = append(out, head)
		}
		for _, l := range s.Seen {
			out = append(out, head+": "+l)
		}
		for _, l := range s.Unseen {
			out = append(out, head+": NOT SEEN: "+l)
		}
	}
	return out
}

// WaysOut are the ways to see what is unseen, without repeats, ending with
// --skip-usage-check; empty unless the verdict is Unknown.
func (a Assessment) WaysOut() []string {
	if a.Verdict != Unknown {
		return nil
	}
	var out []string
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	counted := false
	for _, s := range a.Sources {
		counted = counted || s.Source.Counts()
		for _, w := range s.WaysOut {
			add(w)
		}
	}
	if !counted {
		add(WayPrometheus)
	}
	add(fmt.Sprintf("once you know by other means that no client uses %s: --skip-usage-check", a.GroupVersion()))
	return out
}

// InUseWaysOut are the ways out of an InUse verdict, without repeats:
// moving the clients; for the field managers whose managedFields entries
// name the version inside the window or the history span, when they stop
// counting (their last write plus the span) and that cleaning
// managedFields is no way out (those are writes, not leftovers); ending
// with --skip-usage-check. Empty unless the verdict is InUse.
func (a Assessment) InUseWaysOut() []string {
	if a.Verdict != InUse {
		return nil
	}
	gv := a.GroupVersion()
	out := []string{"move the clients to another version, then re-run"}
	for _, s := range a.Sources {
		if s.Source != SourceManagedFields {
			continue
		}
		var managers, earlier []string
		var last, lastEarlier time.Time
		for _, c := range s.Clients {
			if !c.Active() {
				continue
			}
			managers = append(managers, c.Manager)
			if c.Last.After(last) {
				last = c.Last
			}
			if c.InHistory {
				earlier = append(earlier, c.Manager)
				if c.Last.After(lastEarlier) {
					lastEarlier = c.Last
				}
			}
		}
		if len(managers) == 0 {
			continue
		}
		span := time.Duration(max(a.WindowSeconds, s.WindowSeconds, s.HistorySeconds) * float64(time.Second))
		line := fmt.Sprintf("the managedFields entries of %s record writes through %s in the last %s, the last at %s: they stop counting once the manager writes through another version (which relabels its entry) or once that write is older than %s (a re-run after %s)",
			joinAnd(managers), gv, roundDuration(span.Seconds()), last.UTC().Format(time.RFC3339), roundDuration(span.Seconds()), last.Add(span).UTC().Format(time.RFC3339))
		if len(earlier) > 0 {
			line += fmt.Sprintf("; when you know that %s no longer write(s) through %s (a one-off apply, a controller since upgraded), a --usage-history that does not reach back to %s says so (with the API servers' /metrics as the counting source only 0 does: their counters carry no time)", joinAnd(earlier), gv, lastEarlier.UTC().Format(time.RFC3339))
		}
		out = append(out, line+"; cleaning managedFields is no way out (retire's --clean-managed-fields relabels entries for the removal, unserve has none): these are writes, not leftovers")
	}
	return append(out, fmt.Sprintf("once you know by other means that no client uses %s: --skip-usage-check", gv))
}

// Ways out named by the sources.
const (
	WayPrometheus      = "read the API servers' request counters from Prometheus, which scrapes every instance: --prometheus-url URL, or --prometheus-service NAMESPACE/NAME:PORT through the API server's service proxy"
	WayStableInstances = "re-run when the same API server instances run from the start of the window to its end (no rolling upgrade or scale-out under way)"
	WayMetricsRBAC     = "grant get on the non-resource URL /metrics (a ClusterRole with nonResourceURLs: [\"/metrics\"], verbs: [\"get\"])"
)

func joinAnd(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
