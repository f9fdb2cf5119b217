package action

import (
	"context"
	"errors"
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

// settled is a CRD migrate has to do for: v2 is the storage version, the
// newest, objects are still stored at v1, and both schemas are the same.
func settled() *apiextensionsv1.CustomResourceDefinition {
	return crdtest.New("widgets.example.com").
		Version("v1", crdtest.Served).
		Version("v2", crdtest.Served, crdtest.Storage).
		Stored("v1", "v2").CRD()
}

// pending is a CRD whose newer version v2 is not the storage version yet.
func pending() *apiextensionsv1.CustomResourceDefinition {
	return crdtest.New("widgets.example.com").
		Version("v1", crdtest.Served, crdtest.Storage).
		Version("v2", crdtest.Served).
		Stored("v1").CRD()
}

// pruning is settled, but v2's schema lacks v1's colour (conversion
// None): the schemas predict that rewriting the objects stored at v1
// drops it.
func pruning() *apiextensionsv1.CustomResourceDefinition {
	return crdtest.New("widgets.example.com").
		Version("v1", crdtest.Served, crdtest.Fields("size", "colour")).
		Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("size")).
		Stored("v1", "v2").CRD()
}

// preferredPrunes has v1 as the storage version and v2, the preferred
// version, lacking v1's colour: a StorageVersionMigration's controller
// writes through v2 and prunes it.
func preferredPrunes() *apiextensionsv1.CustomResourceDefinition {
	return crdtest.New("widgets.example.com").
		Version("v1alpha1", crdtest.Fields("size", "colour")).
		Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("size", "colour")).
		Version("v2", crdtest.Served, crdtest.Fields("size")).
		Stored("v1alpha1", "v1").CRD()
}

// wantErr checks err against want: nil for no error, else every part of
// want in what the CLI prints for it (its details above its error line),
// and the error line at most lifecycle.MaxErrorLine long.
func wantErr(t *testing.T, err error, want ...string) {
	t.Helper()
	switch {
	case len(want) == 0 && err != nil:
		t.Fatalf("err %v, want none", err)
	case len(want) > 0 && err == nil:
		t.Fatalf("no error, want one saying %q", want)
	case err == nil:
		return
	}
	printed := printedError(err)
	for _, w := range want {
		if !strings.Contains(printed, w) {
			t.Errorf("printed:\n%s\ndoes not say %q", printed, w)
		}
	}
	if line := "error: " + err.Error(); len(line) > lifecycle.MaxErrorLine {
		t.Errorf("an error line of %d characters (at most %d):\n%s", len(line), lifecycle.MaxErrorLine, line)
	}
}

// printedError is err as the CLI prints it: the details of a refusal or
// failure (DetailLines), then the error line.
func printedError(err error) string {
	var d interface{ DetailLines() []string }
	var lines []string
	if errors.As(err, &d) {
		lines = d.DetailLines()
	}
	return strings.Join(append(lines, "error: "+err.Error()), "\n")
}

func TestOrderRefusal(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     *apiextensionsv1.CustomResourceDefinition
		order  []string
		noTrim bool
		want   []string
	}{
		{"the storage version is the newest", settled(), nil, false, nil},
		{"a newer version waits", pending(), nil, false, []string{
			"refusing to migrate widgets.example.com, nothing was changed: v2, a newer version, is not the storage version yet; run: kubectl crdversion promote-storage widgets.example.com v2", "the storage version is v1: migrating now rewrites every object at v1",
			"or pass --no-trim to rewrite the objects at v1 anyway",
			"--no-trim"}},
		{"a newer version waits, --no-trim rewrites anyway", pending(), nil, true, nil},
		// The user's order says v2 is the older one: nothing waits.
		{"the given order makes the storage version the newest", pending(), []string{"v2", "v1"}, false, nil},
		{"a version order naming an unknown version", settled(), []string{"v1", "v9"}, false, []string{"--version-order v1,v9", "has no version v9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := MigrateOptions{VersionOrder: tc.order, Client: migrate.Options{NoTrim: tc.noTrim}}
			wantErr(t, orderRefusal(tc.in, o), tc.want...)
		})
	}
}

func TestPredictedLossRefusal(t *testing.T) {
	webhook := crdtest.New("widgets.example.com").
		Version("v1", crdtest.Served, crdtest.Fields("size", "colour")).
		Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("size")).
		WebhookURL("https://conv.example.com", []byte("ca")).
		Stored("v1", "v2").CRD()
	const refused = "refusing to migrate widgets.example.com, nothing was changed: conversion strategy None and the schemas differ; the lines above say how to proceed"
	const lost = "What rewriting the objects at v2 loses:\n  - objects stored at v1 lose "
	for _, tc := range []struct {
		name string
		in   *apiextensionsv1.CustomResourceDefinition
		why  string
		want []string
	}{
		{"same schemas", settled(), "", nil},
		{"Webhook conversion: the webhook decides", webhook, "", nil},
		{"schemas differ", pruning(), "", []string{refused, lost, "colour", "To proceed: make the schemas describe the same fields or use Webhook conversion, or pass --allow-pruning to accept the loss"}},
		{"schemas differ, and why it stands", pruning(), "2 object(s) have no managedFields", []string{refused, lost, "  - 2 object(s) have no managedFields\nTo proceed: make the schemas"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, predictedLossRefusal(tc.in, tc.why, nil), tc.want...)
		})
	}
}

func TestServerEngineRefusal(t *testing.T) {
	samePreferred := crdtest.New("widgets.example.com").
		Version("v1", crdtest.Served, crdtest.Fields("size", "colour")).
		Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("size", "colour")).
		Stored("v1", "v2").CRD()
	for _, tc := range []struct {
		name   string
		in     *apiextensionsv1.CustomResourceDefinition
		engine string
		want   []string
	}{
		{"the preferred version is the storage version", samePreferred, migrate.EngineServer, nil},
		{"the preferred version prunes, client engine", preferredPrunes(), migrate.EngineClient, nil},
		{"the preferred version prunes, server engine", preferredPrunes(), migrate.EngineServer, []string{
			"refusing to migrate widgets.example.com, nothing was changed: with --engine=server the controller writes through v2, which prunes fields", "the controller writes each object through the preferred version v2, not the storage version v1",
			"v2's schema lacks", "colour", "use --engine=client"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, serverEngineRefusal(tc.in, MigrateOptions{Engine: tc.engine}), tc.want...)
		})
	}
}

// TestBreakGlassRefusal (issue 34, B20): while conversion None stands in
// for a webhook, migrate refuses whatever the flags, before any request.
func TestBreakGlassRefusal(t *testing.T) {
	b := crdtest.New("widgets.example.com").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2")
	wantErr(t, breakGlassRefusal(b.CRD()))
	wantErr(t, breakGlassRefusal(b.Annotate(lifecycle.BreakGlassAnnotation, "service x/y:443").CRD()),
		"refusing to migrate widgets.example.com, nothing was changed: conversion strategy None stands in for the conversion webhook, a break-glass", "the webhook: service x/y:443",
		"would store every object as read at v2, not as the webhook converts it")
	f := &actiontest.Fake{}
	marked := b.CRD()
	_, err := Migrate(context.Background(), f, marked, MigrateOptions{AllowPruning: true})
	if err == nil || len(f.Calls) > 0 {
		t.Errorf("Migrate --allow-pruning under the break-glass: %v, calls %v", err, f.Calls)
	}
	// retire --migrate runs the engine through Retire.Migrate, not
	// Migrate: refused the same way, its dry run included.
	for _, d := range []lifecycle.DryRun{lifecycle.DryRunServer, lifecycle.DryRunNone} {
		_, err := (&Retire{Cluster: f, AllowPruning: true}).Migrate(context.Background(), marked, "v1", d)
		if err == nil || !strings.Contains(err.Error(), "a break-glass") || len(f.Calls) > 0 {
			t.Errorf("retire's migration (dry run %s) under the break-glass: %v, calls %v", d, err, f.Calls)
		}
	}
}

func TestMeasuredPredictionRefusal(t *testing.T) {
	const refused = "conversion strategy None and the schemas differ"
	for _, tc := range []struct {
		name string
		in   *apiextensionsv1.CustomResourceDefinition
		m    *LossMeasurement
		want []string
	}{
		{"nothing predicted, not measured", settled(), nil, nil},
		{"predicted, not measured: the prediction stands", pruning(), nil, []string{refused}},
		{"predicted, cleared by the measurement", pruning(), &LossMeasurement{PredictionCleared: true}, nil},
		{"predicted, not cleared: the measurement says why", pruning(), &LossMeasurement{UnrecordedText: "1 object(s) have no managedFields"},
			[]string{refused, "  - 1 object(s) have no managedFields\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, measuredPredictionRefusal(tc.in, tc.m, nil), tc.want...)
		})
	}
}

// lost is a check in which one object of two loses colour.
func lost(from string) *cluster.ObjectsCheck {
	return &cluster.ObjectsCheck{From: from, To: "v2", Listed: 2, Validated: 2,
		Lost: []cluster.ObjectLoss{{Object: "default/w1", Paths: []string{".spec.colour"}}}}
}

// clean is a check in which two objects, with managedFields, lose nothing.
func clean(from string) *cluster.ObjectsCheck {
	return &cluster.ObjectsCheck{From: from, To: "v2", Listed: 2, Validated: 2}
}

func TestMigrate(t *testing.T) {
	const (
		objects  = actiontest.Objects + "@v1->v2"
		engine   = actiontest.ClientEngine
		wait     = actiontest.WaitStorage
		acc      = actiontest.Access
		whoami   = actiontest.WhoAmI
		createPL = actiontest.CreateLevel
		createFS = actiontest.CreateFlowSchema
		delFS    = actiontest.DeleteFlowSchema
		delPL    = actiontest.DeleteLevel
	)
	for _, tc := range []struct {
		name string
		in   *apiextensionsv1.CustomResourceDefinition
		o    MigrateOptions
		// set scripts the fake.
		set func(*actiontest.Fake)
		// calls is the fake's call log.
		calls []string
		// err: each part is in the error; none, no error.
		err []string
		// warnings are the result's first warnings.
		warnings []string
	}{
		{name: "runs after the wait, the permission check and the measurement", in: settled(),
			set:   func(f *actiontest.Fake) { f.Checks = map[string]*cluster.ObjectsCheck{"v1": clean("v1")} },
			calls: []string{wait, acc, objects, engine}},
		{name: "a missing permission refuses before the measurement", in: settled(),
			set:   func(f *actiontest.Fake) { f.Lacking = []access.Need{{Verb: "update", Resource: "widgets"}} },
			calls: []string{wait, acc}, err: []string{"migrate", "widgets.example.com"}},
		{name: "a storage version not served yet refuses before anything", in: settled(),
			set:   func(f *actiontest.Fake) { f.StorageNotServed = errors.New("discovery still says v1") },
			calls: []string{wait},
			err: []string{"refusing to migrate widgets.example.com, nothing was changed: the API server has not yet taken in the change of its storage version to v2",
				"re-run in a minute", "  - discovery still says v1"}},
		{name: "a newer version waiting refuses before anything", in: pending(),
			err: []string{"is not the storage version yet"}},
		{name: "the measurement finds a loss: nothing written", in: pruning(),
			set:   func(f *actiontest.Fake) { f.Checks = map[string]*cluster.ObjectsCheck{"v1": lost("v1")} },
			calls: []string{wait, acc, objects},
			err: []string{"refusing to migrate widgets.example.com, nothing was changed: rewriting the objects at v2 loses data; the lines above say how to proceed", "Each object read and dry-run written, compared as a whole:\n  - 1 object(s) have fields at v1 that v2 drops: default/w1: .spec.colour",
				"or accept exactly these losses with --allow-pruning=.spec.colour (every other loss still refuses)"}},
		{name: "the measurement clears the prediction", in: pruning(),
			set:   func(f *actiontest.Fake) { f.Checks = map[string]*cluster.ObjectsCheck{"v1": clean("v1")} },
			calls: []string{wait, acc, objects, engine}},
		{name: "objects without managedFields keep the prediction: nothing written", in: pruning(),
			set: func(f *actiontest.Fake) {
				c := clean("v1")
				c.Unrecorded = []string{"default/w2"}
				f.Checks = map[string]*cluster.ObjectsCheck{"v1": c}
			},
			calls: []string{wait, acc, objects},
			err:   []string{"conversion strategy None and the schemas differ", "1 object(s) have no managedFields, so what they were written with is not known: default/w2"}},
		{name: "--allow-pruning: not measured", in: pruning(), o: MigrateOptions{AllowPruning: true},
			calls: []string{wait, acc, engine}},
		// A client dry run sends nothing, not even the measurement's dry
		// runs, and says so.
		{name: "client dry run: not measured, a warning", in: settled(), o: MigrateOptions{Client: migrate.Options{DryRun: lifecycle.DryRunClient}},
			calls: []string{engine + actiontest.CountOnlySuffix}, warnings: []string{NotMeasuredWarning}},
		{name: "client dry run, the prediction stands: refused", in: pruning(), o: MigrateOptions{Client: migrate.Options{DryRun: lifecycle.DryRunClient}},
			err: []string{"conversion strategy None and the schemas differ"}},
		{name: "client dry run with --allow-pruning: no warning", in: pruning(), o: MigrateOptions{AllowPruning: true, Client: migrate.Options{DryRun: lifecycle.DryRunClient}},
			calls: []string{engine + actiontest.CountOnlySuffix}},
		{name: "server dry run: measured, the engine dry-runs", in: settled(), o: MigrateOptions{Client: migrate.Options{DryRun: lifecycle.DryRunServer}},
			set:   func(f *actiontest.Fake) { f.Checks = map[string]*cluster.ObjectsCheck{"v1": clean("v1")} },
			calls: []string{wait, acc, objects, engine + actiontest.DryRunSuffix}},
		// The run's own priority level holds the measurement and the
		// engine, and is removed after them, whatever the outcome.
		{name: "own priority level: created before the measurement, removed after the run", in: settled(), o: MigrateOptions{OwnPriorityLevel: 2},
			set:   func(f *actiontest.Fake) { f.Checks = map[string]*cluster.ObjectsCheck{"v1": clean("v1")} },
			calls: []string{wait, acc, whoami, delFS, delPL, createPL, createFS, objects, engine, delFS, delPL}},
		{name: "own priority level: removed after a refused measurement too", in: pruning(), o: MigrateOptions{OwnPriorityLevel: 2},
			set:   func(f *actiontest.Fake) { f.Checks = map[string]*cluster.ObjectsCheck{"v1": lost("v1")} },
			calls: []string{wait, acc, whoami, delFS, delPL, createPL, createFS, objects, delFS, delPL},
			err:   []string{"rewriting the objects at v2 loses data"}},
		{name: "own priority level for system:masters: refused before anything is created", in: settled(), o: MigrateOptions{OwnPriorityLevel: 2},
			set:   func(f *actiontest.Fake) { f.Groups = []string{"system:masters"} },
			calls: []string{wait, acc, whoami}, err: []string{"alice is in system:masters, which API Priority and Fairness exempts", "without --own-priority-level"}},
		{name: "own priority level in a client dry run: nothing created, and said so", in: settled(), o: MigrateOptions{OwnPriorityLevel: 2, Client: migrate.Options{DryRun: lifecycle.DryRunClient}},
			calls:    []string{engine + actiontest.CountOnlySuffix},
			warnings: []string{NotMeasuredWarning, OwnLevelNotCreatedWarning}},
		{name: "own priority level in a server dry run: dry-run created, nothing removed", in: settled(), o: MigrateOptions{OwnPriorityLevel: 2, Client: migrate.Options{DryRun: lifecycle.DryRunServer}},
			set:   func(f *actiontest.Fake) { f.Checks = map[string]*cluster.ObjectsCheck{"v1": clean("v1")} },
			calls: []string{wait, acc, whoami, createPL + actiontest.DryRunSuffix, createFS + actiontest.DryRunSuffix, objects, engine + actiontest.DryRunSuffix}},
		{name: "a run without its own level lands in one a killed run left: a warning", in: settled(),
			set: func(f *actiontest.Fake) {
				f.Checks = map[string]*cluster.ObjectsCheck{"v1": clean("v1")}
				f.Engine = func(bool, migrate.Options) (*migrate.Result, error) {
					return &migrate.Result{Engine: migrate.EngineClient, Complete: true,
						PriorityAndFairness: &migrate.PriorityAndFairness{FlowSchema: "crdversion-0123456789abcdef"}}, nil
				}
			},
			calls:    []string{wait, acc, objects, engine},
			warnings: []string{"the run's requests landed in crdversion-0123456789abcdef, the priority level of a run with --own-priority-level that did not remove it (killed?): it holds every request of this identity to widgets; re-run with --own-priority-level to remove it first, or: kubectl delete flowschema crdversion-0123456789abcdef; kubectl delete prioritylevelconfiguration crdversion-0123456789abcdef"}},
		{name: "server engine", in: settled(), o: MigrateOptions{Engine: migrate.EngineServer},
			calls: []string{wait, actiontest.ServerVersion, acc, objects, actiontest.ServerEngine}},
		{name: "server engine, the preferred version prunes: nothing written", in: preferredPrunes(), o: MigrateOptions{Engine: migrate.EngineServer},
			calls: []string{wait, actiontest.ServerVersion, acc, actiontest.Objects + "@v1->v1"},
			err:   []string{"with --engine=server"}},
		{name: "server engine with --allow-pruning", in: preferredPrunes(), o: MigrateOptions{Engine: migrate.EngineServer, AllowPruning: true},
			calls: []string{wait, actiontest.ServerVersion, acc, actiontest.ServerEngine}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := actiontest.New(tc.in)
			if tc.set != nil {
				tc.set(f)
			}
			m, err := Migrate(context.Background(), f, tc.in, tc.o)
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
			if got := m.Result.Warnings; strings.Join(got, "\n") != strings.Join(tc.warnings, "\n") {
				t.Errorf("warnings %q, want %q", got, tc.warnings)
			}
			created := tc.o.OwnPriorityLevel > 0 && tc.o.Client.DryRun != lifecycle.DryRunClient
			if own := m.Result.OwnPriorityLevel; created != (own != nil) ||
				own != nil && (own.Shares != tc.o.OwnPriorityLevel || own.User != "alice" || own.Removed == own.DryRun) {
				t.Errorf("own priority level %+v", own)
			}
			if len(f.FlowSchemas)+len(f.PriorityLevels) > 0 {
				t.Errorf("left behind: %v %v", f.FlowSchemas, f.PriorityLevels)
			}
		})
	}
}

// A missing permission is the refusal that names it.
func TestMigrateMissingPermission(t *testing.T) {
	f := actiontest.New(settled())
	f.Lacking = []access.Need{{Verb: "update", Resource: "widgets"}}
	_, err := Migrate(context.Background(), f, settled(), MigrateOptions{})
	var missing *access.MissingError
	if !errors.As(err, &missing) {
		t.Fatalf("err %v (%T), want *access.MissingError", err, err)
	}
	if missing.Operation != "migrate" || missing.CRD != "widgets.example.com" || len(missing.Missing) != 1 {
		t.Errorf("MissingError %+v", missing)
	}
}

// The measurement's passes are the result's, and the 429 answers counted
// are those from before the measurement to the end of the run.
func TestMigrateRecordsTheMeasurement(t *testing.T) {
	f := actiontest.New(settled())
	f.Checks = map[string]*cluster.ObjectsCheck{"v1": clean("v1")}
	f.Observed, f.TooMany = true, 5
	f.Engine = func(bool, migrate.Options) (*migrate.Result, error) {
		f.TooMany += 3
		return &migrate.Result{Engine: migrate.EngineClient, Complete: true}, nil
	}
	m, err := Migrate(context.Background(), f, settled(), MigrateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Result.Measured; len(got) != 1 || got[0].From != "v1" || got[0].Objects != 2 || got[0].Lost != 0 {
		t.Errorf("Measured %+v, want one pass at v1 over 2 objects", got)
	}
	if m.Result.TooManyRequests != 3 {
		t.Errorf("TooManyRequests %d, want 3", m.Result.TooManyRequests)
	}
}

// TestMigrateNamesItsOwnLevel (trial): a run that landed in its own
// priority level reported it by uid ("names not known: not found"), the
// level being removed before the names were read; the names are the
// level's own.
func TestMigrateNamesItsOwnLevel(t *testing.T) {
	f := actiontest.New(settled())
	f.Checks = map[string]*cluster.ObjectsCheck{"v1": clean("v1")}
	f.Engine = func(bool, migrate.Options) (*migrate.Result, error) {
		var name string
		for n := range f.FlowSchemas {
			name = n
		}
		return &migrate.Result{Engine: migrate.EngineClient, Complete: true, PriorityAndFairness: &migrate.PriorityAndFairness{
			FlowSchemaUID: "uid-" + name, PriorityLevelUID: "uid-" + name, Unresolved: "flowschemas: not found"}}, nil
	}
	m, err := Migrate(context.Background(), f, settled(), MigrateOptions{OwnPriorityLevel: 1})
	if err != nil {
		t.Fatal(err)
	}
	p, own := m.Result.PriorityAndFairness, m.Result.OwnPriorityLevel
	if own == nil || p.FlowSchema != own.Name || p.PriorityLevel != own.Name || p.Unresolved != "" || !strings.HasPrefix(own.Name, "crdversion-") {
		t.Errorf("landed %+v, own level %+v; want the own level's names", p, own)
	}
}
