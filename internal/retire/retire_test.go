package retire

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/managedfields"
	"github.com/crdversion/kubectl-crdversion/internal/references"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

var v1 = schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "crontabs"}

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// assessed is the assessment of v1 from one metrics source that saw
// requests (LIST 3), nothing or (with unseen) not everything.
func assessed(requests int64, unseen ...string) *usage.Assessment {
	r := usage.SourceReport{Source: usage.SourceMetrics, Name: "/metrics of 2 API server instance(s)", WindowSeconds: 10, Unseen: unseen}
	if requests > 0 {
		r.Requests = map[string]int64{"LIST": requests}
		r.Seen = []string{fmt.Sprintf("requests in the last 10s: LIST %d", requests)}
	}
	a := usage.Combine(v1, 10*time.Second, r)
	return &a
}

func notInUse() *usage.Assessment { return assessed(0) }

// recentWriter and oldWriter are the managedFields source's reports on v1:
// my-operator wrote through it two minutes ago, inside a day of history,
// or two days ago.
func recentWriter() *usage.SourceReport {
	r := usage.AssessManagedFields(v1, []managedfields.Writer{{Manager: "my-operator", Operation: "Apply", Objects: 1, Last: t0.Add(-2 * time.Minute)}}, 4, nil, 15*time.Second, 24*time.Hour, t0)
	return &r
}

func unknownWriters() *usage.SourceReport {
	r := usage.AssessManagedFields(v1, nil, 0, errors.New("the server was unable to return a response in the time allotted"), 15*time.Second, 24*time.Hour, t0)
	return &r
}

func oldWriter() *usage.SourceReport {
	r := usage.AssessManagedFields(v1, []managedfields.Writer{{Manager: "my-operator", Operation: "Apply", Objects: 1, Last: t0.Add(-48 * time.Hour)}}, 4, nil, 15*time.Second, 24*time.Hour, t0)
	return &r
}
func none() *[]ObjectRef { return &[]ObjectRef{} }

// refsTo is a complete inventory with n owner references to v1.
func refsTo(n int) *references.Inventory {
	inv := noRefs()
	for i := range n {
		inv.Dependents = append(inv.Dependents, references.Dependent{Resource: references.Resource{Version: "v1", Resource: "configmaps"}, Namespace: "a", Name: fmt.Sprint("cm-", i)})
	}
	return inv
}

// noRefs is a complete inventory in which no owner reference names v1.
func noRefs() *references.Inventory { return &references.Inventory{Resources: 40, Objects: 900} }

// statuses renders a plan as "1=done 2=to do …".
func statuses(steps []Step) string {
	var out []string
	for _, s := range steps {
		out = append(out, string(rune('0'+s.Number))+"="+string(s.Status))
	}
	return strings.Join(out, " ")
}

func TestPlan(t *testing.T) {
	s3 := func() *apiextensionsv1.CustomResourceDefinition {
		return crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD()
	}
	s2 := crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").CRD()
	s1 := crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage).Version("v2", crdtest.Served).Stored("v1").CRD()
	s4 := func() *apiextensionsv1.CustomResourceDefinition {
		return crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD()
	}
	s5 := crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1").Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD()
	s6 := crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD()
	lost := crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").CRD()
	hook := crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1").Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").Webhook(nil).CRD()
	three := crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1").Version("v2", crdtest.Served, crdtest.Storage).Version("v3", crdtest.Served).Stored("v2").Webhook(nil).CRD()
	inUse := assessed(3)
	unknown := assessed(0, "10.0.0.2:6443: its /metrics cannot be read: forbidden")
	stale := &[]ObjectRef{{Namespace: "a", Name: "one"}, {Namespace: "b", Name: "two"}, {Namespace: "c", Name: "three"}, {Namespace: "d", Name: "four"}}

	for _, tc := range []struct {
		name  string
		crd   *apiextensionsv1.CustomResourceDefinition
		facts Facts
		want  string
		// first is the first step to take, 0 when complete; in is text
		// expected in that step's message or command.
		first int
		in    string
	}{
		{"S3, nothing measured yet", s3(), Facts{}, "1=to do 2=to do 3=to do 4=done 5=done 6=to do 7=to do 8=info", 1, "measure"},
		{"S3, not in use, no stale entries", s3(), Facts{References: noRefs(), Usage: notInUse(), StaleManagedFields: none()}, "1=done 2=done 3=to do 4=done 5=done 6=done 7=to do 8=info", 3, "served: false"},
		{"S3, in use", s3(), Facts{References: noRefs(), Usage: inUse, StaleManagedFields: none()}, "1=blocked 2=done 3=to do 4=done 5=done 6=done 7=blocked 8=info", 1, "clients still use stable.example.com/v1 crontabs (seen by: /metrics of 2 API server instance(s))"},
		{"S3, an instance not read", s3(), Facts{References: noRefs(), Usage: unknown}, "1=blocked 2=done 3=to do 4=done 5=done 6=to do 7=blocked 8=info", 1, "is unknown: /metrics of 2 API server instance(s): 10.0.0.2:6443: its /metrics cannot be read: forbidden"},
		{"S3, usage check skipped", s3(), Facts{References: noRefs(), SkipUsage: true, StaleManagedFields: none()}, "1=skipped 2=done 3=to do 4=done 5=done 6=done 7=to do 8=info", 3, ""},
		{"S2 without --migrate", s2, Facts{References: noRefs(), Usage: notInUse(), StaleManagedFields: none()}, "1=done 2=done 3=to do 4=done 5=blocked 6=done 7=blocked 8=info", 5, "--migrate"},
		{"S2 with --migrate", s2, Facts{References: noRefs(), Usage: notInUse(), StaleManagedFields: none(), Migrate: true}, "1=done 2=done 3=to do 4=done 5=to do 6=done 7=to do 8=info", 3, ""},
		{"S1: old is the storage version", s1, Facts{References: noRefs(), Usage: notInUse(), StaleManagedFields: none(), Migrate: true}, "1=done 2=done 3=blocked 4=blocked 5=blocked 6=done 7=blocked 8=info", 3, "promote-storage crontabs.stable.example.com v2"},
		{"S5, stale managedFields", s5, Facts{References: noRefs(), StaleManagedFields: stale}, "1=done 2=done 3=done 4=done 5=done 6=blocked 7=blocked 8=info", 6, "a/one, b/two, c/three and 1 more"},
		// The command to run keeps the flags this run was given (a pasted
		// --migrate run: line used to drop --migrate, and the next run
		// stopped at the migration again).
		{"S5, stale managedFields, given --migrate and --skip-usage-check", s5, Facts{References: noRefs(), StaleManagedFields: stale, Migrate: true, SkipUsage: true}, "1=done 2=done 3=done 4=done 5=done 6=blocked 7=blocked 8=info", 6,
			"kubectl crdversion retire crontabs.stable.example.com v1 --migrate --clean-managed-fields --skip-usage-check"},
		// Issue 33: and the usage check's flags, so that a pasted re-run
		// looks at the same sources over the same spans (a window of 1m
		// typed as such, repeated --audit-log files each).
		{"S3, in use, given usage flags", s3(), Facts{References: noRefs(), Usage: inUse, StaleManagedFields: none(),
			Carried: []lifecycle.Flag{{Name: "usage-window", Value: "1m"}, {Name: "usage-history", Value: "0"}, {Name: "audit-log", Value: "a.log"}, {Name: "audit-log", Value: "b.log"}}},
			"1=blocked 2=done 3=to do 4=done 5=done 6=done 7=blocked 8=info", 1,
			"kubectl crdversion retire crontabs.stable.example.com v1 --usage-window 1m --usage-history 0 --audit-log a.log --audit-log b.log"},
		// Trial: and --own-priority-level, after "=" (its value is
		// optional: "--own-priority-level 3" is the default and an
		// argument).
		{"S2 without --migrate, given --own-priority-level", s2, Facts{References: noRefs(), Usage: notInUse(), StaleManagedFields: none(),
			Carried: []lifecycle.Flag{{Name: "own-priority-level", Value: "3", Joined: true}}},
			"1=done 2=done 3=to do 4=done 5=blocked 6=done 7=blocked 8=info", 5,
			"kubectl crdversion retire crontabs.stable.example.com v1 --migrate --own-priority-level=3"},
		{"S5, stale managedFields, clean", s5, Facts{References: noRefs(), StaleManagedFields: stale, CleanManagedFields: true}, "1=done 2=done 3=done 4=done 5=done 6=to do 7=to do 8=info", 6, "4 object(s)"},
		// Issue 33: a manager that wrote through v1 inside the window or
		// the history span is a client; its entries are not relabelled,
		// unless the usage check is skipped.
		{"S5, stale managedFields, clean, a recent writer", s5, Facts{References: noRefs(), StaleManagedFields: stale, CleanManagedFields: true, Writers: recentWriter()}, "1=done 2=done 3=done 4=done 5=done 6=blocked 7=blocked 8=info", 6,
			"manager my-operator (Apply) wrote through stable.example.com/v1 inside the last 24h0m0s (the usage window and --usage-history): a client, not a leftover; its entries are not rewritten"},
		{"S5, stale managedFields, clean, the writers not known", s5, Facts{References: noRefs(), StaleManagedFields: stale, CleanManagedFields: true, Writers: unknownWriters()}, "1=done 2=done 3=done 4=done 5=done 6=blocked 7=blocked 8=info", 6,
			"whether a field manager still writes through stable.example.com/v1 is unknown (the objects of crontabs.stable.example.com cannot be listed: the server was unable to return a response in the time allotted)"},
		{"S5, stale managedFields, clean, an old writer", s5, Facts{References: noRefs(), StaleManagedFields: stale, CleanManagedFields: true, Writers: oldWriter()}, "1=done 2=done 3=done 4=done 5=done 6=to do 7=to do 8=info", 6, "4 object(s)"},
		{"S5, stale managedFields, clean, a recent writer, usage check skipped", s5, Facts{References: noRefs(), StaleManagedFields: stale, CleanManagedFields: true, SkipUsage: true, Writers: recentWriter()}, "1=done 2=done 3=done 4=done 5=done 6=to do 7=to do 8=info", 6, "4 object(s)"},
		{"S5, clean", s5, Facts{References: noRefs(), StaleManagedFields: none()}, "1=done 2=done 3=done 4=done 5=done 6=done 7=to do 8=info", 7, "remove v1"},
		{"S6: already retired", s6, Facts{}, "1=done 2=done 3=done 4=done 5=done 6=done 7=done 8=info", 0, ""},
		{"removed while still stored", lost, Facts{}, "1=done 2=done 3=done 4=done 5=blocked 6=done 7=done 8=info", 5, "add-version crontabs.stable.example.com v1 --preserve-unknown-fields --served=false"},
		{"webhook, last other version", hook, Facts{References: noRefs(), StaleManagedFields: none()}, "1=done 2=done 3=done 4=done 5=done 6=done 7=to do 8=info", 7, ""},
		{"webhook, versions left", three, Facts{References: noRefs(), StaleManagedFields: none()}, "1=done 2=done 3=done 4=done 5=done 6=done 7=to do 8=info", 7, ""},
		{"S4, the API server refuses the removal", s4(), Facts{References: noRefs(), Usage: notInUse(), StaleManagedFields: none(), Writes: map[StepID]WriteCheck{Unserved: {}, Removed: {Refused: "policy: no removal"}}},
			"1=done 2=done 3=to do 4=done 5=done 6=done 7=blocked 8=info", 7, "the API server refuses the removal of v1 (server-side dry run of the write): policy: no removal"},
		{"S4, the API server refuses the unserve", s4(), Facts{References: noRefs(), Usage: notInUse(), StaleManagedFields: none(), Writes: map[StepID]WriteCheck{Unserved: {Refused: "policy: stay served"}}},
			"1=done 2=done 3=blocked 4=done 5=done 6=done 7=blocked 8=info", 3, "the API server refuses to unserve v1"},
		{"S2 with --migrate, the removal answered in part", s2, Facts{References: noRefs(), Usage: notInUse(), StaleManagedFields: none(), Migrate: true,
			Writes: map[StepID]WriteCheck{Unserved: {}, Removed: {Refused: "storedVersions", Deferred: true}}, MigrationCheck: &MigrationCheck{Total: 3}},
			"1=done 2=done 3=to do 4=done 5=to do 6=done 7=to do 8=info", 3, ""},
		{"S2 with --migrate, the migration refused", s2, Facts{References: noRefs(), Usage: notInUse(), StaleManagedFields: none(), Migrate: true,
			MigrationCheck: &MigrationCheck{Total: 3, Failed: 1, Failures: []ObjectFailure{{Object: "default/s1", Message: "sealed"}}}},
			"1=done 2=done 3=to do 4=done 5=blocked 6=done 7=blocked 8=info", 5, "refuses the migration's rewrite of 1 of 3 object(s) at v2 (server-side dry run; default/s1: sealed)"},
		{"S2 with --migrate, the migration's dry run failed", s2, Facts{References: noRefs(), Usage: notInUse(), StaleManagedFields: none(), Migrate: true, MigrationCheck: &MigrationCheck{Error: "the storage version is not served"}},
			"1=done 2=done 3=to do 4=done 5=blocked 6=done 7=blocked 8=info", 5, "could not go through the objects: the storage version is not served"},
		// Issue 28: owner references to v1, found, to rewrite, or while
		// v1 is still the storage version.
		{"S3, owner references", s3(), Facts{References: refsTo(2), Usage: notInUse(), StaleManagedFields: none()}, "1=done 2=blocked 3=to do 4=done 5=done 6=done 7=blocked 8=info", 2,
			"kubectl crdversion retire crontabs.stable.example.com v1 --repair-references"},
		{"S3, owner references, --repair-references", s3(), Facts{References: refsTo(2), RepairReferences: true, Usage: notInUse(), StaleManagedFields: none()},
			"1=done 2=to do 3=to do 4=done 5=done 6=done 7=to do 8=info", 2, "rewrite 2 owner references from stable.example.com/v1 to stable.example.com/v2"},
		{"S1, owner references", s1, Facts{References: refsTo(1), RepairReferences: true, Usage: notInUse(), StaleManagedFields: none(), Migrate: true},
			"1=done 2=blocked 3=blocked 4=blocked 5=blocked 6=done 7=blocked 8=info", 2, "promote-storage crontabs.stable.example.com v2"},
		// An Equivalent webhook rule on v1 only sees requests while v1 is
		// in spec.versions: retiring v1 leaves it blind. One that also
		// lists v2 does not block; one that cannot be read blocks as
		// unknown.
		{"S3, an admission rule only on v1", s3(), Facts{References: noRefs(), Usage: notInUse(), StaleManagedFields: none(), AdmissionRules: []references.AdmissionRule{
			{Kind: "ValidatingWebhookConfiguration", Name: "policy", Webhook: "check.example.com", MatchPolicy: "Equivalent", APIGroups: []string{"stable.example.com"}, APIVersions: []string{"v1"}, Resources: []string{"crontabs"}},
			{Kind: "ValidatingAdmissionPolicy", Name: "both", MatchPolicy: "Equivalent", APIGroups: []string{"stable.example.com"}, APIVersions: []string{"v1", "v2"}, Resources: []string{"crontabs"}}}},
			"1=done 2=blocked 3=to do 4=done 5=done 6=done 7=blocked 8=info", 2, "1 admission rule of crontabs.stable.example.com list stable.example.com/v1 and no version that stays"},
		{"S3, admission rules unknown", s3(), Facts{References: noRefs(), Usage: notInUse(), StaleManagedFields: none(), AdmissionErr: errors.New("forbidden")},
			"1=done 2=blocked 3=to do 4=done 5=done 6=done 7=blocked 8=info", 2, "admission rules of crontabs.stable.example.com unknown: forbidden"},
		{"S3, references not measured", s3(), Facts{Usage: notInUse(), StaleManagedFields: none()}, "1=done 2=to do 3=to do 4=done 5=done 6=done 7=to do 8=info", 2, "look for owner references, scale targets and Helm release records that name stable.example.com/v1"},
		{"last served version", crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served).Version("v2", crdtest.Storage).Stored("v2").CRD(), Facts{References: noRefs(), Usage: notInUse(), StaleManagedFields: none()},
			"1=done 2=done 3=blocked 4=done 5=done 6=done 7=blocked 8=info", 3, "last served version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.crd.DeepCopy()
			if tc.facts.Objects == nil {
				// These rows are about the other steps: a CRD without
				// objects, where storedVersions without v1 is proof
				// (TestPlanStoredVersionsIsAClaim has the rest).
				zero := 0
				tc.facts.Objects = &zero
			}
			steps := Plan(tc.crd, "v1", tc.facts)
			if got := statuses(steps); got != tc.want {
				t.Errorf("plan:\n got %s\nwant %s", got, tc.want)
			}
			first := Next(steps)
			switch {
			case tc.first == 0 && first != nil:
				t.Errorf("first step %d, want none", first.Number)
			case tc.first != 0 && (first == nil || first.Number != tc.first):
				t.Errorf("first step %v, want %d", first, tc.first)
			case first != nil && !strings.Contains(first.Message+" "+first.Command, tc.in):
				t.Errorf("step %d says %q (command %q), want %q in it", first.Number, first.Message, first.Command, tc.in)
			}
			for _, s := range steps {
				// A refusal by the API server has no command: its message says why.
				if s.Status == Blocked && s.Command == "" && !strings.Contains(s.Message, "waits for step") && !strings.Contains(s.Message, "the API server refuses") && s.Number < 7 && s.ID != StorageMoved && s.ID != Migrated {
					t.Errorf("blocked step %d has no command that unblocks it: %s", s.Number, s.Message)
				}
			}
			if before.String() != tc.crd.String() {
				t.Error("Plan changed its input")
			}
		})
	}

	if got := Plan(hook, "v1", Facts{References: noRefs(), StaleManagedFields: none()})[7].Message; !strings.Contains(got, "can become None") {
		t.Errorf("webhook CRD left with one version: %q", got)
	}
	if got := Plan(three, "v1", Facts{References: noRefs(), StaleManagedFields: none()})[7].Message; !strings.Contains(got, "no longer needs to convert") {
		t.Errorf("webhook CRD left with two versions: %q", got)
	}
	if ev := Plan(s3(), "v1", Facts{References: noRefs(), Usage: inUse})[0].Evidence; len(ev) == 0 || !strings.Contains(ev[0], "LIST 3") {
		t.Errorf("in-use evidence: %q", ev)
	}
}

// TestPlanInUseWaysOut: when a field manager's write through the retired
// version is what keeps it in use, step 1 names the ways out that unserve
// names: when the entry stops counting, that cleaning managedFields is no
// way out, and --skip-usage-check.
// TestPlanStoredVersionsIsAClaim (issue 34, B24): storedVersions without
// v1 proves nothing while objects exist (a status trimmed by hand says the
// same while every object is still stored at v1, which the removal makes
// unreadable). Step 4 is done only with no object or after this run's
// migration; otherwise it needs --migrate, whose pass rewrites what is
// still stored at v1.
func TestPlanStoredVersionsIsAClaim(t *testing.T) {
	s5 := crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1").Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD()
	n := func(v int) *int { return &v }
	for _, tc := range []struct {
		name  string
		facts Facts
		want  string
		in    string
	}{
		{"not counted yet", Facts{References: noRefs(), Usage: notInUse(), StaleManagedFields: none()}, "1=done 2=done 3=done 4=done 5=to do 6=done 7=to do 8=info", "a claim: the objects are counted next"},
		{"no object", Facts{References: noRefs(), Usage: notInUse(), StaleManagedFields: none(), Objects: n(0)}, "1=done 2=done 3=done 4=done 5=done 6=done 7=to do 8=info", "no object"},
		{"objects, no --migrate", Facts{References: noRefs(), Usage: notInUse(), StaleManagedFields: none(), Objects: n(3)}, "1=done 2=done 3=done 4=done 5=blocked 6=done 7=blocked 8=info",
			"nothing proves that none of the 3 object(s) is still stored at v1"},
		{"objects, --migrate", Facts{References: noRefs(), Usage: notInUse(), StaleManagedFields: none(), Objects: n(3), Migrate: true, MigrationCheck: &MigrationCheck{Total: 3}},
			"1=done 2=done 3=done 4=done 5=to do 6=done 7=to do 8=info", "only the rewrite proves it"},
		{"objects, --migrate, the rewrite refused", Facts{References: noRefs(), Usage: notInUse(), StaleManagedFields: none(), Objects: n(3), Migrate: true,
			MigrationCheck: &MigrationCheck{Total: 3, Failed: 1, Failures: []ObjectFailure{{Object: "default/s1", Message: "sealed"}}}},
			"1=done 2=done 3=done 4=done 5=blocked 6=done 7=blocked 8=info", "refuses the migration's rewrite of 1 of 3"},
		{"migrated in this run", Facts{References: noRefs(), Usage: notInUse(), StaleManagedFields: none(), Objects: n(3), Migrate: true, MigratedInRun: true},
			"1=done 2=done 3=done 4=done 5=done 6=done 7=to do 8=info", "rewritten at v2 in this run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := Plan(s5, "v1", tc.facts)
			if got := statuses(steps); got != tc.want {
				t.Errorf("plan:\n got %s\nwant %s", got, tc.want)
			}
			if s := steps[4]; !strings.Contains(s.Message, tc.in) {
				t.Errorf("step 5 says %q, want %q in it", s.Message, tc.in)
			}
			if s := steps[4]; s.Status == Blocked && !tc.facts.Migrate && !strings.Contains(s.Command, "--migrate") {
				t.Errorf("blocked step 5 does not say to run with --migrate: %q", s.Command)
			}
		})
	}
}

func TestPlanInUseWaysOut(t *testing.T) {
	last := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	mf := usage.SourceReport{Source: usage.SourceManagedFields, Name: "managedFields of crontabs", Clients: []usage.Client{
		{Manager: "kubectl-annotate", Operation: "Update", Count: 1, Last: last, InWindow: true}}}
	a := usage.Combine(v1, 5*time.Minute, usage.SourceReport{Source: usage.SourceMetrics, Name: "/metrics of 1 API server instance(s)"}, mf)
	if a.Verdict != usage.InUse {
		t.Fatalf("verdict %s, want InUse", a.Verdict)
	}
	s3 := crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD()
	step := Plan(s3, "v1", Facts{References: noRefs(), Usage: &a, StaleManagedFields: none()})[0]
	ev := strings.Join(step.Evidence, "\n")
	for _, want := range []string{
		"way out: the managedFields entries of kubectl-annotate record writes through stable.example.com/v1 in the last 5m0s, the last at 2026-12-01T10:00:00Z",
		"a re-run after 2026-12-01T10:05:00Z", "cleaning managedFields is no way out",
		"way out: once you know by other means that no client uses stable.example.com/v1: --skip-usage-check",
	} {
		if !strings.Contains(ev, want) {
			t.Errorf("step 1 evidence lacks %q:\n%s", want, ev)
		}
	}
	if step.Status != Blocked || !strings.Contains(step.Message, "move them (and the controller) to v2, then re-run") {
		t.Errorf("step 1: %s: %s", step.Status, step.Message)
	}
}

// TestPlanUnorderedVersion (issue 17): with versions v1 (storage) and
// next, which nothing orders, retire planned removing next, which may be
// the newer API. Now step 1 is blocked until --version-order says next
// is the older, and the commands it prints repeat the order.
func TestPlanUnorderedVersion(t *testing.T) {
	c := crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage).Version("next", crdtest.Served).Stored("v1").CRD()
	steps := Plan(c, "next", Facts{References: noRefs(), Usage: notInUse(), StaleManagedFields: none()})
	if first := Next(steps); first == nil || first.Number != 1 || first.Status != Blocked || first.Command != "" ||
		!strings.Contains(first.Message, "nothing says whether next is older than the storage version v1") || !strings.Contains(first.Message, "--version-order listing next, v1, oldest first") {
		t.Errorf("first step %+v, want step 1 blocked on the order", first)
	}
	given := Facts{References: noRefs(), Usage: notInUse(), StaleManagedFields: &[]ObjectRef{{Namespace: "a", Name: "one"}}, VersionOrder: []string{"next", "v1"}}
	steps = Plan(c, "next", given)
	if got := statuses(steps); !strings.HasPrefix(got, "1=done ") {
		t.Errorf("with --version-order next,v1: %s", got)
	}
	if first := Next(steps); first == nil || !strings.Contains(first.Command, "--version-order next,v1") {
		t.Errorf("with --version-order, the printed command drops it: %+v", first)
	}
	// A Kubernetes-form pair needs no order.
	if got := statuses(Plan(crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD(), "v1", Facts{References: noRefs(), Usage: notInUse(), StaleManagedFields: none()})); !strings.HasPrefix(got, "1=done ") {
		t.Errorf("v1 beside storage v2: %s", got)
	}
}
