package e2e

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/crdversion/kubectl-crdversion/internal/e2e/apiserver"
	"github.com/crdversion/kubectl-crdversion/internal/fleet"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/reach"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

func clientsFor(cfg *rest.Config) clients {
	return clients{
		ext:  apiextensionsclient.NewForConfigOrDie(cfg),
		dyn:  dynamic.NewForConfigOrDie(cfg),
		kube: kubernetes.NewForConfigOrDie(cfg),
	}
}

// fleetKubeconfig writes a kubeconfig with one context per config.
func fleetKubeconfig(t *testing.T, contexts map[string]*rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	for name, cfg := range contexts {
		kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, TLSServerName: cfg.ServerName, InsecureSkipTLSVerify: cfg.Insecure}
		kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
		kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	path := filepath.Join(t.TempDir(), "fleet-kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// blackHole accepts connections and never answers: a cluster that times out.
func blackHole(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { l.Close() })
	return "https://" + l.Addr().String()
}

// TestFleet runs status and retire against three clusters at once: the test
// package's API server with a migration pending (S2), a second API server
// (in a process of its own) where the CRD is migrated (S3), and a server
// that never answers.
func TestFleet(t *testing.T) {
	slowTier(t, "a second API server in its own process")
	t.Parallel()
	second := ownServer(t, apiserver.Options{})

	pendingC, migratedC := newClients(t), clientsFor(second.Config)
	const group = "fleet.example.com"
	pending := advance(t, pendingC, group, apiextensionsv1.NamespaceScoped, 3, lifecycle.StateS2)
	advance(t, migratedC, group, apiextensionsv1.NamespaceScoped, 3, lifecycle.StateS3)
	name := pending.Name
	down := rest.CopyConfig(srv.Config)
	down.Host, down.CAData, down.Insecure = blackHole(t), nil, true
	kubeconfig := fleetKubeconfig(t, map[string]*rest.Config{"pending": srv.Config, "migrated": second.Config, "down": down})
	// The cluster that never answers is given 10s in status and
	// check-upgrade and 20s in retire and doctor, which read more (metrics,
	// objects, webhooks) and took longer than 4s for a reachable cluster
	// on a loaded machine (a read answered 429 right after a CRD edit is
	// retried a second later).
	run := func(args ...string) result {
		timeout := "10s"
		if args[0] == "retire" || args[0] == "doctor" {
			timeout = "20s"
		}
		return binary(t, nil, append(args, "--kubeconfig", kubeconfig, "--cluster-timeout", timeout)...)
	}

	// status: one table and the verdict on v1. A cluster could not be
	// read, so the whole report is printed and the exit code is 1, as in
	// doctor's fleet run (issue 33); the others have no error-level
	// finding (below).
	r := run("status", name, "--all-contexts", "-o", "json")
	var fs report.FleetStatus
	if r.code != 1 || json.Unmarshal([]byte(r.stdout), &fs) != nil {
		t.Fatalf("fleet status with an unreachable cluster: exit %d, want 1 after the report\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if len(fs.Clusters) != 3 || len(fs.Verdicts) != 1 {
		t.Fatalf("clusters %d, verdicts %+v", len(fs.Clusters), fs.Verdicts)
	}
	byContext := map[string]fleet.Cluster{}
	var slowest, sum float64
	for _, c := range fs.Clusters {
		byContext[c.Context] = c
		slowest, sum = max(slowest, c.Seconds), sum+c.Seconds
	}
	if c := byContext["down"]; c.Reach != reach.Unreachable {
		t.Errorf("down: %+v", c)
	}
	if c := byContext["pending"]; c.State != lifecycle.StateS2 || c.Objects == nil || *c.Objects != 3 || len(c.Blocking) > 0 {
		t.Errorf("pending: %+v", c)
	}
	if c := byContext["migrated"]; c.State != lifecycle.StateS3 || strings.Join(c.StoredVersions, ",") != "v2" || len(c.Blocking) > 0 {
		t.Errorf("migrated: %+v", c)
	}
	v := fs.Verdicts[0]
	if v.Version != "v1" || v.Answer != fleet.No || len(v.Blockers) != 2 {
		t.Fatalf("verdict %+v", v)
	}
	var pendingRun string
	for _, b := range v.Blockers {
		switch b.Context {
		case "pending":
			// The connection flags typed are repeated, after the plugin
			// name: kubectl refuses flags before it.
			pendingRun = b.Command
			if b.Answer != fleet.No || b.Command != "kubectl crdversion --kubeconfig "+kubeconfig+" --context pending migrate "+name {
				t.Errorf("pending blocker %+v", b)
			}
		case "down":
			if b.Answer != fleet.Unknown {
				t.Errorf("down blocker %+v", b)
			}
		default:
			t.Errorf("unexpected blocker %+v", b)
		}
	}
	t.Logf("fleet status: whole run %.1fs; slowest cluster %.1fs; sum of clusters %.1fs", fs.Seconds, slowest, sum)

	// Once pending is migrated, the only blocker left is the unreachable
	// cluster: the verdict is unknown, never yes, and the exit code 1.
	human := run("status", name, "--contexts", "migrated,down", "--version", "v1")
	if human.code != 1 || !strings.Contains(human.stdout, "v1 can leave the manifest of "+name+": unknown") || !strings.Contains(human.stdout, "down (unknown): unreachable") {
		t.Errorf("status without the pending cluster:\n%s\n%s", human.stdout, human.stderr)
	}

	// check-upgrade: a release that drops v1 is rejected where v1 is still
	// stored, accepted where it is not; the unreachable cluster is unknown.
	release := crontab(group, apiextensionsv1.NamespaceScoped)
	release.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{crontabVersion("v2", true, true)}
	release.TypeMeta = metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}
	data, err := json.Marshal(release)
	if err != nil {
		t.Fatal(err)
	}
	releaseFile := filepath.Join(t.TempDir(), "release.yaml")
	writeFile(t, releaseFile, string(data))
	up := run("check-upgrade", "-f", releaseFile, "--all-contexts", "-o", "json")
	var fu report.FleetUpgradeCheck
	if up.code != 1 || json.Unmarshal([]byte(up.stdout), &fu) != nil || fu.Answer != fleet.No || len(fu.Clusters) != 3 {
		t.Fatalf("fleet check-upgrade: exit %d\n%s\n%s", up.code, up.stdout, up.stderr)
	}
	for _, c := range fu.Clusters {
		want := map[string]string{"pending": "Rejected", "migrated": "Accepted"}[c.Context]
		switch {
		case c.Context == "down" && (c.Check != nil || c.Reach != reach.Unreachable):
			t.Errorf("down: %+v", c)
		case want != "" && (c.Check == nil || c.Check.CRDs[0].Apply != want):
			t.Errorf("%s: %+v, want %s\n%s", c.Context, c.Check, want, up.stdout)
		}
	}
	upText := run("check-upgrade", "-f", releaseFile, "--contexts", "pending,migrated")
	if upText.code != 1 || !strings.Contains(upText.stdout, "can be applied in every cluster: no") || !strings.Contains(upText.stdout, "run: kubectl crdversion --kubeconfig "+kubeconfig+" --context pending migrate "+name) {
		t.Errorf("fleet check-upgrade text: exit %d\n%s\n%s", upText.code, upText.stdout, upText.stderr)
	}

	// doctor: a summary per cluster; the unreachable one makes it fail.
	doc := run("doctor", name, "--contexts", "pending,down", "-o", "json")
	var fd report.FleetDoctor
	if doc.code != 1 || json.Unmarshal([]byte(doc.stdout), &fd) != nil || len(fd.Clusters) != 2 || fd.Clusters[0].Doctor == nil || fd.Clusters[1].Reach != reach.Unreachable {
		t.Errorf("fleet doctor: exit %d\n%s\n%s", doc.code, doc.stdout, doc.stderr)
	}

	// retire without --migrate: both reachable clusters are refused at
	// step 5 and left untouched — the pending one lists v1 in
	// storedVersions, and for the migrated one storedVersions without v1
	// is a claim that only a migration pass proves (B24) — and the
	// unreachable one is reported. With --migrate the migrated cluster
	// advances to S6.
	fpPending := fingerprint(t, pendingC, name)
	fpMigrated := fingerprint(t, migratedC, name)
	r = run("retire", name, "v1", "--all-contexts", "--skip-usage-check", "--clean-managed-fields")
	if r.code == 0 {
		t.Fatalf("fleet retire succeeded with blocked and unreachable clusters:\n%s", r.stdout)
	}
	for _, want := range []string{"migrated  ", "Blocked", "stopped at step 5", "Unreachable", "did not finish in 3 of 3 cluster(s)"} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("fleet retire output lacks %q:\n%s\n%s", want, r.stdout, r.stderr)
		}
	}
	if fp := fingerprint(t, migratedC, name); fp != fpMigrated {
		t.Errorf("the blocked migrated cluster's CRD was written (%s -> %s)", fpMigrated, fp)
	}
	r = run("retire", name, "v1", "--contexts", "migrated", "--skip-usage-check", "--clean-managed-fields", "--migrate")
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "Complete") {
		t.Errorf("fleet retire --migrate of the migrated cluster: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if s := statusAt(t, migratedC, name); s.State != lifecycle.StateS6 {
		t.Errorf("migrated cluster after fleet retire: %s", s.State)
	}
	if fp := fingerprint(t, pendingC, name); fp != fpPending {
		t.Errorf("the blocked cluster's CRD was written (%s -> %s)", fpPending, fp)
	}

	// A dry run prints the combined plan and changes nothing.
	plan := run("retire", name, "v1", "--contexts", "pending", "--skip-usage-check", "--clean-managed-fields", "--migrate", "--dry-run")
	if plan.code != 0 || !strings.Contains(plan.stdout, "=== pending") || !strings.Contains(plan.stdout, "5. TO DO") || !strings.Contains(plan.stdout, "Planned") {
		t.Errorf("fleet dry run: exit %d\n%s\n%s", plan.code, plan.stdout, plan.stderr)
	}
	if fingerprint(t, pendingC, name) != fpPending {
		t.Error("the dry run wrote the CRD")
	}

	// Advice is code: the run: line printed for the pending cluster, pasted
	// into a shell through the real kubectl, migrates that cluster (and only
	// it), after which v1 can leave the manifest of both reachable clusters.
	if kubectl := kubectlPath(); kubectl == "" {
		t.Error("no kubectl on PATH: the printed run: line cannot be followed")
	} else {
		env := []string{"PATH=" + pluginDir + string(os.PathListSeparator) + filepath.Dir(kubectl) + string(os.PathListSeparator) + os.Getenv("PATH")}
		pasted := execute(t, "/bin/sh", env, "-c", pendingRun)
		if pasted.code != 0 {
			t.Fatalf("the printed line %q failed: exit %d\n%s\n%s", pendingRun, pasted.code, pasted.stdout, pasted.stderr)
		}
		if got := strings.Join(storedVersionsOf(t, pendingC, name), ","); got != "v2" {
			t.Errorf("after the pasted line, storedVersions of the pending cluster = [%s], want [v2]", got)
		}
		after := run("status", name, "--contexts", "pending,migrated", "--version", "v1")
		if after.code != 0 || !strings.Contains(after.stdout, "v1 can leave the manifest of "+name+": yes") {
			t.Errorf("after the pasted line: exit %d, want 0\n%s\n%s", after.code, after.stdout, after.stderr)
		}
	}

	// A CRD that no cluster has fails (exit code 2), as status in one
	// cluster does, after the table: a misspelt name must not pass.
	nowhere := run("status", "nosuch."+group, "--contexts", "pending,migrated")
	if nowhere.code != 2 || strings.Count(nowhere.stdout, "notinstalled") != 2 || !strings.Contains(nowhere.stderr, `no CustomResourceDefinition matches "nosuch.`+group+`" in any of the 2 cluster(s)`) {
		t.Errorf("fleet status of a CRD no cluster has: exit %d, want 2 after the table\n%s\n%s", nowhere.code, nowhere.stdout, nowhere.stderr)
	}

	// Bad input: one line, exit 1 (2 for status, which exits as kubectl
	// diff does).
	for _, args := range [][]string{
		{"status", name, "--contexts", "nope"},
		{"status", name, "--contexts", "pending", "--all-contexts"},
		{"status", name, "--contexts", "pending", "--context", "pending"},
		{"retire", name, "v1", "--contexts", "pending", "--parallel", "0"},
	} {
		want := map[string]int{"status": 2, "retire": 1}[args[0]]
		if b := run(args...); b.code != want || strings.Count(strings.TrimSpace(b.stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, want %d, stderr %q", args, b.code, want, b.stderr)
		}
	}
}

// statusAt is lifecycle.Analyze of the CRD as c reads it.
func statusAt(t *testing.T, c clients, name string) lifecycle.Analysis {
	t.Helper()
	crd, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return lifecycle.Analyze(crd)
}
