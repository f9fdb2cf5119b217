package usage

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/usage/auditlog"
)

// AuditTailGrace is how long before the end of the window the audit logs
// may end and still count as covering it: a busy API server writes events
// every second and every instance renews its identity lease every 10 s,
// but a log is read some time after it was copied.
const AuditTailGrace = time.Minute

// AssessAudit is the audit-log source for gvr over [now-window, now]: the
// clients (user, user agent, verb) of the version in the logs, with their
// request counts and last request. A client whose last request is inside
// the window, or whose watch is still open at the end of a log, is in use
// (InWindow), and so is one whose last request is inside [now-history,
// now-window] (InHistory: a client with a longer period than the window).
// The logs see the whole window only when together they span it (up to
// AuditTailGrace at its end) and, on a cluster with several API server
// instances (set), when there is a log of every instance: each log is
// attributed to the instances whose identity lease renewals it records.
// A log that records only instances the cluster does not have is of
// another cluster (or of instances since replaced). Malformed lines are
// reported.
func AssessAudit(gvr schema.GroupVersionResource, logs []*auditlog.Summary, window, history time.Duration, now time.Time, set *InstanceSet) (r SourceReport) {
	var names []string
	for _, l := range logs {
		names = append(names, l.Name)
	}
	r = SourceReport{Source: SourceAuditLog, Name: "audit log " + strings.Join(names, ", "), WindowSeconds: window.Seconds(), HistorySeconds: history.Seconds()}
	defer r.Settle()
	since := now.Add(-window)
	type span struct{ from, to time.Time }
	var spans []span
	var instancesSeen []string
	byClient := map[[3]string]*Client{}
	self := int64(0)
	for _, l := range logs {
		line := fmt.Sprintf("%s: %d event(s)", l.Name, l.Events)
		if l.Events > 0 {
			line += fmt.Sprintf(" from %s to %s", l.First.UTC().Format(time.RFC3339), l.Last.UTC().Format(time.RFC3339))
			spans = append(spans, span{l.First, l.Last})
		}
		if len(l.Identities) > 0 {
			line += " written by " + strings.Join(l.Identities, ", ")
		}
		r.Seen = append(r.Seen, line)
		if l.Malformed > 0 {
			r.Unseen = append(r.Unseen, fmt.Sprintf("%s: %d malformed line(s) (the first: line %d): the requests they record are not seen", l.Name, l.Malformed, l.FirstMalformed))
		}
		if l.Events == 0 {
			r.Unseen = append(r.Unseen, l.Name+": no audit event")
		}
		if set != nil && len(l.Identities) > 0 {
			known := false
			for _, id := range l.Identities {
				known = known || slices.ContainsFunc(set.Instances, func(i Instance) bool { return i.Lease == id }) || slices.Contains(set.StaleLeases, id)
			}
			if !known {
				r.Unseen = append(r.Unseen, fmt.Sprintf("%s was written by API server instance(s) %s, none of which belongs to this cluster (%s): a log of another cluster, or of instances since replaced", l.Name, strings.Join(l.Identities, ", "), strings.Join(leasesOf(set), ", ")))
				continue
			}
		}
		instancesSeen = append(instancesSeen, l.Identities...)
		u := l.Use[gvr]
		if u == nil {
			continue
		}
		self += u.Self
		for _, c := range u.Clients {
			k := [3]string{c.User, c.UserAgent, c.Verb}
			cl := byClient[k]
			if cl == nil {
				cl = &Client{User: c.User, UserAgent: c.UserAgent, Verb: c.Verb}
				byClient[k] = cl
			}
			cl.Count += c.Requests
			if c.Last.After(cl.Last) {
				cl.Last = c.Last
			}
			cl.InWindow = cl.InWindow || (window > 0 && !cl.Last.Before(since))
		}
		for _, c := range u.OpenWatches {
			byClient[[3]string{c.User, c.UserAgent, c.Verb}].InWindow = true
			r.Seen = append(r.Seen, fmt.Sprintf("%s: a watch of user %s, agent %q is still open at the end of the log", l.Name, c.User, c.UserAgent))
		}
	}
	// Coverage in time: the union of the spans must hold [since, now-grace].
	slices.SortFunc(spans, func(a, b span) int { return a.from.Compare(b.from) })
	covered := since
	for _, s := range spans {
		if s.from.After(covered) {
			break
		}
		if s.to.After(covered) {
			covered = s.to
		}
	}
	if len(spans) > 0 && covered.Before(now.Add(-AuditTailGrace)) {
		r.Unseen = append(r.Unseen, fmt.Sprintf("the audit logs do not span the window %s to %s: they cover it only up to %s", since.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), covered.UTC().Format(time.RFC3339)))
		r.WaysOut = append(r.WaysOut, "give audit logs (--audit-log, rotated files too) that span the whole window, or a window they span (--usage-window)")
	}
	// Coverage in instances.
	if set != nil && len(set.Instances) > 1 {
		var missing []string
		for _, in := range set.Instances {
			if in.Lease == "" || !slices.Contains(instancesSeen, in.Lease) {
				missing = append(missing, in.String())
			}
		}
		switch {
		case len(instancesSeen) == 0:
			r.Unseen = append(r.Unseen, fmt.Sprintf("the cluster has %d API server instances and the audit logs record no identity lease renewal, so which instances wrote them is unknown: clients of an instance whose log is not given are not named", len(set.Instances)))
		case len(missing) > 0:
			r.Unseen = append(r.Unseen, fmt.Sprintf("no audit log of %s: its clients are not named", joinAnd(missing)))
		}
		if len(missing) > 0 {
			r.WaysOut = append(r.WaysOut, "give the audit log of every API server instance (--audit-log, once per file)")
		}
	}
	for _, c := range byClient {
		c.InHistory = !c.InWindow && history > window && !c.Last.Before(now.Add(-history))
		r.Clients = append(r.Clients, *c)
	}
	slices.SortFunc(r.Clients, func(a, b Client) int {
		if c := b.Last.Compare(a.Last); c != 0 {
			return c
		}
		return strings.Compare(a.User+a.UserAgent+a.Verb, b.User+b.UserAgent+b.Verb)
	})
	gv := schema.GroupVersion{Group: gvr.Group, Version: gvr.Version}.String()
	for _, c := range r.Clients {
		r.Seen = append(r.Seen, c.String(gv)+c.note(history))
	}
	if len(r.Clients) == 0 {
		r.Seen = append(r.Seen, "no request to "+gv+" "+gvr.Resource)
	}
	if self > 0 {
		r.Seen = append(r.Seen, fmt.Sprintf("%d request(s) of %s (this tool) left out", self, Self))
	}
	return r
}

func leasesOf(set *InstanceSet) []string {
	var out []string
	for _, i := range set.Instances {
		if i.Lease != "" {
			out = append(out, i.Lease)
		}
	}
	return out
}
