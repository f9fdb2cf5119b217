// Package guard builds the admission guard of a CRD: a
// ValidatingAdmissionPolicy and its binding that make the API server
// itself refuse the CRD updates that break the documented order of a
// version's life — a version removed from spec.versions, a served
// version unserved, the storage version moved — whoever sends them (a
// GitOps sync, kubectl apply, a chart), unless the update carries this
// tool's stamp for exactly that change or a break-glass annotation.
//
// The stamp (StampAnnotation) is "GENERATION:STATE": the generation of
// the CRD the tool's preflight judged (the update's oldObject) and the
// served/storage state of every version after the update. kubectl
// crdversion sets it on its own writes of a guarded CRD (Guarded); a
// stamp left on the CRD by an earlier step no longer matches once the
// generation moved, so it lets nothing else through.
//
// What a policy cannot see: how many objects are stored at a version,
// which clients still call it, references to it elsewhere — the
// preflights of the commands check those. The guard only makes sure the
// change went through them (or through the break-glass annotation, which
// stays on the CRD for audit).
package guard

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations of a guarded CRD.
const (
	// GuardedAnnotation marks a CRD that has a guard: the tool stamps its
	// writes of it.
	GuardedAnnotation = "crdversion.kubectl.io/guarded"
	// StampAnnotation is the tool's record that its preflight passed for
	// the update that carries it ("GENERATION:STATE", see State).
	StampAnnotation = "crdversion.kubectl.io/preflighted"
	// BreakGlassAnnotation, with a non-empty value (the reason), lets any
	// update through. Remove it afterwards.
	BreakGlassAnnotation = "crdversion.kubectl.io/break-glass"
)

// Name is the name of the policy and of its binding for the CRD crdName.
func Name(crdName string) string { return "crdversion-guard." + crdName }

// State is the served and storage state of crd's versions, in order:
// NAME followed by "+" when served, "-" when not, and "*" for the
// storage version, joined by ",": "v1-,v2+*".
func State(crd *apiextensionsv1.CustomResourceDefinition) string {
	var parts []string
	for _, v := range crd.Spec.Versions {
		s := v.Name + "-"
		if v.Served {
			s = v.Name + "+"
		}
		if v.Storage {
			s += "*"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ",")
}

// Guarded tells whether crd carries GuardedAnnotation.
func Guarded(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return crd.Annotations[GuardedAnnotation] == "true"
}

// Stamp sets StampAnnotation on crd, an edit of the CRD read at
// crd.Generation, for the state it will have.
func Stamp(crd *apiextensionsv1.CustomResourceDefinition) {
	if crd.Annotations == nil {
		crd.Annotations = map[string]string{}
	}
	crd.Annotations[StampAnnotation] = fmt.Sprintf("%d:%s", crd.Generation, State(crd))
}

// The policy's CEL, over the update's oldObject and object (CRDs of
// apiextensions.k8s.io/v1). Each check is a variable, so that the message
// can name what the update does.
const (
	exprRemoved        = `oldObject.spec.versions.filter(o, !object.spec.versions.exists(n, n.name == o.name)).map(o, o.name)`
	exprUnserved       = `oldObject.spec.versions.filter(o, o.served && object.spec.versions.exists(n, n.name == o.name && !n.served)).map(o, o.name)`
	exprStorageMoved   = `oldObject.spec.versions.exists(o, o.storage && !object.spec.versions.exists(n, n.name == o.name && n.storage))`
	exprState          = `object.spec.versions.map(v, v.name + (v.served ? '+' : '-') + (v.storage ? '*' : '')).join(',')`
	exprStamp          = `has(object.metadata.annotations) && '` + StampAnnotation + `' in object.metadata.annotations ? object.metadata.annotations['` + StampAnnotation + `'] : ''`
	exprBreakGlass     = `has(object.metadata.annotations) && '` + BreakGlassAnnotation + `' in object.metadata.annotations && object.metadata.annotations['` + BreakGlassAnnotation + `'] != ''`
	exprAllowed        = `(size(variables.removed) == 0 && size(variables.unserved) == 0 && !variables.storageMoved) || variables.stamp == string(oldObject.metadata.generation) + ':' + variables.state || variables.breakGlass`
	exprMessage        = `'refused by the kubectl crdversion guard of ' + object.metadata.name + ': this update ' + (size(variables.removed) > 0 ? 'removes ' + variables.removed.join(',') + ' from spec.versions ' : '') + (size(variables.unserved) > 0 ? 'unserves ' + variables.unserved.join(',') + ' ' : '') + (variables.storageMoved ? 'moves the storage version ' : '') + 'without the preflight of kubectl crdversion (unserve, promote-storage, retire); run the step with it, or set the annotation ` + BreakGlassAnnotation + `=REASON to let it through'`
	policyFailureClose = admissionregistrationv1.Fail
)

// Policy returns the ValidatingAdmissionPolicy and binding that guard the
// CRD crdName: they match UPDATE of that CRD only (not its status), and
// deny the update when it removes, unserves or moves the storage version
// without a matching stamp or break-glass annotation. The policy fails
// closed (a CEL error refuses the update).
func Policy(crdName string) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	name := Name(crdName)
	failure := policyFailureClose
	labels := map[string]string{"app.kubernetes.io/managed-by": "kubectl-crdversion", "crdversion.kubectl.io/crd": crdName}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &failure,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					ResourceNames: []string{crdName},
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
						Rule: admissionregistrationv1.Rule{APIGroups: []string{apiextensionsv1.GroupName}, APIVersions: []string{"v1"},
							Resources: []string{"customresourcedefinitions"}},
					},
				}},
			},
			Variables: []admissionregistrationv1.Variable{
				{Name: "removed", Expression: exprRemoved},
				{Name: "unserved", Expression: exprUnserved},
				{Name: "storageMoved", Expression: exprStorageMoved},
				{Name: "state", Expression: exprState},
				{Name: "stamp", Expression: exprStamp},
				{Name: "breakGlass", Expression: exprBreakGlass},
			},
			Validations: []admissionregistrationv1.Validation{{Expression: exprAllowed, MessageExpression: exprMessage, Reason: ptrReason(metav1.StatusReasonForbidden)}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return policy, binding
}

func ptrReason(r metav1.StatusReason) *metav1.StatusReason { return &r }
