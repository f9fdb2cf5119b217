package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// kubectlPath is the real kubectl, or "" when this machine has none.
func kubectlPath() string {
	if p, err := exec.LookPath("kubectl"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/kubectl"); err == nil {
		return "/usr/bin/kubectl"
	}
	return ""
}

// TestThroughKubectl runs `kubectl crdversion status` through the real
// kubectl's plugin discovery, with the plugin binary on PATH.
func TestThroughKubectl(t *testing.T) {
	t.Parallel()
	kubectl := kubectlPath()
	if kubectl == "" {
		missingPrerequisite(t, "no kubectl binary on this machine; the plugin binary is tested directly elsewhere")
	}
	c := newClients(t)
	crd := advance(t, c, "kubectl.example.com", apiextensionsv1.NamespaceScoped, 2, lifecycle.StateS1)
	env := []string{"PATH=" + pluginDir + string(os.PathListSeparator) + os.Getenv("PATH"), "KUBECONFIG=" + srv.Kubeconfig}

	list := execute(t, kubectl, env, "plugin", "list", "--name-only")
	if !strings.Contains(list.stdout, "kubectl-crdversion") {
		t.Fatalf("kubectl plugin list does not show the plugin:\n%s%s", list.stdout, list.stderr)
	}

	r := execute(t, kubectl, env, "crdversion", "status", crd.Name, "-o", "json")
	if r.code != 0 {
		t.Fatalf("kubectl crdversion status: exit %d\n%s", r.code, r.stderr)
	}
	var s report.Status
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("decoding: %v\n%s", err, r.stdout)
	}
	if s.State != lifecycle.StateS1 || s.CRD.Name != crd.Name || s.Objects.Count != 2 {
		t.Errorf("got state %s for %s with %+v objects, want S1 for %s with 2", s.State, s.CRD.Name, s.Objects, crd.Name)
	}

	help := execute(t, kubectl, env, "crdversion", "status", "--help")
	if !strings.Contains(help.stdout, "kubectl crdversion status CRD") {
		t.Errorf("help does not show the kubectl usage line:\n%s", help.stdout)
	}

	bad := execute(t, kubectl, env, "crdversion", "status", "nosuch.example.com")
	if bad.code != 2 || !strings.HasPrefix(bad.stderr, "error: ") {
		t.Errorf("unknown CRD through kubectl: exit %d, stderr %q; want 2 (status failed, as kubectl diff exits) and an error line", bad.code, bad.stderr)
	}
}
