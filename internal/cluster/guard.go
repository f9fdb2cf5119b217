package cluster

import (
	"context"
	"encoding/json"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/crdversion/kubectl-crdversion/internal/guard"
)

// InstallGuard creates the guard of the CRD crdName (policy and binding,
// or replaces their specs when they exist), then marks the CRD guarded
// (a merge patch of guard.GuardedAnnotation), so that the tool stamps its
// own writes of it. The policy first: the binding names it. Errors are
// the API server's, unchanged.
func (c *Client) InstallGuard(ctx context.Context, crdName string, policy *admissionregistrationv1.ValidatingAdmissionPolicy, binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding, fieldManager string) error {
	cs, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return err
	}
	policies := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	create := metav1.CreateOptions{FieldManager: fieldManager}
	update := metav1.UpdateOptions{FieldManager: fieldManager}
	if old, err := policies.Get(ctx, policy.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		_, err = policies.Create(ctx, policy, create)
		if err != nil {
			return err
		}
	} else if err != nil {
		return err
	} else {
		old.Spec, old.Labels = policy.Spec, policy.Labels
		if _, err := policies.Update(ctx, old, update); err != nil {
			return err
		}
	}
	bindings := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	if old, err := bindings.Get(ctx, binding.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		if _, err := bindings.Create(ctx, binding, create); err != nil {
			return err
		}
	} else if err != nil {
		return err
	} else {
		old.Spec, old.Labels = binding.Spec, binding.Labels
		if _, err := bindings.Update(ctx, old, update); err != nil {
			return err
		}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{guard.GuardedAnnotation: "true"}}})
	if err != nil {
		return err
	}
	if _, err := c.CRDs.Patch(ctx, crdName, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
		return fmt.Errorf("marking %s guarded: %w", crdName, err)
	}
	return nil
}
