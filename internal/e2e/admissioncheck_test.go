package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// TestAdmissionRulesBlockUnserveAndRetire (issue 28): a webhook
// configuration on crontabs of the CRD with three rules — Exact on v1,
// Equivalent on v1, Exact on v9 (a version the CRD never had: blind
// already). unserve v1 refuses, changing nothing, naming the Exact rule
// only (TestAdmissionRulesOfAnOldVersion: it would see nothing once v1 is
// unserved; the Equivalent one still would; the v9 one was blind before);
// with v2 added to it, unserve goes through. retire v1 then refuses at step
// 2 naming the Equivalent rule (the removal leaves it blind); doctor warns
// about the v9 rule. A MutatingAdmissionPolicy's Equivalent rule on v1 is
// named beside the webhook's; the printed run: line retires v1 once v2 is
// added to both, not before.
func TestAdmissionRulesBlockUnserveAndRetire(t *testing.T) {
	checkReferences(t)
	c := newClients(t)
	ctx := context.Background()
	crd := advance(t, c, "blindrules.example.com", apiextensionsv1.NamespaceScoped, 1, lifecycle.StateS4)
	rec := newAdmissionRecorder(t)
	hook := func(name string, policy admissionregistrationv1.MatchPolicyType, version string) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{Name: name + ".blindrules.example.com", MatchPolicy: &policy,
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{crd.Spec.Group}, APIVersions: []string{version}, Resources: []string{"crontabs"}}}},
			ClientConfig:  admissionregistrationv1.WebhookClientConfig{URL: ptr.To(rec.URL + "/" + name), CABundle: pemCert(rec.Certificate().Raw)},
			FailurePolicy: ptr.To(admissionregistrationv1.Ignore), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}
	}
	whs := c.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	cfg, err := whs.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "blindrules"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{hook("exact", admissionregistrationv1.Exact, "v1"), hook("equivalent", admissionregistrationv1.Equivalent, "v1"),
			hook("never", admissionregistrationv1.Exact, "v9")}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = whs.Delete(context.Background(), "blindrules", metav1.DeleteOptions{}) })
	// A MutatingAdmissionPolicy on v1 (Equivalent, its default), unbound:
	// its rule is read all the same.
	maps := c.kube.AdmissionregistrationV1().MutatingAdmissionPolicies()
	mp, err := maps.Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "blindrules-mutating"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{crd.Spec.Group}, APIVersions: []string{"v1"}, Resources: []string{"crontabs"}}}}}},
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{metadata: Object.metadata{labels: {"mutated": "true"}}}`}}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = maps.Delete(context.Background(), mp.Name, metav1.DeleteOptions{}) })
	addV2 := func(webhook int) {
		t.Helper()
		cur, err := whs.Get(ctx, cfg.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Webhooks[webhook].Rules[0].APIVersions = append(cur.Webhooks[webhook].Rules[0].APIVersions, "v2")
		if _, err := whs.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	r := refused(t, c, crd.Name, []string{"1 admission rule of crontabs.blindrules.example.com list blindrules.example.com/v1 and no version that stays",
		"ValidatingWebhookConfiguration blindrules/exact.blindrules.example.com (matchPolicy Exact, apiVersions [v1])", "add v2 (or \"*\") to their apiVersions"},
		"unserve", crd.Name, "v1", "--skip-usage-check")
	if out := r.stdout + r.stderr; strings.Contains(out, "equivalent.blindrules") || strings.Contains(out, "never.blindrules") || strings.Contains(out, "blindrules-mutating") {
		t.Errorf("unserve names a rule it does not blind:\n%s", out)
	}
	addV2(0)
	mustRun(t, "unserve", crd.Name, "v1", "--skip-usage-check")

	r = refused(t, c, crd.Name, []string{"stopped at step 2", "2 admission rules of crontabs.blindrules.example.com list blindrules.example.com/v1",
		"ValidatingWebhookConfiguration blindrules/equivalent.blindrules.example.com (matchPolicy Equivalent, apiVersions [v1])",
		"MutatingAdmissionPolicy blindrules-mutating (matchPolicy Equivalent, apiVersions [v1])"},
		"retire", crd.Name, "v1", "--skip-usage-check", "--migrate", "--clean-managed-fields")
	args := runLine(t, r.stdout+r.stderr)

	var doc report.Doctor
	dr := crdversion(t, "doctor", crd.Name, "--skip-usage-check", "-o", "json")
	if err := json.Unmarshal([]byte(dr.stdout), &doc); err != nil || len(doc.CRDs) != 1 {
		t.Fatalf("doctor: %v\n%s%s", err, dr.stdout, dr.stderr)
	}
	blind := ""
	for _, f := range doc.CRDs[0].Findings {
		if f.Code == lifecycle.CodeAdmissionRulesBlind {
			blind += f.Message
		}
	}
	if !strings.Contains(blind, "never.blindrules.example.com (matchPolicy Exact, apiVersions [v9])") || strings.Contains(blind, "equivalent.blindrules") {
		t.Errorf("doctor's blind admission rules: %q", blind)
	}

	addV2(1)
	r = refused(t, c, crd.Name, []string{"stopped at step 2", "1 admission rule of crontabs.blindrules.example.com list blindrules.example.com/v1",
		"MutatingAdmissionPolicy blindrules-mutating (matchPolicy Equivalent, apiVersions [v1])"}, args...)
	cur, err := maps.Get(ctx, mp.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.MatchConstraints.ResourceRules[0].APIVersions = append(cur.Spec.MatchConstraints.ResourceRules[0].APIVersions, "v2")
	if _, err := maps.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r = mustRun(t, args...)
	if !strings.Contains(r.stdout, "v1 retired from "+crd.Name) {
		t.Errorf("the retire run: line after the rule was fixed:\n%s", r.stdout)
	}
}
