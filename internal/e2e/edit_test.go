package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

func getCRD(t *testing.T, c clients, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return crd
}

// mustRun runs the plugin and fails the test on error.
func mustRun(t *testing.T, args ...string) result {
	t.Helper()
	r := plugin(t, args...)
	if r.err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.err, r.stdout, r.stderr)
	}
	return r
}

// refused runs the plugin, expects a refusal whose output (the details
// printed above the error line, and the error line) contains every want,
// and checks that the CRD was not written (its fingerprint).
func refused(t *testing.T, c clients, name string, want []string, args ...string) result {
	t.Helper()
	before := fingerprint(t, c, name)
	r := plugin(t, args...)
	if r.err == nil {
		t.Fatalf("%s: succeeded, want a refusal\n%s", strings.Join(args, " "), r.stdout)
	}
	out := r.stdout + r.stderr + errorLine(r.err)
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s: output does not contain %q:\n%s", strings.Join(args, " "), w, out)
		}
	}
	if after := fingerprint(t, c, name); after != before {
		t.Errorf("%s: the CRD was written (%s -> %s)", strings.Join(args, " "), before, after)
	}
	return r
}

// TestEditsThroughTheLifecycle walks a CRD from S0 to S5 with the edit
// commands and checks each state, idempotency and the API server's
// storedVersions bookkeeping.
func TestEditsThroughTheLifecycle(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := advance(t, c, "edits.example.com", apiextensionsv1.NamespaceScoped, 3, lifecycle.StateS0)
	name := crd.Name

	r := mustRun(t, "add-version", name, "v2")
	if !strings.Contains(r.stdout, "kubectl's default version changes from v1 to v2") || !strings.Contains(r.stdout, "State: S1") {
		t.Errorf("add-version output:\n%s", r.stdout)
	}
	if v := lifecycle.FindVersion(getCRD(t, c, name), "v2"); v == nil || !v.Served || v.Storage {
		t.Fatalf("v2 after add-version: %+v", v)
	}
	fp := fingerprint(t, c, name)
	again := mustRun(t, "add-version", name, "v2")
	if !strings.Contains(again.stdout, "nothing to do") || fingerprint(t, c, name) != fp {
		t.Errorf("a second add-version is not a no-op:\n%s", again.stdout)
	}

	mustRun(t, "promote-storage", name, "v2")
	got := getCRD(t, c, name)
	if lifecycle.StorageVersion(got) != "v2" || strings.Join(got.Status.StoredVersions, ",") != "v1,v2" {
		t.Errorf("after promote-storage: storage %s, storedVersions %v; want v2, [v1 v2]", lifecycle.StorageVersion(got), got.Status.StoredVersions)
	}
	if s := statusJSON(t, name); s.State != lifecycle.StateS2 {
		t.Errorf("state %s, want S2", s.State)
	}

	rewriteAll(t, c, got, "v2")
	setStoredVersions(t, c, name, "v2")

	mustRun(t, "deprecate", name, "v1", "--warning", "edits.example.com/v1 CronTab is going away")
	if v := lifecycle.FindVersion(getCRD(t, c, name), "v1"); !v.Deprecated || v.DeprecationWarning == nil {
		t.Errorf("v1 after deprecate: %+v", v)
	}
	// The API server now warns every client of v1 (once its handler has
	// the edit); the plugin, which reads every object at v1 to check a move
	// back of the storage version, shows the warning once on stderr however
	// many requests carried it.
	waitWarnings(t, got, "v1", []string{"edits.example.com/v1 CronTab is going away"})
	warned := binary(t, nil, "promote-storage", name, "v1", "--dry-run=server", "--cache-dir", t.TempDir())
	if n := strings.Count(warned.stderr, "edits.example.com/v1 CronTab is going away"); warned.code != 0 || n != 1 {
		t.Errorf("promote-storage v1 --dry-run=server: exit %d, the deprecation warning shown %d times, want once:\n%s", warned.code, n, warned.stderr)
	}

	mustRun(t, "unserve", name, "v1", "--skip-usage-check")
	if s := statusJSON(t, name); s.State != lifecycle.StateS5 {
		t.Errorf("state %s, want S5", s.State)
	}
	mustRun(t, "serve", name, "v1")
	mustRun(t, "deprecate", name, "v1", "--undo")
	if s := statusJSON(t, name); s.State != lifecycle.StateS3 {
		t.Errorf("after serve and undo: state %s, want S3", s.State)
	}

	// managedFields name our field manager.
	found := false
	for _, m := range getCRD(t, c, name).ManagedFields {
		found = found || m.Manager == "kubectl-crdversion"
	}
	if !found {
		t.Error("no managedFields entry for the kubectl-crdversion field manager")
	}
}

func TestEditRefusals(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := advance(t, c, "refusals.example.com", apiextensionsv1.NamespaceScoped, 2, lifecycle.StateS1)
	name := crd.Name

	refused(t, c, name, []string{`"V3!" is not a valid version name`}, "add-version", name, "V3!")
	refused(t, c, name, []string{"version v2 already exists"}, "add-version", name, "v2", "--served=false")
	refused(t, c, name, []string{"--from v9: no such version"}, "add-version", name, "v3", "--from", "v9")
	refused(t, c, name, []string{"v1 is the storage version"}, "unserve", name, "v1")
	refused(t, c, name, []string{"version v7 is not in spec.versions"}, "promote-storage", name, "v7")
	refused(t, c, name, []string{"version v7 is not in spec.versions"}, "deprecate", name, "v7")
	refused(t, c, name, []string{"version v7 is not in spec.versions"}, "serve", name, "v7")
	refused(t, c, name, []string{"version v7 is not in spec.versions"}, "unserve", name, "v7")

	// Unserving v2 leaves v1; unserving v1 too would leave nothing served —
	// v1 is also the storage version, and both reasons are given.
	mustRun(t, "unserve", name, "v2", "--skip-usage-check")
	refused(t, c, name, []string{"v1 is the storage version", "v1 is the last served version"}, "unserve", name, "v1")
	refused(t, c, name, []string{"version v2 is not served"}, "promote-storage", name, "v2")

	// A schema that drops a field under None conversion.
	dir := t.TempDir()
	schemaFile := filepath.Join(dir, "v3.yaml")
	writeFile(t, schemaFile, `
type: object
properties:
  spec:
    type: object
    properties:
      cronSpec: {type: string}
      image: {type: string}
      schedule: {type: string}
`)
	r := refused(t, c, name, []string{"2 field(s) would be pruned", ".spec.replicas at v1", ".spec.schedule at v3"}, "add-version", name, "v3", "--schema-file", schemaFile)
	if !strings.Contains(r.stdout, "FAIL") {
		t.Errorf("the preflight report does not show the failure:\n%s", r.stdout)
	}
	ok := mustRun(t, "add-version", name, "v3", "--schema-file", schemaFile, "--allow-pruning")
	if !strings.Contains(ok.stdout, "WILL BE LOST") || !strings.Contains(ok.stdout, ".spec.replicas at v1") {
		t.Errorf("--allow-pruning does not say what is lost:\n%s", ok.stdout)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestDryRunAndOutput(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := advance(t, c, "dryrun.example.com", apiextensionsv1.ClusterScoped, 1, lifecycle.StateS0)
	name := crd.Name
	fp := fingerprint(t, c, name)

	for _, mode := range []string{"client", "server"} {
		r := mustRun(t, "add-version", name, "v2", "--dry-run="+mode, "-o", "yaml")
		var out apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("--dry-run=%s -o yaml: %v\n%s", mode, err, r.stdout)
		}
		if out.Kind != "CustomResourceDefinition" || out.APIVersion != "apiextensions.k8s.io/v1" || lifecycle.FindVersion(&out, "v2") == nil {
			t.Errorf("--dry-run=%s -o yaml printed kind %q apiVersion %q versions %d", mode, out.Kind, out.APIVersion, len(out.Spec.Versions))
		}
		if !strings.Contains(r.stderr, "Preflight:") {
			t.Errorf("--dry-run=%s -o yaml: the preflight report is not on stderr:\n%s", mode, r.stderr)
		}
		name := mustRun(t, "add-version", crd.Name, "v2", "--dry-run="+mode, "-o", "name")
		if strings.TrimSpace(name.stdout) != "customresourcedefinition.apiextensions.k8s.io/"+crd.Name {
			t.Errorf("-o name = %q", name.stdout)
		}
	}
	human := mustRun(t, "add-version", name, "v2", "--dry-run=server")
	if !strings.Contains(human.stdout, "edited (server dry run)") {
		t.Errorf("server dry run output:\n%s", human.stdout)
	}
	if got := fingerprint(t, c, name); got != fp {
		t.Errorf("a dry run wrote the CRD: %s -> %s", fp, got)
	}

	// -i reads the answer from stdin; no answer means no.
	r := plugin(t, "add-version", name, "v2", "-i")
	if r.err == nil || !strings.Contains(r.err.Error(), "not confirmed") {
		t.Errorf("-i without an answer: %v", r.err)
	}
	if fingerprint(t, c, name) != fp {
		t.Error("-i without confirmation wrote the CRD")
	}
}

// TestPromoteStorageChecksObjects promotes to a version whose schema
// requires a field and has a CEL rule that existing objects break.
func TestPromoteStorageChecksObjects(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := advance(t, c, "promote.example.com", apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS0)
	name := crd.Name
	createCronTabs(t, c, crd, "v1", 4, "ns-a", "ns-b")
	strict := crontabVersion("v2", true, false)
	spec := strict.Schema.OpenAPIV3Schema.Properties["spec"]
	spec.Required = []string{"cronSpec", "image"}
	spec.XValidations = apiextensionsv1.ValidationRules{{Rule: "self.replicas <= 3", Message: "at most 3 replicas"}}
	strict.Schema.OpenAPIV3Schema.Properties["spec"] = spec
	updateCRD(t, c, name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = append(crd.Spec.Versions, strict)
	})

	// Break two objects: one without image, one with 5 replicas.
	ctx := context.Background()
	breakObject := func(ns, obj string, edit func(u *unstructured.Unstructured)) {
		u, err := resource(c, crd, "v1", ns).Get(ctx, obj, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		edit(u)
		if _, err := resource(c, crd, "v1", ns).Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	breakObject("ns-a", "crontab-0", func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "spec", "image") })
	breakObject("ns-b", "crontab-1", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(5), "spec", "replicas")
	})

	r := refused(t, c, name, []string{"2 of 4 checked object(s) are invalid at v2", "ns-a/crontab-0", "Required value", "ns-b/crontab-1", "at most 3 replicas"},
		"promote-storage", name, "v2")
	t.Logf("refusal:\n%s%v", r.stdout, r.err)
	if got := getCRD(t, c, name); lifecycle.StorageVersion(got) != "v1" {
		t.Fatal("storage version changed after a refusal")
	}

	// With --sample 1 only one object is validated (crontab-0 in ns-a, listed first).
	refused(t, c, name, []string{"1 of 1 checked object(s) are invalid"}, "promote-storage", name, "v2", "--sample", "1")

	// Repair the objects: now the promotion goes through.
	breakObject("ns-a", "crontab-0", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "example/cron:fixed", "spec", "image")
	})
	breakObject("ns-b", "crontab-1", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(1), "spec", "replicas")
	})
	ok := mustRun(t, "promote-storage", name, "v2")
	if !strings.Contains(ok.stdout, "4 of 4 object(s) checked: the no-op update that migrate sends through v2 is accepted") {
		t.Errorf("promote-storage output:\n%s", ok.stdout)
	}
	got := getCRD(t, c, name)
	if lifecycle.StorageVersion(got) != "v2" || strings.Join(got.Status.StoredVersions, ",") != "v1,v2" {
		t.Errorf("storage %s, storedVersions %v; want v2 and [v1 v2]", lifecycle.StorageVersion(got), got.Status.StoredVersions)
	}
}

// TestFaultPromoteStorageRace runs two promotions to different versions at once,
// as two operators would, each in a process of its own: one wins, the
// other fails with the conflict message, and exactly one storage version
// remains. Rounds repeat until one of them raced (both read the CRD before
// either wrote), at most maxRounds: a run in which the processes never
// overlapped proves nothing and fails.
func TestFaultPromoteStorageRace(t *testing.T) {
	const maxRounds = 10
	c := newClients(t)
	crd := advance(t, c, "race.example.com", apiextensionsv1.NamespaceScoped, 2, lifecycle.StateS1)
	name := crd.Name
	updateCRD(t, c, name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = append(crd.Spec.Versions, crontabVersion("v3", true, false))
	})
	conflicts := 0
	for round := 0; round < maxRounds && conflicts == 0; round++ {
		var wg sync.WaitGroup
		results := make([]result, 2)
		for i, v := range []string{"v2", "v3"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = binary(t, nil, "promote-storage", name, v)
			}()
		}
		wg.Wait()
		storage := lifecycle.StorageVersions(getCRD(t, c, name))
		if len(storage) != 1 {
			t.Fatalf("round %d: storage versions %v", round, storage)
		}
		failed := 0
		for _, r := range results {
			switch {
			case r.code == 0:
			case strings.Contains(r.stderr, "changed since it was read"):
				failed++
			default:
				t.Errorf("round %d: the losing promotion failed (exit %d) with %q, want the conflict message", round, r.code, r.stderr)
				failed++
			}
		}
		if failed == 2 {
			t.Errorf("round %d: both promotions failed, want one to win:\n%s\n%s", round, results[0].stderr, results[1].stderr)
		}
		conflicts += failed
		// Reset to v1 for the next round (the last winner stays otherwise).
		updateCRD(t, c, name, func(crd *apiextensionsv1.CustomResourceDefinition) {
			for i := range crd.Spec.Versions {
				crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == "v1"
			}
		})
	}
	if conflicts == 0 {
		t.Errorf("in %d rounds the two promotions never raced (both succeeded one after the other): nothing was tested", maxRounds)
	}
}

// TestNoneConversionOnRealCRDs: on Flux GitRepository (shape 1*: None
// conversion, schemas differ) promoting v1beta2 is refused with the fields
// named; on Gateway API ReferenceGrant (shape 1: identical schemas) the same
// preflight passes.
func TestNoneConversionOnRealCRDs(t *testing.T) {
	c := newClients(t)
	installTestdata(t, c, "crds/flux-source-controller/v1.0.1", "crds/gateway-api/v0.6.2/referencegrants.nodesc.yaml", "crds/gateway-api/v0.6.2/examples/v1alpha2_reference-grant.yaml")

	flux := "gitrepositories.source.toolkit.fluxcd.io"
	r := refused(t, c, flux, []string{"conversion strategy None and the schemas differ", "would be pruned"}, "promote-storage", flux, "v1beta2", "--dry-run=server")
	if !strings.Contains(r.stdout, ".spec.") {
		t.Errorf("the refusal names no field:\n%s", r.stdout)
	}

	grants := "referencegrants.gateway.networking.k8s.io"
	ok := mustRun(t, "promote-storage", grants, "v1beta1", "--dry-run=server")
	if !strings.Contains(ok.stdout, "PASS  conversion strategy None: no field is pruned") {
		t.Errorf("promote-storage on ReferenceGrant:\n%s", ok.stdout)
	}
}
