package e2e

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate"
)

// svmsFor lists the StorageVersionMigrations of crd's resource.
func svmsFor(t *testing.T, c clients, crd *apiextensionsv1.CustomResourceDefinition) []string {
	t.Helper()
	list, err := c.kube.StoragemigrationV1().StorageVersionMigrations().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range list.Items {
		if m.Spec.Resource.Group == crd.Spec.Group && m.Spec.Resource.Resource == crd.Spec.Names.Plural {
			out = append(out, m.Name)
		}
	}
	return out
}

// TestMigrateServerEngine: 1,000 objects stored at v1 (read from etcd),
// storage flipped to v2. Dry runs create nothing; migrate --engine=server
// creates a StorageVersionMigration that the in-process storage version
// migrator carries out: every object is then encoded at v2 in etcd,
// storedVersions is [v2] (trimmed by the controller, which the report
// says), exit 0. For comparison, the client engine migrates the same number
// of objects of another CRD.
func TestMigrateServerEngine(t *testing.T) {
	const n = 1000
	c := newClients(t)
	crd := advance(t, c, "svm.example.com", apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS0)
	createManyCronTabs(t, c, crd, "v1", n, namespaces("svm", 10))
	crd = advance2(t, c, crd.Name)
	if got := storedAt(t, crd); got["svm.example.com/v1"] != n || len(got) != 1 {
		t.Fatalf("before: stored %v, want all %d at v1", got, n)
	}

	// Dry runs: the object is shown, or admitted by the API server, and
	// nothing is created (no controller runs yet: nothing could act on it).
	dry := mustRun(t, "migrate", crd.Name, "--engine=server", "--dry-run=client")
	for _, want := range []string{"Would create (dry run, nothing created) this StorageVersionMigration for the 1000 object(s)",
		"apiVersion: storagemigration.k8s.io/v1", "generateName: crdversion-crontabs-", "group: svm.example.com", "resource: crontabs"} {
		if !strings.Contains(dry.stdout, want) {
			t.Errorf("--dry-run=client output lacks %q:\n%s", want, dry.stdout)
		}
	}
	dryServer, r := migrationJSON(t, crd.Name, "--engine=server", "--dry-run=server")
	if r.err != nil || !dryServer.DryRun || dryServer.StorageVersionMigration == nil ||
		!strings.HasPrefix(dryServer.StorageVersionMigration.Name, "crdversion-crontabs-") {
		t.Errorf("--dry-run=server: %v %+v", r.err, dryServer.Result)
	}
	if got := svmsFor(t, c, crd); len(got) != 0 {
		t.Fatalf("dry runs created %v", got)
	}
	if got := getCRD(t, c, crd.Name).Status.StoredVersions; strings.Join(got, ",") != "v1,v2" {
		t.Fatalf("dry runs changed storedVersions to %v", got)
	}

	startSVMController(t)
	// The subject is the engine, not the controller's wait for its
	// informer (nudgeGCInformer).
	stopNudging := nudgeGCInformer(t, c, crd)
	m, r := migrationJSON(t, crd.Name, "--engine=server", "--timeout=3m", "--field-manager=svm-test")
	if r.err != nil {
		t.Fatalf("migrate --engine=server: %v\n%s", r.err, r.stderr)
	}
	sm := m.StorageVersionMigration
	if m.Engine != migrate.EngineServer || sm == nil || sm.Phase != "Succeeded" || sm.APIVersion != "storagemigration.k8s.io/v1" ||
		!strings.HasPrefix(sm.Name, "crdversion-crontabs-") || !m.Complete || m.Total != n {
		t.Fatalf("result: %+v %+v", m.Result, sm)
	}
	if !m.Trim.Trimmed || m.Trim.By != migrate.TrimmedByServer || strings.Join(m.Trim.Before, ",") != "v1,v2" || strings.Join(m.Trim.After, ",") != "v2" {
		t.Errorf("trim: %+v, want trimmed by the controller from [v1 v2] to [v2]", m.Trim)
	}
	if got := storedAt(t, crd); got["svm.example.com/v2"] != n || len(got) != 1 {
		t.Errorf("after: stored %v, want all %d at v2", got, n)
	}
	if got := getCRD(t, c, crd.Name).Status.StoredVersions; strings.Join(got, ",") != "v2" {
		t.Errorf("storedVersions %v, want [v2]", got)
	}
	obj, err := c.kube.StoragemigrationV1().StorageVersionMigrations().Get(context.Background(), sm.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(obj.ManagedFields) == 0 || obj.ManagedFields[0].Manager != "svm-test" {
		t.Errorf("managedFields %+v, want the creator svm-test", obj.ManagedFields)
	}
	t.Logf("server engine, %d objects: %.1fs (%.0f objects/s)", n, m.ElapsedSeconds, m.ObjectsPerSecond)

	// A second run, in text: every object is current, nothing to trim.
	again := mustRun(t, "migrate", crd.Name, "--engine=server", "--timeout=3m")
	for _, want := range []string{"Migrated " + crd.Name + " at v2 through StorageVersionMigration crdversion-crontabs-",
		"objects 1000 (counted before the migration", "phase Succeeded", "status.storedVersions: [v2], not trimmed: storedVersions is already [v2]"} {
		if !strings.Contains(again.stdout, want) {
			t.Errorf("second run output lacks %q:\n%s", want, again.stdout)
		}
	}

	stopNudging()

	// The client engine on as many objects, for the measurement.
	other := advance(t, c, "svm-client.example.com", apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS0)
	createManyCronTabs(t, c, other, "v1", n, namespaces("svmc", 10))
	other = advance2(t, c, other.Name)
	mc, rc := migrationJSON(t, other.Name)
	if rc.err != nil || mc.Engine != migrate.EngineClient || mc.Rewritten != n || mc.Trim.By != migrate.TrimmedByUs {
		t.Errorf("client engine: %v %+v", rc.err, mc.Result)
	}
	t.Logf("client engine, %d objects: %.1fs (%.0f objects/s)", n, mc.ElapsedSeconds, mc.ObjectsPerSecond)
}

// TestMigrateServerEngineFailed: a ValidatingAdmissionPolicy denies the
// rewrite of one object, so the controller marks the migration Failed:
// exit 1 with the controller's message, and storedVersions ends as it was
// (the controller trims it anyway; migrate restores it).
func TestMigrateServerEngineFailed(t *testing.T) {
	c := newClients(t)
	crd := advance(t, c, "svm-fail.example.com", apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS0)
	createManyCronTabs(t, c, crd, "v1", 20, []string{"svm-fail"})
	freeze(t, c, crd, "svm-fail", "crontab-00007")
	crd = advance2(t, c, crd.Name)
	denyFrozen(t, c, crd)
	startSVMController(t)

	// The loss measurement's dry run is denied too: refused before the
	// StorageVersionMigration is created (B13). Past the measurement, the
	// controller's failure is handled as below.
	refuses(t, c, []string{crd.Name}, []string{"the API server refuses to rewrite some objects at v2", "svm-fail/crontab-00007: "}, "migrate", crd.Name, "--engine=server")
	m, r := migrationJSON(t, crd.Name, "--engine=server", "--timeout=3m", "--allow-pruning")
	printed := r.stderr + errorLine(r.err)
	if r.err == nil || !strings.Contains(printed, "frozen objects cannot change") {
		t.Errorf("error = %v, want the failed migration with the controller's message", r.err)
	}
	if sm := m.StorageVersionMigration; sm == nil || sm.Phase != "Failed" || m.Trim.Trimmed || m.Complete {
		t.Errorf("result: %+v %+v", m.Result, sm)
	}
	// kube-controller-manager v1.37.2 sets storedVersions to [storage]
	// after a failed migration too (migrationrunner.go finishCRDMigration
	// trims whenever the generation is unchanged); migrate puts the
	// versions back, since objects are still stored at v1.
	if !m.Trim.Restored || !strings.Contains(printed, "the controller trimmed status.storedVersions anyway; it was restored to [v1, v2]") {
		t.Errorf("trim %+v, error %v: want the controller's trim undone", m.Trim, r.err)
	}
	if got := storedAt(t, crd); got["svm-fail.example.com/v1"] == 0 {
		t.Errorf("stored %v: the failed migration left no object at v1", got)
	}
	if got := getCRD(t, c, crd.Name).Status.StoredVersions; strings.Join(got, ",") != "v1,v2" {
		t.Errorf("storedVersions %v, want [v1 v2]", got)
	}
}

// TestMigrateServerEngineRefusalsAndTimeout needs no controller: a
// preferred version that would prune fields under conversion None is
// refused before anything is created; client-only flags are refused; a run
// whose --timeout runs out (nobody carries the migration out) exits 1,
// trims nothing and says that the migration goes on in the cluster.
func TestMigrateServerEngineRefusalsAndTimeout(t *testing.T) {
	c := newClients(t)
	crd := advance(t, c, "svm-refuse.example.com", apiextensionsv1.NamespaceScoped, 3, lifecycle.StateS0)
	// v2 is served, preferred (higher priority than v1) and lacks
	// spec.image; v1 stays the storage version.
	updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		v2 := crontabVersion("v2", true, false)
		delete(v2.Schema.OpenAPIV3Schema.Properties["spec"].Properties, "image")
		crd.Spec.Versions = append(crd.Spec.Versions, v2)
	})
	// The measurement's dry runs take the controller's path (B23): each
	// object is read at v1 and sent the controller's no-op patch through
	// v2, whose schema prunes .spec.image.
	r := plugin(t, "migrate", crd.Name, "--engine=server", "--no-trim")
	if out := r.stderr + errorLine(r.err); r.err == nil || !strings.Contains(errorLine(r.err), "refusing to migrate "+crd.Name+", nothing was changed: rewriting the objects at v1 loses data") ||
		!strings.Contains(out, "3 object(s) have fields at v1 that the write through v2 drops") || !strings.Contains(out, ".spec.image") {
		t.Errorf("preferred-version pruning: %v\n%s", r.err, r.stderr)
	}
	// Unmeasured (a client dry run), the schemas' prediction refuses it.
	r = plugin(t, "migrate", crd.Name, "--engine=server", "--no-trim", "--dry-run=client")
	if out := r.stderr + errorLine(r.err); r.err == nil || !strings.Contains(errorLine(r.err), "refusing to migrate "+crd.Name+", nothing was changed: with --engine=server the controller writes through v2, which prunes fields") ||
		!strings.Contains(out, "the controller writes each object through the preferred version v2, not the storage version v1") || !strings.Contains(out, ".spec.image") {
		t.Errorf("preferred-version pruning, client dry run: %v\n%s", r.err, r.stderr)
	}
	if r := plugin(t, "migrate", crd.Name, "--engine=server", "--no-trim", "--checkpoint", "/tmp/x"); r.err == nil || !strings.Contains(r.err.Error(), "--checkpoint applies to --engine=client only") {
		t.Errorf("--checkpoint with --engine=server: %v", r.err)
	}
	if r := plugin(t, "migrate", crd.Name, "--engine=cluster"); r.err == nil || !strings.Contains(r.err.Error(), `--engine must be client or server, got "cluster"`) {
		t.Errorf("--engine=cluster: %v", r.err)
	}
	if got := svmsFor(t, c, crd); len(got) != 0 {
		t.Errorf("refusals created %v", got)
	}

	other := advance(t, c, "svm-timeout.example.com", apiextensionsv1.NamespaceScoped, 3, lifecycle.StateS2)
	// --timeout bounds the whole run, the preflight reads included: 10s
	// leaves them room on a loaded machine; nobody carries the migration
	// out here, so it is still Pending when the time runs out.
	bin := binary(t, nil, "migrate", other.Name, "--engine=server", "--timeout=10s", "--kubeconfig", srv.Kubeconfig, "--cache-dir", t.TempDir())
	if bin.code != 1 || !strings.Contains(bin.stderr, "error: the migration of "+other.Name+" did not finish") || !strings.Contains(bin.stderr, "stopped following the StorageVersionMigration crdversion-crontabs-") ||
		!strings.Contains(bin.stderr, "(Pending) before it finished: the time given (--timeout) ran out; it goes on in the cluster") ||
		!strings.Contains(bin.stderr, "no controller took it up") {
		t.Errorf("timeout: exit %d\n%s\n%s", bin.code, bin.stdout, bin.stderr)
	}
	names := svmsFor(t, c, other)
	if len(names) != 1 {
		t.Fatalf("StorageVersionMigrations %v, want the one created", names)
	}
	// Nobody carries it out here; later controllers must not either.
	if err := c.kube.StoragemigrationV1().StorageVersionMigrations().Delete(context.Background(), names[0], metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := getCRD(t, c, other.Name).Status.StoredVersions; strings.Join(got, ",") != "v1,v2" {
		t.Errorf("storedVersions %v, want [v1 v2] untouched", got)
	}
}
