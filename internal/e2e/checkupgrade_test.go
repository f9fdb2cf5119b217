package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/crdversion/kubectl-crdversion/internal/cli"
	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/e2e/fixture"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/manifest"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
	"github.com/crdversion/kubectl-crdversion/internal/upgrade"
)

// releasePair is one shape-4 pair of pairchecks.json: an old release's
// CRD, the next release's (which removes a version), and the API server's
// verdicts on applying the new over the old with storedVersions still
// naming the removed versions, and trimmed.
type releasePair struct {
	dir, old, new string
	check         struct {
		WithRemoved       string   `json:"with_removed"`
		StoredWithRemoved []string `json:"stored_with_removed"`
		Trimmed           string   `json:"trimmed"`
		StoredTrimmed     []string `json:"stored_trimmed"`
	}
}

// releasePairs reads testdata/crds/pairchecks.json and, when the shared
// corpus is present, its pairchecks.json (with the .nodesc.yaml copies,
// which the API server treats as the originals).
func releasePairs(t *testing.T) []releasePair {
	var out []releasePair
	for _, dir := range []string{filepath.Join(repoRoot, "testdata", "crds"), corpusDir()} {
		data, err := os.ReadFile(filepath.Join(dir, "pairchecks.json"))
		if errors.Is(err, os.ErrNotExist) && dir == corpusDir() {
			t.Logf("no shared corpus at %s: the testdata pairs only", dir)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var checks map[string]json.RawMessage
		if err := json.Unmarshal(data, &checks); err != nil {
			t.Fatal(err)
		}
		for key, raw := range checks {
			old, new, ok := strings.Cut(key, " -> ")
			if !ok {
				t.Fatalf("%s: key %q", dir, key)
			}
			p := releasePair{dir: dir, old: nodesc(dir, old), new: nodesc(dir, new)}
			if err := json.Unmarshal(raw, &p.check); err != nil {
				t.Fatal(err)
			}
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].dir+out[i].old < out[j].dir+out[j].old })
	return out
}

func nodesc(dir, file string) string {
	if strings.HasSuffix(file, ".nodesc.yaml") {
		return file
	}
	if alt := strings.TrimSuffix(file, ".yaml") + ".nodesc.yaml"; fileExists(filepath.Join(dir, alt)) {
		return alt
	}
	return file
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func readOneCRD(t *testing.T, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	docs, err := manifest.ReadCRDs(path, false)
	if err != nil || len(docs) != 1 {
		t.Fatalf("%s: %v (%d CRDs)", path, err, len(docs))
	}
	return docs[0].CRD
}

// releaseManager is the field manager of the "release tool" that applies
// the manifests in these tests, with server-side apply.
const releaseManager = "release-tool"

// applyRelease applies crd with server-side apply (forced), the way
// `kubectl apply --server-side --force-conflicts -f` does.
func applyRelease(ctx context.Context, c clients, crd *apiextensionsv1.CustomResourceDefinition) error {
	obj := crd.DeepCopy()
	obj.APIVersion, obj.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	obj.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	obj.ResourceVersion = ""
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = c.ext.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, obj.Name, types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: releaseManager, Force: ptr.To(true)})
	return err
}

// TestCheckUpgradePairs: for every shape-4 release pair, with the old CRD
// installed and status.storedVersions as pairchecks.json has it (the
// removed versions still listed, and trimmed), check-upgrade predicts
// what the API server then does when the new manifest is applied; when it
// predicts a rejection, the apply is indeed rejected, and its commands,
// run in order, make the apply succeed.
func TestCheckUpgradePairs(t *testing.T) {
	slowTier(t, "check-upgrade on every release pair of the corpus")
	t.Parallel()
	c := newClients(t)
	pairs := releasePairs(t)
	byName := map[string][]releasePair{}
	for _, p := range pairs {
		name := readOneCRD(t, filepath.Join(p.dir, p.old)).Name
		byName[name] = append(byName[name], p)
	}
	var mu sync.Mutex
	checked := 0
	t.Run("pairs", func(t *testing.T) {
		for name, ps := range byName {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				for _, p := range ps {
					for _, sc := range []struct {
						stored  []string
						verdict string
					}{{p.check.StoredWithRemoved, p.check.WithRemoved}, {p.check.StoredTrimmed, p.check.Trimmed}} {
						checkUpgradePair(t, c, p, sc.stored, sc.verdict)
						mu.Lock()
						checked++
						mu.Unlock()
					}
				}
			})
		}
	})
	t.Logf("%d release pairs, %d scenarios", len(pairs), checked)
	if len(pairs) < 4 {
		t.Errorf("only %d release pairs", len(pairs))
	}
}

func checkUpgradePair(t *testing.T, c clients, p releasePair, stored []string, verdict string) {
	t.Helper()
	ctx := context.Background()
	label := p.old + " -> " + p.new + " with storedVersions " + strings.Join(stored, ",")
	old, next := readOneCRD(t, filepath.Join(p.dir, p.old)), readOneCRD(t, filepath.Join(p.dir, p.new))
	if err := applyRelease(ctx, c, old); err != nil {
		t.Fatalf("%s: installing the old release: %v", label, err)
	}
	defer func() {
		if conditions, err := deleteCRDAndWait(ctx, c, old.Name, 3*time.Minute); err != nil {
			t.Fatalf("%s: %s not deleted: %+v", label, old.Name, conditions)
		}
	}()
	waitEstablishedOrRefused(t, c, old.Name)
	setStoredVersions(t, c, old.Name, stored...)

	newFile := filepath.Join(p.dir, p.new)
	r := plugin(t, "check-upgrade", "-f", newFile, "-o", "json")
	var found *cli.FindingsError
	if r.err != nil && !errors.As(r.err, &found) {
		t.Fatalf("%s: check-upgrade failed: %v\n%s", label, r.err, r.stderr)
	}
	var u report.UpgradeCheck
	if err := json.Unmarshal([]byte(r.stdout), &u); err != nil || len(u.CRDs) != 1 {
		t.Fatalf("%s: %v\n%s", label, err, r.stdout)
	}
	plan := u.CRDs[0]
	want := map[string]string{"REJECTED": upgrade.Rejected, "OK": upgrade.Accepted}[verdict]
	if plan.Static != want || plan.Apply != want || plan.ServerDryRun != strings.ToLower(want) {
		t.Errorf("%s: predicted %s (rules %s, server dry run %s: %s), pairchecks.json says %s", label, plan.Apply, plan.Static, plan.ServerDryRun, plan.ServerMessage, verdict)
	}
	if incompatible := plan.Apply == upgrade.Rejected || hasError(plan); incompatible != (r.err != nil) {
		t.Errorf("%s: verdict %s, data loss %v, but check-upgrade returned %v", label, plan.Apply, plan.DataLoss, r.err)
	}

	// What the API server does with the new release.
	err := applyRelease(ctx, c, next)
	if got := map[bool]string{true: upgrade.Accepted, false: upgrade.Rejected}[err == nil]; got != plan.Apply {
		t.Fatalf("%s: check-upgrade predicted %s, the API server: %v", label, plan.Apply, err)
	}
	if err == nil {
		if len(plan.Fix) != 0 {
			t.Errorf("%s: accepted, yet fix steps %q", label, plan.Fix)
		}
		return
	}
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.storedVersions") {
		t.Errorf("%s: rejected for another reason than storedVersions: %v", label, err)
	}
	// The printed commands, in order, make the apply succeed. Where
	// migrate or the apply would lose data, they stop before it (Then says
	// so in words): the test then takes the loss as the user's own choice.
	steps := plan.Run
	if plan.StopsBefore == "" {
		if len(plan.Run) < 2 || len(plan.Fix) != len(plan.Run) || plan.Run[len(plan.Run)-1].Tool != lifecycle.ToolKubectl ||
			!strings.HasSuffix(plan.Fix[len(plan.Fix)-1], " apply --server-side -f "+newFile) {
			t.Fatalf("%s: fix steps %q", label, plan.Fix)
		}
		steps = plan.Run[:len(plan.Run)-1]
	} else if !strings.Contains(plan.Then, "apply --server-side -f "+newFile) || (!strings.Contains(plan.Then, "only you") && !strings.Contains(plan.Then, "given by you")) {
		t.Fatalf("%s: then %q", label, plan.Then)
	}
	for _, step := range steps {
		if step.Tool != "" || slices.Contains(step.Argv(nil), "--allow-pruning") {
			t.Fatalf("%s: step %q is not a kubectl crdversion command, or accepts losing data", label, step)
		}
		if res := plugin(t, step.Argv(nil)[2:]...); res.err != nil {
			t.Fatalf("%s: %s: %v\n%s%s", label, step, res.err, res.stdout, res.stderr)
		}
	}
	if plan.StopsBefore != "" {
		t.Logf("%s: the plan stops before %s, which loses data: %s", label, plan.StopsBefore, plan.Then)
	}
	if plan.StopsBefore == upgrade.StopMigrate {
		// migrate looks for the fields on the objects: it runs when none
		// holds them (TestMigrateLooksForPredictedLossInObjects checks
		// what it keeps), and otherwise refuses, nothing changed, and the
		// test takes the loss as the user's own choice.
		res := plugin(t, "migrate", next.Name)
		switch {
		case res.err == nil:
			if !strings.Contains(res.stdout, "measured first") {
				t.Errorf("%s: migrate ran without measuring:\n%s", label, res.stdout)
			}
		case !strings.Contains(res.err.Error(), "nothing was changed"):
			t.Fatalf("%s: then %q; migrate failed: %v\n%s%s", label, plan.Then, res.err, res.stdout, res.stderr)
		default:
			if res := plugin(t, "migrate", next.Name, "--allow-pruning"); res.err != nil {
				t.Fatalf("%s: migrate --allow-pruning (the user's choice): %v\n%s%s", label, res.err, res.stdout, res.stderr)
			}
		}
	}
	if err := applyRelease(ctx, c, next); err != nil {
		t.Fatalf("%s: after %q the apply still fails: %v", label, plan.Fix, err)
	}
	// And check-upgrade agrees now.
	again := plugin(t, "check-upgrade", "-f", newFile)
	if again.err != nil && !errors.As(again.err, &found) {
		t.Errorf("%s: check-upgrade after the upgrade: %v", label, again.err)
	}
	if !strings.Contains(again.stdout, " accepted ") {
		t.Errorf("%s: check-upgrade after the upgrade:\n%s", label, again.stdout)
	}
}

func hasError(p upgrade.Plan) bool {
	for _, f := range p.Findings {
		if f.Severity == "error" {
			return true
		}
	}
	return false
}

// waitEstablishedOrRefused waits until the CRD is Established, or the API
// server has said why not (a placeholder caBundle, for instance).
func waitEstablishedOrRefused(t *testing.T, c clients, name string) {
	t.Helper()
	waitFor(t, name+" to be established or refused", func() (bool, error) {
		got, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && (cond.Status == apiextensionsv1.ConditionTrue || (cond.Reason != "" && cond.Reason != "Installing")) {
				return true, nil
			}
		}
		return false, nil
	})
}

// TestFaultDryRunOnAStaleRead: a server dry run of a CRD update made from a read
// that has gone stale conflicts (409). When only what the caller did not
// judge changed since — metadata, status conditions — it is retried on a
// fresh read and answered; when the spec or storedVersions changed, the
// conflict is returned. Nothing is persisted either way. (check-upgrade's
// dry run used to report "skipped" when the API server's controllers
// updated the CRD's status between its read and its dry run.)
func TestFaultDryRunOnAStaleRead(t *testing.T) {
	c := newClients(t)
	cl := &cluster.Client{CRDs: c.ext.ApiextensionsV1().CustomResourceDefinitions()}
	crd := advance(t, c, "stale-dry-run.example.com", apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS1)
	addV3 := func(obj *apiextensionsv1.CustomResourceDefinition) {
		obj.Spec.Versions = append(obj.Spec.Versions, crontabVersion("v3", true, false))
	}
	for _, tc := range []struct {
		name     string
		change   func(*apiextensionsv1.CustomResourceDefinition)
		conflict bool
	}{
		{"metadata changed", func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Annotations = map[string]string{"example.com/touched": "yes"}
		}, false},
		{"spec changed", func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Names.Categories = []string{"stale"}
		}, true},
		{"storedVersions changed", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stale := getCRD(t, c, crd.Name)
			if tc.change != nil {
				updateCRD(t, c, crd.Name, tc.change)
			} else {
				setStoredVersions(t, c, crd.Name, "v1", "v2")
				t.Cleanup(func() { setStoredVersions(t, c, crd.Name, "v1") })
			}
			before := getCRD(t, c, crd.Name)
			err := cl.DryRunUpdateCRD(context.Background(), stale, addV3, "e2e")
			if got := apierrors.IsConflict(err); got != tc.conflict || (!tc.conflict && err != nil) {
				t.Errorf("error %v, want a conflict: %v", err, tc.conflict)
			}
			// The edit commands' --dry-run=server: UpdateCRD of the edited
			// stale read, the same rule; a real write stays pinned.
			edited := stale.DeepCopy()
			addV3(edited)
			edited.Annotations = map[string]string{"example.com/set-by-the-edit": "yes"}
			out, err := cl.UpdateCRD(context.Background(), edited, cluster.WriteOptions{DryRun: lifecycle.DryRunServer, FieldManager: "e2e"})
			var conflict *cluster.ConflictError
			switch {
			case tc.conflict && !errors.As(err, &conflict):
				t.Errorf("server dry run of an edit: error %v, want a *cluster.ConflictError", err)
			case !tc.conflict && err != nil:
				t.Errorf("server dry run of an edit: %v", err)
			case !tc.conflict && (len(out.Spec.Versions) != 3 || out.Annotations["example.com/touched"] != "yes" || out.Annotations["example.com/set-by-the-edit"] != "yes"):
				t.Errorf("server dry run of an edit answered %d versions, annotations %v; want v3 and the edit's annotation added to the fresh read", len(out.Spec.Versions), out.Annotations)
			}
			if _, err := cl.UpdateCRD(context.Background(), edited.DeepCopy(), cluster.WriteOptions{FieldManager: "e2e"}); !errors.As(err, &conflict) {
				t.Errorf("a real write of the stale read: error %v, want a *cluster.ConflictError", err)
			}
			// (The API server's controllers may still update the status
			// conditions after the change above: generation is compared.)
			if after := getCRD(t, c, crd.Name); after.Generation != before.Generation || len(after.Spec.Versions) != 2 {
				t.Errorf("the dry run persisted something: generation %d -> %d, %d versions", before.Generation, after.Generation, len(after.Spec.Versions))
			}
		})
	}
}

// TestCheckUpgradeEveryFile: check-upgrade checks every file given with -f,
// as kubectl apply -f A -f B applies every one, and its apply command names
// them all (issue 17, B5: a repeated -f kept only the last file, so a
// release that the API server rejects passed when another file followed).
func TestCheckUpgradeEveryFile(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	// parts: storedVersions [v1 v2]; its next release drops v1, which the
	// API server rejects.
	parts := crontab("upgrade-parts.example.com", apiextensionsv1.NamespaceScoped)
	parts.Spec.Versions = append(parts.Spec.Versions, crontabVersion("v2", true, false))
	parts = createCRD(t, c, parts)
	createCronTabs(t, c, parts, "v1", 1, "default")
	setStorage(t, c, parts.Name, "v2")
	release := parts.DeepCopy()
	release.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{crontabVersion("v2", true, true)}
	// bolts: not installed, a harmless second CRD of the release.
	bolts := crontab("upgrade-bolts.example.com", apiextensionsv1.NamespaceScoped)

	dir := t.TempDir()
	partsFile, boltsDir := filepath.Join(dir, "parts.yaml"), filepath.Join(dir, "more")
	boltsFile := filepath.Join(boltsDir, "bolts.yaml")
	if err := os.Mkdir(boltsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, partsFile, crdManifest(t, release))
	writeFile(t, boltsFile, crdManifest(t, bolts))

	for _, files := range [][]string{{partsFile, boltsFile}, {boltsFile, partsFile}, {boltsDir, partsFile}} {
		var args []string
		for _, f := range files {
			args = append(args, "-f", f)
		}
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := plugin(t, append([]string{"check-upgrade", "-o", "json"}, args...)...)
			var found *cli.FindingsError
			if !errors.As(r.err, &found) {
				t.Fatalf("err %v, want *FindingsError (exit 1): parts would be rejected\n%s%s", r.err, r.stdout, r.stderr)
			}
			var u report.UpgradeCheck
			if err := json.Unmarshal([]byte(r.stdout), &u); err != nil {
				t.Fatalf("%v\n%s", err, r.stdout)
			}
			verdicts := map[string]string{}
			for _, p := range u.CRDs {
				verdicts[p.Name] = p.Apply
				if p.Name != parts.Name {
					continue
				}
				apply := "kubectl apply --server-side -f " + strings.Join(files, " -f ")
				if len(p.Fix) == 0 || p.Fix[len(p.Fix)-1] != apply {
					t.Errorf("fix steps %q, want the last to be %q", p.Fix, apply)
				}
			}
			if want := map[string]string{parts.Name: upgrade.Rejected, bolts.Name: upgrade.Accepted}; !reflect.DeepEqual(verdicts, want) {
				t.Errorf("verdicts %v, want %v", verdicts, want)
			}
			table := plugin(t, append([]string{"check-upgrade"}, args...)...)
			if !strings.Contains(table.stdout, parts.Name+" ") || !strings.Contains(table.stdout, bolts.Name+" ") || !strings.Contains(table.stdout, "2 CRDs;") {
				t.Errorf("table output:\n%s", table.stdout)
			}
		})
	}

	// The same file twice: applied, the last would win.
	r := plugin(t, "check-upgrade", "-f", partsFile, "-f", boltsDir, "-f", partsFile)
	var found *cli.FindingsError
	if r.err == nil || errors.As(r.err, &found) || !strings.Contains(r.err.Error(), partsFile+" is given twice") {
		t.Errorf("the same file twice: err %v, want a refusal (exit 2)", r.err)
	}
}

// crdManifest is crd as a manifest document, without its status and
// server-set metadata.
func crdManifest(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) string {
	t.Helper()
	m := crd.DeepCopy()
	m.TypeMeta = metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}
	m.ObjectMeta = metav1.ObjectMeta{Name: crd.Name}
	m.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	data, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestCheckUpgradeRenamedStorageVersion: the release replaces the storage
// version v1, in storedVersions, with a new v2 whose schema lacks
// .spec.replicas. The fix steps store every object at v2 with a copy of
// v1's schema and the apply then swaps in the release's: check-upgrade
// reports the loss and its steps stop before the apply. Following the
// steps loses nothing (replicas is still read at v2); the apply, taken as
// the user's choice, makes the API server drop replicas from what it
// returns, as predicted.
func TestCheckUpgradeRenamedStorageVersion(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	ctx := context.Background()
	live := createCRD(t, c, crontab("renamed-storage.upgrade.example.com", apiextensionsv1.NamespaceScoped))
	createObject(t, c, live, "v1", "nightly", map[string]any{"image": "busybox", "replicas": int64(3)})

	next := crontab("renamed-storage.upgrade.example.com", apiextensionsv1.NamespaceScoped)
	next.APIVersion, next.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	v2 := crontabVersion("v2", true, true)
	delete(v2.Schema.OpenAPIV3Schema.Properties["spec"].Properties, "replicas")
	next.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{v2}
	data, err := json.Marshal(next)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "release.yaml")
	writeFile(t, file, string(data))

	r := plugin(t, "check-upgrade", "-f", file, "-o", "json")
	var found *cli.FindingsError
	if !errors.As(r.err, &found) {
		t.Fatalf("check-upgrade: want its findings error (exit 1), got %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	var u report.UpgradeCheck
	if err := json.Unmarshal([]byte(r.stdout), &u); err != nil || len(u.CRDs) != 1 {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	plan := u.CRDs[0]
	t.Logf("fix %q\nthen: %s", plan.Fix, plan.Then)
	name := live.Name
	want := []string{"kubectl crdversion add-version " + name + " v2 --from v1", "kubectl crdversion promote-storage " + name + " v2", "kubectl crdversion migrate " + name}
	if plan.Apply != upgrade.Rejected || !plan.DataLoss || plan.StopsBefore != upgrade.StopApply || !slices.Equal(plan.Fix, want) ||
		!strings.Contains(plan.Then, "apply --server-side -f "+file) {
		t.Fatalf("plan: apply %s, data loss %v, stops before %q, fix %q, then %q; want Rejected, data loss, the steps %q stopping before the apply", plan.Apply, plan.DataLoss, plan.StopsBefore, plan.Fix, plan.Then, want)
	}
	if !slices.ContainsFunc(plan.Findings, func(f schemadiff.Finding) bool {
		return f.Code == upgrade.CodeReleasePrunes && strings.Contains(f.Message, ".spec.replicas")
	}) {
		t.Fatalf("no %s finding naming .spec.replicas: %+v", upgrade.CodeReleasePrunes, plan.Findings)
	}

	for _, step := range plan.Run {
		if res := plugin(t, step.Argv(nil)[2:]...); res.err != nil {
			t.Fatalf("%s: %v\n%s%s", step, res.err, res.stdout, res.stderr)
		}
	}
	// The advice lost nothing.
	got := getCRD(t, c, name)
	if !slices.Equal(got.Status.StoredVersions, []string{"v2"}) {
		t.Fatalf("after the steps, storedVersions %v, want [v2]", got.Status.StoredVersions)
	}
	if spec := specAt(t, c, got, "v2", "nightly"); spec["replicas"] != int64(3) {
		t.Fatalf("after the steps, the object at v2: %v; want replicas 3", spec)
	}
	// The user's own apply: the API server prunes what was predicted.
	if err := applyRelease(ctx, c, next); err != nil {
		t.Fatalf("the apply after the steps: %v", err)
	}
	waitFor(t, "the API server to read the object through the release's v2 schema", func() (bool, error) {
		u, err := resource(c, got, "v2", "default").Get(ctx, "nightly", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		_, has, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "replicas")
		image, _, _ := unstructured.NestedString(u.Object, "spec", "image")
		return !has && image == "busybox", nil
	})
}

// TestCheckUpgradeSkippedReleasePlanRuns: Flux source-controller v0.36.1
// (v1beta1 served, v1beta2 storage, their schemas pruning each other's
// fields) to v1.8.5 (v1 only), two majors at once. check-upgrade's plan
// adds v1 as a copy of v1beta2, promotes it and migrates; then the apply
// (which drops fields of v1beta2 that v1 no longer has). Its
// first step was refused: add-version counted the pruning between the copy
// and v1beta1 — which v1beta2 has today — as new loss, and so did
// promote-storage and status after it, which left no way forward without
// --allow-pruning. Every printed step now runs, in order, through the
// plugin, the release applies, and the object keeps its fields.
func TestCheckUpgradeSkippedReleasePlanRuns(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	ctx := context.Background()
	old := readOneCRD(t, filepath.Join(repoRoot, "testdata", "crds", "flux-source-controller", "v0.36.1", "crds", "gitrepositories.nodesc.yaml"))
	releaseFile := filepath.Join(repoRoot, "testdata", "crds", "flux-source-controller", "v1.8.5", "crds", "gitrepositories.nodesc.yaml")
	if err := applyRelease(ctx, c, old); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if conditions, err := deleteCRDAndWait(context.Background(), c, old.Name, 3*time.Minute); err != nil {
			t.Errorf("%s not deleted: %+v", old.Name, conditions)
		}
	})
	waitEstablishedOrRefused(t, c, old.Name)
	ensureNamespace(t, c, "default")
	objs := readTestdata(t, filepath.Join("crds", "flux-source-controller", "v0.36.1", "examples", "source_v1beta2_gitrepository.yaml"))
	for _, o := range objs {
		o.SetNamespace("default")
	}
	waitFor(t, "the example GitRepository to be created", func() (bool, error) {
		_, err := fixture.Apply(ctx, srv.Config, objs)
		return err == nil, nil
	})

	r := plugin(t, "check-upgrade", "-f", releaseFile, "-o", "json")
	var u report.UpgradeCheck
	if err := json.Unmarshal([]byte(r.stdout), &u); err != nil || len(u.CRDs) != 1 {
		t.Fatalf("check-upgrade: %v (%v)\n%s%s", err, r.err, r.stdout, r.stderr)
	}
	plan := u.CRDs[0]
	// v1.8.5's v1 lacks fields of v1beta2 (removed deprecated ones), so
	// the plan stops before the apply and says so; the example object has
	// none of them, and the apply is then the user's choice.
	if plan.Apply != upgrade.Rejected || plan.StopsBefore != upgrade.StopApply || len(plan.Run) != 3 || !strings.Contains(plan.Then, "apply --server-side -f "+releaseFile) {
		t.Fatalf("plan: apply %s, stops before %q, steps %q, then %q", plan.Apply, plan.StopsBefore, plan.Fix, plan.Then)
	}
	for _, step := range plan.Run {
		argv := step.Argv(nil)
		if step.Tool != "" || slices.Contains(argv, "--allow-pruning") {
			t.Fatalf("step %q is not a kubectl crdversion command, or accepts losing data", step)
		}
		if res := plugin(t, argv[2:]...); res.err != nil {
			t.Fatalf("step %q was refused: %v\n%s%s", step, res.err, res.stdout, res.stderr)
		}
	}
	if err := applyRelease(ctx, c, readOneCRD(t, releaseFile)); err != nil {
		t.Fatalf("after the steps %q the release does not apply: %v", plan.Fix, err)
	}
	if got := storedVersionsOf(t, c, old.Name); strings.Join(got, ",") != "v1" {
		t.Errorf("storedVersions %v after the upgrade, want [v1]", got)
	}
	// The object kept every field it was created with through v1beta2 →
	// v1 (the defaulted gitImplementation of v1beta2 is what the plan's
	// then names as lost by the apply).
	after := contents(t, c, getCRD(t, c, old.Name), "v1")["default/gitrepository-sample"]
	spec, _ := after["spec"].(map[string]any)
	for k, v := range objs[0].Object["spec"].(map[string]any) {
		g, _ := json.Marshal(spec[k])
		w, _ := json.Marshal(v)
		if string(g) != string(w) {
			t.Errorf("spec.%s is %s after the upgrade, was created as %s", k, g, w)
		}
	}
	named := false
	for _, f := range plan.Findings {
		named = named || f.Severity == "error" && strings.Contains(f.Message, "gitImplementation")
	}
	if !named {
		t.Errorf("no error finding names .spec.gitImplementation, which the apply drops: %+v", plan.Findings)
	}
}
