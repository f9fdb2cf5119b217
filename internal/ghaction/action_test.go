package ghaction

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"
	"sigs.k8s.io/yaml"

	"github.com/crdversion/kubectl-crdversion/internal/release"
)

// root is the repository root, where a workflow's checkout puts it.
const root = "../.."

// tag is the release the test serves.
const tag = "v0.0.0-actiontest"

// actionFile is the part of action.yml the runner reads to run it.
type actionFile struct {
	Inputs map[string]struct {
		Default string `json:"default"`
	} `json:"inputs"`
	Runs struct {
		Using string `json:"using"`
		Steps []step `json:"steps"`
	} `json:"runs"`
}

type step struct {
	Name  string            `json:"name"`
	ID    string            `json:"id"`
	If    string            `json:"if"`
	Shell string            `json:"shell"`
	Env   map[string]string `json:"env"`
	Run   string            `json:"run"`
	Uses  string            `json:"uses"`
}

// buildPlugin builds the plugin for this machine, stamped with tag.
func buildPlugin(t *testing.T) []byte {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kubectl-crdversion")
	build := exec.Command("go", "build", "-o", bin, "-ldflags", "-X github.com/crdversion/kubectl-crdversion/internal/version.version="+tag, "./cmd/kubectl-crdversion")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	binary, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	return binary
}

// serveRelease serves the release assets a tag publishes (the archive of
// binary and LICENSE for this machine, and checksums.txt, named as
// internal/release and .goreleaser.yaml name them) under /TAG/; tamper
// gives checksums.txt a wrong sum.
func serveRelease(t *testing.T, binary []byte, tamper bool) string {
	t.Helper()
	license, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	host := release.Host()
	var archive bytes.Buffer
	if err := release.WriteArchive(&archive, host, []release.File{{Name: "LICENSE", Mode: 0o644, Data: license}, {Name: release.Binary, Mode: 0o755, Data: binary}}, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	name := release.ArchiveName(tag, host)
	sum := release.SHA256(archive.Bytes())
	if tamper {
		sum = release.SHA256([]byte("another build"))
	}
	assets := map[string][]byte{name: archive.Bytes(), "checksums.txt": release.Checksums(map[string]string{name: sum})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := assets[strings.TrimPrefix(r.URL.Path, "/"+tag+"/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// runner runs a composite action's steps as a GitHub runner does: each
// run step with bash --noprofile --norc -eo pipefail, in the workspace,
// with the step's env (expressions evaluated), GITHUB_ACTION_PATH,
// fresh GITHUB_OUTPUT and GITHUB_ENV files, GITHUB_PATH entries of the
// steps before prepended to PATH, and each step's outputs read back; a
// step whose if is false is skipped, a uses step is recorded, not run;
// after a failing step only always() steps are considered.
type runner struct {
	t       *testing.T
	inputs  map[string]string
	outputs map[string]map[string]string // by step id
	path    []string
	log     bytes.Buffer
	ran     []string // "name: ran|skipped|uses|failed"
}

var expr = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// value is the value of a context reference (inputs.X,
// steps.ID.outputs.X); an unknown form fails the test, so that an edit
// of action.yml that this runner cannot evaluate is noticed.
func (r *runner) value(ref string) string {
	switch parts := strings.Split(ref, "."); {
	case len(parts) == 2 && parts[0] == "inputs":
		return r.inputs[parts[1]]
	case len(parts) == 4 && parts[0] == "steps" && parts[2] == "outputs":
		return r.outputs[parts[1]][parts[3]]
	}
	r.t.Fatalf("action.yml: the test's runner cannot evaluate %q", ref)
	return ""
}

// cond evaluates an if: terms joined by && and ||, parentheses, each
// term always(), or A == 'v' or A != 'v'.
func (r *runner) cond(s string) bool {
	s = strings.TrimSpace(s)
	if m := expr.FindStringSubmatch(s); m != nil {
		s = m[1]
	}
	if s == "" {
		return true
	}
	return r.or(s)
}

// split splits s at op outside parentheses.
func split(s, op string) []string {
	var out []string
	depth, last := 0, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '(':
			depth++
		case s[i] == ')':
			depth--
		case depth == 0 && strings.HasPrefix(s[i:], op):
			out = append(out, s[last:i])
			last = i + len(op)
			i += len(op) - 1
		}
	}
	return append(out, s[last:])
}

func (r *runner) or(s string) bool {
	for _, t := range split(s, "||") {
		if r.and(t) {
			return true
		}
	}
	return false
}

func (r *runner) and(s string) bool {
	for _, t := range split(s, "&&") {
		if !r.term(strings.TrimSpace(t)) {
			return false
		}
	}
	return true
}

func (r *runner) term(t string) bool {
	switch {
	case t == "always()":
		return true
	case strings.HasPrefix(t, "(") && strings.HasSuffix(t, ")"):
		return r.or(t[1 : len(t)-1])
	}
	op := "=="
	if strings.Contains(t, "!=") {
		op = "!="
	}
	a, b, ok := strings.Cut(t, op)
	if !ok {
		r.t.Fatalf("action.yml: the test's runner cannot evaluate if: %q", t)
	}
	want := strings.Trim(strings.TrimSpace(b), "'")
	return (r.value(strings.TrimSpace(a)) == want) == (op == "==")
}

// run runs the action's steps; it returns false when a step failed.
func (r *runner) run(a actionFile) bool {
	abs, err := filepath.Abs(root)
	if err != nil {
		r.t.Fatal(err)
	}
	temp := r.t.TempDir()
	arch := map[string]string{"amd64": "X64", "arm64": "ARM64"}[runtime.GOARCH]
	failed := false
	for i, s := range a.Runs.Steps {
		name := s.Name
		// After a failure only steps whose if: says always() are
		// considered, as the runner's implicit success() does.
		if failed && !strings.Contains(s.If, "always()") || s.If != "" && !r.cond(s.If) {
			r.ran = append(r.ran, name+": skipped")
			continue
		}
		if s.Uses != "" {
			r.ran = append(r.ran, name+": uses "+s.Uses)
			continue
		}
		if s.Shell != "bash" {
			r.t.Fatalf("step %q: shell %q; the action's steps use bash", name, s.Shell)
		}
		files := map[string]string{}
		for _, f := range []string{"GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_ENV"} {
			files[f] = filepath.Join(temp, f+"-"+string(rune('0'+i)))
			if err := os.WriteFile(files[f], nil, 0o600); err != nil {
				r.t.Fatal(err)
			}
		}
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", s.Run)
		cmd.Dir = abs
		cmd.Env = []string{"HOME=" + temp, "PATH=" + strings.Join(append(append([]string{}, r.path...), os.Getenv("PATH")), ":"),
			"GITHUB_ACTIONS=true", "GITHUB_ACTION_PATH=" + abs, "GITHUB_WORKSPACE=" + abs, "RUNNER_OS=Linux", "RUNNER_ARCH=" + arch, "RUNNER_TEMP=" + temp,
			"KUBECONFIG=" + filepath.Join(temp, "no-cluster")}
		for k, v := range files {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		for k, v := range s.Env {
			cmd.Env = append(cmd.Env, k+"="+expr.ReplaceAllStringFunc(v, func(m string) string { return r.value(expr.FindStringSubmatch(m)[1]) }))
		}
		cmd.Stdout, cmd.Stderr = &r.log, &r.log
		err := cmd.Run()
		out, _ := os.ReadFile(files["GITHUB_OUTPUT"])
		if s.ID != "" {
			r.outputs[s.ID] = map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if k, v, ok := strings.Cut(line, "="); ok {
					r.outputs[s.ID][k] = v // the last value of a key wins
				}
			}
		}
		added, _ := os.ReadFile(files["GITHUB_PATH"])
		for _, p := range strings.Fields(string(added)) {
			r.path = append([]string{p}, r.path...)
		}
		if err != nil {
			r.ran = append(r.ran, name+": failed")
			failed = true
			continue
		}
		r.ran = append(r.ran, name+": ran")
	}
	return !failed
}

// newRunner reads action.yml and fills the inputs with their defaults
// and the given values.
func newRunner(t *testing.T, inputs map[string]string) (*runner, actionFile) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a actionFile
	if err := yaml.Unmarshal(data, &a); err != nil {
		t.Fatal(err)
	}
	if a.Runs.Using != "composite" {
		t.Fatalf("runs.using %q, want composite", a.Runs.Using)
	}
	r := &runner{t: t, inputs: map[string]string{}, outputs: map[string]map[string]string{}}
	for k, in := range a.Inputs {
		r.inputs[k] = in.Default
	}
	for k, v := range inputs {
		if _, ok := a.Inputs[k]; !ok {
			t.Fatalf("action.yml has no input %q", k)
		}
		r.inputs[k] = v
	}
	return r, a
}

// TestActionCatchesCase38: the action as a pull request's job runs it,
// on case 38's chart change offline. It installs the served release (its
// sha256 checked), annotates the finding at the chart's crds/ file,
// writes valid SARIF 2.1.0 with the one error, reaches the SARIF upload,
// and then fails the job with check-upgrade's exit code 1.
func TestActionCatchesCase38(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("the action runs on Linux and macOS runners")
	}
	const c38 = "testdata/cases/38-helm-release-deletes-crd"
	sarifFile := filepath.Join(t.TempDir(), "out.sarif")
	r, a := newRunner(t, map[string]string{"version": tag, "release-url": serveRelease(t, buildPlugin(t), false), "sarif-file": sarifFile,
		"args": "--from " + c38 + "/chart-0.5.0 --to " + c38 + "/chart-0.6.0 --release backup -n backup-system"})
	if r.run(a) {
		t.Fatalf("the action passed; want the last step to fail the job\n%s\n%s", strings.Join(r.ran, "\n"), r.log.String())
	}
	want := []string{"Install kubectl-crdversion: ran", "kubectl crdversion check-upgrade: ran", "Upload SARIF: uses github/codeql-action/upload-sarif@v3", "Fail on findings: failed"}
	if strings.Join(r.ran, "\n") != strings.Join(want, "\n") {
		t.Errorf("steps:\n%s\nwant:\n%s\nlog:\n%s", strings.Join(r.ran, "\n"), strings.Join(want, "\n"), r.log.String())
	}
	if got := r.outputs["check"]["exit-code"]; got != "1" {
		t.Errorf("exit-code output %q, want 1", got)
	}
	log := r.log.String()
	for _, w := range []string{tag, "::error file=" + c38 + "/chart-0.6.0/crds/snapshots.yaml,line=", "title=HelmDeletesCRD (snapshots.backup.example.com)::", "kubectl crdversion check-upgrade exited 1"} {
		if !strings.Contains(log, w) {
			t.Errorf("the job's log lacks %q:\n%s", w, log)
		}
	}
	if n := strings.Count(log, "::error file="); n != 1 {
		t.Errorf("%d error annotations, want 1 (the SARIF run adds none)", n)
	}
	data, err := os.ReadFile(sarifFile)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sarif.FromBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("the SARIF file is not valid SARIF 2.1.0: %v", err)
	}
	if res := s.Runs[0].Results; len(res) != 1 || res[0].Level != "error" || *res[0].RuleID != "HelmDeletesCRD" {
		t.Errorf("SARIF results %+v", res)
	}
}

// TestActionRefusesAWrongChecksum: an archive whose sha256 is not the one
// checksums.txt lists is not installed, and nothing after it runs.
func TestActionRefusesAWrongChecksum(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("the action runs on Linux and macOS runners")
	}
	r, a := newRunner(t, map[string]string{"version": tag, "release-url": serveRelease(t, []byte("#!/bin/sh\necho a build that checksums.txt does not list\n"), true),
		"args": "--from a.yaml --to b.yaml", "sarif-file": filepath.Join(t.TempDir(), "out.sarif")})
	if r.run(a) {
		t.Fatal("the action passed with a tampered checksum")
	}
	if got := strings.Join(r.ran, "\n"); got != "Install kubectl-crdversion: failed\nkubectl crdversion check-upgrade: skipped\nUpload SARIF: skipped\nFail on findings: skipped" {
		t.Errorf("steps:\n%s", got)
	}
	if log := r.log.String(); !strings.Contains(log, "checksums.txt of "+tag+" says") || !strings.Contains(log, "not installed") || len(r.path) != 0 {
		t.Errorf("log:\n%s\npath %v", log, r.path)
	}
}
