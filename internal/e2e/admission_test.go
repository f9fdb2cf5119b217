package e2e

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// denyFrozen installs a ValidatingAdmissionPolicy that denies every update
// of an object of crd labelled frozen=true, and waits until it is enforced.
// The returned function removes it (it is also removed when the test ends).
func denyFrozen(t *testing.T, c clients, crd *apiextensionsv1.CustomResourceDefinition) func() {
	t.Helper()
	ctx := context.Background()
	name := "deny-frozen-" + strings.ReplaceAll(crd.Spec.Group, ".", "-")
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{crd.Spec.Group}, APIVersions: []string{"*"}, Resources: []string{crd.Spec.Names.Plural}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "!has(oldObject.metadata.labels) || !('frozen' in oldObject.metadata.labels) || oldObject.metadata.labels['frozen'] != 'true'",
				Message:    "frozen objects cannot change",
			}},
		},
	}
	if _, err := c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	if _, err := c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	remove := func() {
		_ = c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{})
	}
	t.Cleanup(remove)
	// A probe object: enforced once an update of it is denied.
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": crd.Spec.Group + "/v2", "kind": crd.Spec.Names.Kind,
		"metadata": map[string]any{"name": "frozen-probe", "labels": map[string]any{"frozen": "true"}},
	}}
	ensureNamespace(t, c, "probe")
	res := resource(c, crd, "v2", "probe")
	if _, err := res.Create(ctx, probe, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the admission policy to be enforced", func() (bool, error) {
		u, err := res.Get(ctx, "frozen-probe", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		u.SetAnnotations(map[string]string{"touch": "x"})
		_, err = res.Update(ctx, u, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "frozen objects cannot change"), nil
	})
	if err := res.Delete(ctx, "frozen-probe", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	return remove
}
