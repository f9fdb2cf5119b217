package cli

import (
	"bytes"
	"io"
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/fleet"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate"
	"github.com/crdversion/kubectl-crdversion/internal/reach"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/svm"
	"github.com/crdversion/kubectl-crdversion/internal/version"
	"github.com/crdversion/kubectl-crdversion/internal/view"
)

// written is what view writes.
func written(t *testing.T, view func(w io.Writer) error) string {
	t.Helper()
	var b bytes.Buffer
	if err := view(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// statusFixtures are CRDs in the states the status printer must show, with
// the object count a cluster would have given.
func statusFixtures() map[string]*report.Status {
	ctx := []lifecycle.Flag{{Name: "context", Value: "prod"}}
	status := func(b *crdtest.Builder, objects int, conn []lifecycle.Flag) *report.Status {
		crd := b.CRD()
		r := &report.Status{Analysis: lifecycle.Analyze(crd), Objects: &report.ObjectCount{Count: objects, Version: lifecycle.ListVersion(crd)}}
		r.RenderCommands(conn)
		return r
	}
	broken := status(crdtest.New("crontabs.stable.example.com").Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2"), 0, nil)
	broken.Objects.Error = "listing failed"
	broken.AddFinding(lifecycle.UnreadableObjects(broken.Analysis, "v2", `request to convert CR from an invalid group/version: stable.example.com/v1`, false))
	return map[string]*report.Status{
		"S1": status(crdtest.New("referencegrants.gateway.networking.k8s.io").
			Version("v1beta1", crdtest.Served).Version("v1alpha2", crdtest.Served, crdtest.Storage).Stored("v1alpha2"), 1, nil),
		"S4-context": status(crdtest.New("crontabs.stable.example.com").
			Version("v1", crdtest.Served, crdtest.Storage).Version("v1beta1", crdtest.Served, crdtest.Deprecated).Stored("v1"), 4, ctx),
		"storedversion-missing": broken,
	}
}

func TestStatusPrinterGolden(t *testing.T) {
	for name, r := range statusFixtures() {
		t.Run(name, func(t *testing.T) {
			golden(t, "status/"+name+".txt", written(t, func(w io.Writer) error { return view.Status(w, r) }))
			golden(t, "status/"+name+".json", printed(t, "json", nil, r))
		})
	}
}

func migrationFixture(engine string) *migrate.Result {
	r := &migrate.Result{Engine: engine, CRD: "crontabs.stable.example.com", StorageVersion: "v2", Complete: true,
		Counts:         migrate.Counts{Total: 1200, Rewritten: 1150, Current: 40, Conflicts: 5, Deleted: 3, Failed: 2},
		Failures:       []migrate.Failure{{Object: "ns-a/crontab-7", Message: `CronTab.stable.example.com "crontab-7" is invalid: spec.image: Required value`}, {Object: "ns-b/crontab-9", Message: "conversion webhook for stable.example.com/v1, Kind=CronTab failed"}},
		ElapsedSeconds: 3.2, ObjectsPerSecond: 375,
		Trim:                migrate.Trim{Before: []string{"v1", "v2"}, After: []string{"v1", "v2"}, Reason: "2 object(s) failed"},
		Concurrency:         &migrate.Concurrency{Mode: "adaptive", Max: 64, MaxLatencySeconds: 0.05, FinalLimit: 9, MeanLimit: 7.4, WriteLatencyP50Seconds: 0.012, WriteLatencyP99Seconds: 0.048},
		PriorityAndFairness: &migrate.PriorityAndFairness{FlowSchema: "global-default", FlowSchemaUID: "6f1c", PriorityLevel: "global-default", PriorityLevelUID: "91ab"},
		TooManyRequests:     3, Retries: 1}
	if engine == migrate.EngineServer {
		r.Counts, r.Failures = migrate.Counts{Total: 1200}, nil
		r.StorageVersionMigration = &migrate.ServerMigration{APIVersion: "storagemigration.k8s.io/v1", Name: "crontabs-x7k2p", GenerateName: "crontabs.stable.example.com-", Resource: "crontabs.stable.example.com", Phase: "Succeeded"}
		r.Trim = migrate.Trim{Trimmed: true, Before: []string{"v1", "v2"}, After: []string{"v2"}, By: migrate.TrimmedByServer}
	}
	return r
}

func TestMigrationPrinterGolden(t *testing.T) {
	client := migrationFixture(migrate.EngineClient)
	golden(t, "migrate/client.txt", written(t, func(w io.Writer) error { view.Migration(w, client, lifecycle.DryRunNone); return nil }))
	dry := *client
	dry.DryRun, dry.Counts = true, migrate.Counts{Total: 1200, Accepted: 1190, Conflicts: 5, Deleted: 3, Failed: 2}
	golden(t, "migrate/client-server-dry-run.txt", written(t, func(w io.Writer) error { view.Migration(w, &dry, lifecycle.DryRunServer); return nil }))
	golden(t, "migrate/client.json", printed(t, "json", nil, &report.Migration{Result: *client}))
	server := migrationFixture(migrate.EngineServer)
	crd := crdtest.New("crontabs.stable.example.com").Version("v2", crdtest.Served, crdtest.Storage).CRD()
	golden(t, "migrate/server.txt", written(t, func(w io.Writer) error {
		return view.ServerMigration(w, server, lifecycle.DryRunNone, svm.New(crd, "v1"))
	}))
	golden(t, "migrate/server-client-dry-run.txt", written(t, func(w io.Writer) error {
		return view.ServerMigration(w, server, lifecycle.DryRunClient, svm.New(crd, "v1"))
	}))
}

func TestPreflightPrinterGolden(t *testing.T) {
	cs := edit.Checks{
		{Name: "VersionServed", Outcome: edit.Pass, Message: "v2 exists and is served"},
		{Name: "DefaultVersion", Outcome: edit.Warn, Message: "kubectl's default version changes from v1 to v2"},
		{Name: "ObjectsValid", Outcome: edit.Fail, Message: "2 of 4 checked object(s) are invalid at v2", Details: []string{"ns-a/crontab-0: spec.image: Required value", "ns-b/crontab-1: at most 3 replicas"}},
		{Name: "WebhookServingCert", Outcome: edit.Skip, Message: "the serving certificate was not verified: not reachable from here"},
	}
	golden(t, "preflight.txt", written(t, func(w io.Writer) error { view.Checks(w, cs); return nil }))
}

func TestFleetStatusPrinterGolden(t *testing.T) {
	three := 3
	clusters := []fleet.Cluster{
		{Context: "down", Reach: reach.Unreachable, Error: `Get "https://10.0.0.1/apis": context deadline exceeded`, Seconds: 4},
		{Context: "migrated", Reach: reach.Reached, Name: "crontabs.fleet.example.com", State: lifecycle.StateS3, StorageVersion: "v2", StoredVersions: []string{"v2"}, Served: []string{"v1", "v2"}, Versions: []string{"v1", "v2"}, Objects: &three, Seconds: 0.1},
		{Context: "pending", Reach: reach.Reached, Name: "crontabs.fleet.example.com", State: lifecycle.StateS2, StorageVersion: "v2", StoredVersions: []string{"v1", "v2"}, Served: []string{"v1", "v2"}, Versions: []string{"v1", "v2"}, Objects: &three, Seconds: 0.1},
	}
	r := &report.FleetStatus{CRD: "crontabs.fleet.example.com", Clusters: clusters, Verdicts: fleet.Verdicts("crontabs.fleet.example.com", clusters, nil), Seconds: 4}
	golden(t, "fleet-status.txt", written(t, func(w io.Writer) error { return view.FleetStatus(w, r) }))
	golden(t, "fleet-status.json", printed(t, "json", nil, r))
}

func TestVersionGolden(t *testing.T) {
	v := &report.Version{Info: version.Info{Version: "v0.1.0", Commit: "0123456789abcdef", GoVersion: "go1.26.8", Platform: "linux/amd64"}}
	golden(t, "version.json", printed(t, "json", nil, v))
}
