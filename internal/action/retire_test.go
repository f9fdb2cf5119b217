package action

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/access"
	"github.com/crdversion/kubectl-crdversion/internal/action/actiontest"
	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate"
)

// TestRetireMigrate is the retire adapter's migration: without
// --allow-pruning it measures what the rewrite loses, as migrate does, when
// the run is a dry run (the old versions are still served then) or the
// schemas predict a loss, and refuses what migrate refuses; with it, it
// only runs the engine.
func TestRetireMigrate(t *testing.T) {
	const (
		objects = actiontest.Objects + "@v1->v2"
		wait    = actiontest.WaitStorage
		engine  = actiontest.ClientEngine
		dryRun  = actiontest.ClientEngine + actiontest.DryRunSuffix
	)
	withUnrecorded := clean("v1")
	withUnrecorded.Unrecorded = []string{"default/w2"}
	for _, tc := range []struct {
		name         string
		in           *apiextensionsv1.CustomResourceDefinition
		allowPruning bool
		dryRun       lifecycle.DryRun
		checks       map[string]*cluster.ObjectsCheck
		notServed    error
		calls        []string
		err          []string
	}{
		{name: "dry run: measured, then the engine's dry run", in: settled(), dryRun: lifecycle.DryRunServer,
			checks: map[string]*cluster.ObjectsCheck{"v1": clean("v1")}, calls: []string{objects, wait, dryRun}},
		{name: "dry run, a loss measured: refused, nothing sent", in: settled(), dryRun: lifecycle.DryRunServer,
			checks: map[string]*cluster.ObjectsCheck{"v1": lost("v1")}, calls: []string{objects},
			err: []string{"refusing to migrate widgets.example.com, nothing was changed: rewriting the objects at v2 loses data", "default/w1: .spec.colour"}},
		{name: "the run, nothing predicted: not measured again", in: settled(), calls: []string{wait, engine}},
		{name: "the run, a loss predicted and cleared", in: pruning(),
			checks: map[string]*cluster.ObjectsCheck{"v1": clean("v1")}, calls: []string{objects, wait, engine}},
		{name: "the run, a loss predicted and not cleared: refused", in: pruning(),
			checks: map[string]*cluster.ObjectsCheck{"v1": withUnrecorded}, calls: []string{objects},
			err: []string{"conversion strategy None and the schemas differ", "1 object(s) have no managedFields"}},
		{name: "--allow-pruning: not measured", in: pruning(), allowPruning: true, calls: []string{wait, engine}},
		{name: "--allow-pruning, dry run: not measured", in: pruning(), allowPruning: true, dryRun: lifecycle.DryRunServer, calls: []string{wait, dryRun}},
		{name: "the storage version not served yet: refused", in: settled(), notServed: errors.New("discovery still says v1"),
			calls: []string{wait}, err: []string{"has not yet taken in the change of its storage version to v2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := actiontest.New(tc.in)
			f.Checks, f.StorageNotServed = tc.checks, tc.notServed
			r := &Retire{Cluster: f, AllowPruning: tc.allowPruning, Engine: migrate.Options{FieldManager: "m"}}
			m, err := r.Migrate(context.Background(), tc.in, "v1", tc.dryRun)
			wantErr(t, err, tc.err...)
			if got, want := strings.Join(f.Calls, ", "), strings.Join(tc.calls, ", "); got != want {
				t.Errorf("calls\n%s\nwant\n%s", got, want)
			}
			if err != nil {
				if w := f.Writes(); len(w) > 0 {
					t.Errorf("refused, and wrote %q", w)
				}
				return
			}
			if m.StorageVersion != "v2" || !m.Complete || m.Report == nil {
				t.Errorf("Migration %+v", m)
			}
			if trimmed := tc.dryRun.Persists(); m.Trimmed != trimmed || !slices.Equal(m.StoredAfter, map[bool][]string{true: {"v2"}, false: {"v1", "v2"}}[trimmed]) {
				t.Errorf("Trimmed %v, storedVersions %v → %v", m.Trimmed, m.StoredBefore, m.StoredAfter)
			}
		})
	}
}

// The engine's outcome is retire's Migration: failures named, a trim the
// API server refuses in a dry run said so.
func TestRetireMigrateReportsTheEngine(t *testing.T) {
	f := actiontest.New(settled())
	f.Engine = func(_ bool, o migrate.Options) (*migrate.Result, error) {
		if o.DryRun != lifecycle.DryRunServer || o.FieldManager != "m" {
			t.Errorf("engine options %+v, want a dry run as m", o)
		}
		res := &migrate.Result{StorageVersion: "v2", Counts: migrate.Counts{Total: 3, Rewritten: 2, Failed: 1},
			Failures: []migrate.Failure{{Object: "default/w3", Message: "sealed"}}}
		res.Trim.Failed, res.Trim.Reason = true, "the trim was refused"
		return res, nil
	}
	r := &Retire{Cluster: f, AllowPruning: true, Engine: migrate.Options{FieldManager: "m"}}
	m, err := r.Migrate(context.Background(), settled(), "v1", lifecycle.DryRunServer)
	if err != nil {
		t.Fatal(err)
	}
	if m.Total != 3 || m.Rewritten != 2 || m.Failed != 1 || len(m.Failures) != 1 || m.Failures[0].Object != "default/w3" || m.TrimRefused != "the trim was refused" {
		t.Errorf("Migration %+v", m)
	}
}

// TestRetireMigrateNeeds (issue 30): retire --migrate measures the loss as
// migrate does, with a dry-run create of each object when a stored version
// differs from the storage version (its schema, or Webhook conversion):
// its permission check asks for create then, and only then.
func TestRetireMigrateNeeds(t *testing.T) {
	same := crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Fields("a")).
		Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("a")).Stored("v1", "v2").CRD()
	differ := crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Fields("a")).
		Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("a", "b")).Stored("v1", "v2").CRD()
	for _, tc := range []struct {
		name         string
		crd          *apiextensionsv1.CustomResourceDefinition
		allowPruning bool
		create       bool
	}{
		{"same schemas", same, false, false},
		{"schemas differ", differ, false, true},
		{"schemas differ, --allow-pruning: nothing measured", differ, true, false},
	} {
		needs := (&Retire{AllowPruning: tc.allowPruning}).MigrateNeeds(tc.crd, "v1")
		create := slices.ContainsFunc(needs, func(n access.Need) bool { return n.Verb == "create" && n.Resource == "widgets" })
		if create != tc.create || !slices.ContainsFunc(needs, func(n access.Need) bool { return n.Verb == "patch" }) {
			t.Errorf("%s: %v, want create %v beside migrate's own", tc.name, needs, tc.create)
		}
	}
}

// TestRetireMigrateNamesWhatItAccepts (trial): retire --migrate with
// --allow-pruning=PATHS rewrote the objects and dropped the accepted
// fields without a word, and a misspelt path was not named; with the bare
// flag nothing said the rewrite was not measured. The migration's report
// now carries migrate's warnings.
func TestRetireMigrateNamesWhatItAccepts(t *testing.T) {
	f := actiontest.New(settled())
	f.Checks = map[string]*cluster.ObjectsCheck{"v1": lost("v1")}
	r := &Retire{Cluster: f, AllowPruningPaths: []string{".spec.colour", ".spec.olde"}, Engine: migrate.Options{FieldManager: "m"}}
	m, err := r.Migrate(context.Background(), settled(), "v1", lifecycle.DryRunServer)
	if err != nil {
		t.Fatal(err)
	}
	warnings := strings.Join(m.Report.(*migrate.Result).Warnings, "\n")
	for _, want := range []string{"accepted (--allow-pruning=.spec.colour,.spec.olde): the rewrite loses or changes, for good, default/w1: .spec.colour",
		"--allow-pruning path(s) .spec.olde match nothing"} {
		if !strings.Contains(warnings, want) {
			t.Errorf("warnings lack %q:\n%s", want, warnings)
		}
	}
	r = &Retire{Cluster: actiontest.New(settled()), AllowPruning: true, Engine: migrate.Options{FieldManager: "m"}}
	if m, err = r.Migrate(context.Background(), settled(), "v1", lifecycle.DryRunServer); err != nil || !slices.Contains(m.Report.(*migrate.Result).Warnings, RetireNotMeasuredWarning) {
		t.Errorf("bare --allow-pruning: %v, warnings %v", err, m.Report.(*migrate.Result).Warnings)
	}
}

// TestRetireReportsThePlansMeasurement (issue 30): the plan's dry run
// measures the loss; the run that follows measures again only where the
// schemas predict one, and its report carries the measurements it rests
// on, so that retire's lines say how the objects were measured (by reads
// or by dry runs, and why), as migrate's do. A later measurement once
// the old version is unserved reads at the storage version only, and the
// report keeps the old version's pass of the one before (trial: it showed
// only "read at v2 and at v2").
func TestRetireReportsThePlansMeasurement(t *testing.T) {
	unserved := crdtest.New("widgets.example.com").Version("v1").
		Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").CRD()
	f := actiontest.New(settled())
	f.Checks = map[string]*cluster.ObjectsCheck{"v1": clean("v1"), "v2": clean("v2")}
	r := &Retire{Cluster: f, Engine: migrate.Options{FieldManager: "m"}}
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{settled(), unserved} {
		if _, err := r.Migrate(context.Background(), crd, "v1", lifecycle.DryRunServer); err != nil {
			t.Fatal(err)
		}
	}
	calls := len(f.Calls)
	m, err := r.Migrate(context.Background(), unserved, "v1", lifecycle.DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(f.Calls[calls:], func(c string) bool { return strings.HasPrefix(c, actiontest.Objects) }) {
		t.Errorf("the run measured again: %v", f.Calls[calls:])
	}
	var from []string
	for _, p := range m.Report.(*migrate.Result).Measured {
		from = append(from, p.From)
		if p.Objects != 2 {
			t.Errorf("pass %+v, want 2 objects", p)
		}
	}
	if !slices.Equal(from, []string{"v1", "v2"}) {
		t.Errorf("passes read at %v, want the plan's at v1 and the latest at v2", from)
	}
}

// TestRetireMigratesInItsOwnLevel (issue 30): retire --migrate
// --own-priority-level runs the migration, its loss measurement included,
// in a priority level of its own, as migrate does: created before the
// measurement, removed after the engine, named in the report; its
// permission check asks for the level's create and delete.
func TestRetireMigratesInItsOwnLevel(t *testing.T) {
	f := actiontest.New(settled())
	f.Checks = map[string]*cluster.ObjectsCheck{"v1": clean("v1")}
	var during []string
	f.Engine = func(bool, migrate.Options) (*migrate.Result, error) {
		for n := range f.FlowSchemas {
			during = append(during, n)
		}
		return &migrate.Result{StorageVersion: "v2", Engine: migrate.EngineClient, Complete: true, Counts: migrate.Counts{Total: 2, Rewritten: 2}}, nil
	}
	r := &Retire{Cluster: f, OwnPriorityLevel: 2, Engine: migrate.Options{FieldManager: "m"}}
	needs := r.MigrateNeeds(settled(), "v1")
	for _, verb := range []string{"create", "delete"} {
		if !slices.ContainsFunc(needs, func(n access.Need) bool { return n.Verb == verb && n.Resource == "flowschemas" }) {
			t.Errorf("MigrateNeeds %v: want %s flowschemas", needs, verb)
		}
	}
	m, err := r.Migrate(context.Background(), settled(), "v1", lifecycle.DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	own := m.Report.(*migrate.Result).OwnPriorityLevel
	if len(during) != 1 || own == nil || own.Name != during[0] || own.Shares != 2 || !own.Removed || len(f.FlowSchemas) != 0 {
		t.Fatalf("levels during the engine %v, reported %+v, left %v: want one, named, of 2 shares, removed", during, own, f.FlowSchemas)
	}

	// A killed run left its level (trial: every later retire was blocked
	// in its plan's dry run, which found the objects, so the run that
	// removes them first never came). The plan of a run without --dry-run
	// goes on and names the leftover; retire --dry-run=server refuses as
	// migrate --dry-run=server does; the run removes it first.
	f.FlowSchemas[own.Name], f.PriorityLevels = true, map[string]bool{own.Name: true}
	dry := &Retire{Cluster: f, OwnPriorityLevel: 2, DryRun: lifecycle.DryRunServer, Engine: migrate.Options{FieldManager: "m"}}
	if _, err := dry.Migrate(context.Background(), settled(), "v1", lifecycle.DryRunServer); err == nil || !strings.Contains(err.Error(), "a killed run of this migration left it") {
		t.Errorf("retire --dry-run=server over a leftover: %v, want the refusal naming it", err)
	}
	r = &Retire{Cluster: f, OwnPriorityLevel: 2, Engine: migrate.Options{FieldManager: "m"}}
	plan, err := r.Migrate(context.Background(), settled(), "v1", lifecycle.DryRunServer)
	if err != nil {
		t.Fatalf("the plan's dry run over a leftover: %v", err)
	}
	if got := plan.Report.(*migrate.Result).OwnPriorityLevel; got == nil || !got.LeftoverRemoved {
		t.Errorf("the plan's level %+v, want the leftover named as removed first", got)
	}
	m, err = r.Migrate(context.Background(), settled(), "v1", lifecycle.DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	if own := m.Report.(*migrate.Result).OwnPriorityLevel; own == nil || !own.LeftoverRemoved || !own.Removed || len(f.FlowSchemas)+len(f.PriorityLevels) != 0 {
		t.Errorf("the run after a killed one: %+v, left %v %v; want the leftover removed first and its own after", own, f.FlowSchemas, f.PriorityLevels)
	}
}
