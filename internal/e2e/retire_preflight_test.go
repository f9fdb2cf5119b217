package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// denyCRDEdit installs a ValidatingAdmissionPolicy that denies every update
// of the CRD named name for which expression (CEL over object and
// oldObject) is false, with message — the kind of policy a platform team
// puts on CRDs — and waits until the API server enforces it: a server-side
// dry run of probe's edit of the live CRD is denied. The returned function
// removes it (it is also removed when the test ends).
func denyCRDEdit(t *testing.T, c clients, name, expression, message string, probe func(*apiextensionsv1.CustomResourceDefinition)) func() {
	t.Helper()
	ctx := context.Background()
	policyName := "deny-" + strings.ReplaceAll(name, ".", "-")
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				ResourceNames: []string{name},
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apiextensions.k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"customresourcedefinitions"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: expression, Message: message}},
		},
	}
	policies := c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	bindings := c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	if _, err := policies.Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: policyName, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	if _, err := bindings.Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	remove := func() {
		_ = bindings.Delete(context.Background(), policyName, metav1.DeleteOptions{})
		_ = policies.Delete(context.Background(), policyName, metav1.DeleteOptions{})
	}
	t.Cleanup(remove)
	waitFor(t, "the admission policy on "+name+" to be enforced", func() (bool, error) {
		return probeDenied(c, name, message, probe)
	})
	return remove
}

// probeDenied reports whether a server-side dry run of probe's edit of the
// CRD named name is denied with message.
func probeDenied(c clients, name, message string, probe func(*apiextensionsv1.CustomResourceDefinition)) (bool, error) {
	ctx := context.Background()
	crds := c.ext.ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	probe(crd)
	_, err = crds.Update(ctx, crd, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
	return err != nil && strings.Contains(err.Error(), message), nil
}

const (
	neverRemoved    = "oldObject.spec.versions.all(o, object.spec.versions.exists(n, n.name == o.name))"
	neverRemovedMsg = "versions of this CRD are never removed"
	staysServed     = "oldObject.spec.versions.all(o, !o.served || object.spec.versions.exists(n, n.name == o.name && n.served))"
	staysServedMsg  = "versions of this CRD stay served"
)

func removeVersion(v string) func(*apiextensionsv1.CustomResourceDefinition) {
	return func(crd *apiextensionsv1.CustomResourceDefinition) {
		for i := range crd.Spec.Versions {
			if crd.Spec.Versions[i].Name == v {
				crd.Spec.Versions = append(crd.Spec.Versions[:i], crd.Spec.Versions[i+1:]...)
				return
			}
		}
	}
}

func unserveVersion(v string) func(*apiextensionsv1.CustomResourceDefinition) {
	return func(crd *apiextensionsv1.CustomResourceDefinition) { lifecycle.FindVersion(crd, v).Served = false }
}

// TestRetireAsksTheAPIServerFirst (issue 17): retire sends each CRD write of
// its plan (the unserve, the removal) as a server-side dry run before it
// takes the first step. A write the API server would refuse (here an
// admission policy) blocks the plan with the server's message, and nothing
// changes — instead of unserving v1 and failing at the removal.
// --dry-run=server sends the same dry runs and shows the answers;
// --dry-run=client does not ask.
func TestRetireAsksTheAPIServerFirst(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	args := []string{"--migrate", "--skip-usage-check", "--clean-managed-fields"}

	t.Run("removal refused", func(t *testing.T) {
		crd := advance(t, c, "asks-remove.example.com", apiextensionsv1.NamespaceScoped, 2, lifecycle.StateS4)
		name := crd.Name
		allow := denyCRDEdit(t, c, name, neverRemoved, neverRemovedMsg, removeVersion("v1"))

		refused(t, c, name, []string{"stopped at step 7", "nothing was changed", neverRemovedMsg},
			append([]string{"retire", name, "v1"}, args...)...)
		if v := lifecycle.FindVersion(getCRD(t, c, name), "v1"); v == nil || !v.Served {
			t.Fatal("v1 was unserved although the API server refuses its removal")
		}

		r := refused(t, c, name, []string{"stopped at step 7", neverRemovedMsg}, append([]string{"retire", name, "v1", "--dry-run=server"}, args...)...)
		if !strings.Contains(r.stdout, "7. BLOCKED") || !strings.Contains(r.stdout, "the API server refuses the removal of v1 (server-side dry run of the write)") ||
			!strings.Contains(r.stdout, "the API server accepts the write (server-side dry run)") {
			t.Errorf("--dry-run=server does not show the API server's answers:\n%s", r.stdout)
		}
		client := mustRun(t, append([]string{"retire", name, "v1", "--dry-run=client"}, args...)...)
		if strings.Contains(client.stdout, "server-side dry run") || !strings.Contains(client.stdout, "7. TO DO") {
			t.Errorf("--dry-run=client asked the API server, or planned otherwise:\n%s", client.stdout)
		}

		allow()
		waitFor(t, "the admission policy to be gone", func() (bool, error) {
			denied, err := probeDenied(c, name, neverRemovedMsg, removeVersion("v1"))
			return !denied, err
		})
		plan := mustRun(t, append([]string{"retire", name, "v1", "--dry-run=server"}, args...)...)
		if strings.Count(plan.stdout, "the API server accepts the write (server-side dry run)") != 2 {
			t.Errorf("--dry-run=server does not show that the API server accepts the unserve and the removal:\n%s", plan.stdout)
		}
		mustRun(t, append([]string{"retire", name, "v1"}, args...)...)
		healthy(t, name, lifecycle.StateS6)
	})

	t.Run("unserve refused", func(t *testing.T) {
		crd := advance(t, c, "asks-unserve.example.com", apiextensionsv1.NamespaceScoped, 2, lifecycle.StateS4)
		name := crd.Name
		denyCRDEdit(t, c, name, staysServed, staysServedMsg, unserveVersion("v1"))
		refused(t, c, name, []string{"stopped at step 3", "nothing was changed", "the API server refuses to unserve v1", staysServedMsg},
			append([]string{"retire", name, "v1"}, args...)...)
	})
}

// TestRetireChecksTheMigrationFirst reproduces B4 of the preflight-holes
// report: v2 has a CEL transition rule that rejects the migration's no-op
// update of a sealed object. retire --migrate used to unserve v1 (step 3),
// fail at the migration (step 5) and exit with v1 unserved without saying
// so. The migration's server-side dry run now blocks step 5 before
// anything changes.
func TestRetireChecksTheMigrationFirst(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	_, name := sealedCRD(t, c, "seals-retire.example.com")
	args := []string{"retire", name, "v1", "--migrate", "--clean-managed-fields", "--skip-usage-check"}
	r := refused(t, c, name, []string{"stopped at step 5", "nothing was changed", "a sealed object cannot be updated", "default/s1"}, args...)
	if !strings.Contains(r.stdout, "5. BLOCKED") {
		t.Errorf("plan:\n%s", r.stdout)
	}
	live := getCRD(t, c, name)
	if v := lifecycle.FindVersion(live, "v1"); v == nil || !v.Served {
		t.Error("v1 was unserved although the migration cannot finish")
	}
	// The object was not rewritten either.
	if got := storedVersionsOf(t, c, name); strings.Join(got, ",") != "v1,v2" {
		t.Errorf("storedVersions %v", got)
	}
}

// sealedCRD is B4's CRD: v1 stored, an object sealed at v1, then v2 (whose
// schema has a transition rule that rejects any update of a sealed object)
// made the storage version.
func sealedCRD(t *testing.T, c clients, group string) (*apiextensionsv1.CustomResourceDefinition, string) {
	t.Helper()
	schema := func(rule bool) *apiextensionsv1.CustomResourceValidation {
		spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"sealed": {Type: "boolean"}, "data": {Type: "string"}}}
		if rule {
			spec.XValidations = apiextensionsv1.ValidationRules{{Rule: "!has(oldSelf.sealed) || !oldSelf.sealed", Message: "a sealed object cannot be updated"}}
		}
		return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec}}}
	}
	crd := createCRD(t, c, &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "seals." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "seals", Singular: "seal", Kind: "Seal", ListKind: "SealList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true, Schema: schema(false)}}},
	})
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Seal",
		"metadata": map[string]any{"name": "s1", "namespace": "default"}, "spec": map[string]any{"sealed": true, "data": "x"}}}
	ensureNamespace(t, c, "default")
	waitFor(t, "the seal to be created", func() (bool, error) {
		_, err := resource(c, crd, "v1", "default").Create(context.Background(), obj, metav1.CreateOptions{})
		return err == nil, nil
	})
	updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v2", Served: true, Schema: schema(true)})
	})
	return setStorage(t, c, crd.Name, "v2"), crd.Name
}

// TestRetireSaysWhichStepsItTook: when the API server can answer for the
// removal only after the migration (objects stored at v1: it validates
// storedVersions before admission runs) and then refuses it, retire stops
// at step 7 saying exactly which steps it took, with the command that
// undoes the unserve; that command, pasted, serves v1 again.
func TestRetireSaysWhichStepsItTook(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := advance(t, c, "says-taken.example.com", apiextensionsv1.NamespaceScoped, 2, lifecycle.StateS1)
	name := crd.Name
	// Enforced while v2 is not stored yet, so that its removal can probe it.
	denyCRDEdit(t, c, name, neverRemoved, neverRemovedMsg, removeVersion("v2"))
	setStorage(t, c, name, "v2") // S2: objects at v1, storedVersions [v1, v2]

	r := plugin(t, "retire", name, "v1", "--migrate", "--clean-managed-fields", "--skip-usage-check", "-o", "json")
	if r.err == nil {
		t.Fatalf("retire succeeded although the removal is refused:\n%s", r.stdout)
	}
	undo := "kubectl crdversion serve " + name + " v1"
	// The error line says where it stopped; the log above it (stderr, as
	// stdout carries the report) why, and the steps taken with their undo.
	if !strings.Contains(r.err.Error(), "stopped at step 7, blocked, after taking the steps listed above") {
		t.Errorf("error %q", r.err)
	}
	for _, want := range []string{neverRemovedMsg, "This run took:\n  - step 3 (v1 unserved); to undo it: " + undo + "\n  - step 5 ("} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	var rep struct {
		Outcome string   `json:"outcome"`
		Taken   []string `json:"taken"`
		Steps   []struct {
			ID          string `json:"id"`
			UndoCommand string `json:"undoCommand"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Outcome != "Blocked" || len(rep.Steps) != 8 || rep.Steps[2].UndoCommand != undo ||
		strings.Join(rep.Taken, ",") != "Unserved,Migrated" {
		t.Errorf("report (%v): %+v\n%s", err, rep, r.stdout)
	}
	// Advice is code: the undo, pasted, serves v1 again.
	mustRun(t, strings.Fields(strings.TrimPrefix(undo, "kubectl crdversion "))...)
	if v := lifecycle.FindVersion(getCRD(t, c, name), "v1"); v == nil || !v.Served {
		t.Error("the printed undo did not serve v1 again")
	}
}

// TestRetireReportRecordsEachStep (friction 9 of the preflight-holes
// report): the RetirePlan of a run records, per step, what it checked and
// what it did — not only the end state's messages.
func TestRetireReportRecordsEachStep(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := advance(t, c, "records.example.com", apiextensionsv1.NamespaceScoped, 3, lifecycle.StateS3)
	name := crd.Name
	writesSettled(t, c, crd, time.Second)
	r := mustRun(t, "retire", name, "v1", "--migrate", "--clean-managed-fields", "--usage-window=1s", "--usage-min-window=1s", "--usage-history=0", "-o", "json")
	var rep struct {
		Outcome string `json:"outcome"`
		Steps   []struct {
			ID      string   `json:"id"`
			Checked []string `json:"checked"`
			Did     []string `json:"did"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Outcome != "Complete" {
		t.Fatalf("report (%v):\n%s", err, r.stdout)
	}
	step := map[string]string{}
	for _, s := range rep.Steps {
		step[s.ID+" checked"] = strings.Join(s.Checked, " | ")
		step[s.ID+" did"] = strings.Join(s.Did, " | ")
	}
	for key, want := range map[string]string{
		"ClientsMoved checked":       "client usage: no client of records.example.com/v1 crontabs seen in the last 1s (/metrics of 1 API server instance(s) and managedFields of crontabs)",
		"Unserved checked":           "the API server accepts the write (server-side dry run)",
		"Unserved did":               "set served: false on v1",
		"StorageMoved checked":       "done: the storage version is v2",
		"Migrated checked":           "status.storedVersions does not list v1; counted 3 object(s) of crontabs.records.example.com",
		"Migrated did":               "migrated 3 object(s) at v2 (rewritten 0, already current 3",
		"ManagedFieldsClean checked": "listed the objects: 3 have managedFields entries naming records.example.com/v1",
		"ManagedFieldsClean did":     "rewrote the managedFields of 3 object(s)",
		"Removed checked":            "the API server accepts the write (server-side dry run)",
		"Removed did":                "removed v1 from spec.versions",
	} {
		if !strings.Contains(step[key], want) {
			t.Errorf("%s: %q, want %q", key, step[key], want)
		}
	}
}

// TestRetireStorageVersionRefusedAtOnce (friction 2 of the preflight-holes
// report): retiring the storage version is refused from the CRD alone —
// step 3 — without waiting for the metrics window first.
func TestRetireStorageVersionRefusedAtOnce(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := advance(t, c, "at-once.example.com", apiextensionsv1.NamespaceScoped, 1, lifecycle.StateS1)
	name := crd.Name
	start := time.Now()
	r := refused(t, c, name, []string{"stopped at step 3", "v1 is the storage version"}, "retire", name, "v1", "--usage-window=5s", "-o", "json")
	t.Logf("refused in %s", time.Since(start).Round(time.Millisecond))
	if strings.Contains(r.stderr, "Measuring the client usage") || strings.Contains(r.stdout, `"usage"`) {
		t.Errorf("client usage was measured before a refusal the CRD alone shows:\n%s\n%s", r.stderr, r.stdout)
	}
}

// denyStatusEdit installs a ValidatingAdmissionPolicy that denies, with
// message, every write of the status of the CRD named name for which
// expression is false, and waits until a server-side dry run of a trim of
// its storedVersions to the storage version is denied.
func denyStatusEdit(t *testing.T, c clients, name, expression, message string) {
	t.Helper()
	ctx := context.Background()
	policyName := "deny-status-" + strings.ReplaceAll(name, ".", "-")
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				ResourceNames: []string{name},
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apiextensions.k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"customresourcedefinitions/status"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: expression, Message: message}},
		},
	}
	policies := c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	bindings := c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	if _, err := policies.Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: policyName, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	if _, err := bindings.Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = bindings.Delete(context.Background(), policyName, metav1.DeleteOptions{})
		_ = policies.Delete(context.Background(), policyName, metav1.DeleteOptions{})
	})
	waitFor(t, "the admission policy on the status of "+name+" to be enforced", func() (bool, error) {
		crds := c.ext.ApiextensionsV1().CustomResourceDefinitions()
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		crd.Status.StoredVersions = []string{lifecycle.StorageVersion(crd)}
		_, err = crds.UpdateStatus(ctx, crd, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), message), nil
	})
}

// TestRetireDryRunsTheTrim: an admission policy denies every write of the
// CRD's status that shortens storedVersions. retire --migrate used to
// unserve v1 and rewrite every object, and then stop at the trim, leaving
// v1 unserved (a trial on a real API server). The server-side dry run of
// the migration now also sends the trim, as a dry run, once the objects
// pass: retire refuses before it changes anything, with the policy's
// answer, and migrate --dry-run=server says the same.
func TestRetireDryRunsTheTrim(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := advance(t, c, "trim-denied.example.com", apiextensionsv1.NamespaceScoped, 2, lifecycle.StateS2)
	name := crd.Name
	const never = "storedVersions of this CRD are never trimmed"
	denyStatusEdit(t, c, name, "object.status.storedVersions.size() >= oldObject.status.storedVersions.size()", never)

	r := refused(t, c, name, []string{"stopped at step 5", "nothing was changed", never}, "retire", name, "v1", "--migrate", "--clean-managed-fields", "--skip-usage-check")
	if !strings.Contains(r.stdout, "5. BLOCKED") {
		t.Errorf("plan:\n%s", r.stdout)
	}
	if v := lifecycle.FindVersion(getCRD(t, c, name), "v1"); v == nil || !v.Served {
		t.Error("v1 was unserved although the migration's trim is refused")
	}
	if got := storedVersionsOf(t, c, name); strings.Join(got, ",") != "v1,v2" {
		t.Errorf("storedVersions %v", got)
	}

	dry := plugin(t, "migrate", name, "--dry-run=server")
	if out := dry.stderr + errorLine(dry.err); dry.err == nil || !strings.Contains(errorLine(dry.err), "not the trim of status.storedVersions") || !strings.Contains(out, never) {
		t.Errorf("migrate --dry-run=server: %v\n%s", dry.err, dry.stdout)
	}
}
