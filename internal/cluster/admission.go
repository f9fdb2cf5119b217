package cluster

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/crdversion/kubectl-crdversion/internal/references"
)

// AdmissionRules lists the rules of every ValidatingWebhookConfiguration,
// MutatingWebhookConfiguration, ValidatingAdmissionPolicy and
// MutatingAdmissionPolicy (admissionregistration.k8s.io/v1), one
// references.AdmissionRule per rule, with the matchPolicy the API server
// defaulted. The error is the API server's (a 403 when list is not
// granted), naming the kind.
func (c *Client) AdmissionRules(ctx context.Context) ([]references.AdmissionRule, error) {
	kube, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return nil, err
	}
	api := kube.AdmissionregistrationV1()
	var out []references.AdmissionRule
	add := func(kind, name, webhook string, policy *admissionregistrationv1.MatchPolicyType, rules []admissionregistrationv1.RuleWithOperations) {
		mp := string(admissionregistrationv1.Equivalent)
		if policy != nil {
			mp = string(*policy)
		}
		for i, r := range rules {
			out = append(out, references.AdmissionRule{Kind: kind, Name: name, Webhook: webhook, Rule: i, MatchPolicy: mp,
				APIGroups: r.APIGroups, APIVersions: r.APIVersions, Resources: r.Resources, Operations: operations(r.Operations)})
		}
	}
	validating, err := api.ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing ValidatingWebhookConfigurations: %w", err)
	}
	for _, cfg := range validating.Items {
		for _, w := range cfg.Webhooks {
			add("ValidatingWebhookConfiguration", cfg.Name, w.Name, w.MatchPolicy, w.Rules)
		}
	}
	mutating, err := api.MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing MutatingWebhookConfigurations: %w", err)
	}
	for _, cfg := range mutating.Items {
		for _, w := range cfg.Webhooks {
			add("MutatingWebhookConfiguration", cfg.Name, w.Name, w.MatchPolicy, w.Rules)
		}
	}
	addPolicy := func(kind, name string, mc *admissionregistrationv1.MatchResources) {
		if mc == nil {
			return
		}
		var rules []admissionregistrationv1.RuleWithOperations
		for _, r := range mc.ResourceRules {
			rules = append(rules, r.RuleWithOperations)
		}
		add(kind, name, "", mc.MatchPolicy, rules)
	}
	policies, err := api.ValidatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing ValidatingAdmissionPolicies: %w", err)
	}
	for _, p := range policies.Items {
		addPolicy("ValidatingAdmissionPolicy", p.Name, p.Spec.MatchConstraints)
	}
	mutatingPolicies, err := c.mutatingAdmissionPolicies(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range mutatingPolicies {
		addPolicy("MutatingAdmissionPolicy", p.Name, p.Spec.MatchConstraints)
	}
	return out, nil
}

// mutatingAdmissionPolicyVersions are the versions of
// admissionregistration.k8s.io that have served MutatingAdmissionPolicies,
// newest first; the beta and alpha versions are served by older releases
// only when a feature gate and --runtime-config enable them.
var mutatingAdmissionPolicyVersions = []string{"v1", "v1beta1", "v1alpha1"}

// mutatingAdmissionPolicies lists the MutatingAdmissionPolicies at the
// newest version the API server serves them at, decoded into the v1 type
// (spec.matchConstraints has the same shape at every version). An API
// server that serves them at none (404 at each) has none.
func (c *Client) mutatingAdmissionPolicies(ctx context.Context) ([]admissionregistrationv1.MutatingAdmissionPolicy, error) {
	for _, version := range mutatingAdmissionPolicyVersions {
		gvr := admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingadmissionpolicies").GroupResource().WithVersion(version)
		list, err := c.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("listing MutatingAdmissionPolicies (%s): %w", version, err)
		}
		out := make([]admissionregistrationv1.MutatingAdmissionPolicy, len(list.Items))
		for i := range list.Items {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &out[i]); err != nil {
				return nil, fmt.Errorf("decoding MutatingAdmissionPolicy %s (%s): %w", list.Items[i].GetName(), version, err)
			}
		}
		return out, nil
	}
	return nil, nil
}

func operations(ops []admissionregistrationv1.OperationType) []string {
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = string(op)
	}
	return out
}
