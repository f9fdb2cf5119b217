package cli

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/crdversion/kubectl-crdversion/internal/fleet"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/reach"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
	"github.com/crdversion/kubectl-crdversion/internal/upgrade"
	"github.com/crdversion/kubectl-crdversion/internal/view"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// golden compares got with testdata/golden/<name>, or rewrites the file
// when the test runs with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the golden file (run the test with -update to create it): %v", err)
	}
	if string(want) != got {
		t.Errorf("output differs from %s (run with -update to accept):\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

// printed is r as the printer of -o output prints it ("" for the human
// view, as human prints it).
func printed(t *testing.T, output string, human printers.ResourcePrinterFunc, r runtime.Object) string {
	t.Helper()
	pf := genericclioptions.NewPrintFlags("").WithTypeSetter(report.Scheme)
	pf.OutputFormat = &output
	printer, err := printerFunc(pf, "test", human)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := printer(r.DeepCopyObject(), &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func count(n int) *int { return &n }

// doctorFixture is a doctor report of three CRDs: a healthy one, one whose
// objects cannot be read at the default version, one whose objects no
// version lists.
func doctorFixture() *report.Doctor {
	r := &report.Doctor{Requests: 14}
	r.Add(report.DoctorCRD{Name: "crontabs.stable.example.com", State: lifecycle.StateS3, StorageVersion: "v2", StoredVersions: []string{"v2"}, Conversion: "None",
		Objects: count(120), Findings: []lifecycle.Finding{{Code: lifecycle.CodeDeprecatedVersionInUse, Severity: lifecycle.SeverityInfo, Version: "v1",
			Message: "deprecated version v1 received requests since the API server started (lifetime since the API server started: LIST 4), none open now"}},
		Lists: []report.ObjectList{{Version: "v2", Objects: count(120)}}})
	unreadable := lifecycle.Finding{Code: lifecycle.CodeObjectsUnreadable, Severity: lifecycle.SeverityError, Version: "v2",
		Message: "listing objects at v2 failed: conversion webhook for stable.example.com/v1, Kind=Widget failed: the test cannot convert w1 (they can be listed at v1); objects the API server cannot read at v2: team-a/w1",
		Fix:     "repair the conversion webhook (https://webhook.example.com/convert)"}
	inUse := lifecycle.Finding{Code: lifecycle.CodeDeprecatedVersionInUse, Severity: lifecycle.SeverityWarning, Version: "v1",
		Message: "deprecated version v1 still receives requests: open now: WATCH 1 (a client, e.g. an informer, is watching widgets.example.com/v1); move those clients to v2"}.
		WithRun(lifecycle.Crdversion("retire", "widgets.example.com", "v1").With("dry-run", ""))
	r.Add(report.DoctorCRD{Name: "widgets.example.com", State: lifecycle.StateS4, StorageVersion: "v1", StoredVersions: []string{"v1"}, Conversion: "Webhook",
		Objects: count(3), Findings: lifecycle.Rendered([]lifecycle.Finding{unreadable, inUse}, []lifecycle.Flag{{Name: "context", Value: "east"}}),
		Lists: []report.ObjectList{{Version: "v1", Objects: count(3)}, {Version: "v2", Error: "conversion webhook for stable.example.com/v1, Kind=Widget failed: the test cannot convert w1", Unreadable: []string{"team-a/w1"}}}})
	r.Add(report.DoctorCRD{Name: "gadgets.example.com", State: lifecycle.StateS2, StorageVersion: "v2", StoredVersions: []string{"v2"}, Conversion: "None",
		Findings: []lifecycle.Finding{lifecycle.Finding{Code: lifecycle.CodeObjectsUnlistable, Severity: lifecycle.SeverityError, Version: "v2",
			Message: "objects cannot be listed at any served version (v2): listing objects at v2 failed: request to convert CR from an invalid group/version: example.com/v1; objects are stored at v1, which is no longer in spec.versions; objects the API server cannot read at v2: team-a/g0, team-b/g1 and possibly more"}.
			WithRun(lifecycle.Crdversion("add-version", "gadgets.example.com", "v1").With("from", "v2").With("served", "false"))},
		Lists: []report.ObjectList{{Version: "v2", Error: "request to convert CR from an invalid group/version: example.com/v1", Unreadable: []string{"team-a/g0", "team-b/g1"}, MoreUnreadable: true}}})
	return r
}

func fleetDoctorFixture() *report.FleetDoctor {
	r := &report.FleetDoctor{Seconds: 2.5, Clusters: []report.FleetDoctorCluster{
		{Context: "east", Server: "https://east.example.com:6443", Reach: reach.Reached, Doctor: doctorFixture(), Seconds: 1.25},
		{Context: "west", Server: "https://west.example.com:6443", Reach: reach.Unreachable, Error: "Get \"https://west.example.com:6443/apis\": dial tcp: connection refused", Seconds: 2.5},
	}}
	r.Summary.Merge(r.Clusters[0].Doctor.Summary)
	r.Summary.Incompatible = true
	return r
}

// upgradeFixture is a check of a release of three CRDs: one the API server
// rejects (storedVersions), one new, one whose dry run was not allowed.
func upgradeFixture() *report.UpgradeCheck {
	migrate := lifecycle.Crdversion("migrate", "crontabs.stable.example.com")
	apply := upgrade.ApplyCommand([]string{"crds/", "extra.yaml"}, false)
	rejected := upgrade.Plan{Name: "crontabs.stable.example.com", Source: "crds/crontabs.yaml", Installed: true, APIServer: "v1.37.2",
		LiveStorageVersion: "v2", NewStorageVersion: "v2", StoredVersions: []string{"v1", "v2"}, LiveDefaultVersion: "v2", NewDefaultVersion: "v2",
		RemovedServedVersions: []string{"v1"}, Apply: upgrade.Rejected, Static: upgrade.Rejected, ServerDryRun: upgrade.DryRunRejected,
		Reasons:       []string{"v1 is in status.storedVersions but not in the new spec.versions"},
		ServerMessage: `CustomResourceDefinition.apiextensions.k8s.io "crontabs.stable.example.com" is invalid: status.storedVersions[0]: Invalid value: "v1": missing from spec.versions`,
		Findings: []schemadiff.Finding{
			{Code: schemadiff.CodeStoredVersionRemoved, Severity: lifecycle.SeverityError, Version: "v1", Path: "status.storedVersions", Message: "v1 is in status.storedVersions but not in the new spec.versions"},
			{Code: schemadiff.CodeVersionRemoved, Severity: lifecycle.SeverityWarning, Version: "v1", Path: "spec.versions", Message: "served version v1 is removed"},
		},
		Run: []lifecycle.Command{migrate, apply}}
	rejected.Render([]lifecycle.Flag{{Name: "context", Value: "east"}})
	added := upgrade.Plan{Name: "gadgets.example.com", Source: "extra.yaml", NewStorageVersion: "v1", NewDefaultVersion: "v1",
		Apply: upgrade.Accepted, Static: upgrade.Accepted, ServerDryRun: upgrade.DryRunAccepted, Findings: []schemadiff.Finding{}}
	skipped := upgrade.Plan{Name: "widgets.example.com", Source: "crds/widgets.yaml#2", Installed: true, APIServer: "v1.37.2",
		LiveStorageVersion: "v1", NewStorageVersion: "v1", StoredVersions: []string{"v1"}, LiveDefaultVersion: "v1", NewDefaultVersion: "v2",
		Apply: upgrade.Accepted, Static: upgrade.Accepted, ServerDryRun: upgrade.DryRunSkipped,
		ServerMessage: `customresourcedefinitions.apiextensions.k8s.io "widgets.example.com" is forbidden: User "dev" cannot update resource "customresourcedefinitions"`,
		Findings:      []schemadiff.Finding{}}
	r := &report.UpgradeCheck{Source: "crds/, extra.yaml"}
	for _, p := range []upgrade.Plan{rejected, added, skipped} {
		r.Add(p)
	}
	return r
}

func fleetUpgradeFixture() *report.FleetUpgradeCheck {
	r := &report.FleetUpgradeCheck{Source: "crds/, extra.yaml", Answer: fleet.No, Seconds: 3, Clusters: []report.FleetUpgradeCluster{
		{Context: "east", Server: "https://east.example.com:6443", Reach: reach.Reached, Check: upgradeFixture(), Seconds: 0.75},
		{Context: "west", Server: "https://west.example.com:6443", Reach: reach.Forbidden, Error: `customresourcedefinitions.apiextensions.k8s.io "crontabs.stable.example.com" is forbidden`, Seconds: 0.5},
	}}
	r.Summary.Merge(r.Clusters[0].Check.Summary)
	r.Summary.Incompatible = true
	return r
}

// TestGoldenPrinters pins the human and JSON views of the doctor and
// check-upgrade reports, one cluster and fleet, from fixtures (run with
// -update to rewrite them after a deliberate change).
func TestGoldenPrinters(t *testing.T) {
	for _, tc := range []struct {
		name  string
		r     runtime.Object
		human printers.ResourcePrinterFunc
	}{
		{"doctor", doctorFixture(), humanPrinter(view.Doctor)},
		{"doctor-fleet", fleetDoctorFixture(), humanPrinter(view.FleetDoctor)},
		{"check-upgrade", upgradeFixture(), humanPrinter(view.UpgradeCheck)},
		{"check-upgrade-fleet", fleetUpgradeFixture(), humanPrinter(view.FleetUpgrade)},
		{"diff", diffFixture(), humanPrinter(view.Diff)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, tc.name+".txt", printed(t, "", tc.human, tc.r))
			golden(t, tc.name+".json", printed(t, "json", tc.human, tc.r))
		})
	}
	golden(t, "diff.md", printed(t, "", humanPrinter(view.DiffMarkdown), diffFixture()))
}

// diffFixture is a diff of two manifests: a CRD with findings of each
// severity (a pipe in a message, as Markdown must escape), one without
// findings, one added and one removed.
func diffFixture() *report.Diff {
	return report.NewDiff("old/crds.yaml, old/extra.yaml", "new/crds.yaml",
		report.CRDDiff{Name: "buckets.source.toolkit.fluxcd.io", Findings: []schemadiff.Finding{
			{Code: schemadiff.CodeNoneConversionPrunes, Severity: lifecycle.SeverityError, Version: "v1beta2", Path: "spec.conversion",
				Message: "conversion strategy None between the served versions v1 and v1beta2 only rewrites apiVersion: objects written at v1 lose .spec.serviceAccountName when read or written at v1beta2"},
			{Code: schemadiff.CodeStatusSubresourceRemoved, Severity: lifecycle.SeverityWarning, Version: "v1", Path: "subresources.status",
				Message: "v1 has no status subresource (v1beta2 has): writes to /status are answered 404, and writes to the main resource change status"},
			{Code: schemadiff.CodeEnumValuesAdded, Rule: "enum", Severity: lifecycle.SeverityInfo, Version: "v1", Path: ".spec.provider",
				Message: "enum values added: \"generic|aws\""}}},
		report.CRDDiff{Name: "ocirepositories.source.toolkit.fluxcd.io"},
		report.CRDDiff{Name: "helmcharts.source.toolkit.fluxcd.io", Findings: []schemadiff.Finding{{Code: schemadiff.CodeCRDAdded, Severity: lifecycle.SeverityInfo, Path: ".", Message: "new CRD (versions v1)"}}},
		report.CRDDiff{Name: "gitrepositories.source.toolkit.fluxcd.io", Findings: []schemadiff.Finding{{Code: schemadiff.CodeCRDRemoved, Severity: lifecycle.SeverityWarning, Path: ".",
			Message: "not in the new manifest: applying it leaves the CRD as it is, and deleting the CRD deletes all its objects"}}})
}
