package usage

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/managedfields"
)

// Self is how this tool shows up in the evidence it reads: its field
// manager in managedFields and the first word of its user agent in audit
// events (client-go's default user agent is "<binary>/<version> (…)").
// Its own requests are never counted as a client's.
const Self = "kubectl-crdversion"

// IsSelfUserAgent reports whether ua is this tool's user agent.
func IsSelfUserAgent(ua string) bool {
	return ua == Self || strings.HasPrefix(ua, Self+"/")
}

// AssessManagedFields is the managedFields source for gvr: the field
// managers whose entries name gvr's group/version, from a scan of objects
// objects (err: why the objects could not be listed). A manager whose
// latest write through the version is inside [now-window, now] is a client
// in use (InWindow), and so is one whose latest write is inside
// [now-history, now-window] (InHistory): an entry's time is that of the
// manager's last change, and a manager that applies the same object again
// and again (a GitOps loop, an operator's no-op apply) changes nothing, so
// a recent write is a client whatever the window. This tool's own field
// manager (Self) is left out. The source sees writes only: a client that
// only reads leaves no entry.
func AssessManagedFields(gvr schema.GroupVersionResource, writers []managedfields.Writer, objects int, err error, window, history time.Duration, now time.Time) (r SourceReport) {
	gv := schema.GroupVersion{Group: gvr.Group, Version: gvr.Version}.String()
	r = SourceReport{Source: SourceManagedFields, Name: "managedFields of " + gvr.Resource, WindowSeconds: window.Seconds(), HistorySeconds: history.Seconds()}
	defer r.Settle()
	if err != nil {
		r.Unseen = append(r.Unseen, fmt.Sprintf("the objects of %s cannot be listed: %s", gvr.GroupResource(), oneLine(err)))
		r.WaysOut = append(r.WaysOut, fmt.Sprintf("grant list on %s (metadata only)", gvr.GroupResource()))
		return r
	}
	since, before := now.Add(-window), now.Add(-history)
	self := 0
	for _, w := range writers {
		if w.Manager == Self {
			self += w.Objects
			continue
		}
		if w.Last.IsZero() {
			// An entry without a time may be a write of any age.
			r.Unseen = append(r.Unseen, fmt.Sprintf("manager %s (%s) wrote %d object(s) through %s, at no recorded time (managedFields entries without time): whether it still writes is not known", w.Manager, w.Operation, w.Objects, gv))
			continue
		}
		c := Client{Manager: w.Manager, Operation: w.Operation, Count: int64(w.Objects), Last: w.Last, InWindow: window > 0 && !w.Last.Before(since)}
		c.InHistory = !c.InWindow && history > window && !w.Last.Before(before)
		r.Clients = append(r.Clients, c)
		r.Seen = append(r.Seen, c.String(gv)+c.note(history))
	}
	if len(r.Clients) == 0 {
		r.Seen = append(r.Seen, fmt.Sprintf("no field manager wrote through %s (%d object(s) read)", gv, objects))
	}
	if self > 0 {
		r.Seen = append(r.Seen, fmt.Sprintf("entries of %s (this tool) on %d object(s) left out", Self, self))
	}
	return r
}
