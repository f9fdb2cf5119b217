package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	clientv3 "go.etcd.io/etcd/client/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// TestAdviceWalk is the advice-walking property test (issue 17, Build 4):
// advice is code, and every printed Next:, fix: and run: line must be safe
// to paste in the state where it is printed. For each starting state — the
// lifecycle states S0–S6 reached by the chain from S0, and the findings
// that can hold there: version names Kubernetes' rules cannot order, a
// deprecated storage version, a storage version not served, a restored
// version still in storedVersions, objects stored at a version missing
// from spec.versions (unreadable) — it
// runs status and doctor, parses every printed command line, and runs
// them through the real kubectl with the plugin on PATH: the fix: lines as
// a server-side dry run (each must not be refused), the Next: line for
// real, and the Next:, fix: and run: lines that command prints in turn as
// a server-side dry run. After each step it asserts that
//
//   - no object became unreadable, and no object that could be read lost
//     or changed a field (each object is read from its etcd key, through
//     the API server, before and after);
//   - no printed command was refused by the tool itself (exit code 0);
//   - no printed command goes backwards: promote-storage only to a newer
//     version, deprecate/unserve/retire only of a version older than the
//     storage version (by the scenario's true order of versions).
//
// It follows the chain until status says there is nothing left to do, or
// fails after a bound of steps.
func TestAdviceWalk(t *testing.T) {
	slowTier(t, "every printed command followed to the end of the lifecycle")
	t.Parallel()
	kubectl := kubectlPath()
	if kubectl == "" {
		t.Fatal("the advice walk runs the printed commands through the real kubectl; none on this machine")
	}
	for _, sc := range adviceScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			// Each scenario has a CRD of its own, and mostly waits for
			// the API server: they run side by side.
			t.Parallel()
			c := newClients(t)
			crd := sc.build(t, c)
			w := &walker{t: t, c: c, kubectl: kubectl, crd: crd.Name, truth: sc.truth, newVersion: sc.newVersion}
			w.walk(14)
		})
	}
}

// adviceScenario is a starting state of the walk: build makes it on the
// API server; truth is the real order of its API versions, oldest first
// (what a user answers when asked for --version-order); newVersion is the
// name a user picks for <new-version>.
type adviceScenario struct {
	name       string
	truth      []string
	newVersion string
	build      func(t *testing.T, c clients) *apiextensionsv1.CustomResourceDefinition
}

func adviceScenarios() []adviceScenario {
	return []adviceScenario{
		{
			// S0 → S6 along the chain: every state of the lifecycle.
			name: "S0 one version", truth: []string{"v1", "v2"}, newVersion: "v2",
			build: func(t *testing.T, c clients) *apiextensionsv1.CustomResourceDefinition {
				return advance(t, c, "walk-s0.example.com", apiextensionsv1.NamespaceScoped, 3, lifecycle.StateS0)
			},
		},
		{
			// A restored version still in storedVersions: v1 unserved,
			// objects stored at it.
			name: "restored v1 unserved and still stored", truth: []string{"v1", "v2"},
			build: func(t *testing.T, c clients) *apiextensionsv1.CustomResourceDefinition {
				crd := advance(t, c, "walk-restored.example.com", apiextensionsv1.NamespaceScoped, 3, lifecycle.StateS2)
				return updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
					crd.Spec.Versions[0].Served = false
				})
			},
		},
		{
			// Objects stored at v1 while v1 is gone from spec.versions but
			// still in storedVersions: they cannot be read (one
			// unconvertible object, twice).
			name: "objects stored at a version missing from spec", truth: []string{"v1", "v2"},
			build: func(t *testing.T, c clients) *apiextensionsv1.CustomResourceDefinition {
				crd := advance(t, c, "walk-orphan.example.com", apiextensionsv1.NamespaceScoped, 2, lifecycle.StateS2)
				return removeFirstVersionInEtcd(t, c, crd)
			},
		},
		{
			// B21: v1 declared .spec.legacy, which v2 does not; v1 was
			// removed while its objects were still stored at it (none
			// holds legacy). The restore keeps every field (no schema of
			// the storage version), and migrate measures the objects
			// rather than the advice stopping at the schemas' difference.
			name: "objects stored at a removed version with a wider schema", truth: []string{"v1", "v2"},
			build: func(t *testing.T, c clients) *apiextensionsv1.CustomResourceDefinition {
				wide := crontab("walk-wider.example.com", apiextensionsv1.NamespaceScoped)
				wide.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["legacy"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
				crd := createCRD(t, c, wide)
				createCronTabs(t, c, crd, "v1", 2)
				updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
					crd.Spec.Versions = append(crd.Spec.Versions, crontabVersion("v2", true, false))
				})
				crd = setStorage(t, c, crd.Name, "v2")
				return removeFirstVersionInEtcd(t, c, crd)
			},
		},
		{
			// status.storedVersions trimmed by hand before the objects were
			// rewritten, then v1 removed (the API server allows it once
			// storedVersions does not list v1): the objects stored at v1
			// cannot be read, and nothing in the CRD says they are there.
			// The restore must record v1 in storedVersions again, or the
			// advice after it (retire) removes v1 once more. The objects
			// were written through v2 while v1 was the storage version, so
			// no managedFields entry names v1 and retire's managedFields
			// clean-up does not happen to rewrite them.
			name: "objects stored at a version storedVersions no longer lists", truth: []string{"v1", "v2"},
			build: func(t *testing.T, c clients) *apiextensionsv1.CustomResourceDefinition {
				crd := createCRD(t, c, crontab("walk-trimmed.example.com", apiextensionsv1.NamespaceScoped))
				v2 := crontabVersion("v2", true, false)
				serveVersion(t, c, crd, "v2", v2.Schema.OpenAPIV3Schema)
				createCronTabs(t, c, crd, "v2", 2)
				crd = setStorage(t, c, crd.Name, "v2")
				setStoredVersions(t, c, crd.Name, "v2")
				crd = updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
					crd.Spec.Versions = crd.Spec.Versions[1:]
				})
				waitListFails(t, c, crd, "v2", "invalid group/version")
				return getCRD(t, c, crd.Name)
			},
		},
		{
			// The storage version not served (a hand edit), objects still
			// stored at v1: migrate writes through the storage version and
			// refuses until it is served again.
			name: "storage version not served", truth: []string{"v1", "v2"},
			build: func(t *testing.T, c clients) *apiextensionsv1.CustomResourceDefinition {
				crd := advance(t, c, "walk-storage-unserved.example.com", apiextensionsv1.NamespaceScoped, 3, lifecycle.StateS2)
				return updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
					crd.Spec.Versions[1].Served = false
				})
			},
		},
		{
			// S1 with the storage version not served (a hand edit):
			// promote-storage reads the objects at the storage version
			// and refuses until it is served again.
			name: "S1 storage version not served", truth: []string{"v1", "v2"},
			build: func(t *testing.T, c clients) *apiextensionsv1.CustomResourceDefinition {
				crd := advance(t, c, "walk-s1-unserved.example.com", apiextensionsv1.NamespaceScoped, 3, lifecycle.StateS1)
				return updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
					crd.Spec.Versions[0].Served = false
				})
			},
		},
		{
			// B6: the storage version deprecated.
			name: "deprecated storage version", truth: []string{"v1", "v2"},
			build: func(t *testing.T, c clients) *apiextensionsv1.CustomResourceDefinition {
				crd := advance(t, c, "walk-deprecated.example.com", apiextensionsv1.NamespaceScoped, 3, lifecycle.StateS3)
				return updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
					crd.Spec.Versions[1].Deprecated = true
				})
			},
		},
		{
			// A deprecated old version still in storedVersions (objects
			// stored at it): not to be unserved before migrate.
			name: "deprecated old version still stored", truth: []string{"v1", "v2"},
			build: func(t *testing.T, c clients) *apiextensionsv1.CustomResourceDefinition {
				crd := advance(t, c, "walk-deprecated-stored.example.com", apiextensionsv1.NamespaceScoped, 3, lifecycle.StateS2)
				return updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
					crd.Spec.Versions[0].Deprecated = true
				})
			},
		},
		{
			// B2: date-stamped names (Azure Service Operator style), the
			// newer one the storage version: kubectl's priority is
			// alphabetical for them, and storedVersions lists only one.
			name: "date-stamped names", truth: []string{"v1api20210501", "v1api20230101"},
			build: func(t *testing.T, c clients) *apiextensionsv1.CustomResourceDefinition {
				return unorderedCRD(t, c, "walk-dated.example.com", []string{"v1api20210501", "v1api20230101"}, "v1api20230101", nil)
			},
		},
		{
			// B2: alpha and stable, objects stored at alpha and stable the
			// storage version: storedVersions orders them until migrate
			// trims it; then only the user can.
			name: "alpha and stable", truth: []string{"alpha", "stable"},
			build: func(t *testing.T, c clients) *apiextensionsv1.CustomResourceDefinition {
				return unorderedCRD(t, c, "walk-alpha.example.com", []string{"alpha", "stable"}, "stable", []string{"alpha"})
			},
		},
	}
}

// unorderedCRD creates a cluster-scoped CRD with the given versions (all
// served, schemas preserving unknown fields), two objects created at each
// version in storedFirst while it is the storage version, then storage the
// storage version.
func unorderedCRD(t *testing.T, c clients, group string, versions []string, storage string, storedFirst []string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "databases." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "databases", Singular: "database", Kind: "Database", ListKind: "DatabaseList"},
		},
	}
	first := storage
	if len(storedFirst) > 0 {
		first = storedFirst[0]
	}
	for _, v := range versions {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: true, Storage: v == first,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}},
		})
	}
	crd = createCRD(t, c, crd)
	create := func(version string, i int) {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/" + version, "kind": "Database",
			"metadata": map[string]any{"name": fmt.Sprintf("db-%s-%d", version, i)},
			"spec":     map[string]any{"size": int64(i), "engine": "postgres", "extra": map[string]any{"deep": []any{"a", "b"}}},
		}}
		waitFor(t, "creating a Database at "+version, func() (bool, error) {
			_, err := c.dyn.Resource(gvr(crd, version)).Create(context.Background(), obj, metav1.CreateOptions{})
			return err == nil, nil
		})
	}
	for _, v := range storedFirst {
		crd = setStorage(t, c, crd.Name, v)
		create(v, 1)
		create(v, 2)
	}
	crd = setStorage(t, c, crd.Name, storage)
	create(storage, 1)
	return getCRD(t, c, crd.Name)
}

// walker follows the advice of status and doctor for one CRD.
type walker struct {
	t          *testing.T
	c          clients
	kubectl    string
	crd        string
	truth      []string // versions, oldest first
	newVersion string
	// statusArgs are the arguments of the status run each step: the last
	// printed status command the walker ran (with --version-order once it
	// was asked for).
	statusArgs []string
	// seen is each object (etcd key) as last read: its content, or "" while
	// it cannot be read.
	seen map[string]string
}

func (w *walker) walk(bound int) {
	t := w.t
	w.statusArgs = []string{"crdversion", "status", w.crd}
	w.seen = map[string]string{}
	w.check("the start")
	var last string
	for step := 1; step <= bound; step++ {
		out := w.run(w.statusArgs, false)
		lines := printedCommands(out)
		w.sameAsJSON(out, lines)
		// The walk is not about client usage (its retire and unserve run
		// with --skip-usage-check): the objects it made through the old
		// versions are not clients, and doctor is told so.
		doctor := w.runAllowingExit([]string{"crdversion", "doctor", w.crd, "--usage-history=0"})
		lines = append(lines, printedCommands(doctor)...)
		next, done := nextLine(out)
		if done {
			t.Logf("step %d: nothing left to do\n%s", step, out)
			return
		}
		// Every fix: line, as a server-side dry run (the first command of
		// a chain: the rest depend on it).
		for _, l := range lines {
			if l.next {
				continue
			}
			w.checkDirection(l.text, "fix")
			cmds := w.parse(l.text)
			w.run(cmds[0], !isReadOnly(cmds[0]))
		}
		if next == "" && asksOrder(out) {
			// No command can be printed for an order only the user
			// knows: answer as the user does, with the true order.
			next = "kubectl crdversion status " + w.crd + " --version-order " + strings.Join(w.truth, ",")
		}
		if next == "" {
			t.Fatalf("step %d: status prints no command to run next, and not \"nothing to do\":\n%s", step, out)
		}
		if next == last {
			t.Fatalf("step %d: the advice does not progress: %s again\n%s", step, next, out)
		}
		last = next
		t.Logf("step %d: %s", step, next)
		w.checkDirection(next, "Next")
		var printed []printedLine
		for _, argv := range w.parse(next) {
			printed = append(printed, printedCommands(w.run(argv, false))...)
			if len(argv) > 1 && argv[0] == "crdversion" && argv[1] == "status" {
				w.statusArgs = argv
			}
		}
		w.check(fmt.Sprintf("step %d (%s)", step, next))
		// The command just run printed its own Next: (and fix: or run:)
		// lines: each must be safe to paste now too — not backwards, and
		// not refused (a server-side dry run of its first command).
		for _, l := range printed {
			w.checkDirection(l.text, "printed by "+next+":")
			cmds := w.parse(l.text)
			w.run(cmds[0], !isReadOnly(cmds[0]))
		}
	}
	t.Fatalf("the advice chain did not end within %d steps", bound)
}

// sameAsJSON checks that status -o json carries the commands the table
// printed (lines), each rendered from its structured form, and no other.
func (w *walker) sameAsJSON(out string, lines []printedLine) {
	w.t.Helper()
	var s report.Status
	data := w.run(append(slices.Clone(w.statusArgs), "-o", "json"), false)
	if err := json.Unmarshal([]byte(data), &s); err != nil {
		w.t.Fatalf("status -o json: %v\n%s", err, data)
	}
	var fromJSON, printed []string
	for _, f := range s.Findings {
		if len(f.Run) > 0 {
			fromJSON = append(fromJSON, lifecycle.RenderAll(f.Run, nil))
		}
	}
	if s.Next != nil && len(s.Next.Run) > 0 {
		fromJSON = append(fromJSON, lifecycle.RenderAll(s.Next.Run, nil))
	}
	for _, l := range lines {
		printed = append(printed, l.text)
	}
	slices.Sort(fromJSON)
	slices.Sort(printed)
	if !slices.Equal(fromJSON, printed) {
		w.t.Errorf("the commands of status -o json differ from the printed ones:\n json    %q\n printed %q\n%s", fromJSON, printed, out)
	}
}

// run runs argv (from "kubectl" on, without it) through the real kubectl
// with the plugin on PATH; dryRun adds --dry-run=server. A non-zero exit is
// a printed command that the tool (or kubectl) refused, except status's
// exit code 1, which says that its report has an error-level finding (as
// kubectl diff's does): the walk starts in such states and follows the
// advice out of them, so that code is checked against the printed report.
func (w *walker) run(argv []string, dryRun bool) string {
	w.t.Helper()
	if dryRun {
		argv = append(slices.Clone(argv), "--dry-run=server")
	}
	r := w.exec(argv)
	if len(argv) > 1 && argv[0] == "crdversion" && argv[1] == "status" {
		checkStatusExit(w.t, "kubectl "+strings.Join(argv, " "), r)
		return r.stdout
	}
	if r.code != 0 {
		w.t.Fatalf("a printed command was refused: kubectl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(argv, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// runAllowingExit is run for a report whose exit code says what it found
// (doctor exits 1 on errors).
func (w *walker) runAllowingExit(argv []string) string {
	w.t.Helper()
	return w.exec(argv).stdout
}

func (w *walker) exec(argv []string) result {
	w.t.Helper()
	if len(argv) > 1 && (argv[1] == "unserve" || argv[1] == "retire") && !slices.Contains(argv, "--skip-usage-check") {
		// Their client-usage check waits out its window (15 s by
		// default) and counts the scenario's own setup writes through
		// the old version: the walk pastes them as an operator does once
		// the clients have moved, which the usage tests cover.
		argv = append(slices.Clone(argv), "--skip-usage-check")
	}
	env := []string{"PATH=" + pluginDir + string(os.PathListSeparator) + os.Getenv("PATH"), "KUBECONFIG=" + srv.Kubeconfig}
	return executeWithin(w.t, 3*time.Minute, w.kubectl, env, argv...)
}

// parse splits a printed line into its commands (joined by " && ") and
// each into words as a POSIX shell would, from "kubectl" on (which is
// dropped), with the placeholders a user fills in filled in.
func (w *walker) parse(line string) [][]string {
	w.t.Helper()
	var out [][]string
	var cur []string
	for _, word := range shellWords(w.t, line) {
		if word == "&&" {
			out = append(out, cur)
			cur = nil
			continue
		}
		cur = append(cur, word)
	}
	out = append(out, cur)
	for i, argv := range out {
		if len(argv) < 2 || argv[0] != "kubectl" {
			w.t.Fatalf("printed line %q: %q is not a kubectl command", line, strings.Join(argv, " "))
		}
		argv = argv[1:]
		for j, a := range argv {
			if !lifecycle.IsPlaceholder(a) {
				continue
			}
			switch a {
			case "<new-version>":
				if w.newVersion == "" {
					w.t.Fatalf("printed line %q asks for a new version, which this state does not call for", line)
				}
				argv[j] = w.newVersion
			default:
				w.t.Fatalf("printed line %q: no value for the placeholder %s", line, a)
			}
		}
		out[i] = argv
	}
	return out
}

// checkDirection fails when line moves the lifecycle backwards by the true
// order: promote-storage to an older version than the storage version, or
// deprecate/unserve/retire of a version not older than it.
func (w *walker) checkDirection(line, what string) {
	w.t.Helper()
	crd := getCRD(w.t, w.c, w.crd)
	storage := lifecycle.StorageVersion(crd)
	age := func(v string) int { return slices.Index(w.truth, v) }
	for _, argv := range w.parse(line) {
		if len(argv) < 4 || argv[0] != "crdversion" || slices.Contains(argv, "--undo") {
			continue
		}
		verb, v := argv[1], argv[3]
		switch verb {
		case "promote-storage":
			if age(v) < age(storage) {
				w.t.Errorf("%s line %q goes backwards: %s is older than the storage version %s (versions oldest first: %v)", what, line, v, storage, w.truth)
			}
		case "deprecate", "unserve", "retire":
			if age(v) >= age(storage) {
				w.t.Errorf("%s line %q goes backwards: %s is not older than the storage version %s (versions oldest first: %v)", what, line, v, storage, w.truth)
			}
		}
		// Clients must keep a version to move to: a served version that
		// is not deprecated, other than the one deprecated or unserved.
		if verb == "deprecate" || verb == "unserve" {
			left := false
			for _, sv := range crd.Spec.Versions {
				left = left || sv.Name != v && sv.Served && !sv.Deprecated
			}
			if !left {
				w.t.Errorf("%s line %q leaves clients no served version that is not deprecated (versions %s)", what, line, versionFlags(crd))
			}
		}
	}
}

// versionFlags renders crd's versions with their flags, for messages.
func versionFlags(crd *apiextensionsv1.CustomResourceDefinition) string {
	var out []string
	for _, v := range crd.Spec.Versions {
		out = append(out, fmt.Sprintf("%s served=%v storage=%v deprecated=%v", v.Name, v.Served, v.Storage, v.Deprecated))
	}
	return strings.Join(out, "; ")
}

// check asserts that every object that could be read is still there and
// can still be read, with the same content.
func (w *walker) check(when string) {
	t := w.t
	t.Helper()
	crd := getCRD(t, w.c, w.crd)
	now := w.readObjects(crd)
	for key, was := range w.seen {
		got, ok := now[key]
		switch {
		case !ok:
			t.Errorf("after %s: object %s is gone from etcd", when, key)
		case was != "" && got == "":
			t.Errorf("after %s: object %s became unreadable", when, key)
		case was != "" && got != was:
			t.Errorf("after %s: object %s changed:\n was %s\n now %s", when, key, was, got)
		}
	}
	first := len(w.seen) == 0
	for key, got := range now {
		if _, ok := w.seen[key]; !ok && !first {
			t.Errorf("after %s: a new object %s appeared", when, key)
		}
		if got != "" || w.seen[key] == "" {
			w.seen[key] = got
		}
	}
}

// readObjects reads each object of crd from its etcd key through the API
// server, at the storage version when it is served, else at another
// served version: its content without apiVersion and server-set metadata,
// or "" when the API server cannot read it.
func (w *walker) readObjects(crd *apiextensionsv1.CustomResourceDefinition) map[string]string {
	t := w.t
	t.Helper()
	prefix := srv.EtcdPrefix + "/" + crd.Spec.Group + "/" + crd.Spec.Names.Plural + "/"
	resp, err := srv.Etcd.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	version := lifecycle.ListVersion(crd)
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		key := strings.TrimPrefix(string(kv.Key), prefix)
		if version == "" {
			out[key] = ""
			continue
		}
		ns, name := "", key
		if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
			ns, name, _ = strings.Cut(key, "/")
		}
		u, err := resource(w.c, crd, version, ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			out[key] = ""
			continue
		}
		obj := u.DeepCopy().Object
		delete(obj, "apiVersion")
		delete(obj, "metadata")
		obj["labels"], obj["annotations"], obj["uid"] = u.GetLabels(), u.GetAnnotations(), string(u.GetUID())
		data, _ := json.Marshal(obj)
		out[key] = string(data)
	}
	return out
}

// printedLine is one printed command line: a Next: line or a fix:/run:
// line.
type printedLine struct {
	text string
	next bool
}

// printedCommands are the Next:, fix: and run: lines of out that are
// commands (some fixes are instructions in words).
func printedCommands(out string) []printedLine {
	var lines []printedLine
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		for _, p := range []string{"fix: ", "run: ", "Next: "} {
			if rest, ok := strings.CutPrefix(l, p); ok && strings.HasPrefix(rest, "kubectl ") {
				lines = append(lines, printedLine{text: rest, next: p == "Next: "})
			}
		}
	}
	return lines
}

// asksOrder reports whether status's Next: line asks for --version-order
// in words (no command can be printed for an order only the user knows).
func asksOrder(out string) bool {
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, "Next: "); ok {
			return !strings.HasPrefix(rest, "kubectl ") && strings.Contains(rest, "re-run status with --version-order listing")
		}
	}
	return false
}

// nextLine is status's Next: command, or done when it says nothing is left.
func nextLine(out string) (next string, done bool) {
	for _, l := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(l, "Next: ")
		if !ok {
			continue
		}
		if rest == "nothing to do" {
			return "", true
		}
		if strings.HasPrefix(rest, "kubectl ") {
			return rest, false
		}
		return "", false
	}
	return "", false
}

// isReadOnly reports whether argv only reads (it takes no --dry-run).
func isReadOnly(argv []string) bool {
	return len(argv) > 1 && argv[0] == "crdversion" && (argv[1] == "status" || argv[1] == "doctor" || argv[1] == "diff")
}

// shellWords splits line as a POSIX shell splits a simple command line
// with single quotes, the only quoting Command.Render uses.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case quoted && r == '\'':
			quoted = false
		case quoted:
			cur.WriteRune(r)
		case r == '\'':
			quoted, inWord = true, true
		case unicode.IsSpace(r):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.ContainsRune(`"\$`+"`", r):
			t.Fatalf("printed line %q: unquoted %q", line, r)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("printed line %q: an unterminated quote", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
