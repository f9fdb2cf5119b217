package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestManifestMode edits a CRD manifest file with the live cluster's state
// for the preflight, then with no cluster at all.
func TestManifestMode(t *testing.T) {
	c := newClients(t)
	installTestdata(t, c, "crds/gateway-api/v0.6.2/referencegrants.nodesc.yaml", "crds/gateway-api/v0.6.2/examples/v1alpha2_reference-grant.yaml")
	const name = "referencegrants.gateway.networking.k8s.io"
	original, err := os.ReadFile(filepath.Join(repoRoot, "testdata/crds/gateway-api/v0.6.2/referencegrants.nodesc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "crds.yaml")
	writeFile(t, file, "# rendered by the release\n"+string(original)+"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n")
	fp := fingerprint(t, c, name)

	r := mustRun(t, "promote-storage", name, "v1beta1", "-f", file)
	if !strings.Contains(r.stderr, "all 1 object(s) read at v1alpha2 and at v1beta1") {
		t.Errorf("the preflight did not use the live objects:\n%s", r.stderr)
	}
	if strings.Count(r.stdout, "storage: true") != 1 || !strings.Contains(r.stdout, "kind: ConfigMap") || !strings.HasPrefix(r.stdout, "# rendered by the release\n") {
		t.Errorf("printed file:\n%s", r.stdout)
	}
	if fingerprint(t, c, name) != fp {
		t.Error("manifest mode wrote the live CRD")
	}

	mustRun(t, "promote-storage", name, "v1beta1", "-f", file, "--in-place")
	data, _ := os.ReadFile(file)
	if string(data) != r.stdout {
		t.Error("--in-place wrote something else than the printed file")
	}
	again := mustRun(t, "promote-storage", name, "v1beta1", "-f", file, "--in-place")
	if !strings.Contains(again.stderr, "already the storage version") {
		t.Errorf("second run: %s", again.stderr)
	}

	// No cluster: live checks are listed as skipped, the edit is made.
	noCluster := filepath.Join(t.TempDir(), "kubeconfig")
	writeFile(t, noCluster, "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\nusers: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n")
	off := binary(t, nil, "deprecate", name, "v1alpha2", "-f", file, "--kubeconfig", noCluster)
	if off.code != 0 || !strings.Contains(off.stderr, "SKIP  checks of live state") || !strings.Contains(off.stdout, "deprecated: true") {
		t.Errorf("without a cluster: exit %d\nstderr:\n%s", off.code, off.stderr)
	}

	// A refusal leaves the file alone.
	before, _ := os.ReadFile(file)
	bad := plugin(t, "unserve", name, "v1beta1", "-f", file, "--in-place")
	after, _ := os.ReadFile(file)
	if bad.err == nil || !strings.Contains(bad.stderr, "v1beta1 is the storage version") || string(before) != string(after) {
		t.Errorf("unserving the storage version in a file: %v\n%s", bad.err, bad.stderr)
	}
}
