package e2e

import (
	"context"
	"maps"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// bindUser gives user a ClusterRole with rules, removed when the test ends.
func bindUser(t *testing.T, c clients, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "test-" + user}, Rules: rules}
	if _, err := c.kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "test-" + user},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}
	if _, err := c.kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		_ = c.kube.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	waitAllowed(t, c, "the binding of "+role.Name, authorizationv1.SubjectAccessReviewSpec{User: user}, rules[0])
}

// waitAllowed waits until the API server's authorizer allows who (a
// SubjectAccessReview's user and groups) the first verb on the first
// resource of rule: RBAC authorizes from informer caches, so a role and
// binding just created take effect a moment later — and as a whole, so one
// rule answers for the role.
func waitAllowed(t testing.TB, c clients, what string, who authorizationv1.SubjectAccessReviewSpec, rule rbacv1.PolicyRule) {
	t.Helper()
	who.ResourceAttributes = &authorizationv1.ResourceAttributes{Group: rule.APIGroups[0], Resource: rule.Resources[0], Verb: rule.Verbs[0]}
	review := &authorizationv1.SubjectAccessReview{Spec: who}
	waitFor(t, what+" to take effect", func() (bool, error) {
		got, err := c.kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), review, metav1.CreateOptions{})
		return err == nil && got.Status.Allowed, err
	})
}

// objectVersions are the resourceVersions of every object, by name.
func objectVersions(t *testing.T, c clients, crd *apiextensionsv1.CustomResourceDefinition, version string) map[string]string {
	t.Helper()
	list, err := c.dyn.Resource(gvr(crd, version)).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, o := range list.Items {
		out[o.GetNamespace()+"/"+o.GetName()] = o.GetResourceVersion()
	}
	return out
}

// TestFaultPermissionPreflight: a user missing one permission a command needs is
// refused before anything is written, and the refusal names it.
func TestFaultPermissionPreflight(t *testing.T) {
	c := newClients(t)
	crdRead := rbacv1.PolicyRule{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list"}}
	crdWrite := rbacv1.PolicyRule{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "update"}}
	metrics := rbacv1.PolicyRule{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}
	objects := func(verbs ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{"perm.example.com"}, Resources: []string{"crontabs"}, Verbs: verbs}
	}
	bindUser(t, c, "perm-reader", crdRead, objects("list"))
	bindUser(t, c, "perm-no-status", crdWrite, objects("list", "get", "patch"))
	bindUser(t, c, "perm-no-patch", crdWrite, objects("list", "get"), metrics)

	crd := advance(t, c, "perm.example.com", apiextensionsv1.NamespaceScoped, 4, lifecycle.StateS2)
	name := crd.Name
	before := objectVersions(t, c, crd, "v2")

	refused(t, c, name, []string{"refusing to deprecate " + name + ", nothing was changed: missing 1 permission(s)", "Missing permission(s) to deprecate " + name + ":\n  - update customresourcedefinitions.apiextensions.k8s.io"}, "deprecate", name, "v1", "--as", "perm-reader")
	refused(t, c, name, []string{"refusing to migrate", "update customresourcedefinitions/status.apiextensions.k8s.io"}, "migrate", name, "--as", "perm-no-status")
	if after := objectVersions(t, c, crd, "v2"); !maps.Equal(before, after) {
		t.Error("migrate rewrote objects before finding that it could not trim storedVersions")
	}
	// The server engine needs to create and follow a StorageVersionMigration.
	refused(t, c, name, []string{"refusing to migrate", "create storageversionmigrations.storagemigration.k8s.io", "watch storageversionmigrations.storagemigration.k8s.io"},
		"migrate", name, "--engine=server", "--as", "perm-no-status")
	if got := svmsFor(t, c, crd); len(got) != 0 {
		t.Errorf("the refused server engine created %v", got)
	}
	// With --no-trim the status subresource is not needed.
	mustRun(t, "migrate", name, "--no-trim", "--as", "perm-no-status")
	if getCRD(t, c, name).Status.StoredVersions[0] != "v1" {
		t.Error("migrate --no-trim trimmed")
	}
	setStoredVersions(t, c, name, "v2")

	// retire needs patch on the objects to clean their managedFields (and
	// to prove, with --migrate, that none is stored at v1: storedVersions
	// was trimmed by hand above): the refusal comes before v1 is unserved.
	refused(t, c, name, []string{"refusing to retire v1 of", "patch crontabs.perm.example.com (to rewrite"},
		"retire", name, "v1", "--migrate", "--skip-usage-check", "--clean-managed-fields", "--as", "perm-no-patch")
	if v := lifecycle.FindVersion(getCRD(t, c, name), "v1"); v == nil || !v.Served {
		t.Error("v1 was unserved before the refusal")
	}
	// Without /metrics the usage check is unknown: retire is blocked, and
	// says how to go on.
	r := refused(t, c, name, []string{"stopped at step 1", "is unknown"}, "retire", name, "v1", "--usage-window=0", "--usage-history=0", "--as", "perm-no-status")
	if !strings.Contains(r.stdout, "way out: ") || !strings.Contains(r.stdout, "--skip-usage-check") {
		t.Errorf("retire does not name the ways out:\n%s", r.stdout)
	}
}
