package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/storage"

	"github.com/crdversion/kubectl-crdversion/internal/cli"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// commandsOf are every command status advises: its findings' and Next's.
func commandsOf(s report.Status) []string {
	var out []string
	for _, f := range s.Findings {
		if len(f.Run) > 0 {
			out = append(out, f.Fix)
		}
	}
	if s.Next != nil && s.Next.Command != "" {
		out = append(out, s.Next.Command)
	}
	return out
}

// TestVersionNamesKubernetesCannotOrder reproduces B2 of
// ../shared/bugs/2026-12-01-preflight-holes.md: for names outside
// Kubernetes version form kubectl's priority is alphabetical, and status
// advised making the older API the storage version, and migrate refused a
// correct CRD. Now status says the order is unknown and advises no step
// that depends on it, migrate runs, and --version-order sets the order.
func TestVersionNamesKubernetesCannotOrder(t *testing.T) {
	slowTier(t, "the lifecycle on every version-name pattern")
	t.Parallel()
	c := newClients(t)
	t.Run("date-stamped, the newer one storage", func(t *testing.T) {
		crd := unorderedCRD(t, c, "order-dated.example.com", []string{"v1api20210501", "v1api20230101"}, "v1api20230101", nil)
		s := statusJSON(t, crd.Name)
		for _, cmd := range commandsOf(s) {
			if strings.Contains(cmd, "promote-storage") || strings.Contains(cmd, "deprecate") {
				t.Errorf("status advises %q although nothing orders the versions", cmd)
			}
		}
		// Issue 17: no state is claimed, and the order is asked for in
		// words, naming the versions: no command with a placeholder.
		if !strings.Contains(codes(s.Findings), lifecycle.CodeVersionOrderUnknown) || s.Next == nil || s.Next.Command != "" ||
			!strings.Contains(s.Next.Reason, "--version-order listing the versions {v1api20210501, v1api20230101} in their real order, oldest first") {
			t.Errorf("findings %s, next %+v: want %s and Next asking for the order", codes(s.Findings), s.Next, lifecycle.CodeVersionOrderUnknown)
		}
		if s.State != lifecycle.StateUnknown || s.OldVersion != "" || s.NewVersion != "" {
			t.Errorf("state %s [%s -> %s] with the order unknown, want Unknown", s.State, s.OldVersion, s.NewVersion)
		}
		if out := runStatus(t, crd.Name); strings.Contains(out.stdout, "<") || !strings.Contains(out.stdout, "Unknown, "+lifecycle.OrderUnknownDescription+"\n") {
			t.Errorf("status with the order unknown:\n%s", out.stdout)
		}
		// migrate rewrites at the storage version: nothing makes it useless.
		mustRun(t, "migrate", crd.Name)

		given := statusJSON(t, crd.Name, "--version-order", "v1api20210501,v1api20230101")
		if given.State != lifecycle.StateS3 || given.OldVersion != "v1api20210501" || given.Next == nil ||
			given.Next.Command != "kubectl crdversion deprecate "+crd.Name+" v1api20210501 --version-order v1api20210501,v1api20230101" {
			t.Errorf("with --version-order: %s [%s -> %s], next %+v", given.State, given.OldVersion, given.NewVersion, given.Next)
		}
		// The printed deprecate takes the order too, and so does the state
		// it prints after the write (it printed Unknown without it).
		dep := mustRun(t, "deprecate", crd.Name, "v1api20210501", "--version-order", "v1api20210501,v1api20230101")
		if !strings.Contains(dep.stdout, "State: S4") || !strings.Contains(dep.stdout, "Next: kubectl crdversion unserve "+crd.Name+" v1api20210501 --version-order v1api20210501,v1api20230101") {
			t.Errorf("deprecate with --version-order:\n%s", dep.stdout)
		}
		// Bad input: one line, nothing changed.
		refused(t, c, crd.Name, []string{"--version-order v1api20210501,v9", "has no version v9"}, "migrate", crd.Name, "--version-order", "v1api20210501,v9")
		refused(t, c, crd.Name, []string{"nothing was changed", "has no version v9"}, "unserve", crd.Name, "v1api20210501", "--version-order", "v1api20210501,v9")
		// status fails (exit code 2), it has no findings to report (1).
		var failed *cli.CheckError
		if r := refused(t, c, crd.Name, []string{"v1api20210501 is given twice"}, "status", crd.Name, "--version-order", "v1api20210501,v1api20210501"); !errors.As(r.err, &failed) || r.stdout != "" {
			t.Errorf("status with a version given twice: err %v (%T), stdout %q; want a *cli.CheckError and no report", r.err, r.err, r.stdout)
		}
	})
	t.Run("date-stamped, the older one storage", func(t *testing.T) {
		crd := unorderedCRD(t, c, "order-dated-old.example.com", []string{"v1api20210501", "v1api20230101"}, "v1api20210501", nil)
		s := statusJSON(t, crd.Name)
		for _, cmd := range commandsOf(s) {
			if strings.Contains(cmd, "deprecate "+crd.Name+" v1api20230101") || strings.Contains(cmd, "unserve") {
				t.Errorf("status advises %q: the newer API on its way out", cmd)
			}
		}
		given := statusJSON(t, crd.Name, "--version-order", "v1api20210501,v1api20230101")
		if given.State != lifecycle.StateS1 || given.Next == nil ||
			given.Next.Command != "kubectl crdversion promote-storage "+crd.Name+" v1api20230101 --version-order v1api20210501,v1api20230101" {
			t.Errorf("with --version-order: %s, next %+v", given.State, given.Next)
		}
		// The printed promote-storage runs, and the order given settles
		// its check (issue 17: it had no --version-order).
		promote := mustRun(t, "promote-storage", crd.Name, "v1api20230101", "--version-order", "v1api20210501,v1api20230101", "--dry-run=server")
		if strings.Contains(promote.stdout, "nothing says whether") {
			t.Errorf("promote-storage with --version-order still does not know the order:\n%s", promote.stdout)
		}
		for _, dry := range []string{"--dry-run=none", "--dry-run=server", "--dry-run=client"} {
			refused(t, c, crd.Name, []string{"v1api20230101, a newer version, is not the storage version yet"}, "migrate", crd.Name, "--version-order", "v1api20210501,v1api20230101", dry)
		}
	})
	t.Run("alpha and stable", func(t *testing.T) {
		crd := unorderedCRD(t, c, "order-alpha.example.com", []string{"alpha", "stable"}, "stable", []string{"alpha"})
		// storedVersions [alpha, stable] orders them.
		s := statusJSON(t, crd.Name)
		if s.State != lifecycle.StateS2 || s.OldVersion != "alpha" || s.Next == nil || s.Next.Command != "kubectl crdversion migrate "+crd.Name {
			t.Errorf("by storedVersions: %s [%s -> %s], next %+v", s.State, s.OldVersion, s.NewVersion, s.Next)
		}
		mustRun(t, "migrate", crd.Name)
		// Trimmed to [stable]: now nothing orders them.
		after := statusJSON(t, crd.Name)
		for _, cmd := range commandsOf(after) {
			if strings.Contains(cmd, "promote-storage "+crd.Name+" alpha") || strings.Contains(cmd, "deprecate") {
				t.Errorf("status advises %q although nothing orders the versions", cmd)
			}
		}
	})
}

func codes(fs []lifecycle.Finding) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Code)
	}
	return strings.Join(out, ",")
}

// TestDeprecatedStorageVersionAdvice reproduces B6: after the storage
// version is deprecated, status advised unserving it (which unserve
// refuses) and deprecating the other version. Now it advises undoing the
// deprecation, and that command works.
func TestDeprecatedStorageVersionAdvice(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := advance(t, c, "b6-deprecated.example.com", apiextensionsv1.NamespaceScoped, 2, lifecycle.StateS3)
	out := mustRun(t, "deprecate", crd.Name, "v2")
	if strings.Contains(out.stdout, "Next: kubectl crdversion deprecate "+crd.Name+" v1") {
		t.Errorf("deprecate's Next deprecates the other version too:\n%s", out.stdout)
	}
	s := statusJSON(t, crd.Name)
	for _, cmd := range commandsOf(s) {
		if strings.Contains(cmd, "unserve "+crd.Name+" v2") || cmd == "kubectl crdversion deprecate "+crd.Name+" v1" {
			t.Errorf("status advises %q with the storage version v2 deprecated", cmd)
		}
	}
	undo := "kubectl crdversion deprecate " + crd.Name + " v2 --undo"
	if s.Next == nil || s.Next.Command != undo {
		t.Fatalf("next %+v, want %s", s.Next, undo)
	}
	mustRun(t, strings.Fields(strings.TrimPrefix(undo, "kubectl crdversion "))...)
	if after := statusJSON(t, crd.Name); after.State != lifecycle.StateS3 || after.Next == nil || after.Next.Command != "kubectl crdversion deprecate "+crd.Name+" v1" {
		t.Errorf("after the undo: %s, next %+v", after.State, after.Next)
	}
}

// TestExpiredCheckpointCountsEachObjectOnce reproduces B8: a resume from a
// checkpoint whose continue token has expired restarts the list; it used
// to add the checkpoint's counts to the restarted list's (total 180 for
// 120 objects) and to say it resumed. Now each object counts once and the
// headline says it restarted.
func TestExpiredCheckpointCountsEachObjectOnce(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := advance(t, c, "b8-gone.example.com", apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS0)
	createManyCronTabs(t, c, crd, "v1", 120, []string{"gone"})
	crd = advance2(t, c, crd.Name)

	ctx := context.Background()
	old, err := srv.Etcd.Get(ctx, "compaction-probe-b8")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Etcd.Put(ctx, "compaction-probe-b8", "x"); err != nil {
		t.Fatal(err)
	}
	now, err := srv.Etcd.Get(ctx, "compaction-probe-b8")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Etcd.Compact(ctx, now.Header.Revision); err != nil {
		t.Fatal(err)
	}
	token, err := storage.EncodeContinue(srv.EtcdPrefix+"/b8-gone.example.com/crontabs/gone/crontab-00060", srv.EtcdPrefix+"/b8-gone.example.com/crontabs/", old.Header.Revision)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.dyn.Resource(gvr(crd, "v2")).List(ctx, metav1.ListOptions{Limit: 10, Continue: token}); !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Fatalf("the stale token is not expired: %v", err)
	}
	// The interrupted run handled the first 60 objects.
	cp := filepath.Join(t.TempDir(), "checkpoint.json")
	data, _ := json.Marshal(map[string]any{"crd": crd.Name, "crdUID": crd.UID, "generation": getCRD(t, c, crd.Name).Generation, "storageVersion": "v2", "continue": token,
		"counts": map[string]any{"total": 60, "rewritten": 60}})
	if err := os.WriteFile(cp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, "migrate", crd.Name, "--checkpoint", cp, "--chunk-size", "25")
	if !strings.Contains(r.stdout, "restarted from the first object") || strings.Contains(r.stdout, "resuming from the checkpoint") {
		t.Errorf("the headline does not say the list restarted:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "total 120,") {
		t.Errorf("want each of the 120 objects counted once:\n%s", r.stdout)
	}
	if got := storedAt(t, crd); got["b8-gone.example.com/v2"] != 120 {
		t.Errorf("stored %v", got)
	}
}

// TestMigrateHeadlineWhenNotDone (Build 8): a run in which an object
// failed says "Failed", not "Migrated".
func TestMigrateHeadlineWhenNotDone(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := crontab("headline-failed.example.com", apiextensionsv1.NamespaceScoped)
	crd = createCRD(t, c, crd)
	ensureNamespace(t, c, "seal")
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "headline-failed.example.com/v1", "kind": "CronTab",
		"metadata": map[string]any{"name": "sealed"}, "spec": map[string]any{"image": "sealed"},
	}}
	if _, err := resource(c, crd, "v1", "seal").Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// v2 rejects every update of an object whose image is "sealed" (a CEL
	// transition rule), which migrate's no-op update is.
	updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		v2 := crontabVersion("v2", true, true)
		spec := v2.Schema.OpenAPIV3Schema.Properties["spec"]
		spec.XValidations = apiextensionsv1.ValidationRules{{Rule: "oldSelf.image != 'sealed'", Message: "a sealed object cannot be updated"}}
		v2.Schema.OpenAPIV3Schema.Properties["spec"] = spec
		crd.Spec.Versions[0].Storage = false
		crd.Spec.Versions = append(crd.Spec.Versions, v2)
	})
	// The loss measurement's dry run is refused the same way and stops
	// migrate before it writes (TestMigrateStopsWhenItsDryRunsAreRefused);
	// --allow-pruning skips it, to reach the run's own failure.
	r := plugin(t, "migrate", crd.Name, "--allow-pruning")
	if r.err == nil {
		t.Fatalf("migrate succeeded:\n%s", r.stdout)
	}
	if !strings.HasPrefix(r.stdout, "Failed "+crd.Name) {
		t.Errorf("headline of a run with a failed object:\n%s", r.stdout)
	}
}
