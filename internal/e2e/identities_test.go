package e2e

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/crdversion/kubectl-crdversion/internal/e2e/apiserver"
)

// identityKubeconfig writes a kubeconfig of the test server as id and
// returns its path.
func identityKubeconfig(t testing.TB, id apiserver.Identity) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), id.Key+".kubeconfig")
	if err := srv.WriteKubeconfigAs(path, id); err != nil {
		t.Fatal(err)
	}
	return path
}

// bindIdentity creates role as a ClusterRole named name (replacing one of
// that name) and binds it to id (a User subject, or the ServiceAccount
// subject for apiserver.ServiceAccount), and waits until the authorizer
// allows role's first rule to id. Admin needs no binding.
func bindIdentity(t testing.TB, c clients, name string, rules []rbacv1.PolicyRule, id apiserver.Identity) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	subject := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: id.User}
	if id.Key == apiserver.ServiceAccount.Key {
		subject = rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: apiserver.ServiceAccountName, Namespace: apiserver.ServiceAccountNamespace}
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{subject},
	}
	_ = c.kube.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
	_ = c.kube.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
	if _, err := c.kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = c.kube.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	waitAllowed(t, c, "the binding of "+name, authorizationv1.SubjectAccessReviewSpec{User: id.User, Groups: append([]string{"system:authenticated"}, id.Groups...)}, rules[0])
}

// landing is where APF put one request of a client: the names of the flow
// schema and priority level its response headers name.
type landing struct{ flowSchema, priorityLevel string }

// headerRecorder keeps the APF headers of the last response.
type headerRecorder struct {
	next   http.RoundTripper
	fs, pl string
}

func (h *headerRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := h.next.RoundTrip(req)
	if resp != nil {
		h.fs = resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID)
		h.pl = resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)
	}
	return resp, err
}

// whereLands sends one request as id (a GET of the namespace default,
// allowed or not: APF classifies a request before it is authorized) and
// names the flow schema and priority level its response headers give, by
// uid, from the flowschemas and prioritylevelconfigurations read as admin.
func whereLands(t testing.TB, c clients, id apiserver.Identity) landing {
	t.Helper()
	cfg := srv.ConfigAs(id)
	rec := &headerRecorder{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec })
	client := kubernetes.NewForConfigOrDie(cfg)
	_, err := client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
	if err != nil && !apierrors.IsForbidden(err) {
		t.Fatalf("as %s: %v", id.Key, err)
	}
	if rec.fs == "" || rec.pl == "" {
		t.Fatalf("as %s: the response has no APF headers (flow schema %q, priority level %q)", id.Key, rec.fs, rec.pl)
	}
	var out landing
	schemas, err := c.kube.FlowcontrolV1().FlowSchemas().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fs := range schemas.Items {
		if string(fs.UID) == rec.fs {
			out.flowSchema = fs.Name
		}
	}
	levels, err := c.kube.FlowcontrolV1().PriorityLevelConfigurations().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pl := range levels.Items {
		if string(pl.UID) == rec.pl {
			out.priorityLevel = pl.Name
		}
	}
	return out
}

// TestIdentitiesLandWhereExpected: the harness's static-token identities
// authenticate, and API Priority and Fairness classifies them as the
// benchmarks assume: admin (system:masters) exempt, the plain users in
// global-default, the ServiceAccount in service-accounts / workload-low.
func TestIdentitiesLandWhereExpected(t *testing.T) {
	slowTier(t, "the benchmarks' identities")
	c := newClients(t)
	want := map[string]landing{
		apiserver.Admin.Key:          {"exempt", "exempt"},
		apiserver.User.Key:           {"global-default", "global-default"},
		apiserver.ServiceAccount.Key: {"service-accounts", "workload-low"},
		apiserver.Probe.Key:          {"global-default", "global-default"},
	}
	for _, id := range apiserver.Identities {
		if got := whereLands(t, c, id); got != want[id.Key] {
			t.Errorf("%s (%s, groups %s) lands in flow schema %s, priority level %s; want %s, %s",
				id.Key, id.User, strings.Join(id.Groups, ","), got.flowSchema, got.priorityLevel, want[id.Key].flowSchema, want[id.Key].priorityLevel)
		}
	}
}
