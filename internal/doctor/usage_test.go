package doctor

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// fakeMeasurer answers with the assessment its function makes of each
// target, and records the calls.
type fakeMeasurer struct {
	assess func(gvr schema.GroupVersionResource) usage.Assessment
	calls  [][]schema.GroupVersionResource
}

func (f *fakeMeasurer) Measure(_ context.Context, targets ...schema.GroupVersionResource) (usage.Assessments, error) {
	f.calls = append(f.calls, slices.Clone(targets))
	out := usage.Assessments{}
	for _, gvr := range targets {
		out[gvr] = f.assess(gvr)
	}
	return out, nil
}

// byVersion: v1 is watched (metrics) and written by my-operator
// (managedFields); v3 has a metrics source that could not read an
// instance; v4 has no client.
func byVersion(gvr schema.GroupVersionResource) usage.Assessment {
	now := time.Date(2026, 11, 30, 10, 2, 11, 0, time.UTC)
	metrics := usage.SourceReport{Source: usage.SourceMetrics, Name: "/metrics of 2 API server instance(s)"}
	mf := usage.SourceReport{Source: usage.SourceManagedFields, Name: "managedFields of widgets"}
	switch gvr.Version {
	case "v1":
		metrics.Open = map[string]int64{"WATCH": 1}
		mf.Clients = []usage.Client{{Manager: "my-operator", Operation: "Update", Count: 37, Last: now, InWindow: true}}
	case "v3":
		metrics.Unseen = []string{"apiserver-b at 10.0.0.3:6443: its /metrics cannot be read: forbidden"}
		mf.Clients = []usage.Client{{Manager: "old-job", Operation: "Apply", Count: 2, Last: now.Add(-30 * 24 * time.Hour)}}
	}
	return usage.Combine(gvr, 10*time.Second, metrics, mf)
}

// TestClientUsage: every deprecated served version, and every served one
// older than the storage version, of every CRD of the run is measured at
// once (not a newer version, nor one whose age nothing says); per
// deprecated version a warning when a client uses it, with the named
// clients and a retire dry run; per old version information naming the
// clients to move; information when unknown (naming what was not seen) or
// when no client was seen; the assessments are returned for the report.
func TestClientUsage(t *testing.T) {
	m := &fakeMeasurer{assess: byVersion}
	u := ClientUsage(m)
	ctx := context.Background()
	plain := widgets("v2", "v1", "v3", "next").CRD()
	crd := widgets("v2", "v1", "v3", "v4").Deprecate("v1", "v3", "v4").CRD()
	if err := u.Prepare(ctx, []*apiextensionsv1.CustomResourceDefinition{plain, crd}); err != nil {
		t.Fatal(err)
	}
	if len(m.calls) != 1 || len(m.calls[0]) != 4 || m.calls[0][0].Version != "v1" {
		t.Fatalf("measured %v, want one call with the old v1 of the first CRD and the 3 deprecated served versions of the second", m.calls)
	}
	old, as, err := u.Findings(ctx, plain)
	if err != nil || len(old) != 1 || len(as) != 1 {
		t.Fatalf("old v1, newer v3, unordered next: %v %+v %+v", err, old, as)
	}
	if f := old[0]; f.Code != lifecycle.CodeOldVersionInUse || f.Version != "v1" || f.Severity != lifecycle.SeverityInfo || f.Fix != "" ||
		!strings.Contains(f.Message, "old version v1 (older than the storage version v2, not deprecated): clients still use example.com/v1 widgets") ||
		!strings.Contains(f.Message, "named clients: manager my-operator (Update) wrote 37 object(s) through example.com/v1") ||
		!strings.Contains(f.Message, "move those clients to v2 before it is deprecated and unserved") {
		t.Errorf("old v1: %+v", f)
	}
	fs, as, err := u.Findings(ctx, crd)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.calls) != 1 {
		t.Errorf("measured again: %v", m.calls)
	}
	if len(fs) != 3 || len(as) != 3 {
		t.Fatalf("findings %+v, assessments %d", fs, len(as))
	}
	for i, want := range []struct {
		version  string
		severity lifecycle.Severity
		texts    []string
	}{
		{"v1", lifecycle.SeverityWarning, []string{"clients still use example.com/v1 widgets (seen by: /metrics of 2 API server instance(s) and managedFields of widgets)",
			"named clients: manager my-operator (Update) wrote 37 object(s) through example.com/v1, last 2026-11-30T10:02:11Z (inside the window)", "move those clients to v2"}},
		{"v3", lifecycle.SeverityInfo, []string{"whether clients still use example.com/v3 widgets is unknown: /metrics of 2 API server instance(s): apiserver-b at 10.0.0.3:6443: its /metrics cannot be read: forbidden",
			"manager old-job (Apply) wrote 2 object(s) through example.com/v3, last 2026-10-31T10:02:11Z"}},
		{"v4", lifecycle.SeverityInfo, []string{"no client of example.com/v4 widgets seen in the last 10s"}},
	} {
		f := fs[i]
		if f.Version != want.version || f.Severity != want.severity {
			t.Errorf("finding %d: %s %s, want %s %s", i, f.Version, f.Severity, want.version, want.severity)
		}
		for _, text := range want.texts {
			if !strings.Contains(f.Message, text) {
				t.Errorf("finding %s lacks %q:\n%s", f.Version, text, f.Message)
			}
		}
	}
	if fs[0].Fix != "kubectl crdversion retire widgets.example.com v1 --dry-run" || fs[1].Fix != "" {
		t.Errorf("fixes %q %q", fs[0].Fix, fs[1].Fix)
	}
}
