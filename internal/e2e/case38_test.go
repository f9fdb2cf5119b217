package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crdversion/kubectl-crdversion/internal/e2e/fixture"
	"github.com/crdversion/kubectl-crdversion/internal/upgrade"
)

// case38 is the case's fixture: two versions of a chart whose CRD moves
// from templates/ to crds/, the objects, and the rendered new release.
const case38 = "38-helm-release-deletes-crd"

// helmRelease installs (upgrade false) or upgrades release name in ns to
// the chart directory dir with Helm's SDK, as helm install/upgrade do.
func helmRelease(t *testing.T, ns, name, dir string, upgrade bool) error {
	t.Helper()
	chrt, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !upgrade {
		install := action.NewInstall(helmClient(t, ns))
		install.Namespace, install.ReleaseName, install.WaitStrategy = ns, name, kube.HookOnlyStrategy
		_, err = install.RunWithContext(context.Background(), chrt, nil)
		return err
	}
	up := action.NewUpgrade(helmClient(t, ns))
	up.Namespace, up.WaitStrategy = ns, kube.HookOnlyStrategy
	_, err = up.RunWithContext(context.Background(), name, chrt, nil)
	return err
}

// installCase38 installs release name of chart 0.5.0 in ns (its CRD a
// template of the release) and creates the case's Snapshots in ns: s1,
// and s2 with a finalizer. It returns the CRD and the objects' uids.
func installCase38(t *testing.T, c clients, fx *caseFixture, ns, name string) (*apiextensionsv1.CustomResourceDefinition, map[string]types.UID) {
	t.Helper()
	ctx := context.Background()
	ensureNamespace(t, c, ns)
	const crdName = "snapshots.backup.example.com"
	// A run before this one (go test -count) may have left the CRD being
	// deleted: wait until it is gone.
	waitFor(t, "no CRD "+crdName+" left from a run before", func() (bool, error) {
		_, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err := helmRelease(t, ns, name, fx.path("chart-0.5.0"), false); err != nil {
		t.Fatalf("helm install %s: %v", name, err)
	}
	if err := fixture.WaitEstablished(ctx, c.ext, crdName); err != nil {
		t.Fatal(err)
	}
	crd, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uids := map[string]types.UID{}
	for _, u := range fx.read(t, "objects.yaml") {
		var got *metav1.ObjectMeta
		waitFor(t, "the Snapshot "+u.GetName()+" created", func() (bool, error) {
			o, err := resource(c, crd, "v1alpha1", ns).Create(ctx, u.DeepCopy(), metav1.CreateOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil // the CRD is not served yet
			}
			if err != nil {
				return false, err
			}
			got = &metav1.ObjectMeta{UID: o.GetUID()}
			return true, nil
		})
		uids[u.GetName()] = got.UID
	}
	return crd, uids
}

// releaseFinalizer removes s2's finalizer and waits until the CRD is gone:
// what the case's operator had to do by hand.
func releaseFinalizer(t *testing.T, c clients, crd *apiextensionsv1.CustomResourceDefinition, ns string) {
	t.Helper()
	ctx := context.Background()
	_, err := resource(c, crd, "v1alpha1", ns).Patch(ctx, "s2", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// TestCase38HelmReleaseDeletesCRD (case 38): chart 0.5.0 renders its CRD
// among the templates without the keep policy; 0.6.0 moves it to crds/.
// check-upgrade of 0.6.0 for the release — through the chart rendered by
// Helm's SDK, and through the rendered stream with -f — is an error
// naming the deletion, the 2 objects and the 1 with a finalizer, exit 1,
// and prints the keep annotation, no delete. The ground truth, with
// Helm's own upgrade: the CRD is deleted, s1 with it, s2 stays
// Terminating. Then the advice, pasted as printed on a second release:
// after it check-upgrade passes, and the same helm upgrade keeps the CRD
// and both objects (same uids).
func TestCase38HelmReleaseDeletesCRD(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	ctx := context.Background()
	fx := loadCase(t, case38)
	chart06 := fx.path("chart-0.6.0")

	// The ground truth first: release doomed, upgraded as it is.
	const doomedNS = "case38-doomed"
	crd, _ := installCase38(t, c, fx, doomedNS, "doomed")
	t.Cleanup(func() {
		releaseFinalizer(t, c, crd, doomedNS)
		_, _ = deleteCRDAndWait(context.Background(), c, crd.Name, 2*time.Minute)
	})
	r := refuses(t, c, []string{crd.Name}, []string{"Apply: DELETED by helm upgrade of release " + doomedNS + "/doomed",
		"DELETES THE CRD AND EVERY OBJECT OF IT (2 Snapshot object(s), listed at v1alpha1; 1 with finalizers",
		"moved it to crds/", "kubectl annotate crd " + crd.Name + " helm.sh/resource-policy=keep", "1 error,"},
		"check-upgrade", "--chart", chart06, "--release", "doomed", "-n", doomedNS)
	t.Logf("check-upgrade:\n%s", r.stdout)
	if strings.Contains(r.stdout+r.stderr, "kubectl delete") {
		t.Errorf("check-upgrade prints a delete:\n%s", r.stdout)
	}
	if err := helmRelease(t, doomedNS, "doomed", chart06, true); err != nil {
		t.Fatalf("helm upgrade doomed: %v", err)
	}
	// The CRD's cleanup deletes its objects one by one in parallel: s1 may
	// be gone before s2 is marked, so the wait holds for both.
	waitFor(t, "helm upgrade's deletion of s1, s2 and the CRD", func() (bool, error) {
		got, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp == nil {
			return false, err
		}
		if _, err = resource(c, crd, "v1alpha1", doomedNS).Get(ctx, "s1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return false, nil
		}
		s2, err := resource(c, crd, "v1alpha1", doomedNS).Get(ctx, "s2", metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("s2 after the upgrade: %w, want it Terminating (its finalizer holds it)", err)
		}
		return s2.GetDeletionTimestamp() != nil, nil
	})
	releaseFinalizer(t, c, crd, doomedNS)
	waitFor(t, "the CRD gone", func() (bool, error) {
		_, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	// The advice: release backup, checked, fixed as printed, upgraded.
	const ns = "case38-backup"
	crd, uids := installCase38(t, c, fx, ns, "backup")
	t.Cleanup(func() {
		releaseFinalizer(t, c, crd, ns)
		_, _ = deleteCRDAndWait(context.Background(), c, crd.Name, 2*time.Minute)
	})
	got := upgradeJSON(t, refuses(t, c, []string{crd.Name}, nil, "check-upgrade", "--chart", chart06, "--release", "backup", "-n", ns, "-o", "json"))
	ciOutputsAgree(t, got, "check-upgrade", "--chart", chart06, "--release", "backup", "-n", ns)
	p := got.CRDs[0]
	if d := p.Deletion; len(got.CRDs) != 1 || p.Apply != upgrade.Deleted || d == nil || !d.Counted || d.Objects != 2 || d.Finalizers != 1 || !d.MovedToCRDsDir ||
		!slices.Equal(errorCodes(p), []string{upgrade.CodeHelmDeletesCRD}) || got.Summary.Errors != 1 || !got.Summary.Incompatible ||
		got.Helm == nil || !got.Helm.DeletionsChecked || got.Helm.Release != "backup" || got.Helm.Namespace != ns {
		t.Fatalf("-o json: %+v (deletion %+v)", got, p.Deletion)
	}
	// The rendered stream (helm template | kubectl crdversion …) holds no
	// CRD at all: the release's CRD is deleted just the same.
	rendered := upgradeJSON(t, refuses(t, c, []string{crd.Name}, nil, "check-upgrade", "-f", fx.path("release.yaml"), "--release", "backup", "-n", ns, "-o", "json"))
	if q := rendered.CRDs[0]; len(rendered.CRDs) != 1 || q.Apply != upgrade.Deleted || q.Deletion.MovedToCRDsDir || q.Deletion.Objects != 2 {
		t.Errorf("-f release.yaml: %+v", rendered)
	}
	// Without --release the deletion is not looked for, and the output
	// says so.
	r = succeeds(t, "check-upgrade", "--chart", chart06, "-n", ns)
	if !strings.Contains(r.stdout, "which installed CRDs the release deletes was NOT checked") {
		t.Errorf("check-upgrade without --release:\n%s", r.stdout)
	}

	// Advice is code: the fix line, pasted as printed.
	if len(p.Fix) != 1 {
		t.Fatalf("fix %q, want the keep annotation", p.Fix)
	}
	cmd := exec.Command("sh", "-c", p.Fix[0])
	cmd.Env = append(os.Environ(), "KUBECONFIG="+srv.Kubeconfig)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", p.Fix[0], err, out)
	}
	got = upgradeJSON(t, succeeds(t, "check-upgrade", "--chart", chart06, "--release", "backup", "-n", ns, "-o", "json"))
	if p := got.CRDs[0]; p.Apply != upgrade.Accepted || p.Deletion == nil || !p.Deletion.Kept || got.Summary.Errors != 0 {
		t.Errorf("after the fix: %+v", got)
	}
	if err := helmRelease(t, ns, "backup", chart06, true); err != nil {
		t.Fatalf("helm upgrade backup: %v", err)
	}
	after, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil || after.DeletionTimestamp != nil || after.UID != crd.UID {
		t.Fatalf("the CRD after helm upgrade: %v (deleting: %v)", err, after != nil && after.DeletionTimestamp != nil)
	}
	for name, uid := range uids {
		o, err := resource(c, crd, "v1alpha1", ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || o.GetUID() != uid || o.GetDeletionTimestamp() != nil {
			t.Errorf("%s after helm upgrade: %v", name, err)
		}
	}

	// The way back: a release installed from 0.6.0 (the CRD from crds/,
	// without Helm's ownership) upgraded to 0.5.0, which renders it as a
	// template. Helm refuses to adopt it; check-upgrade says so first, and
	// its printed adoption, pasted, lets the same upgrade through.
	releaseFinalizer(t, c, crd, ns)
	if _, err := deleteCRDAndWait(ctx, c, crd.Name, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	const adoptNS = "case38-adopt"
	ensureNamespace(t, c, adoptNS)
	if err := helmRelease(t, adoptNS, "adopt", chart06, false); err != nil {
		t.Fatalf("helm install adopt: %v", err)
	}
	if err := fixture.WaitEstablished(ctx, c.ext, crd.Name); err != nil {
		t.Fatal(err)
	}
	chart05 := fx.path("chart-0.5.0")
	adopt := upgradeJSON(t, refuses(t, c, []string{crd.Name}, nil, "check-upgrade", "--chart", chart05, "--release", "adopt", "-n", adoptNS, "-o", "json"))
	q := adopt.CRDs[0]
	if !slices.Equal(errorCodes(q), []string{upgrade.CodeHelmCannotAdopt}) || len(q.Fix) != 3 || !strings.HasPrefix(q.Fix[2], "helm upgrade adopt ") {
		t.Fatalf("check-upgrade of the way back: %+v", q)
	}
	err = helmRelease(t, adoptNS, "adopt", chart05, true)
	if err == nil || !strings.Contains(err.Error(), "exists and cannot be imported into the current release") {
		t.Fatalf("helm upgrade to 0.5.0 before the adoption: %v, want Helm's refusal", err)
	}
	for _, line := range q.Fix[:2] {
		cmd := exec.Command("sh", "-c", line)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+srv.Kubeconfig)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
	}
	if err := helmRelease(t, adoptNS, "adopt", chart05, true); err != nil {
		t.Fatalf("helm upgrade to 0.5.0 after the printed adoption: %v", err)
	}
}

// TestCase38Offline: the same release change caught in a pull request's
// pipeline, without a cluster (the kubeconfig names none): check-upgrade
// --from chart 0.5.0 --to 0.6.0 for the release is the same error,
// predicted, its object count unknown rather than zero, exit 1; SARIF,
// JUnit and the annotations agree with it.
func TestCase38Offline(t *testing.T) {
	t.Parallel()
	fx := loadCase(t, case38)
	args := []string{"check-upgrade", "--from", fx.path("chart-0.5.0"), "--to", fx.path("chart-0.6.0"), "--release", "backup", "-n", "backup-system"}
	r := binary(t, []string{"KUBECONFIG=" + filepath.Join(t.TempDir(), "none"), "GITHUB_ACTIONS="}, append(slices.Clone(args), "-o", "json")...)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	got := upgradeJSON(t, r)
	p := got.CRDs[0]
	if d := p.Deletion; len(got.CRDs) != 1 || p.Apply != upgrade.Deleted || !p.Predicted || d == nil || d.Counted || !d.MovedToCRDsDir ||
		!slices.Equal(errorCodes(p), []string{upgrade.CodeHelmDeletesCRD}) || got.Summary.Errors != 1 {
		t.Fatalf("-o json: %+v (deletion %+v)", got, p.Deletion)
	}
	ciOutputsAgree(t, got, args...)

	// Offline the release's name only names it: without --release the
	// deletion is found just the same. A values file that turns a CRD
	// off (--values are the new release's) deletes it too.
	noKube := []string{"KUBECONFIG=" + filepath.Join(t.TempDir(), "none"), "GITHUB_ACTIONS="}
	toggle := filepath.Join(repoRoot, "internal", "helmchart", "testdata")
	for _, a := range [][]string{
		{"check-upgrade", "--from", fx.path("chart-0.5.0"), "--to", fx.path("chart-0.6.0"), "-o", "json"},
		{"check-upgrade", "--from", filepath.Join(toggle, "toggle"), "--to", filepath.Join(toggle, "toggle"), "--values", filepath.Join(toggle, "off.yaml"), "-o", "json"},
	} {
		r := binary(t, noKube, a...)
		if r.code != 1 {
			t.Fatalf("%v: exit %d, want 1\n%s%s", a, r.code, r.stdout, r.stderr)
		}
		if p := upgradeJSON(t, r).CRDs[0]; p.Apply != upgrade.Deleted || !slices.Equal(errorCodes(p), []string{upgrade.CodeHelmDeletesCRD}) {
			t.Errorf("%v: %+v", a, p)
		}
	}
}
