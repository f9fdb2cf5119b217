package cluster

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/crdversion/kubectl-crdversion/internal/references"
)

// AdmissionRules lists the rules of every ValidatingWebhookConfiguration,
// MutatingWebhookConfiguration and ValidatingAdmissionPolicy
// (admissionregistration.k8s.io/v1), one references.AdmissionRule per
// rule, with the matchPolicy the API server defaulted. The error is the
// API server's (a 403 when list is not granted), naming the kind.
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
				APIGroups: r.APIGroups, APIVersions: r.APIVersions, Resources: r.Resources})
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
	policies, err := api.ValidatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing ValidatingAdmissionPolicies: %w", err)
	}
	for _, p := range policies.Items {
		if mc := p.Spec.MatchConstraints; mc != nil {
			var rules []admissionregistrationv1.RuleWithOperations
			for _, r := range mc.ResourceRules {
				rules = append(rules, r.RuleWithOperations)
			}
			add("ValidatingAdmissionPolicy", p.Name, "", mc.MatchPolicy, rules)
		}
	}
	return out, nil
}
