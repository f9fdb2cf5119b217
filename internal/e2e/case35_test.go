package e2e

import (
	"context"
	"os"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// TestCase35CachedDiscoveryAfterUnserve (case 35, the version variant):
// kubectl 1.32 with a warm discovery cache lists crontabs at v1. unserve
// returns only once v1 is out of the API server's discovery (a client that
// asks afresh no longer finds it) and says that cached clients keep
// calling it, with the refresh for the cache it used. The warm kubectl
// then gets 404 from the old path, as in the case; after the printed
// kubectl api-resources, pasted, the same kubectl knows that the resource
// type is gone at v1.
func TestCase35CachedDiscoveryAfterUnserve(t *testing.T) {
	t.Parallel()
	kubectl := kubectlPath()
	if kubectl == "" {
		missingPrerequisite(t, "no kubectl binary on this machine: the case is about kubectl's discovery cache")
	}
	c := newClients(t)
	crd := advance(t, c, "cacheddiscovery.example.com", apiextensionsv1.NamespaceScoped, 1, lifecycle.StateS4)
	env := []string{"KUBECONFIG=" + srv.Kubeconfig, "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	cache := t.TempDir()
	old := "crontabs.v1." + crd.Spec.Group
	if r := execute(t, kubectl, env, "--cache-dir", cache, "get", old, "-A", "-o", "name"); r.code != 0 || !strings.Contains(r.stdout, "crontab-0") {
		t.Fatalf("warming kubectl's cache: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// The plugin shares kubectl's cache directory, so that the command
	// it prints refreshes the cache that is stale.
	r := mustRun(t, "unserve", crd.Name, "v1", "--skip-usage-check", "--cache-dir", cache)
	gv := crd.Spec.Group + "/v1"
	note := "Unserved: " + gv + " is out of discovery. Clients that cached discovery keep calling it (404) until they refresh: run "
	_, rest, found := strings.Cut(r.stdout, note)
	printed, _, _ := strings.Cut(rest, " to refresh kubectl's cache")
	if !found || printed != "kubectl --cache-dir "+cache+" api-resources" {
		t.Fatalf("unserve does not say what cached clients do, with the cache it used (%q):\n%s", printed, r.stdout)
	}
	// unserve waited: discovery, asked afresh, no longer has v1.
	if _, err := c.kube.Discovery().ServerResourcesForGroupVersion(gv); !apierrors.IsNotFound(err) {
		t.Errorf("discovery of %s right after unserve: %v, want 404", gv, err)
	}
	if _, err := resource(c, crd, "v2", "team-a").List(context.Background(), metav1.ListOptions{Limit: 1}); err != nil {
		t.Fatalf("the objects are no longer readable at v2: %v", err)
	}

	stale := execute(t, kubectl, env, "--cache-dir", cache, "get", old, "-A", "-o", "name")
	if stale.code == 0 || !strings.Contains(stale.stderr, "the server could not find the requested resource") {
		t.Errorf("kubectl with the warm cache: exit %d, want the 404 of the old path\n%s%s", stale.code, stale.stdout, stale.stderr)
	}
	if refresh := execute(t, kubectl, env, strings.Fields(printed)[1:]...); refresh.code != 0 {
		t.Fatalf("kubectl api-resources: exit %d\n%s", refresh.code, refresh.stderr)
	}
	fresh := execute(t, kubectl, env, "--cache-dir", cache, "get", old, "-A", "-o", "name")
	if fresh.code == 0 || !strings.Contains(fresh.stderr, `the server doesn't have a resource type "crontabs"`) {
		t.Errorf("kubectl after api-resources: exit %d, want the resource type gone\n%s%s", fresh.code, fresh.stdout, fresh.stderr)
	}
}
