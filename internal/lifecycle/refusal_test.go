package lifecycle

import (
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
