package cireport

import (
	"bytes"
	"encoding/xml"
	"os"
	"strings"
	"testing"

	"github.com/jstemmer/go-junit-report/v2/junit"
	"github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/manifest"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
	"github.com/crdversion/kubectl-crdversion/internal/upgrade"
)

const release = "testdata/release.yaml"

// check is the report of testdata/release.yaml over installed CRDs:
// gadgets unchanged; widgets installed with v1 (stored) and v2, the
// release dropping v1 (an error: storedVersions) and v2's field size
// changing type (an error).
func check(t *testing.T) *report.UpgradeCheck {
	t.Helper()
	data, err := os.ReadFile(release)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := manifest.ParseCRDs(data)
	if err != nil {
		t.Fatal(err)
	}
	liveWidgets := crdtest.New("widgets.example.com").Kind("Widget").Version("v1", crdtest.Served, crdtest.Fields("size")).
		Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("size")).Stored("v1", "v2").CRD()
	liveWidgets.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"].Properties["size"] = apiextensionsv1.JSONSchemaProps{Type: "integer"}
	r := &report.UpgradeCheck{Source: release}
	for _, d := range docs {
		d.Source = release + d.Source
		var live = docs[0].CRD
		if d.CRD.Name == "widgets.example.com" {
			live = liveWidgets
		}
		r.Add(upgrade.Check(live, d.CRD, d.Source, upgrade.ApplyCommand([]string{release}, false)))
	}
	if r.Summary.Errors < 2 {
		t.Fatalf("the fixture has %d errors, want at least 2: %+v", r.Summary.Errors, r)
	}
	return r
}

// lineOf is the 1-based line of the n-th line of release.yaml that
// contains s.
func lineOf(t *testing.T, s string, n int) int {
	t.Helper()
	data, _ := os.ReadFile(release)
	for i, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, s) {
			if n--; n == 0 {
				return i + 1
			}
		}
	}
	t.Fatalf("%s has no line %q", release, s)
	return 0
}

// TestSARIF: the log is valid SARIF 2.1.0 (the schema the library
// embeds), has a rule per code and a result per finding whose levels
// count as the summary does, each at the release file and the line of
// its version entry (v2's "- name: v2") or, for a version the release no
// longer has, of spec.versions in the document.
func TestSARIF(t *testing.T) {
	r := check(t)
	var b bytes.Buffer
	if err := SARIF(&b, r, &Locator{Fallback: release}, "v0.1.0"); err != nil {
		t.Fatal(err)
	}
	log, err := sarif.FromBytes(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := log.Validate(); err != nil {
		t.Fatalf("not valid SARIF 2.1.0: %v\n%s", err, b.String())
	}
	levels := map[string]int{}
	run := log.Runs[0]
	for _, res := range run.Results {
		levels[res.Level]++
		loc := res.Locations[0].PhysicalLocation
		if *loc.ArtifactLocation.URI != release {
			t.Errorf("result at %s, want %s", *loc.ArtifactLocation.URI, release)
		}
		msg := *res.Message.Text
		line := *loc.Region.StartLine
		switch {
		case strings.HasPrefix(msg, "widgets.example.com v2 "):
			if want := lineOf(t, "- name: v2", 1); line != want {
				t.Errorf("%s: line %d, want %d", msg, line, want)
			}
		case strings.HasPrefix(msg, "widgets.example.com v1 "):
			if want := lineOf(t, "  versions:", 2); line != want {
				t.Errorf("%s: line %d, want %d (spec.versions of the second document)", msg, line, want)
			}
		}
	}
	if levels["error"] != r.Summary.Errors || levels["warning"] != r.Summary.Warnings || levels["note"] != r.Summary.Infos {
		t.Errorf("levels %v, summary %+v", levels, r.Summary)
	}
	if len(run.Tool.Driver.Rules) == 0 || *run.Tool.Driver.Version != "v0.1.0" {
		t.Errorf("driver %+v", run.Tool.Driver)
	}
}

// TestJUnit: as many failed test cases as error findings, every CRD a
// suite, and the failure names file and line.
func TestJUnit(t *testing.T) {
	r := check(t)
	var b bytes.Buffer
	if err := JUnit(&b, r, &Locator{Fallback: release}); err != nil {
		t.Fatal(err)
	}
	var got junit.Testsuites
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	failures := 0
	for _, s := range got.Suites {
		for _, tc := range s.Testcases {
			if tc.Failure != nil {
				failures++
				if !strings.HasPrefix(tc.Failure.Data, release+":") {
					t.Errorf("failure %q names no file:line", tc.Failure.Data)
				}
			}
		}
	}
	if len(got.Suites) != 2 || failures != r.Summary.Errors || got.Failures != r.Summary.Errors {
		t.Errorf("%d suites, %d failures (%d counted), summary %+v\n%s", len(got.Suites), failures, got.Failures, r.Summary, b.String())
	}
}

// TestAnnotations: one workflow command per finding, errors as ::error;
// ':' and ',' escaped in properties, newlines and '%' in the message.
func TestAnnotations(t *testing.T) {
	r := check(t)
	var b bytes.Buffer
	if err := Annotations(&b, r, &Locator{Fallback: release}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	errs := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "::error file="+release+",line=") {
			errs++
		}
	}
	if len(lines) != r.Summary.Errors+r.Summary.Warnings+r.Summary.Infos || errs != r.Summary.Errors {
		t.Errorf("%d lines, %d errors; summary %+v\n%s", len(lines), errs, r.Summary, b.String())
	}
	if got := property("a:b,c%d\ne"); got != "a%3Ab%2Cc%25d%0Ae" {
		t.Errorf("property: %q", got)
	}
	if got := data("50% of a:b\nnext"); got != "50%25 of a:b%0Anext" {
		t.Errorf("data: %q", got)
	}
}

// TestLocateChart: a chart's template is located at its file in the
// chart directory, line 1; a crds/ file as a manifest; a CRD the release
// deletes, which no document holds, at the fallback (Chart.yaml); an
// archive's members at the archive.
func TestLocateChart(t *testing.T) {
	const chart = "../../testdata/cases/38-helm-release-deletes-crd/chart-0.6.0"
	crds := chart + "/crds/snapshots.yaml"
	l := &Locator{Chart: chart, Fallback: chart + "/Chart.yaml"}
	for _, tc := range []struct {
		source string
		want   Location
	}{
		{"backup/templates/config.yaml", Location{chart + "/templates/config.yaml", 1}},
		{crds, Location{crds, 7}}, // its spec.scope key
		{upgrade.InstalledSource + "ns/backup", Location{chart + "/Chart.yaml", 1}},
	} {
		if got := l.Locate(upgrade.Plan{Source: tc.source}, schemadiff.Finding{Path: "spec.scope"}); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.source, got, tc.want)
		}
	}
	if got := l.Locate(upgrade.Plan{Source: crds}, schemadiff.Finding{Version: "v1alpha1"}); got.Line != 10 {
		t.Errorf("v1alpha1 in %s: line %d, want 10", crds, got.Line)
	}
}

// TestURI: file names that a URI would misread are percent-encoded per
// segment; paths below the working directory become relative, "./" goes.
func TestURI(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"./charts/new%.yaml":          "charts/new%25.yaml",
		"charts/new with space.yaml":  "charts/new%20with%20space.yaml",
		"charts/new#1.yaml":           "charts/new%231.yaml",
		wd + "/testdata/release.yaml": "testdata/release.yaml",
		"/elsewhere/release.yaml":     "/elsewhere/release.yaml",
		"charts/Ärger.yaml":           "charts/%C3%84rger.yaml",
	} {
		if got := URI(in); got != want {
			t.Errorf("URI(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestAcknowledgedIsANote (issue 32): an error an --allow acknowledged is
// a notice in the annotations, a passing JUnit case and a suppressed note
// in SARIF, its text marked; an error whose update the API server rejects
// is never acknowledged and stays an error everywhere.
func TestAcknowledgedIsANote(t *testing.T) {
	r := check(t)
	var allows []*schemadiff.Allow
	rejected := 0
	for _, p := range r.CRDs {
		for _, f := range p.Findings {
			switch {
			case f.Severity != lifecycle.SeverityError:
			case schemadiff.RejectsUpdate(f.Code):
				rejected++
			default:
				a, err := schemadiff.ParseAllow(f.Code)
				if err != nil {
					t.Fatal(err)
				}
				allows = append(allows, a)
			}
		}
	}
	if len(allows) == 0 {
		t.Fatal("the fixture has no error to acknowledge")
	}
	r.Acknowledge(allows)
	acknowledged := r.Summary.Acknowledged
	var b bytes.Buffer
	if err := Annotations(&b, r, &Locator{Fallback: release}); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if strings.Contains(line, "(acknowledged)") != strings.HasPrefix(line, "::notice") && strings.Contains(line, "(acknowledged)") {
			t.Errorf("an acknowledged finding is not a notice: %s", line)
		}
	}
	if got := strings.Count(b.String(), "::error "); got != rejected {
		t.Errorf("%d error annotations, want %d (the rejected updates):\n%s", got, rejected, b.String())
	}
	b.Reset()
	if err := JUnit(&b, r, &Locator{Fallback: release}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(b.String(), "<failure"); got != rejected {
		t.Errorf("JUnit: %d failures, want %d:\n%s", got, rejected, b.String())
	}
	b.Reset()
	if err := SARIF(&b, r, &Locator{Fallback: release}, ""); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(b.String(), `"suppressions"`); acknowledged == 0 || got != acknowledged {
		t.Errorf("SARIF: %d suppressions, want %d (one per acknowledged result):\n%s", got, acknowledged, b.String())
	}
}
