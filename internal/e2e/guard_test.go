package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/crdversion/kubectl-crdversion/internal/guard"
)

// guardRefusal is what the guard's policy answers.
const guardRefusal = "refused by the kubectl crdversion guard of "

// updateVersions sets served and storage of each version of the CRD name
// (and the annotations given) in one update through the client, retrying
// on conflicts; it returns the API server's answer.
func updateVersions(c clients, name string, served map[string]bool, storage string, annotations map[string]string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i := range crd.Spec.Versions {
			v := &crd.Spec.Versions[i]
			if s, ok := served[v.Name]; ok {
				v.Served = s
			}
			if storage != "" {
				v.Storage = v.Name == storage
			}
		}
		for k, v := range annotations {
			if crd.Annotations == nil {
				crd.Annotations = map[string]string{}
			}
			crd.Annotations[k] = v
		}
		_, err = c.ext.ApiextensionsV1().CustomResourceDefinitions().Update(context.Background(), crd, metav1.UpdateOptions{})
		return err
	})
}

// TestGuardRefusesUnsafeUpdates (issue 29): guard --apply installs a
// ValidatingAdmissionPolicy for one CRD. A plain kubectl apply that
// unserves a version is refused with the policy's message, and so is a
// storage switch through the API; the tool's own unserve (preflighted)
// goes through and leaves its stamp. The stamp lets nothing else
// through once the generation moved; the break-glass annotation does.
// check-upgrade's server dry run meets the same refusal. Without --apply
// the guard is printed, ready for kubectl apply.
func TestGuardRefusesUnsafeUpdates(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	ctx := context.Background()
	crd := crontab("guard.example.com", apiextensionsv1.NamespaceScoped)
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{crontabVersion("v1", true, false), crontabVersion("v2", true, true), crontabVersion("v3", true, false)}
	crd = createCRD(t, c, crd)
	name := crd.Name
	policyName := guard.Name(name)
	t.Cleanup(func() {
		_ = c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(context.Background(), policyName, metav1.DeleteOptions{})
		_ = c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(context.Background(), policyName, metav1.DeleteOptions{})
	})

	printed := succeeds(t, "guard", name)
	for _, w := range []string{"kind: ValidatingAdmissionPolicy", "kind: ValidatingAdmissionPolicyBinding", "name: " + policyName, "- " + name} {
		if !strings.Contains(printed.stdout, w) {
			t.Errorf("guard printed no %q:\n%s", w, printed.stdout)
		}
	}
	succeeds(t, "guard", name, "--apply")

	// The policy is enforced once the API server has compiled it and
	// seen the binding: until then a dry-run unserve is admitted.
	waitFor(t, "the guard enforced", func() (bool, error) {
		live, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		live.Spec.Versions[0].Served = false
		_, err = c.ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, live, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), guardRefusal+name), nil
	})

	// The API server type-checked the policy's CEL against the CRD type
	// without warnings (an expression over its cost budget, or naming a
	// field the type has not, would be one).
	policy, err := c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, policyName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tc := policy.Status.TypeChecking; tc != nil && len(tc.ExpressionWarnings) > 0 {
		t.Errorf("the policy's type checking warns: %+v", tc.ExpressionWarnings)
	}

	// A plain kubectl apply of the unsafe change, as a GitOps sync sends it.
	live, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	manifest := &apiextensionsv1.CustomResourceDefinition{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: *live.Spec.DeepCopy()}
	manifest.Spec.Versions[0].Served = false
	data, err := yaml.Marshal(manifest)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("kubectl", "apply", "--server-side", "--force-conflicts", "--field-manager", "gitops", "-f", file, "--kubeconfig", srv.Kubeconfig).CombinedOutput()
	if err == nil || !strings.Contains(string(out), guardRefusal+name+": this update unserves v1 without the preflight of kubectl crdversion") {
		t.Errorf("kubectl apply of the unserve: %v\n%s", err, out)
	}
	// A storage switch through the API is refused just the same.
	if err := updateVersions(c, name, nil, "v3", nil); err == nil || !strings.Contains(err.Error(), "moves the storage version") {
		t.Errorf("storage switch: %v, want the guard's refusal", err)
	}

	// check-upgrade's server dry run meets the guard: the release that
	// unserves v1 is rejected at the API server.
	refuses(t, c, []string{name}, []string{"Apply: REJECTED by the API server", "the API server refused a server-side dry run of the apply", guardRefusal + name, "1 error,"}, "check-upgrade", "-f", file)

	// The tool's own step, preflighted, goes through and is stamped.
	succeeds(t, "unserve", name, "v1", "--skip-usage-check")
	after, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Spec.Versions[0].Served || after.Annotations[guard.StampAnnotation] != itoa(int(after.Generation-1))+":v1-,v2+*,v3+" {
		t.Fatalf("after unserve: v1 served %v, stamp %q (generation %d)", after.Spec.Versions[0].Served, after.Annotations[guard.StampAnnotation], after.Generation)
	}

	// The stamp stays on the CRD but matches no later change: serving v1
	// again is safe and admitted; unserving it again without the tool is
	// refused.
	if err := updateVersions(c, name, map[string]bool{"v1": true}, "", nil); err != nil {
		t.Fatalf("serving v1 again: %v", err)
	}
	if err := updateVersions(c, name, map[string]bool{"v1": false}, "", nil); err == nil || !strings.Contains(err.Error(), guardRefusal) {
		t.Errorf("unserving v1 again without the tool: %v, want the guard's refusal", err)
	}
	// Break glass: the annotation in the same update lets it through.
	if err := updateVersions(c, name, map[string]bool{"v1": false}, "", map[string]string{guard.BreakGlassAnnotation: "incident 42"}); err != nil {
		t.Errorf("unserve with the break-glass annotation: %v", err)
	}

	// The tool's other steps that the guard watches go through too: a
	// storage move, and the removal of a version.
	succeeds(t, "promote-storage", name, "v3")
	succeeds(t, "retire", name, "v1", "--skip-usage-check")
	final, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := guard.State(final); got != "v2+,v3+*" {
		t.Errorf("after promote-storage v3 and retire v1: %s, want v2+,v3+*", got)
	}
}
