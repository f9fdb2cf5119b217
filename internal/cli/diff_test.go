package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/schema"
	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
)

func testdata(rel string) string { return filepath.Join("..", "..", "testdata", "crds", rel) }

func TestDiffFiles(t *testing.T) {
	bucketsOld, bucketsNew := testdata("flux-source-controller/v1.6.2/crds/buckets.nodesc.yaml"), testdata("flux-source-controller/v1.7.4/crds/buckets.nodesc.yaml")

	// Flux source-controller v1.6.2 -> v1.7.4: v1 gains
	// .spec.serviceAccountName, which conversion None to v1beta2 prunes;
	// status.artifact.digest becomes required (a warning: status).
	out, _, err := run(t, "diff", "--old", bucketsOld, "--new", bucketsNew, "-o", "json")
	var found *FindingsError
	if !errors.As(err, &found) {
		t.Fatalf("err = %v, want *FindingsError", err)
	}
	var r report.Diff
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.Kind != "SchemaDiff" || len(r.CRDs) != 1 || r.CRDs[0].Name != "buckets.source.toolkit.fluxcd.io" || !r.Summary.Incompatible {
		t.Fatalf("report: %+v", r)
	}
	if !hasFinding(r.CRDs[0].Findings, schemadiff.CodeRequiredAdded, ".status.artifact.digest") ||
		!hasFinding(r.CRDs[0].Findings, schemadiff.CodeNoneConversionPrunes, "spec.conversion") ||
		!hasFinding(r.CRDs[0].Findings, schemadiff.CodeVersionRemoved, "spec.versions") {
		t.Errorf("findings: %+v", r.CRDs[0].Findings)
	}
	// Each finding whose subject is a crdify rule names it (issue 32).
	for _, f := range r.CRDs[0].Findings {
		if want := schemadiff.RuleOf(f.Code); f.Rule != want {
			t.Errorf("%s at %s: rule %q, want %q", f.Code, f.Path, f.Rule, want)
		}
	}
	if !slices.ContainsFunc(r.CRDs[0].Findings, func(f schemadiff.Finding) bool { return f.Code == schemadiff.CodeRequiredAdded && f.Rule == "required" }) {
		t.Errorf("no RequiredAdded finding names the rule required: %+v", r.CRDs[0].Findings)
	}

	md, _, _ := run(t, "diff", "--old", bucketsOld, "--new", bucketsNew, "-o", "markdown")
	for _, want := range []string{"## CRD compatibility:", "| severity | version | path | code | crdify rule | explanation |", "| 🔴 error | v1beta2 | `spec.conversion` | NoneConversionPrunesFields | - |", "| 🟡 warning | v1 | `.status.artifact.digest` | RequiredAdded | required |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	text, _, _ := run(t, "diff", "--old", bucketsOld, "--new", bucketsNew)
	if !strings.Contains(text, "buckets.source.toolkit.fluxcd.io: 1 error, 4 warnings, 1 note\nSEVERITY") {
		t.Errorf("text:\n%s", text)
	}

	// The same file on both sides: nothing, exit 0.
	out, _, err = run(t, "diff", "--old", bucketsNew, "--new", bucketsNew)
	if err != nil || out != "buckets.source.toolkit.fluxcd.io: 0 errors, 0 warnings, 0 notes\n" {
		t.Errorf("identical: %v\n%s", err, out)
	}

	// With status.storedVersions in the old manifest, a removed stored
	// version is an error: the API server would reject the update.
	data, err := os.ReadFile(testdata("gateway-api/v1.1.0/standard/referencegrants.nodesc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	withStatus := filepath.Join(t.TempDir(), "old.yaml")
	if err := os.WriteFile(withStatus, append(data, []byte("status:\n  storedVersions: [v1alpha2, v1beta1]\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	newRG := testdata("gateway-api/v1.2.0/standard/referencegrants.nodesc.yaml")
	if _, _, err := run(t, "diff", "--old", testdata("gateway-api/v1.1.0/standard/referencegrants.nodesc.yaml"), "--new", newRG); err != nil {
		t.Errorf("without status: %v", err)
	}
	out, _, err = run(t, "diff", "--old", withStatus, "--new", newRG)
	if !errors.As(err, &found) || !strings.Contains(out, "StoredVersionRemoved") {
		t.Errorf("with storedVersions: %v\n%s", err, out)
	}
}

func hasFinding(fs []schemadiff.Finding, code, path string) bool {
	for _, f := range fs {
		if f.Code == code && f.Path == path {
			return true
		}
	}
	return false
}

// TestDiffBadInput: every failure is a *CheckError (exit code 2), never a
// *FindingsError (1).
func TestDiffBadInput(t *testing.T) {
	file := testdata("flux-source-controller/v1.7.4/crds/buckets.nodesc.yaml")
	cases := [][]string{
		{"diff", "--old", file},
		{"diff", "--old", file, "--new", "/does/not/exist.yaml"},
		{"diff", "crontabs", "v1", "v2", "--old", file, "--new", file},
		{"diff", "crontabs", "v1"},
		{"diff", "--old", file, "--new", file, "-o", "name"},
		{"diff", "--old", file, "--new", file, "--no-such-flag"},
	}
	for _, args := range cases {
		_, _, err := run(t, args...)
		var checkErr *CheckError
		if !errors.As(err, &checkErr) {
			t.Errorf("%v: err = %v (%T), want *CheckError", args, err, err)
		}
	}
}

// TestDiffEveryFile: every --old and every --new is read, as kubectl apply
// -f A -f B reads them (issue 17, B5: the last of each was the only one
// compared), and a CRD in two files of one side is refused.
func TestDiffEveryFile(t *testing.T) {
	bucketsOld, bucketsNew := testdata("flux-source-controller/v1.6.2/crds/buckets.nodesc.yaml"), testdata("flux-source-controller/v1.7.4/crds/buckets.nodesc.yaml")
	grantsOld, grantsNew := testdata("gateway-api/v1.1.0/standard/referencegrants.nodesc.yaml"), testdata("gateway-api/v1.2.0/standard/referencegrants.nodesc.yaml")
	out, _, _ := run(t, "diff", "--old", bucketsOld, "--old", grantsOld, "--new", bucketsNew, "--new", grantsNew, "-o", "json")
	var r report.Diff
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var names []string
	for _, c := range r.CRDs {
		names = append(names, c.Name)
		for _, f := range c.Findings {
			if f.Code == schemadiff.CodeCRDAdded || f.Code == schemadiff.CodeCRDRemoved {
				t.Errorf("%s: %s (a file was not read)", c.Name, f.Code)
			}
		}
	}
	if strings.Join(names, " ") != "buckets.source.toolkit.fluxcd.io referencegrants.gateway.networking.k8s.io" {
		t.Errorf("compared %v, want both CRDs", names)
	}
	if r.Old != bucketsOld+", "+grantsOld || r.New != bucketsNew+", "+grantsNew {
		t.Errorf("old %q new %q", r.Old, r.New)
	}
	_, _, err := run(t, "diff", "--old", bucketsOld, "--old", bucketsOld, "--new", bucketsNew)
	if err == nil || !strings.Contains(err.Error(), bucketsOld+" is given twice") {
		t.Errorf("a CRD twice on one side: %v", err)
	}
}

// TestDiffTooDeep: a CRD file whose schema nests deeper than
// schema.MaxDepth is refused, on either side of diff and by check-upgrade
// -f (before it connects to a cluster), with one line that names the CRD,
// the version and the depth, as a *CheckError (exit code 2), and nothing
// printed; at the limit, diff compares (B25).
func TestDiffTooDeep(t *testing.T) {
	dir := t.TempDir()
	// No cluster: check-upgrade must fail before it would connect.
	t.Setenv("KUBECONFIG", filepath.Join(dir, "no-kubeconfig"))
	write := func(name string, depth int, leaf string) string {
		t.Helper()
		crd := crdtest.New("deeps.example.com").Version("v1", crdtest.Served, crdtest.Storage).CRD()
		nested := crdtest.NestedJSON(depth, apiextensionsv1.JSONSchemaProps{Type: leaf},
			crdtest.ThroughProperties, crdtest.ThroughItems, crdtest.ThroughAdditionalProperties)
		data, err := crdtest.WithSchemaJSON(crd, "v1", nested)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	old, new := write("old.json", schema.MaxDepth, "string"), write("new.json", schema.MaxDepth, "integer")
	out, _, err := run(t, "diff", "--old", old, "--new", new, "-o", "json")
	var found *FindingsError
	var r report.Diff
	if !errors.As(err, &found) || json.Unmarshal([]byte(out), &r) != nil || len(r.CRDs) != 1 {
		t.Fatalf("at the limit: %v\n%.300s", err, out)
	}
	// The leaf, at level MaxDepth: (MaxDepth-1)/3 times .a[*].* down.
	leaf := strings.Repeat(".a[*].*", (schema.MaxDepth-1)/3)
	if fs := r.CRDs[0].Findings; len(fs) != 1 || fs[0].Code != schemadiff.CodeTypeChanged || fs[0].Path != leaf {
		t.Errorf("at the limit: %d findings, want one TypeChanged at the leaf: %.300v", len(fs), fs)
	}

	tooDeep := write("deep.json", schema.MaxDepth+1, "string")
	want := fmt.Sprintf("%s: deeps.example.com version v1: the schema is nested %d levels deep, more than the %d kubectl crdversion reads", tooDeep, schema.MaxDepth+1, schema.MaxDepth)
	for _, args := range [][]string{
		{"diff", "--old", tooDeep, "--new", new},
		{"diff", "--old", old, "--new", tooDeep},
		{"check-upgrade", "-f", tooDeep},
	} {
		out, _, err := run(t, args...)
		var checkErr *CheckError
		if !errors.As(err, &checkErr) || !strings.HasSuffix(err.Error(), want) || strings.Contains(err.Error(), "\n") || out != "" {
			t.Errorf("%v: err = %v (%T), out %q; want a *CheckError ending in %q", args[:2], err, err, out, want)
		}
	}
}

// TestDiffAllow (issue 32, item 4): --allow acknowledges a deliberate
// change by crdify rule or code, optionally for one CRD and path: the
// finding stays in every output, marked, and stops counting toward the
// exit code; an --allow that matches nothing is reported; an unknown rule
// name is an error.
func TestDiffAllow(t *testing.T) {
	bucketsOld, bucketsNew := testdata("flux-source-controller/v1.6.2/crds/buckets.nodesc.yaml"), testdata("flux-source-controller/v1.7.4/crds/buckets.nodesc.yaml")
	const crd = "buckets.source.toolkit.fluxcd.io"
	diff := func(extra ...string) (string, string, error) {
		return run(t, append([]string{"diff", "--old", bucketsOld, "--new", bucketsNew}, extra...)...)
	}

	out, errOut, err := diff("-o", "json", "--allow", schemadiff.CodeNoneConversionPrunes+"="+crd+":spec.conversion", "--allow", "required="+crd+":.status", "--allow", "default=other.example.com")
	if err != nil {
		t.Fatalf("with the error acknowledged: %v\n%s", err, errOut)
	}
	var r report.Diff
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	acked := 0
	for _, f := range r.CRDs[0].Findings {
		want := f.Code == schemadiff.CodeNoneConversionPrunes || f.Rule == "required" && strings.HasPrefix(f.Path, ".status")
		if f.Acknowledged != want {
			t.Errorf("%s at %s: acknowledged %v, want %v", f.Code, f.Path, f.Acknowledged, want)
		}
		if f.Acknowledged {
			acked++
		}
	}
	if s := r.Summary; acked < 2 || s.Acknowledged != acked || s.Errors != 0 || s.Incompatible {
		t.Errorf("summary %+v with %d acknowledged", s, acked)
	}
	if errOut != "Warning: --allow default=other.example.com matched no finding\n" {
		t.Errorf("stderr %q, want the warning of the --allow that matched nothing", errOut)
	}

	text, _, err := diff("--allow", schemadiff.CodeNoneConversionPrunes)
	if err != nil || !strings.Contains(text, "error (acknowledged)") || !strings.Contains(text, "1 acknowledged") {
		t.Errorf("text with --allow (%v):\n%s", err, text)
	}
	// Scoped to another path, the error still counts.
	var found *FindingsError
	if _, _, err := diff("--allow", schemadiff.CodeNoneConversionPrunes+"="+crd+":.spec"); !errors.As(err, &found) {
		t.Errorf("--allow at another path: err = %v, want *FindingsError", err)
	}
	for _, bad := range []string{"defaults", "default=", "nosuch=" + crd} {
		if _, _, err := diff("--allow", bad); err == nil || errors.As(err, &found) {
			t.Errorf("--allow %q: err = %v, want a bad-input error", bad, err)
		}
	}
}

// TestDiffAllowCannotPassARejectedUpdate (trial): --allow acknowledged a
// removed stored version and a changed scope, whose update the API server
// rejects, and diff exited 0. Such a finding still counts, and the
// warning says why.
func TestDiffAllowCannotPassARejectedUpdate(t *testing.T) {
	old := crdtest.New("widgets.example.com").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").CRD()
	new := crdtest.New("widgets.example.com").Version("v2", crdtest.Served, crdtest.Storage).CRD()
	new.Spec.Scope = apiextensionsv1.ClusterScoped
	dir := t.TempDir()
	write := func(name string, crd *apiextensionsv1.CustomResourceDefinition) string {
		b, err := json.Marshal(crd)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	out, errOut, err := run(t, "diff", "--old", write("old.json", old), "--new", write("new.json", new), "--allow", "storedVersionRemoval", "--allow", "scope", "-o", "json")
	var found *FindingsError
	if !errors.As(err, &found) {
		t.Fatalf("err = %v, want *FindingsError (the API server rejects the update)\n%s", err, out)
	}
	for _, want := range []string{"--allow storedVersionRemoval does not acknowledge StoredVersionRemoved at status.storedVersions of widgets.example.com: the API server rejects that update",
		"--allow scope does not acknowledge ScopeChanged at spec.scope"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	var r report.Diff
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Summary.Acknowledged != 0 || r.Summary.Errors < 2 {
		t.Errorf("summary %+v, want the two errors counted", r.Summary)
	}
}

// TestDiffMarkdownBacktickPath: a property name with a backtick stays
// one code span in the Markdown table (a trial found the table broken).
func TestDiffMarkdownBacktickPath(t *testing.T) {
	dir := t.TempDir()
	crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              \"a`b\": {type: TYPE}\n"
	for name, typ := range map[string]string{"old.yaml": "string", "new.yaml": "integer"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Replace(crd, "TYPE", typ, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	md, _, _ := run(t, "diff", "--old", filepath.Join(dir, "old.yaml"), "--new", filepath.Join(dir, "new.yaml"), "-o", "markdown")
	if !strings.Contains(md, "| 🔴 error | v1 | `` .spec.a`b `` | TypeChanged | type |") {
		t.Errorf("markdown:\n%s", md)
	}
}
