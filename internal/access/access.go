// Package access lists the permissions a command needs before it writes,
// so that a user missing one is refused up front, with nothing half done.
// The lists follow docs/rbac.md; the cluster layer asks the API server
// about each with a SelfSubjectAccessReview.
package access

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// Need is one permission: a verb on a resource (group, resource,
// subresource; in Namespace, or in all namespaces when it is empty) or on
// a non-resource URL, and why.
type Need struct {
	Verb        string `json:"verb"`
	Group       string `json:"group,omitempty"`
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	URL         string `json:"url,omitempty"`
	Why         string `json:"why"`
}

func (n Need) String() string {
	if n.URL != "" {
		return fmt.Sprintf("%s %s (%s)", n.Verb, n.URL, n.Why)
	}
	r := n.Resource
	if n.Subresource != "" {
		r += "/" + n.Subresource
	}
	if n.Group != "" {
		r += "." + n.Group
	}
	if n.Namespace != "" {
		r += " in " + n.Namespace
	}
	return fmt.Sprintf("%s %s (%s)", n.Verb, r, n.Why)
}

const crdGroup = "apiextensions.k8s.io"

// EditCRD is what a spec.versions edit needs.
func EditCRD() []Need {
	return []Need{{Verb: "update", Group: crdGroup, Resource: "customresourcedefinitions", Why: "to write the CRD"}}
}

// RecordStoredVersions is what adding a version to the CRD's
// status.storedVersions needs (see edit.Result.RecordStored).
func RecordStoredVersions() []Need {
	return []Need{{Verb: "update", Group: crdGroup, Resource: "customresourcedefinitions", Subresource: "status", Why: "to list the restored version in status.storedVersions again"}}
}

// Migrate is what migrate needs on crd: list and patch its objects, and,
// unless trim is false, update the CRD's status (storedVersions).
func Migrate(crd *apiextensionsv1.CustomResourceDefinition, trim bool) []Need {
	out := []Need{
		{Verb: "list", Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural, Why: "to list the objects"},
		{Verb: "patch", Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural, Why: "to rewrite the objects"},
	}
	if trim {
		out = append(out, Need{Verb: "update", Group: crdGroup, Resource: "customresourcedefinitions", Subresource: "status", Why: "to trim status.storedVersions"})
	}
	return out
}

// OwnPriorityLevel is what migrate --own-priority-level needs besides
// migrate's own: create and delete a FlowSchema and a
// PriorityLevelConfiguration (flowcontrol.apiserver.k8s.io), the run's own
// priority level. The SelfSubjectReview that names the identity needs
// nothing: every authenticated user may create one.
func OwnPriorityLevel() []Need {
	const group = "flowcontrol.apiserver.k8s.io"
	var out []Need
	for _, r := range []string{"flowschemas", "prioritylevelconfigurations"} {
		for _, v := range []string{"create", "delete"} {
			out = append(out, Need{Verb: v, Group: group, Resource: r, Why: "to " + v + " the run's own priority level (--own-priority-level)"})
		}
	}
	return out
}

// MigrateValidity is what migrate's loss measurement needs besides
// migrate's own when it also checks each object as new at the storage
// version (loss.ChecksValidity): create on crd's resource, for
// server-side dry runs only.
func MigrateValidity(crd *apiextensionsv1.CustomResourceDefinition) []Need {
	return []Need{{Verb: "create", Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural,
		Why: "to dry-run each object as new at the storage version (the schemas differ or a webhook converts): nothing is created"}}
}

// MigrateServer is what migrate --engine=server needs on crd: list its
// objects (to count them), with measure patch them (the loss measurement's
// server-side dry runs, loss.Measure), create a StorageVersionMigration and
// follow it (get, list and watch), and, unless trim is false, update the
// CRD's status (storedVersions) should the controller not trim it. The
// controller's own permissions are the kube-controller-manager's.
func MigrateServer(crd *apiextensionsv1.CustomResourceDefinition, trim, measure bool) []Need {
	const group, resource = "storagemigration.k8s.io", "storageversionmigrations"
	out := []Need{{Verb: "list", Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural, Why: "to count the objects"}}
	if measure {
		out = append(out, Need{Verb: "patch", Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural,
			Why: "to measure what the rewrite loses: server-side dry runs, nothing written; --allow-pruning does without"})
	}
	out = append(out, Need{Verb: "create", Group: group, Resource: resource, Why: "to create the StorageVersionMigration"})
	for _, verb := range []string{"get", "list", "watch"} {
		out = append(out, Need{Verb: verb, Group: group, Resource: resource, Why: "to follow the StorageVersionMigration"})
	}
	if trim {
		out = append(out, Need{Verb: "update", Group: crdGroup, Resource: "customresourcedefinitions", Subresource: "status", Why: "to trim status.storedVersions"})
	}
	return out
}

// Metrics is what the client-usage check needs to read every API server
// instance's /metrics.
func Metrics() []Need {
	return []Need{{Verb: "get", URL: "/metrics", Why: "to check the API server's metrics for clients of the version (--skip-usage-check to do without)"}}
}

// Instances is what the client-usage check needs to find the API server
// instances: their identity leases in kube-system and the kubernetes
// Service's EndpointSlices in default (docs/usage.md). Without either the
// instances are not known, and the check cannot pass.
func Instances() []Need {
	return []Need{
		{Verb: "list", Group: "coordination.k8s.io", Resource: "leases", Namespace: "kube-system", Why: "to find the API server instances from their identity leases (--skip-usage-check to do without)"},
		{Verb: "list", Group: "discovery.k8s.io", Resource: "endpointslices", Namespace: "default", Why: "to find the API server instances' addresses, the kubernetes Service's endpoints (--skip-usage-check to do without)"},
	}
}

// ManagedFieldsSource is what the client-usage check's managedFields
// source needs on crd: the list of its objects (metadata), whose
// managedFields name the writers of each version.
func ManagedFieldsSource(crd *apiextensionsv1.CustomResourceDefinition) []Need {
	return []Need{{Verb: "list", Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural, Why: "to read the objects' managedFields for writers through the version (--skip-usage-check to do without)"}}
}

// CleanManagedFields is what the managedFields clean-up needs on crd.
func CleanManagedFields(crd *apiextensionsv1.CustomResourceDefinition) []Need {
	return []Need{
		{Verb: "get", Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural, Why: "to read managedFields"},
		{Verb: "patch", Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural, Why: "to rewrite managedFields"},
	}
}

// MissingError is returned when permissions are missing: a refusal whose
// error line counts them and whose details list them.
type MissingError struct {
	Operation, CRD string
	Missing        []Need
}

func (e *MissingError) Error() string { return e.Refusal().Error() }

// Unwrap returns the refusal (errors.As finds a *lifecycle.RefusalError).
func (e *MissingError) Unwrap() error { return e.Refusal() }

// Refusal is e as a refusal: the missing permissions are its details.
func (e *MissingError) Refusal() *lifecycle.RefusalError {
	parts := make([]string, len(e.Missing))
	for i, n := range e.Missing {
		parts[i] = n.String()
	}
	return &lifecycle.RefusalError{Operation: e.Operation, CRD: e.CRD,
		Reason:       fmt.Sprintf("missing %d permission(s)", len(e.Missing)),
		WayOut:       "grant them, or run as a user who has them",
		DetailsTitle: fmt.Sprintf("Missing permission(s) to %s %s", e.Operation, e.CRD),
		Details:      parts}
}

// Dedup drops repeated needs (same verb and target), keeping the first.
func Dedup(needs []Need) []Need {
	seen := map[string]bool{}
	var out []Need
	for _, n := range needs {
		k := strings.Join([]string{n.Verb, n.Group, n.Resource, n.Subresource, n.Namespace, n.URL}, "|")
		if !seen[k] {
			seen[k] = true
			out = append(out, n)
		}
	}
	return out
}

// PromoteStorage is what promote-storage needs on crd: list its objects
// (read at the current and the new storage version), get them (an object
// past --sample, or one the dry run refused, is read at the new version),
// patch them (the server-side dry run of migrate's no-op update through the
// new version; a dry run is authorized as the write it stands for), create
// them (the dry run of each as a new object) and,
// when write, update the CRD.
func PromoteStorage(crd *apiextensionsv1.CustomResourceDefinition, write bool) []Need {
	out := []Need{
		{Verb: "list", Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural, Why: "to read the objects at both versions"},
		{Verb: "get", Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural, Why: "to read objects at the new version"},
		{Verb: "patch", Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural, Why: "to dry-run migrate's no-op update of each object through the new version"},
		{Verb: "create", Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural, Why: "to dry-run each object as a new object at the new version"},
	}
	if write {
		out = append(out, EditCRD()...)
	}
	return out
}
