package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// TestCompletion asks the plugin binary's cobra __complete command, as a
// shell would, for CRD names and a CRD's versions from the live API server;
// then asks the real kubectl, which finds the shipped
// kubectl_complete-crdversion script on PATH and relays its answer.
func TestCompletion(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := advance(t, c, "completion.example.com", apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS1)
	env := []string{"KUBECONFIG=" + srv.Kubeconfig}
	// Cobra prints one candidate a line ("value\tdescription"), then
	// ":DIRECTIVE"; 4 is ShellCompDirectiveNoFileComp.
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"status", "crontabs.completion."}, crd.Name + "\tCronTab\n:4\n"},
		{[]string{"migrate", "crontabs.completion.example.com.nosuch"}, ":4\n"},
		// Versions in kubectl's priority order, with their state.
		{[]string{"unserve", crd.Name, ""}, "v2\tserved\nv1\tstorage, served, in storedVersions\n:4\n"},
		{[]string{"promote-storage", "ct.completion.example.com", "v"}, "v2\tserved\nv1\tstorage, served, in storedVersions\n:4\n"},
		{[]string{"deprecate", crd.Name, "v1", ""}, ":4\n"},
		{[]string{"serve", "nosuch.example.com", ""}, ":4\n"},
		// add-version's second argument is new: nothing to offer; its --from is a version.
		{[]string{"add-version", crd.Name, ""}, ":4\n"},
		{[]string{"add-version", crd.Name, "v3", "--from", "v1"}, "v1\tstorage, served, in storedVersions\n:4\n"},
	}
	for _, tc := range cases {
		r := binary(t, env, append([]string{"__complete"}, tc.args...)...)
		if r.code != 0 || r.stdout != tc.want {
			t.Errorf("__complete %q: exit %d, stdout %q, want %q\n%s", tc.args, r.code, r.stdout, tc.want, r.stderr)
		}
	}

	// A cluster that cannot be reached completes nothing, without an error.
	r := binary(t, []string{"KUBECONFIG=" + filepath.Join(t.TempDir(), "none")}, "__complete", "status", "--server", "https://127.0.0.1:1", "")
	if r.code != 0 || r.stdout != ":4\n" {
		t.Errorf("unreachable cluster: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}

	kubectl := kubectlPath()
	if kubectl == "" {
		missingPrerequisite(t, "no kubectl binary on this machine: completion through kubectl not tested")
	}
	scripts := t.TempDir()
	script, err := os.ReadFile(filepath.Join(repoRoot, "cmd", "kubectl-crdversion", "kubectl_complete-crdversion"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(scripts, "kubectl_complete-crdversion"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	path := "PATH=" + strings.Join([]string{pluginDir, scripts, os.Getenv("PATH")}, string(os.PathListSeparator))
	r = execute(t, kubectl, append(env, path), "__complete", "crdversion", "unserve", crd.Name, "")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "v2\tserved\nv1\tstorage, served, in storedVersions\n:4\n") {
		t.Errorf("kubectl __complete crdversion unserve: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
}
