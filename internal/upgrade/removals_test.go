package upgrade

import (
	"slices"
	"strings"
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

func codesAt(p Plan, version string) []string {
	var out []string
	for _, f := range p.Findings {
		if f.Version == version {
			out = append(out, f.Code+" "+string(f.Severity))
		}
	}
	slices.Sort(out)
	return out
}

// TestOlderRelease: a release that takes a served version from clients
// and has nothing newer is named as an older release (or a shared CRD's
// other copy); one that drops an old version beside a newer one is not.
func TestOlderRelease(t *testing.T) {
	live := crdtest.New("crontabs.stable.example.com").Kind("CronTab").
		Version("v1beta1", crdtest.Served, crdtest.Fields("image")).Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).
		Version("v2", crdtest.Served, crdtest.Fields("image")).Stored("v1").CRD()
	older := crdtest.New("crontabs.stable.example.com").Kind("CronTab").
		Version("v1beta1", crdtest.Served, crdtest.Fields("image")).Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD()
	p := Check(live, older, "older.yaml", ApplyCommand([]string{"older.yaml"}, false))
	if got := codesAt(p, "v2"); !slices.Equal(got, []string{CodeReleaseOlder + " warning", schemadiff.CodeVersionRemoved + " warning"}) {
		t.Errorf("v2 dropped with nothing newer: %q", got)
	}
	newer := crdtest.New("crontabs.stable.example.com").Kind("CronTab").
		Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Fields("image")).CRD()
	p = Check(live, newer, "newer.yaml", ApplyCommand([]string{"newer.yaml"}, false))
	if got := codesAt(p, "v1beta1"); !slices.Equal(got, []string{schemadiff.CodeVersionRemoved + " warning"}) {
		t.Errorf("v1beta1 dropped beside v1 and v2: %q", got)
	}
	if !slices.Equal(p.UsageTargets(), []string{"v1beta1"}) {
		t.Errorf("usage targets %v, want [v1beta1]", p.UsageTargets())
	}
}

// TestJudgeRemovals: the usage verdict of each removed served version
// decides its finding, and a rejected apply (which removes nothing) is
// not measured.
func TestJudgeRemovals(t *testing.T) {
	live := crdtest.New("crontabs.stable.example.com").Kind("CronTab").
		Version("v1alpha1", crdtest.Served, crdtest.Fields("image")).Version("v1beta1", crdtest.Served, crdtest.Fields("image")).
		Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Fields("image")).Stored("v1").CRD()
	next := crdtest.New("crontabs.stable.example.com").Kind("CronTab").
		Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Version("v2", crdtest.Fields("image")).CRD()
	plan := func() Plan { return Check(live, next, "r.yaml", ApplyCommand([]string{"r.yaml"}, false)) }
	p := plan()
	if !slices.Equal(p.UsageTargets(), []string{"v1alpha1", "v1beta1", "v2"}) {
		t.Fatalf("usage targets %v", p.UsageTargets())
	}
	assessed := func(v string, verdict usage.Verdict) usage.Assessment {
		return usage.Assessment{Group: "stable.example.com", Version: v, Resource: "crontabs", WindowSeconds: 60, Verdict: verdict}
	}
	p.JudgeRemovals(map[string]usage.Assessment{"v1alpha1": assessed("v1alpha1", usage.InUse), "v1beta1": assessed("v1beta1", usage.NotInUse)})
	for v, want := range map[string][]string{
		"v1alpha1": {CodeRemovedVersionInUse + " error", schemadiff.CodeVersionRemoved + " warning"},
		"v1beta1":  {schemadiff.CodeVersionRemoved + " warning"},
		"v2":       {CodeRemovedVersionUsageUnknown + " error", schemadiff.CodeVersionUnserved + " warning"},
	} {
		if got := codesAt(p, v); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", v, got, want)
		}
	}
	for _, f := range p.Findings {
		if f.Version == "v1beta1" && !strings.Contains(f.Message, "no client of stable.example.com/v1beta1 crontabs seen in the last 1m") {
			t.Errorf("v1beta1's warning does not name the window: %s", f.Message)
		}
	}
	if schemadiff.Count(p.Findings, lifecycle.SeverityError) != 2 {
		t.Errorf("errors: %+v", p.Findings)
	}

	p = plan()
	p.RemovalsNotChecked("--skip-usage-check")
	if n := schemadiff.Count(p.Findings, lifecycle.SeverityError); n != 0 || !strings.Contains(p.Findings[0].Message+p.Findings[1].Message, "client usage NOT checked (--skip-usage-check)") {
		t.Errorf("skipped: %d errors, %+v", n, p.Findings)
	}

	p = plan()
	p.Apply = Rejected
	if len(p.UsageTargets()) != 0 {
		t.Errorf("a rejected apply has usage targets %v", p.UsageTargets())
	}
}

// TestRemovalsUnmeasured: a measurement that could not run leaves each
// removed served version unknown, an error that says why.
func TestRemovalsUnmeasured(t *testing.T) {
	live := crdtest.New("crontabs.stable.example.com").Kind("CronTab").
		Version("v1beta1", crdtest.Served, crdtest.Fields("image")).Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v1").CRD()
	next := crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).CRD()
	p := Check(live, next, "r.yaml", ApplyCommand([]string{"r.yaml"}, false))
	p.RemovalsUnmeasured("get on /metrics is forbidden")
	if got := codesAt(p, "v1beta1"); !slices.Equal(got, []string{CodeRemovedVersionUsageUnknown + " error", schemadiff.CodeVersionRemoved + " warning"}) {
		t.Errorf("%q", got)
	}
	if !strings.Contains(p.Findings[0].Message, "could not be measured: get on /metrics is forbidden") {
		t.Errorf("%s", p.Findings[0].Message)
	}
}
