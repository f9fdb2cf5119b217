package fleet

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/reach"
)

func TestSelect(t *testing.T) {
	available := []string{"prod", "dev", "staging"}
	for _, tc := range []struct {
		name      string
		available []string
		requested []string
		all       bool
		want      string // joined by ","; or the error
	}{
		{name: "all, sorted", available: available, all: true, want: "dev,prod,staging"},
		{name: "all of none", all: true, want: "the kubeconfig has no contexts"},
		{name: "in the order given", available: available, requested: []string{"staging", "dev"}, want: "staging,dev"},
		{name: "trimmed, without repeats", available: available, requested: []string{" prod", "dev", "prod "}, want: "prod,dev"},
		{name: "unknown", available: available, requested: []string{"dev", "lab"}, want: `context "lab" is not in the kubeconfig`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Select(tc.available, tc.requested, tc.all)
			if err != nil {
				if err.Error() != tc.want {
					t.Fatalf("error %q, want %q", err, tc.want)
				}
				return
			}
			if s := strings.Join(got, ","); s != tc.want {
				t.Errorf("got %q, want %q", s, tc.want)
			}
		})
	}
	if !strings.HasPrefix(available[0], "prod") {
		t.Errorf("Select sorted its argument: %v", available)
	}
}

// TestEach: results come back in the order of the names, no more than
// parallel calls run at once, and each call has its own deadline.
func TestEach(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e"}
	var running, most atomic.Int32
	// Each call holds its slot until two calls have run at once (or a
	// deadline passes), so that a third could only start if Each let it.
	twoAtOnce := make(chan struct{})
	var once sync.Once
	got := Each(context.Background(), names, 2, time.Minute, func(ctx context.Context, name string) string {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		if n >= 2 {
			once.Do(func() { close(twoAtOnce) })
		}
		if _, ok := ctx.Deadline(); !ok {
			t.Errorf("%s: no deadline", name)
		}
		select {
		case <-twoAtOnce:
		case <-time.After(10 * time.Second):
			t.Errorf("%s: no two calls ran at once within 10s", name)
		}
		return strings.ToUpper(name)
	})
	if s := strings.Join(got, ""); s != "ABCDE" {
		t.Errorf("got %q, want ABCDE", s)
	}
	if m := most.Load(); m > 2 {
		t.Errorf("%d calls at once, want at most 2", m)
	}
	timedOut := Each(context.Background(), []string{"slow"}, 1, time.Millisecond, func(ctx context.Context, _ string) error {
		<-ctx.Done()
		return ctx.Err()
	})
	if timedOut[0] != context.DeadlineExceeded {
		t.Errorf("got %v, want the call's deadline to pass", timedOut[0])
	}
}

func TestSetAnalysis(t *testing.T) {
	a := &lifecycle.Analysis{
		CRD: lifecycle.CRDRef{Name: "crontabs.stable.example.com"}, State: lifecycle.StateS0,
		StorageVersion: "v1", StoredVersions: []string{"v1beta1", "v1"},
		Versions: []lifecycle.VersionStatus{
			{Name: "v1", InSpec: true, Served: true},
			{Name: "v1beta1", InSpec: true},
			{Name: "v1alpha1"}, // only in storedVersions
		},
		Findings: []lifecycle.Finding{
			{Severity: lifecycle.SeverityError, Message: "broken"},
			{Severity: lifecycle.SeverityWarning, Message: "odd"},
		},
	}
	c := Cluster{Context: "prod", Reach: reach.Reached}
	c.SetAnalysis(a)
	if c.Context != "prod" || c.Reach != reach.Reached || c.Name != a.CRD.Name || c.State != lifecycle.StateS0 ||
		c.StorageVersion != "v1" || strings.Join(c.StoredVersions, ",") != "v1beta1,v1" ||
		strings.Join(c.Versions, ",") != "v1,v1beta1" || strings.Join(c.Served, ",") != "v1" ||
		strings.Join(c.Blocking, "|") != "broken" || c.Objects != nil {
		t.Errorf("got %+v", c)
	}
}

func TestCRDName(t *testing.T) {
	down := Cluster{Context: "edge", Reach: reach.Unreachable}
	up := Cluster{Context: "prod", Reach: reach.Reached, Name: "crontabs.stable.example.com"}
	if got := CRDName([]Cluster{down, up}, "ct"); got != up.Name {
		t.Errorf("got %q, want the name in the reached cluster", got)
	}
	if got := CRDName([]Cluster{down}, "ct"); got != "ct" {
		t.Errorf("got %q, want the argument when no cluster was reached", got)
	}
}
