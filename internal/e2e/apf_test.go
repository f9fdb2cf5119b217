package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdversion/kubectl-crdversion/internal/e2e/apiserver"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// migrateAs runs the plugin binary's migrate -o json as the identity of
// kubeconfig and returns its report; it fails the test unless migrate
// exits 0.
func migrateAs(t *testing.T, kubeconfig string, args ...string) (report.Migration, result) {
	t.Helper()
	args = append(append([]string{"migrate"}, args...), "--kubeconfig", kubeconfig, "--cache-dir", t.TempDir())
	r := executeWithin(t, 5*time.Minute, filepath.Join(pluginDir, "kubectl-crdversion"), nil, args...)
	if r.code != 0 {
		t.Fatalf("kubectl crdversion %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	var m report.Migration
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("migrate -o json: %v\n%s", err, r.stdout)
	}
	return m, r
}

// TestMigrateReportsWhereItLands: migrate as a plain user (the migrate
// role of docs/rbac.md, which may list flowschemas and
// prioritylevelconfigurations) names the flow schema and priority level
// global-default in its report, fails nothing and warns of nothing; as
// admin (system:masters) it names the exempt ones and warns that the run
// bypasses API Priority and Fairness, in -o json and in the text output.
func TestMigrateReportsWhereItLands(t *testing.T) {
	c := newClients(t)
	crd := advance(t, c, "apf-lands.example.com", apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS0)
	createManyCronTabs(t, c, crd, "v1", 200, namespaces("lands", 2))
	crd = advance2(t, c, crd.Name)
	bindIdentity(t, c, "crdversion-migrate-apf-lands", docRoles(t, crd.Spec.Group)["crdversion-migrate"].Rules, apiserver.User)

	m, _ := migrateAs(t, identityKubeconfig(t, apiserver.User), crd.Name, "-o", "json", "--no-trim")
	p := m.PriorityAndFairness
	if p == nil || p.FlowSchema != "global-default" || p.PriorityLevel != "global-default" || p.Exempt || p.Unresolved != "" || p.PriorityLevelUID == "" {
		t.Errorf("as a user: priorityAndFairness %+v, want global-default named", p)
	}
	if m.Failed != 0 || m.Rewritten != 200 || len(m.Warnings) != 0 || m.Concurrency == nil || m.Concurrency.Mode != "adaptive" {
		t.Errorf("as a user: counts %+v, warnings %q, concurrency %+v", m.Counts, m.Warnings, m.Concurrency)
	}

	admin := identityKubeconfig(t, apiserver.Admin)
	setStorage(t, c, crd.Name, "v1")
	m, _ = migrateAs(t, admin, crd.Name, "-o", "json", "--no-trim")
	if p := m.PriorityAndFairness; p == nil || p.PriorityLevel != "exempt" || !p.Exempt || len(m.Warnings) != 1 || m.Warnings[0] != migrate.ExemptWarning {
		t.Errorf("as admin: priorityAndFairness %+v, warnings %q", p, m.Warnings)
	}
	setStorage(t, c, crd.Name, "v2")
	r := succeedsAt(t, admin, "migrate", crd.Name, "--max-speed")
	for _, want := range []string{
		"Warning: " + migrate.ExemptWarning,
		"API Priority and Fairness: priority level exempt, flow schema exempt",
		"64 writes in flight (--max-speed)",
		"total 200, rewritten 200",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("as admin, text output lacks %q:\n%s", want, r.stdout)
		}
	}
}

// rejectedByAPF sums apiserver_flowcontrol_rejected_requests_total of the
// priority level pl from the API server's /metrics.
func rejectedByAPF(t *testing.T, c clients, pl string) int64 {
	t.Helper()
	raw, err := c.kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_flowcontrol_rejected_requests_total{") || !strings.Contains(line, `priority_level="`+pl+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		sum += int64(v)
	}
	return sum
}

// TestMigrateRetries429sFromAPF: the user's requests go to a priority
// level of one share without queues (every request beyond its few seats
// is rejected at once with 429), and migrate --max-speed sends 8 writes
// at a time. The API server rejects many of them; every 429 is retried
// (client-go waits for the Retry-After) and counted — migrate's count is
// the API server's own rejected-requests count for that priority level —
// and no object fails.
func TestMigrateRetries429sFromAPF(t *testing.T) {
	slowTier(t, "a measurement of 429s under API Priority and Fairness")
	c := newClients(t)
	ctx := context.Background()
	crd := advance(t, c, "apf-429.example.com", apiextensionsv1.NamespaceScoped, 0, lifecycle.StateS0)
	createManyCronTabs(t, c, crd, "v1", 80, namespaces("tm", 2))
	crd = advance2(t, c, crd.Name)
	bindIdentity(t, c, "crdversion-migrate-apf-429", docRoles(t, crd.Spec.Group)["crdversion-migrate"].Rules, apiserver.User)

	name := "crdversion-test-429"
	one, zero := int32(1), int32(0)
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: &one, LendablePercent: &zero, BorrowingLimitPercent: &zero,
			LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
		}},
	}
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: name},
			MatchingPrecedence:         500,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: apiserver.User.User}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"patch"}, APIGroups: []string{crd.Spec.Group}, Resources: []string{"*"}, Namespaces: []string{"*"}}},
			}},
		},
	}
	if _, err := c.kube.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.kube.FlowcontrolV1().FlowSchemas().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = c.kube.FlowcontrolV1().PriorityLevelConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	if _, err := c.kube.FlowcontrolV1().FlowSchemas().Create(ctx, fs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The API server's APF controller takes up the new objects shortly
	// after they are created: wait until the schema says so.
	waitFor(t, "the flow schema "+name+" to be in use", func() (bool, error) {
		got, err := c.kube.FlowcontrolV1().FlowSchemas().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == flowcontrolv1.FlowSchemaConditionDangling && cond.Status == flowcontrolv1.ConditionFalse {
				return true, nil
			}
		}
		return false, nil
	})

	before := rejectedByAPF(t, c, name)
	m, _ := migrateAs(t, identityKubeconfig(t, apiserver.User), crd.Name, "-o", "json", "--max-speed", "--concurrency", "8")
	rejected := rejectedByAPF(t, c, name) - before
	if m.Failed != 0 || m.Rewritten != 80 || !m.Trim.Trimmed {
		t.Errorf("counts %+v, trim %+v, failures %v", m.Counts, m.Trim, m.Failures)
	}
	if rejected == 0 {
		t.Fatalf("the API server rejected none of the writes in priority level %s; the test did not provoke a 429", name)
	}
	if m.TooManyRequests != rejected {
		t.Errorf("migrate counted %d answers 429, the API server rejected %d requests in %s", m.TooManyRequests, rejected, name)
	}
	if p := m.PriorityAndFairness; p == nil || p.PriorityLevel != name {
		t.Errorf("priorityAndFairness %+v, want %s (the writes' priority level)", p, name)
	}
	t.Logf("%d answers 429, %d engine retries", m.TooManyRequests, m.Retries)
}
