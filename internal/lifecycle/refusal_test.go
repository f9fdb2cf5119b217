package lifecycle

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestRefusalErrorLine(t *testing.T) {
	run := Crdversion("serve", "crontabs.stable.example.com", "v2")
	e := &RefusalError{Operation: "unserve", CRD: "crontabs.stable.example.com", Reason: "the preflight check Served failed",
		Run: &run, Global: []Flag{{Name: "context", Value: "east"}}, Details: []string{"v2 is not served"}, Shown: true}
	want := "refusing to unserve crontabs.stable.example.com, nothing was changed: the preflight check Served failed; run: kubectl crdversion --context east serve crontabs.stable.example.com v2"
	if got := e.Error(); got != want {
		t.Errorf("error line:\n%s\nwant:\n%s", got, want)
	}
	if lines := e.DetailLines(); lines != nil {
		t.Errorf("shown details printed again: %q", lines)
	}
	// A way out that would make the line too long points at the details.
	e.Global = []Flag{{Name: "kubeconfig", Value: "/home/someone/" + strings.Repeat("long/", 20) + "config"}}
	if got := e.Error(); len("error: "+got) > MaxErrorLine || !strings.HasSuffix(got, "; the lines above say how to proceed") {
		t.Errorf("long way out: %d characters: %s", len(got), got)
	}
	// Details not shown are printed under their title.
	e = &RefusalError{Operation: "migrate", CRD: "crontabs.stable.example.com", Reason: "missing 2 permission(s)", WayOut: "grant them",
		DetailsTitle: "Missing permission(s)", Details: []string{"list crontabs", "patch crontabs"}}
	if got, want := strings.Join(e.DetailLines(), "\n"), "Missing permission(s):\n  - list crontabs\n  - patch crontabs"; got != want {
		t.Errorf("details:\n%s\nwant:\n%s", got, want)
	}
}

func TestFailureErrorLine(t *testing.T) {
	const summary = "every object of crontabs.stable.example.com is at v2, but status.storedVersions was not trimmed"
	e := &FailureError{Summary: summary, Why: "the CRD's spec changed during the run", WayOut: "re-run it"}
	if got, want := e.Error(), summary+": the CRD's spec changed during the run; re-run it"; got != want {
		t.Errorf("short failure:\n%s\nwant:\n%s", got, want)
	}
	if lines := e.DetailLines(); lines != nil {
		t.Errorf("a failure that fits on its line has details: %q", lines)
	}
	// A reason too long for the line goes above it, said once.
	long := "the API server said: " + strings.Repeat("admission webhook denied the request; ", 6)
	e = &FailureError{Summary: summary, Why: long, WayOut: "re-run it", DetailsTitle: "This run took", Details: []string{"step 2 (v1 unserved)"}}
	if got, want := e.Error(), summary+"; re-run it"; got != want {
		t.Errorf("long reason:\n%s\nwant:\n%s", got, want)
	}
	if got, want := strings.Join(e.DetailLines(), "\n"), "Why: "+long+"\nThis run took:\n  - step 2 (v1 unserved)"; got != want {
		t.Errorf("details:\n%s\nwant:\n%s", got, want)
	}
	// A way out too long for the line goes above it too: nothing is lost,
	// and the line points at it.
	way := "run: kubectl crdversion --kubeconfig /home/someone/" + strings.Repeat("long/", 30) + "config migrate crontabs.stable.example.com"
	e = &FailureError{Summary: summary, WayOut: way}
	if got := e.Error(); len("error: "+got) > MaxErrorLine || got != summary+"; the lines above say how to proceed" {
		t.Errorf("long way out: %d characters: %s", len(got), got)
	}
	if got, want := strings.Join(e.DetailLines(), "\n"), "To proceed: "+way; got != want {
		t.Errorf("details:\n%s\nwant:\n%s", got, want)
	}
}

func TestMessageKeepsEveryDetail(t *testing.T) {
	e := &RefusalError{Operation: "migrate", CRD: "crontabs.stable.example.com", Reason: "rewriting the objects at v2 loses data",
		WayOut:       "make v2's schema keep these fields (or the admission that removes them spare them), or pass --allow-pruning to accept the loss",
		DetailsTitle: "Each object read and dry-run written through v2, compared", Details: []string{"1 object(s) have fields at v1 that v2 drops: default/w1: .spec.colour"}}
	want := "refusing to migrate crontabs.stable.example.com, nothing was changed: rewriting the objects at v2 loses data: " +
		"Each object read and dry-run written through v2, compared: 1 object(s) have fields at v1 that v2 drops: default/w1: .spec.colour; " +
		"To proceed: make v2's schema keep these fields (or the admission that removes them spare them), or pass --allow-pruning to accept the loss"
	if got := Message(fmt.Errorf("checking: %w", e)); got != "checking: "+want {
		t.Errorf("Message:\n%s\nwant:\n%s", got, "checking: "+want)
	}
	if got := Message(errors.New("plain")); got != "plain" {
		t.Errorf("a plain error: %q", got)
	}
}

// TestRefusalLongWayOutWithoutDetails: a way out too long for the line is
// printed above it even when the refusal has no other detail.
func TestRefusalLongWayOutWithoutDetails(t *testing.T) {
	name := "crontabs.storage-unserved-migrate.example.com"
	run := Crdversion("serve", name, "v2")
	e := &RefusalError{Operation: "migrate", CRD: name, Reason: "v2 is the storage version but not served", Run: &run}
	if got := "error: " + e.Error(); len(got) > MaxErrorLine {
		t.Errorf("an error line of %d characters: %s", len(got), got)
	}
	if got, want := strings.Join(e.DetailLines(), "\n"), "To proceed: run: kubectl crdversion serve "+name+" v2"; got != want {
		t.Errorf("details:\n%s\nwant:\n%s", got, want)
	}
}
