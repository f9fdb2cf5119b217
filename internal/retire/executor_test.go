package retire

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/access"
	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/references"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// fakeCluster is a Cluster for the executor's control flow: a live CRD
// whose resourceVersion counts the writes, and a log of every call.
type fakeCluster struct {
	live *apiextensionsv1.CustomResourceDefinition
	// calls logs every call, e.g. "update", "dry-run update", "migrate".
	calls []string

	usage *usage.Assessment
	// writers answers RecentWriters (the managedFields writers of OLD).
	writers *usage.SourceReport
	stale   []ObjectRef
	// staleErr answers the list of the objects' managedFields.
	staleErr error
	// missing are the permissions the user lacks.
	missing []access.Need
	// refuse, when set, answers a CRD write (dry run or not) with an error.
	refuse func(crd *apiextensionsv1.CustomResourceDefinition, dryRun bool) error
	// migrationDryRun is the dry run's outcome (default: all accepted);
	// migrationFails makes the real migration fail for one object.
	migrationDryRun *Migration
	migrationFails  bool
	// ineffective: CRD writes are answered but change nothing.
	ineffective bool
	// objects answers CountObjects.
	objects int
	// dependents answer OwnerReferences (rewritten ones are removed);
	// unseen makes the inventory incomplete; refuseRefs refuses the
	// rewrite of every reference, dry run or not.
	dependents []references.Dependent
	unseen     []references.Unseen
	refuseRefs string
}

func newFake(crd *apiextensionsv1.CustomResourceDefinition) *fakeCluster {
	live := crd.DeepCopy()
	live.ResourceVersion = "1"
	return &fakeCluster{live: live, usage: notInUse(), objects: 3}
}

func (f *fakeCluster) log(call string) { f.calls = append(f.calls, call) }

// count is how many calls were call.
func (f *fakeCluster) count(call string) int {
	n := 0
	for _, c := range f.calls {
		if c == call {
			n++
		}
	}
	return n
}

// writes are the calls that change the cluster.
func (f *fakeCluster) writes() []string {
	return slices.DeleteFunc(slices.Clone(f.calls), func(c string) bool {
		return !slices.Contains([]string{"update", "migrate", "clean managedFields", "rewrite owner references"}, c)
	})
}

func (f *fakeCluster) bump() {
	rv, _ := strconv.Atoi(f.live.ResourceVersion)
	f.live.ResourceVersion = strconv.Itoa(rv + 1)
}

func (f *fakeCluster) GetCRD(_ context.Context, _ string) (*apiextensionsv1.CustomResourceDefinition, error) {
	f.log("get")
	return f.live.DeepCopy(), nil
}

func (f *fakeCluster) UpdateCRD(_ context.Context, crd *apiextensionsv1.CustomResourceDefinition, d lifecycle.DryRun) (*apiextensionsv1.CustomResourceDefinition, error) {
	dryRun := d == lifecycle.DryRunServer
	if dryRun {
		f.log("dry-run update")
	} else {
		f.log("update")
	}
	if crd.ResourceVersion != f.live.ResourceVersion {
		return nil, fmt.Errorf("conflict: written at %s, live %s", crd.ResourceVersion, f.live.ResourceVersion)
	}
	if f.refuse != nil {
		if err := f.refuse(crd, dryRun); err != nil {
			return nil, err
		}
	}
	if dryRun || f.ineffective {
		return f.live.DeepCopy(), nil
	}
	status := f.live.Status
	f.live = crd.DeepCopy()
	f.live.Status = status
	f.bump()
	return f.live.DeepCopy(), nil
}

func (f *fakeCluster) WaitServed(context.Context, string) error { return nil }

func (f *fakeCluster) ClientUsage(context.Context, *apiextensionsv1.CustomResourceDefinition, string) (*usage.Assessment, error) {
	f.log("usage")
	return f.usage, nil
}

func (f *fakeCluster) RecentWriters(context.Context, *apiextensionsv1.CustomResourceDefinition, string) (*usage.SourceReport, error) {
	f.log("managedFields writers")
	return f.writers, nil
}

func (f *fakeCluster) CountObjects(context.Context, *apiextensionsv1.CustomResourceDefinition) (int, error) {
	f.log("count")
	return f.objects, nil
}

func (f *fakeCluster) StaleManagedFields(context.Context, *apiextensionsv1.CustomResourceDefinition, string) ([]ObjectRef, error) {
	f.log("list managedFields")
	return slices.Clone(f.stale), f.staleErr
}

func (f *fakeCluster) CleanManagedFields(_ context.Context, _ *apiextensionsv1.CustomResourceDefinition, _ string, objs []ObjectRef) (*ManagedFieldsCleanup, error) {
	f.log("clean managedFields")
	f.stale = nil
	return &ManagedFieldsCleanup{Rewritten: len(objs), Relabeled: len(objs)}, nil
}

func (f *fakeCluster) CRDAt(context.Context, string, string) (*apiextensionsv1.CustomResourceDefinition, error) {
	return nil, nil
}

func (f *fakeCluster) AdmissionRules(context.Context) ([]references.AdmissionRule, error) {
	return nil, nil
}

func (f *fakeCluster) FindReferences(context.Context, *apiextensionsv1.CustomResourceDefinition, string) (*references.Inventory, error) {
	f.log("find owner references")
	return &references.Inventory{Dependents: slices.Clone(f.dependents), Unseen: f.unseen, Resources: 40, Objects: 900}, nil
}

func (f *fakeCluster) RepairReferences(_ context.Context, deps []references.Dependent, to string, d lifecycle.DryRun) ([]references.Repair, error) {
	call := "rewrite owner references"
	if d == lifecycle.DryRunServer {
		call = "dry-run " + call
	}
	f.log(call)
	var out []references.Repair
	for _, dep := range deps {
		r := references.Repair{Dependent: dep, To: to, Outcome: references.Rewritten}
		if f.refuseRefs != "" {
			r.Outcome, r.Message = references.Failed, f.refuseRefs
		}
		out = append(out, r)
	}
	if d == lifecycle.DryRunNone && f.refuseRefs == "" {
		f.dependents = nil
	}
	return out, nil
}

func (f *fakeCluster) Missing(context.Context, []access.Need) []access.Need {
	f.log("access review")
	return f.missing
}

func (f *fakeCluster) MigrateNeeds(crd *apiextensionsv1.CustomResourceDefinition, _ string) []access.Need {
	return access.Migrate(crd, true)
}

func (f *fakeCluster) Migrate(_ context.Context, _ *apiextensionsv1.CustomResourceDefinition, _ string, d lifecycle.DryRun) (*Migration, error) {
	dryRun := d == lifecycle.DryRunServer
	storage := lifecycle.StorageVersion(f.live)
	if dryRun {
		f.log("dry-run migrate")
		if f.migrationDryRun != nil {
			return f.migrationDryRun, nil
		}
		return &Migration{StorageVersion: storage, Total: 3, Current: 3, Complete: true, StoredBefore: f.live.Status.StoredVersions, StoredAfter: f.live.Status.StoredVersions}, nil
	}
	f.log("migrate")
	m := &Migration{StorageVersion: storage, Total: 3, Rewritten: 3, Complete: true, StoredBefore: slices.Clone(f.live.Status.StoredVersions)}
	if f.migrationFails {
		m.Rewritten, m.Failed, m.Reason = 2, 1, "1 object(s) failed"
		m.Failures = []ObjectFailure{{Object: "default/s1", Message: "a sealed object cannot be updated"}}
	} else {
		f.live.Status.StoredVersions = []string{storage}
		f.bump()
		m.Trimmed = true
	}
	m.StoredAfter = slices.Clone(f.live.Status.StoredVersions)
	return m, nil
}

// execute runs the executor on the fake's CRD, retiring v1, and returns
// the events it sent.
func execute(t *testing.T, f *fakeCluster, opts Options) (*Result, []Event, error) {
	t.Helper()
	var events []Event
	e := &Executor{Cluster: f, Events: func(ev Event) { events = append(events, ev) }}
	res, err := e.Run(context.Background(), f.live.DeepCopy(), "v1", opts)
	if res == nil {
		t.Fatal("Run returned no Result")
	}
	return res, events, err
}

func s2() *apiextensionsv1.CustomResourceDefinition {
	return crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").CRD()
}

func s4() *apiextensionsv1.CustomResourceDefinition {
	return crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD()
}

var all = Options{Migrate: true, CleanManagedFields: true}

// stepsTaken are the step numbers of the Taking events.
func stepsTaken(events []Event) []int {
	var out []int
	for _, e := range events {
		if e.Kind == EventTaking {
			out = append(out, e.Step.Number)
		}
	}
	return out
}

func TestRunTakesEveryStepAndPlansAgainAfterEachWrite(t *testing.T) {
	f := newFake(s2())
	f.stale = []ObjectRef{{Namespace: "default", Name: "a"}}
	res, events, err := execute(t, f, all)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != OutcomeComplete || !slices.Equal(res.Taken, []StepID{Unserved, Migrated, ManagedFieldsClean, Removed}) {
		t.Errorf("outcome %s, taken %v", res.Outcome, res.Taken)
	}
	if got, want := f.writes(), []string{"update", "migrate", "clean managedFields", "update"}; !slices.Equal(got, want) {
		t.Errorf("writes %v, want %v", got, want)
	}
	if got := stepsTaken(events); !slices.Equal(got, []int{3, 5, 6, 7}) {
		t.Errorf("steps taken in order %v", got)
	}
	for _, e := range events {
		if e.Kind == EventTaking && e.Total != len(order) {
			t.Errorf("step %d of %d, want of %d", e.Step.Number, e.Total, len(order))
		}
	}
	// After every write the CRD is read again and the next step planned on
	// what was read: each write carries the resourceVersion of the write
	// before (the fake refuses a stale one).
	for i, c := range f.calls {
		if (c == "update" || c == "migrate") && i+1 < len(f.calls) && !slices.Contains(f.calls[i+1:], "get") {
			t.Errorf("no read after write %d (%s): %v", i, c, f.calls)
		}
	}
	if lifecycle.FindVersion(f.live, "v1") != nil || !strings.Contains(f.live.Annotations[lifecycle.RetiredVersionsAnnotation], "v1") {
		t.Errorf("v1 was not removed: %v", lifecycle.VersionNames(f.live))
	}
	// The report records what each step checked and did.
	byID := map[StepID]Step{}
	for _, s := range res.Steps {
		byID[s.ID] = s
	}
	for id, want := range map[StepID]string{Unserved: "set served: false on v1 (resourceVersion 1 → 2)", Migrated: "migrated 3 object(s) at v2", Removed: "removed v1 from spec.versions"} {
		if did := strings.Join(byID[id].Did, "; "); !strings.Contains(did, want) {
			t.Errorf("step %s did %q, want %q", id, did, want)
		}
	}
	for id, want := range map[StepID]string{ClientsMoved: "client usage: no client of stable.example.com/v1 crontabs seen", Unserved: "the API server accepts the write", Migrated: "server-side dry run of the migration: 3 object(s), 0 refused", StorageMoved: "done: the storage version is v2"} {
		if checked := strings.Join(byID[id].Checked, "; "); !strings.Contains(checked, want) {
			t.Errorf("step %s checked %q, want %q", id, checked, want)
		}
	}
}

func TestRunMeasuresClientUsageOnce(t *testing.T) {
	f := newFake(s2())
	if _, _, err := execute(t, f, all); err != nil {
		t.Fatal(err)
	}
	if n := f.count("usage"); n != 1 {
		t.Errorf("client usage measured %d times, want once: %v", n, f.calls)
	}
	if n := f.count("list managedFields"); n != 1 {
		t.Errorf("managedFields listed %d times, want once (no clean-up to look after): %v", n, f.calls)
	}
}

func TestRunBlockedChangesNothing(t *testing.T) {
	inUse := assessed(3)
	for _, tc := range []struct {
		name  string
		crd   *apiextensionsv1.CustomResourceDefinition
		setup func(f *fakeCluster)
		step  int
		want  string
		// measured: client usage was measured before the refusal.
		measured bool
	}{
		{"clients in use", s2(), func(f *fakeCluster) { f.usage = inUse }, 1, "clients still use stable.example.com/v1 crontabs", true},
		{"the storage version, from the CRD alone", crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Storage).Version("v2", crdtest.Served).Stored("v1").CRD(), nil, 3, "v1 is the storage version", false},
		{"migration refused by the API server", s2(), func(f *fakeCluster) {
			f.migrationDryRun = &Migration{Total: 3, Failed: 1, Complete: true, Failures: []ObjectFailure{{Object: "default/s1", Message: "a sealed object cannot be updated"}}}
		}, 5, "a sealed object cannot be updated", true},
		{"unserve refused by the API server", s2(), func(f *fakeCluster) {
			f.refuse = func(crd *apiextensionsv1.CustomResourceDefinition, _ bool) error {
				if v := lifecycle.FindVersion(crd, "v1"); v != nil && !v.Served {
					return &WriteRefusedError{Message: "policy: versions stay served"}
				}
				return nil
			}
		}, 3, "policy: versions stay served", true},
		{"removal refused by the API server", s4(), func(f *fakeCluster) {
			f.refuse = func(crd *apiextensionsv1.CustomResourceDefinition, _ bool) error {
				if lifecycle.FindVersion(crd, "v1") == nil {
					return &WriteRefusedError{Message: "policy: versions are never removed", Fields: []string{"spec.versions"}}
				}
				return nil
			}
		}, 7, "policy: versions are never removed", true},
		// Issue 33: v1 is no longer served, so no request is counted, but
		// my-operator's entry records a write through it two minutes back:
		// a client, whose entries the clean-up would relabel.
		{"a recent writer of an unserved version", crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1").Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD(), func(f *fakeCluster) {
			f.stale, f.writers = []ObjectRef{{Namespace: "default", Name: "a"}}, recentWriter()
		}, 6, "manager my-operator (Apply) wrote through stable.example.com/v1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(tc.crd)
			if tc.setup != nil {
				tc.setup(f)
			}
			res, events, err := execute(t, f, all)
			var blocked *BlockedError
			if !errors.As(err, &blocked) || blocked.Step.Number != tc.step || !strings.Contains(blocked.Step.Message, tc.want) || !strings.Contains(err.Error(), "nothing was changed") {
				t.Fatalf("err = %v, want step %d blocked with %q", err, tc.step, tc.want)
			}
			if len(err.Error()) > lifecycle.MaxErrorLine {
				t.Errorf("error line of %d characters: %s", len(err.Error()), err)
			}
			if w := f.writes(); len(w) > 0 || f.live.ResourceVersion != "1" {
				t.Errorf("a blocked run wrote: %v", w)
			}
			if res.Outcome != OutcomeBlocked || len(res.Taken) > 0 || len(stepsTaken(events)) > 0 {
				t.Errorf("outcome %s, taken %v", res.Outcome, res.Taken)
			}
			if got := f.count("usage") > 0; got != tc.measured {
				t.Errorf("client usage measured: %v, want %v (%v)", got, tc.measured, f.calls)
			}
			if events[len(events)-1].Kind != EventPlan {
				t.Errorf("the plan was not reported last: %v", events[len(events)-1].Kind)
			}
		})
	}
}

// TestRunForbiddenListIsARefusal: a managedFields list the API server
// forbids refuses the run before any write, with a short error line and the
// API server's answer as its detail.
func TestRunForbiddenListIsARefusal(t *testing.T) {
	f := newFake(s2())
	f.staleErr = apierrors.NewForbidden(schema.GroupResource{Group: "stable.example.com", Resource: "crontabs"}, "", errors.New(`User "bob" cannot list resource "crontabs"`))
	_, _, err := execute(t, f, all)
	var refused *lifecycle.RefusalError
	if !errors.As(err, &refused) || !apierrors.IsForbidden(err) || !strings.Contains(strings.Join(refused.DetailLines(), "\n"), `User "bob" cannot list`) {
		t.Fatalf("err = %v, want a refusal with the API server's answer", err)
	}
	if want := "refusing to retire v1 of crontabs.stable.example.com, nothing was changed: listing its objects to check their managedFields is forbidden; grant list on crontabs.stable.example.com"; err.Error() != want {
		t.Errorf("error line:\n%s\nwant:\n%s", err, want)
	}
	if w := f.writes(); len(w) > 0 {
		t.Errorf("wrote: %v", w)
	}
}

func TestRunPermissionRefusalBeforeAnyWrite(t *testing.T) {
	f := newFake(s2())
	f.missing = []access.Need{{Verb: "patch", Group: "stable.example.com", Resource: "crontabs", Why: "to rewrite the objects"}}
	_, _, err := execute(t, f, all)
	var missing *access.MissingError
	if !errors.As(err, &missing) || !strings.Contains(strings.Join(missing.Refusal().DetailLines(), "\n"), "patch crontabs.stable.example.com") {
		t.Fatalf("err = %v, want the missing permission", err)
	}
	for _, c := range f.calls {
		if c != "usage" && c != "find owner references" && c != "list managedFields" && c != "access review" {
			t.Errorf("%s before the permission refusal: %v", c, f.calls)
		}
	}
}

func TestRunStopsAfterTwoAttempts(t *testing.T) {
	f := newFake(s4())
	f.ineffective = true // the API server answers, but unserving never shows
	res, _, err := execute(t, f, all)
	var failed *StepError
	if !errors.As(err, &failed) || failed.Step.ID != Unserved || !strings.Contains(printed(t, err), "did not take effect after two attempts") {
		t.Fatalf("err = %v, want step 3 to fail after two attempts", err)
	}
	if n := f.count("update"); n != 2 {
		t.Errorf("%d attempts to unserve, want 2: %v", n, f.calls)
	}
	if res.Outcome != OutcomeInterrupted {
		t.Errorf("outcome %s", res.Outcome)
	}
}

func TestRunDryRunPlansOnly(t *testing.T) {
	for _, tc := range []struct {
		dryRun lifecycle.DryRun
		// asked are the server-side dry runs sent.
		asked []string
	}{
		{lifecycle.DryRunClient, nil},
		{lifecycle.DryRunServer, []string{"dry-run update", "dry-run update", "dry-run migrate"}},
	} {
		f := newFake(s2())
		opts := all
		opts.DryRun = tc.dryRun
		res, events, err := execute(t, f, opts)
		if err != nil || res.Outcome != OutcomePlanned {
			t.Fatalf("dry run %d: err %v, outcome %s", tc.dryRun, err, res.Outcome)
		}
		if w := f.writes(); len(w) > 0 || len(stepsTaken(events)) > 0 {
			t.Errorf("dry run %d wrote %v", tc.dryRun, w)
		}
		asked := slices.DeleteFunc(slices.Clone(f.calls), func(c string) bool { return !strings.HasPrefix(c, "dry-run") })
		if !slices.Equal(asked, tc.asked) {
			t.Errorf("dry run %d asked %v, want %v", tc.dryRun, asked, tc.asked)
		}
		if f.count("access review") != 0 {
			t.Errorf("dry run %d reviewed permissions", tc.dryRun)
		}
		if tc.dryRun == lifecycle.DryRunServer {
			if ev := strings.Join(res.Steps[2].Evidence, " "); !strings.Contains(ev, "the API server accepts the write") {
				t.Errorf("the server dry run's answer is not in the plan: %q", ev)
			}
		}
	}
}

// With objects still stored at v1 the API server can answer for the
// removal only after the migration: a refusal then stops the run after
// steps 2 and 4, and the error and the report say so, with the undo.
func TestRunRemovalRefusedAfterTheMigration(t *testing.T) {
	f := newFake(s2())
	f.refuse = func(crd *apiextensionsv1.CustomResourceDefinition, _ bool) error {
		if lifecycle.FindVersion(crd, "v1") != nil {
			return nil
		}
		if slices.Contains(f.live.Status.StoredVersions, "v1") {
			return &WriteRefusedError{Message: "status.storedVersions[0]: Invalid value: \"v1\": missing from spec.versions", Fields: []string{"status.storedVersions[0]"}}
		}
		return &WriteRefusedError{Message: "policy: versions are never removed"}
	}
	opts := all
	opts.Global = []lifecycle.Flag{{Name: "context", Value: "east"}}
	res, _, err := execute(t, f, opts)
	var blocked *BlockedError
	if !errors.As(err, &blocked) || blocked.Step.ID != Removed {
		t.Fatalf("err = %v, want step 7 blocked", err)
	}
	if !strings.Contains(blocked.Step.Message, "policy: versions are never removed") || !strings.Contains(err.Error(), "stopped at step 7, blocked, after taking the steps listed above") {
		t.Errorf("error %q, step message %q", err, blocked.Step.Message)
	}
	details := strings.Join(blocked.DetailLines(), "\n")
	for _, want := range []string{"step 3 (v1 unserved); to undo it: kubectl crdversion --context east serve crontabs.stable.example.com v1", "step 5 (objects migrated"} {
		if !strings.Contains(details, want) {
			t.Errorf("details %q lack %q", details, want)
		}
	}
	if got := f.writes(); !slices.Equal(got, []string{"update", "migrate"}) {
		t.Errorf("writes %v", got)
	}
	if s := res.Steps[2]; s.UndoCommand != "kubectl crdversion --context east serve crontabs.stable.example.com v1" {
		t.Errorf("step 3 in the report: undo %q", s.UndoCommand)
	}
	if checked := strings.Join(res.Steps[6].Checked, "; "); !strings.Contains(checked, "checked the write only in part") || !strings.Contains(checked, "policy: versions are never removed") {
		t.Errorf("step 7 checked %q", checked)
	}
}

// B4: a migration that fails after v1 was unserved says that v1 was
// unserved, and how to serve it again.
func TestRunMigrationFailureNamesTheStepsTaken(t *testing.T) {
	f := newFake(s2())
	f.migrationFails = true
	res, events, err := execute(t, f, all)
	var failed *StepError
	if !errors.As(err, &failed) || failed.Step.ID != Migrated {
		t.Fatalf("err = %v, want step 5 failed", err)
	}
	for _, want := range []string{"the migration of crontabs.stable.example.com did not finish (1 failed", "re-run kubectl crdversion retire crontabs.stable.example.com v1 --migrate --clean-managed-fields",
		"Step 5 (", "This run took:\n  - step 3 (v1 unserved); to undo it: kubectl crdversion serve crontabs.stable.example.com v1"} {
		if out := printed(t, err); !strings.Contains(out, want) {
			t.Errorf("printed:\n%s\nlacks %q", out, want)
		}
	}
	if res.Outcome != OutcomeInterrupted || !slices.Equal(res.Taken, []StepID{Unserved}) || res.Migration == nil {
		t.Errorf("outcome %s, taken %v, migration %v", res.Outcome, res.Taken, res.Migration)
	}
	if !slices.ContainsFunc(events, func(e Event) bool { return e.Kind == EventMigrated }) {
		t.Error("the migration's outcome was not reported")
	}
}

// printed is err as the CLI prints it, its details above its error line,
// which must be at most lifecycle.MaxErrorLine long.
func printed(t *testing.T, err error) string {
	t.Helper()
	var lines []string
	var d interface{ DetailLines() []string }
	if errors.As(err, &d) {
		lines = d.DetailLines()
	}
	line := "error: " + err.Error()
	if len(line) > lifecycle.MaxErrorLine {
		t.Errorf("an error line of %d characters (at most %d):\n%s", len(line), lifecycle.MaxErrorLine, line)
	}
	return strings.Join(append(lines, line), "\n")
}

// Issue 28: objects whose owner references name v1 block step 2 until
// --repair-references, which rewrites them before v1 is unserved, finds
// them again, and then goes on; a server dry run sends the rewrites as
// dry runs; an inventory that could not read every resource is unknown
// and blocks; --skip-reference-check skips the step and says so.
func TestRunOwnerReferences(t *testing.T) {
	cms := references.Resource{Version: "v1", Resource: "configmaps"}
	deps := []references.Dependent{{Resource: cms, Namespace: "a", Name: "x"}, {Resource: cms, Namespace: "b", Name: "y"}}

	f := newFake(s4())
	f.dependents = deps
	_, _, err := execute(t, f, all)
	var blocked *BlockedError
	if !errors.As(err, &blocked) || blocked.Step.ID != ReferencesMoved || !strings.Contains(blocked.Step.Command, "retire crontabs.stable.example.com v1 --migrate --clean-managed-fields --repair-references") ||
		!strings.Contains(blocked.Step.Message, "2 owner references name stable.example.com/v1 CronTab") {
		t.Fatalf("err = %v (%+v), want step 2 blocked on the references", err, blocked)
	}
	if w := f.writes(); len(w) > 0 {
		t.Errorf("blocked, yet wrote %v", w)
	}
	if ev := strings.Join(blocked.Step.Evidence, "\n"); !strings.Contains(ev, "configmaps: 2 in a, b (a/x, b/y)") {
		t.Errorf("evidence %q", ev)
	}

	f = newFake(s4())
	f.dependents = deps
	opts := all
	opts.RepairReferences = true
	res, _, err := execute(t, f, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := f.writes(), []string{"rewrite owner references", "update", "migrate", "update"}; !slices.Equal(got, want) {
		t.Errorf("writes %v, want %v (the rewrite before the unserve)", got, want)
	}
	if n := f.count("find owner references"); n != 2 {
		t.Errorf("%d inventories, want 2 (before and after the rewrite): %v", n, f.calls)
	}
	if !slices.Equal(res.Taken, []StepID{ReferencesMoved, Unserved, Migrated, Removed}) {
		t.Errorf("taken %v", res.Taken)
	}
	if did := strings.Join(res.Steps[1].Did, "; "); !strings.Contains(did, "rewrote 2 reference(s) to stable.example.com/v2") {
		t.Errorf("step 2 did %q", did)
	}

	f = newFake(s4())
	f.dependents, f.refuseRefs = deps, "admission webhook denied"
	opts.DryRun = lifecycle.DryRunServer
	_, _, err = execute(t, f, opts)
	if !errors.As(err, &blocked) || blocked.Step.ID != ReferencesMoved || !strings.Contains(blocked.Step.Message, "refuses the rewrite of 2 of 2 reference(s)") ||
		f.count("dry-run rewrite owner references") != 1 {
		t.Errorf("server dry run, the rewrite refused: %v; calls %v", err, f.calls)
	}

	f = newFake(s4())
	f.unseen = []references.Unseen{{Resource: references.Resource{Version: "v1", Resource: "secrets"}, Reason: "forbidden", Forbidden: true}}
	_, _, err = execute(t, f, all)
	if !errors.As(err, &blocked) || blocked.Step.ID != ReferencesMoved || !strings.Contains(blocked.Step.Message, "unknown: 1 resource(s) could not be read") ||
		!strings.Contains(strings.Join(blocked.Step.Evidence, "\n"), "not read: secrets: forbidden") {
		t.Errorf("incomplete inventory: %v", err)
	}

	f = newFake(s4())
	f.dependents = deps
	opts = all
	opts.SkipReferenceCheck = true
	res, _, err = execute(t, f, opts)
	if err != nil || f.count("find owner references") != 0 || !strings.Contains(strings.Join(res.Steps[1].Checked, "; "), "skipped: references to stable.example.com/v1 were NOT checked (--skip-reference-check)") {
		t.Errorf("skipped: %v; calls %v; step 2 %+v", err, f.calls, res.Steps[1])
	}
}
