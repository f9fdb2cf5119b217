package cli

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
)

// release32 is issue 32's release: a default changed, an enum value added,
// a description edited, and v1alpha1 (served, never stored) dropped.
func release32(next bool) string {
	versions := `  - name: v1alpha1
    served: true
    storage: false
    schema:
      openAPIV3Schema: SCHEMA
`
	mode, size := "{type: string, default: fast, description: How fast.}", "{type: string, enum: [small, large]}"
	if next {
		versions = ""
		mode, size = "{type: string, default: slow, description: How fast it runs.}", "{type: string, enum: [small, medium, large]}"
	}
	schema := "{type: object, properties: {spec: {type: object, properties: {mode: " + mode + ", size: " + size + "}}}}"
	return strings.ReplaceAll(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
`+versions+`  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: SCHEMA
`, "SCHEMA", schema)
}

func gitRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgSign=false"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func diffReport(t *testing.T, out string) report.Diff {
	t.Helper()
	var r report.Diff
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return r
}

// TestDiffRules is issue 32's "done when", in a fresh shallow clone with
// one more commit fetched: --old git:HEAD~1:config/crd; --rules olm exits
// 1 on the changed default alone (rule default); --allow default makes it
// exit 0 with the finding acknowledged; --rules crdversion keeps today's
// verdict; a .crdversion.yaml at the top of the repository that sets
// default: Warn (and OLM's options) exits 0, and an explicit --rules
// crdversion leaves it unread.
func TestDiffRules(t *testing.T) {
	src, clone := t.TempDir(), filepath.Join(t.TempDir(), "clone")
	gitRun(t, src, "init", "-q")
	crd := filepath.Join(src, "config", "crd", "widgets.yaml")
	if err := os.MkdirAll(filepath.Dir(crd), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, next := range []bool{false, true} {
		if err := os.WriteFile(crd, []byte(release32(next)), 0o644); err != nil {
			t.Fatal(err)
		}
		gitRun(t, src, "add", ".")
		gitRun(t, src, "commit", "-qm", "release")
	}
	gitRun(t, filepath.Dir(clone), "clone", "-q", "--depth", "2", "file://"+src, clone)
	t.Chdir(clone)

	base := []string{"diff", "--old", "git:HEAD~1:config/crd", "--new", "config/crd", "-o", "json"}
	out, _, err := run(t, append(base, "--rules", "olm")...)
	var found *FindingsError
	if !errors.As(err, &found) {
		t.Fatalf("--rules olm: err = %v, want *FindingsError\n%s", err, out)
	}
	r := diffReport(t, out)
	if r.Rules != "olm" || r.Old != "git:HEAD~1:config/crd" || len(r.CRDs) != 1 || len(r.CRDs[0].Findings) != 1 || r.CRDs[0].Findings[0].Rule != "default" || r.Summary.Errors != 1 {
		t.Fatalf("--rules olm: %s", out)
	}

	out, stderr, err := run(t, append(base, "--rules", "olm", "--allow", "default")...)
	if err != nil {
		t.Fatalf("--allow default: %v\n%s", err, stderr)
	}
	if f := diffReport(t, out).CRDs[0].Findings; len(f) != 1 || !f[0].Acknowledged || f[0].Rule != "default" {
		t.Errorf("--allow default: %s", out)
	}

	out, _, err = run(t, append(base, "--rules", "crdversion")...)
	if r := diffReport(t, out); err != nil || r.Rules != "" || r.Summary.Errors != 0 || r.Summary.Warnings != 2 || !hasFinding(r.CRDs[0].Findings, schemadiff.CodeDefaultChanged, ".spec.mode") {
		t.Errorf("--rules crdversion: %v\n%s", err, out)
	}

	out, _, err = run(t, append(base, "--rules", "crdify")...)
	if r := diffReport(t, out); !errors.As(err, &found) || r.Summary.Errors != 3 {
		t.Errorf("--rules crdify: %v\n%s", err, out)
	}

	config := "validations:\n- name: default\n  enforcement: Warn\n- name: description\n  enforcement: None\n- name: enum\n  enforcement: Error\n  configuration:\n    additionPolicy: Allow\n"
	if err := os.WriteFile(filepath.Join(clone, ".crdversion.yaml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(clone, "config"))
	out, stderr, err = run(t, "diff", "--old", "git:HEAD~1:crd", "--new", "crd", "-o", "json")
	if r := diffReport(t, out); err != nil || r.Rules != "crdify + "+filepath.Join(clone, ".crdversion.yaml") || r.Summary.Errors != 0 || r.Summary.Warnings != 1 {
		t.Errorf(".crdversion.yaml: %v %s\n%s", err, stderr, out)
	}
	out, _, err = run(t, "diff", "--old", "git:HEAD~1:crd", "--new", "crd", "-o", "json", "--rules", "crdversion")
	if r := diffReport(t, out); err != nil || r.Rules != "" {
		t.Errorf("--rules crdversion beside .crdversion.yaml: %v\n%s", err, out)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", "missing.yaml"}, "--config: open missing.yaml"},
		{[]string{"--config", "../.crdversion.yaml", "--rules", "crdversion"}, "--config is a crdify configuration"},
		{[]string{"--rules", "strict"}, `--rules "strict": one of crdversion, olm, crdify`},
	} {
		if _, _, err := run(t, append([]string{"diff", "--old", "git:HEAD~1:crd", "--new", "crd"}, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
	if _, _, err := run(t, "diff", "widgets.example.com", "v1", "v2", "--rules", "olm"); err == nil || !strings.Contains(err.Error(), "--rules and --config judge a release") {
		t.Errorf("live form with --rules: %v", err)
	}
}

// TestCheckUpgradeRules: check-upgrade --rules olm adds OLM v1's verdict
// to its own, offline as against a cluster: issue 32's changed default is
// an error that names the rule; --allow default acknowledges it.
func TestCheckUpgradeRules(t *testing.T) {
	dir := t.TempDir()
	oldFile, newFile := filepath.Join(dir, "old.yaml"), filepath.Join(dir, "new.yaml")
	for f, next := range map[string]bool{oldFile: false, newFile: true} {
		if err := os.WriteFile(f, []byte(release32(next)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err := run(t, "check-upgrade", "--from", oldFile, "--to", newFile, "--rules", "olm", "-o", "json")
	var found *FindingsError
	var r report.UpgradeCheck
	if jerr := json.Unmarshal([]byte(out), &r); jerr != nil || !errors.As(err, &found) || r.Rules != "olm" || len(r.CRDs) != 1 {
		t.Fatalf("err %v, json %v\n%s", err, jerr, out)
	}
	if !slices.ContainsFunc(r.CRDs[0].Findings, func(f schemadiff.Finding) bool {
		return f.Code == schemadiff.CodeDefaultChanged && f.Severity == "error" && f.Rule == "default" && strings.Contains(f.Message, "rule default of olm makes it an error")
	}) {
		t.Errorf("no error-level DefaultChanged naming rule default: %+v", r.CRDs[0].Findings)
	}
	if _, _, err := run(t, "check-upgrade", "--from", oldFile, "--to", newFile, "--rules", "olm", "--allow", "default"); err != nil {
		t.Errorf("--allow default: %v", err)
	}
	if _, _, err := run(t, "check-upgrade", "--from", oldFile, "--to", newFile); err != nil {
		t.Errorf("crdversion's rules alone: %v", err)
	}
}
