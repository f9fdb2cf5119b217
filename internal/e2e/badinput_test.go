package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// TestBadInput runs the plugin binary with bad input: each run must print
// one line on stderr in kubectl's style, nothing on stdout, exit 1, and
// leave the cluster unchanged.
func TestBadInput(t *testing.T) {
	c := newClients(t)
	crd := advance(t, c, "badinput.example.com", apiextensionsv1.NamespaceScoped, 1, lifecycle.StateS2)

	dir := t.TempDir()
	broken := filepath.Join(dir, "broken-kubeconfig")
	if err := os.WriteFile(broken, []byte("apiVersion: v1\nclusters: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	unreachable := filepath.Join(dir, "unreachable-kubeconfig")
	if err := os.WriteFile(unreachable, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	good := []string{"--kubeconfig", srv.Kubeconfig, "--cache-dir", filepath.Join(dir, "cache")}
	cases := []struct {
		name string
		args []string
		want string // a substring of the one line on stderr
	}{
		{"unknown CRD name", append([]string{"status", "nosuch.example.com"}, good...), `error: no CustomResourceDefinition matches "nosuch.example.com"`},
		{"unknown resource", append([]string{"status", "nosuchthings"}, good...), `error: no CustomResourceDefinition matches "nosuchthings"`},
		{"built-in resource", append([]string{"status", "pods"}, good...), `error: "pods" is the resource pods in API group "core", which is not defined by a CustomResourceDefinition`},
		{"built-in kind with group", append([]string{"status", "deployments.apps"}, good...), `"deployments.apps" is the resource deployments in API group "apps"`},
		{"unreachable server by name", []string{"status", crd.Name, "--kubeconfig", unreachable}, "127.0.0.1:1"},
		{"unreachable server by short name", []string{"status", "ct", "--kubeconfig", unreachable}, "127.0.0.1:1"},
		{"broken kubeconfig", []string{"status", crd.Name, "--kubeconfig", broken}, "error: "},
		{"missing kubeconfig", []string{"status", crd.Name, "--kubeconfig", filepath.Join(dir, "absent")}, "error: "},
		{"bad output format", append([]string{"status", crd.Name, "-o", "table"}, good...), `error: unable to match a printer suitable for the output format "table"`},
		{"bad chunk size", append([]string{"status", crd.Name, "--chunk-size", "0"}, good...), "error: --chunk-size must be positive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := binary(t, nil, tc.args...)
			if r.code != 1 {
				t.Errorf("exit code %d, want 1", r.code)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
			lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Errorf("stderr = %q, want one line containing %q", r.stderr, tc.want)
			}
		})
	}
	after, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != crd.ResourceVersion {
		t.Errorf("the CRD changed: resourceVersion %s -> %s", crd.ResourceVersion, after.ResourceVersion)
	}
}
