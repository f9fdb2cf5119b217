package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdversion/kubectl-crdversion/internal/cli"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// statusJSON runs status -o json and decodes it. Its exit must agree with
// the report (checkStatusExit): 1 exactly when a finding is an error.
func statusJSON(t *testing.T, arg string, extra ...string) report.Status {
	t.Helper()
	args := append([]string{"status", arg, "-o", "json"}, extra...)
	r := plugin(t, args...)
	checkStatusExit(t, strings.Join(args, " "), r)
	var s report.Status
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("decoding status -o json: %v\n%s", err, r.stdout)
	}
	return s
}

// runStatus runs status with args (after "status") in-process and checks that
// its exit agrees with the report it printed (checkStatusExit).
func runStatus(t *testing.T, args ...string) result {
	t.Helper()
	args = append([]string{"status"}, args...)
	r := plugin(t, args...)
	checkStatusExit(t, strings.Join(args, " "), r)
	return r
}

// tableError is an error-level finding in status's table.
var tableError = regexp.MustCompile(`(?m)^  ERROR: `)

// printedErrors reports whether the report status printed — its table or
// -o json — has an error-level finding, read from the output alone.
func printedErrors(t testing.TB, stdout string) bool {
	t.Helper()
	if !strings.HasPrefix(stdout, "{") {
		return tableError.MatchString(stdout)
	}
	var s report.Status
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("decoding status -o json: %v\n%s", err, stdout)
	}
	for _, f := range s.Findings {
		if f.Severity == lifecycle.SeverityError {
			return true
		}
	}
	return false
}

// checkStatusExit fails t unless status (run as what; in-process or as a
// binary) printed its report and exited as kubectl diff does
// (statusExitMismatch).
func checkStatusExit(t testing.TB, what string, r result) {
	t.Helper()
	if msg := statusExitMismatch(t, what, r); msg != "" {
		t.Fatal(msg)
	}
}

// statusExitMismatch says how status (run as what; in-process or as a
// binary) failed to print its report and exit as kubectl diff does: 1
// (*cli.FindingsError in-process) exactly when the printed report has an
// error-level finding, 0 otherwise (issue 33: it exited 0 whatever it
// found); "" when it did.
func statusExitMismatch(t testing.TB, what string, r result) string {
	t.Helper()
	if r.stdout == "" {
		return fmt.Sprintf("%s printed no report: exit %d, err %v\nstderr:\n%s", what, r.code, r.err, r.stderr)
	}
	var found *cli.FindingsError
	findings := r.code == 1 || errors.As(r.err, &found)
	switch want := printedErrors(t, r.stdout); {
	case want && !findings:
		return fmt.Sprintf("%s: the report has an error-level finding, but exit %d, err %v; want exit 1 (*cli.FindingsError)\n%s%s", what, r.code, r.err, r.stdout, r.stderr)
	case !want && (r.code != 0 || r.err != nil):
		return fmt.Sprintf("%s: the report has no error-level finding, but exit %d, err %v; want 0\n%s%s", what, r.code, r.err, r.stdout, r.stderr)
	}
	return ""
}

// TestStatusStates takes a CronTab CRD through every lifecycle state with
// the API server's own operations and checks what status reports in each,
// against golden files for the table and the JSON.
func TestStatusStates(t *testing.T) {
	slowTier(t, "status in every state S0-S6")
	t.Parallel()
	c := newClients(t)
	cases := []struct {
		state    lifecycle.State
		next     string
		findings []string
	}{
		{lifecycle.StateS0, "add-version", nil},
		{lifecycle.StateS1, "promote-storage", nil},
		{lifecycle.StateS2, "migrate", []string{lifecycle.CodeMigrationPending}},
		{lifecycle.StateS3, "deprecate", nil},
		{lifecycle.StateS4, "unserve", []string{lifecycle.CodeDeprecatedServed}},
		{lifecycle.StateS5, "retire", nil},
		{lifecycle.StateS6, "", nil},
	}
	for _, tc := range cases {
		t.Run(string(tc.state), func(t *testing.T) {
			group := strings.ToLower(string(tc.state)) + ".states.example.com"
			crd := advance(t, c, group, apiextensionsv1.NamespaceScoped, 4, tc.state)

			s := statusJSON(t, crd.Name)
			if s.State != tc.state {
				t.Errorf("state = %s, want %s", s.State, tc.state)
			}
			if s.Objects == nil || s.Objects.Count != 4 || s.Objects.Error != "" {
				t.Errorf("objects = %+v, want 4 counted", s.Objects)
			}
			var codes []string
			for _, f := range s.Findings {
				codes = append(codes, f.Code)
			}
			if strings.Join(codes, ",") != strings.Join(tc.findings, ",") {
				t.Errorf("findings = %v, want %v", codes, tc.findings)
			}
			switch {
			case tc.next == "" && s.Next != nil:
				t.Errorf("next = %q, want none", s.Next.Command)
			case tc.next != "" && (s.Next == nil || !strings.HasPrefix(s.Next.Command, "kubectl crdversion "+tc.next+" "+crd.Name)):
				t.Errorf("next = %+v, want kubectl crdversion %s %s …", s.Next, tc.next, crd.Name)
			}

			golden(t, "status/"+string(tc.state)+".txt", runStatus(t, crd.Name).stdout)
			golden(t, "status/"+string(tc.state)+".json", runStatus(t, crd.Name, "-o", "json").stdout)
		})
	}
}

// TestStatusClusterScoped checks a cluster-scoped CRD mid-migration.
func TestStatusClusterScoped(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := advance(t, c, "cluster.example.com", apiextensionsv1.ClusterScoped, 3, lifecycle.StateS2)
	s := statusJSON(t, crd.Name)
	if s.CRD.Scope != "Cluster" || s.State != lifecycle.StateS2 || s.Objects.Count != 3 {
		t.Errorf("scope %s, state %s, objects %+v; want Cluster, S2, 3", s.CRD.Scope, s.State, s.Objects)
	}
	golden(t, "status/cluster-scoped-S2.txt", runStatus(t, crd.Name).stdout)
}

// TestStatusStoredVersionMissingFromSpec builds what older API servers and
// hand edits of etcd left behind: objects stored at v1 while v1 is gone from
// spec.versions but still in status.storedVersions. The API server refuses
// to create this state, so the test edits the stored CRD in etcd.
func TestStatusStoredVersionMissingFromSpec(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := advance(t, c, "orphan.example.com", apiextensionsv1.NamespaceScoped, 2, lifecycle.StateS2)
	editStoredCRD(t, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = crd.Spec.Versions[1:] // drop v1
	})
	waitFor(t, "the API server to see v1 removed", func() (bool, error) {
		got, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), crd.Name, metav1.GetOptions{})
		return err == nil && len(got.Spec.Versions) == 1, err
	})
	// The CRD reads back edited before its handler has the edit.
	waitListFails(t, c, crd, "v2", "invalid group/version")

	s := statusJSON(t, crd.Name)
	codes := map[string]lifecycle.Finding{}
	for _, f := range s.Findings {
		codes[f.Code] = f
	}
	missing, ok := codes[lifecycle.CodeStoredVersionNotInSpec]
	if !ok || missing.Version != "v1" || missing.Severity != lifecycle.SeverityError {
		t.Errorf("want an error finding %s for v1, got %+v", lifecycle.CodeStoredVersionNotInSpec, s.Findings)
	}
	unreadable, ok := codes[lifecycle.CodeObjectsUnreadable]
	if !ok || !strings.Contains(unreadable.Message, "v1") {
		t.Errorf("want finding %s naming v1, got %+v", lifecycle.CodeObjectsUnreadable, s.Findings)
	}
	if s.Objects == nil || s.Objects.Error == "" {
		t.Errorf("objects = %+v, want the list error", s.Objects)
	}
	var row *lifecycle.VersionStatus
	for i := range s.Versions {
		if s.Versions[i].Name == "v1" {
			row = &s.Versions[i]
		}
	}
	if row == nil || row.InSpec || !row.InStoredVersions {
		t.Errorf("versions table row for v1 = %+v, want inStoredVersions and not inSpec", row)
	}
	if s.Next == nil || !strings.HasPrefix(s.Next.Command, "kubectl crdversion add-version "+crd.Name+" v1 ") {
		t.Errorf("next = %+v, want the add-version that restores v1", s.Next)
	}

	// The finding says every update of the CRD is rejected; check that.
	_, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Update(context.Background(), crdWithLabel(t, c, crd.Name), metav1.UpdateOptions{})
	if err == nil || !strings.Contains(err.Error(), "missing from spec.versions") {
		t.Errorf("updating the CRD: err = %v, want the storedVersions validation error", err)
	}

	// Its findings are errors: status prints the report, then exits 1 as
	// kubectl diff does (issue 33: it exited 0), in-process and as the
	// plugin binary.
	r := runStatus(t, crd.Name)
	var found *cli.FindingsError
	if !errors.As(r.err, &found) || !strings.HasPrefix(found.Summary, "2 errors,") {
		t.Errorf("status of a CRD with two error-level findings: err = %v, want *cli.FindingsError of 2 errors", r.err)
	}
	env := []string{"KUBECONFIG=" + srv.Kubeconfig}
	for _, output := range []string{"", "json"} {
		bin := binary(t, env, "status", crd.Name, "-o", output)
		if bin.code != 1 || bin.stderr != "" || !strings.Contains(bin.stdout, "Next: ") && !strings.HasSuffix(bin.stdout, "}\n") {
			t.Errorf("the plugin binary, status -o %q: exit %d, want 1 after the whole report and nothing on stderr\nstdout:\n%s\nstderr:\n%s", output, bin.code, bin.stdout, bin.stderr)
		}
		checkStatusExit(t, "the plugin binary's status -o "+output, bin)
	}
	out := strings.ReplaceAll(r.stdout, srv.EtcdPrefix, "<etcd-prefix>")
	out = regexp.MustCompile(`revision=\d+`).ReplaceAllString(out, "revision=<n>")
	golden(t, "status/storedversion-not-in-spec.txt", out)

	// The repair the finding names, then migrate: healthy again. The
	// repair returns once the API server reads the objects stored at v1
	// (discovery does not change when an unserved version comes back): a
	// list sent right after it succeeds, as the migrate that follows does.
	mustRun(t, strings.Fields(strings.TrimPrefix(s.Next.Command, "kubectl crdversion "))...)
	if _, err := c.dyn.Resource(gvr(crd, "v2")).List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Errorf("a list right after the repair: %v", err)
	}
	mustRun(t, "migrate", crd.Name)
	healed := statusJSON(t, crd.Name)
	if healed.State != lifecycle.StateS5 || len(healed.Findings) != 0 || healed.Objects.Count != 2 || strings.Join(healed.StoredVersions, ",") != "v2" {
		t.Errorf("after the repair: state %s, findings %+v, objects %+v, storedVersions %v", healed.State, healed.Findings, healed.Objects, healed.StoredVersions)
	}
	if bin := binary(t, env, "status", crd.Name); bin.code != 0 || !strings.Contains(bin.stdout, "State:") {
		t.Errorf("the plugin binary, status once healthy: exit %d, want 0 after the report\n%s%s", bin.code, bin.stdout, bin.stderr)
	}
}

// TestStatusResolvesNamesLikeKubectl names one CRD every way kubectl
// accepts. Its plural, singular, kind and short name are its own (no other
// test's CRD has them), so every form must resolve to it.
func TestStatusResolvesNamesLikeKubectl(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := crontab("names.example.com", apiextensionsv1.NamespaceScoped)
	crd.Name = "sundials.names.example.com"
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: "sundials", Singular: "sundial", Kind: "Sundial", ListKind: "SundialList", ShortNames: []string{"sdl"}}
	crd.Spec.Versions = append(crd.Spec.Versions, crontabVersion("v2", true, false))
	crd = createCRD(t, c, crd)
	for _, arg := range []string{
		"sundials.names.example.com", // CRD name
		"sundials",                   // resource
		"sdl",                        // short name
		"Sundial",                    // kind
		"sundial",                    // singular
		"sundial.names.example.com",  // singular.group
		"Sundial.names.example.com",  // Kind.group
		"sundials.v2.names.example.com",
		"crd/sundials.names.example.com", // kubectl's TYPE/NAME
		"customresourcedefinitions.apiextensions.k8s.io/sundials.names.example.com",
	} {
		t.Run(strings.ReplaceAll(arg, "/", "_"), func(t *testing.T) {
			r := plugin(t, "status", arg, "-o", "jsonpath={.crd.name}", "--count=false")
			if r.err != nil {
				t.Fatalf("status %s: %v", arg, r.err)
			}
			if r.stdout != crd.Name {
				t.Errorf("status %s resolved to %q, want %s", arg, r.stdout, crd.Name)
			}
		})
	}

	// A second CRD with the same names in another group: a name without
	// the group is ambiguous, an error naming both, never a pick.
	twin := crontab("names-twin.example.com", apiextensionsv1.NamespaceScoped)
	twin.Name = "sundials.names-twin.example.com"
	twin.Spec.Names = crd.Spec.Names
	createCRD(t, c, twin)
	for _, arg := range []string{"sundials", "sdl", "Sundial", "sundial"} {
		r := plugin(t, "status", arg, "--count=false")
		var failed *cli.CheckError // exit code 2: status failed
		if !errors.As(r.err, &failed) || !strings.Contains(r.err.Error(), "matches 2 CustomResourceDefinitions") ||
			!strings.Contains(r.err.Error(), crd.Name) || !strings.Contains(r.err.Error(), twin.Name) {
			t.Errorf("status %s with two CRDs of that name: err = %v, want the ambiguity named\n%s", arg, r.err, r.stdout)
		}
	}
	if r := plugin(t, "status", "sundials.v2.names.example.com", "-o", "jsonpath={.crd.name}", "--count=false"); r.err != nil || r.stdout != crd.Name {
		t.Errorf("status sundials.v2.names.example.com beside its twin: %q, %v", r.stdout, r.err)
	}
}

// TestStatusGatewayAPI installs the real Gateway API v0.6.2 CRDs and example
// objects and checks the states they arrive in.
func TestStatusGatewayAPI(t *testing.T) {
	c := newClients(t)
	installTestdata(t, c, "crds/gateway-api/v0.6.2", "crds/gateway-api/v0.6.2/examples")
	for name, want := range map[string]lifecycle.State{
		// v1alpha2 served and deprecated, v1beta1 storage.
		"httproutes.gateway.networking.k8s.io": lifecycle.StateS4,
		// v1alpha2 storage, v1beta1 served: a new version waits for promotion.
		"referencegrants.gateway.networking.k8s.io": lifecycle.StateS1,
	} {
		s := statusJSON(t, name)
		if s.State != want {
			t.Errorf("%s: state %s, want %s", name, s.State, want)
		}
		if s.Objects == nil || s.Objects.Count != 1 {
			t.Errorf("%s: objects %+v, want 1", name, s.Objects)
		}
		golden(t, "status/gateway-api-"+strings.Split(name, ".")[0]+".txt", runStatus(t, name).stdout)
	}
}

func crdWithLabel(t *testing.T, c clients, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if crd.Labels == nil {
		crd.Labels = map[string]string{}
	}
	crd.Labels["touched"] = "yes"
	return crd
}
