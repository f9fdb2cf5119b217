package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// docRoles returns the ClusterRoles of docs/rbac.md by name, with the
// page's example group stable.example.com replaced by group.
func docRoles(t testing.TB, group string) map[string]*rbacv1.ClusterRole {
	t.Helper()
	page, err := os.ReadFile(filepath.Join(repoRoot, "docs", "rbac.md"))
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]*rbacv1.ClusterRole{}
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(page), -1) {
		var r rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict([]byte(m[1]), &r); err != nil {
			t.Fatalf("docs/rbac.md: %v\n%s", err, m[1])
		}
		if r.Kind != "ClusterRole" || r.Name == "" || len(r.Rules) == 0 {
			t.Fatalf("docs/rbac.md: not a ClusterRole:\n%s", m[1])
		}
		for i := range r.Rules {
			for j, g := range r.Rules[i].APIGroups {
				if g == "stable.example.com" {
					r.Rules[i].APIGroups[j] = group
				}
			}
		}
		roles[r.Name] = &r
	}
	return roles
}

// releaseFile writes crd, without its server-set fields, as a release
// manifest and returns the file.
func releaseFile(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) string {
	t.Helper()
	out := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: crd.Name},
		Spec:       crd.Spec,
	}
	data, err := yaml.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "release.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// grant creates role (renamed for this test) and binds it to a new user;
// it returns the user once the API server's authorizer allows the role's
// first rule to that user.
func grant(t *testing.T, c clients, role *rbacv1.ClusterRole, suffix string) string {
	t.Helper()
	ctx := context.Background()
	name := role.Name + "-" + suffix
	user := "user-" + name
	r := role.DeepCopy()
	r.Name = name
	if _, err := c.kube.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := c.kube.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAllowed(t, c, "the binding of "+name, authorizationv1.SubjectAccessReviewSpec{User: user}, r.Rules[0])
	return user
}

// TestRBACRolesOfTheDocs applies each ClusterRole of docs/rbac.md, binds it
// to a user, and runs the commands it is documented for as that user
// (--as): each succeeds. A command beyond its role is refused (by the
// permission preflight or with Forbidden), and the CRD is left unchanged.
func TestRBACRolesOfTheDocs(t *testing.T) {
	c := newClients(t)
	cases := []struct {
		role  string
		state lifecycle.State
		want  lifecycle.State
		runs  [][]string // "CRD" in second place stands for the CRD's name
	}{
		{"crdversion-status", lifecycle.StateS1, lifecycle.StateS1, [][]string{{"status", "CRD"}}},
		{"crdversion-edit", lifecycle.StateS0, lifecycle.StateS1, [][]string{
			{"add-version", "CRD", "v2"}, {"deprecate", "CRD", "v2"}, {"deprecate", "CRD", "v2", "--undo"}, {"serve", "CRD", "v1"},
		}},
		{"crdversion-promote-storage", lifecycle.StateS1, lifecycle.StateS2, [][]string{{"promote-storage", "CRD", "v2"}}},
		{"crdversion-migrate", lifecycle.StateS2, lifecycle.StateS3, [][]string{{"migrate", "CRD"}}},
		{"crdversion-unserve", lifecycle.StateS4, lifecycle.StateS5, [][]string{{"unserve", "CRD", "v1", "--usage-window=1s", "--usage-min-window=1s", "--usage-history=0"}}},
		{"crdversion-retire", lifecycle.StateS2, lifecycle.StateS6, [][]string{
			{"retire", "CRD", "v1", "--migrate", "--own-priority-level", "--clean-managed-fields", "--usage-window=1s", "--usage-min-window=1s", "--usage-history=0"},
		}},
		{"crdversion-diff", lifecycle.StateS1, lifecycle.StateS1, [][]string{{"diff", "CRD", "v1", "v2"}}},
		{"crdversion-check-upgrade", lifecycle.StateS1, lifecycle.StateS1, [][]string{{"check-upgrade", "CRD", "-f", "FILE"}}},
		{"crdversion-doctor", lifecycle.StateS1, lifecycle.StateS1, [][]string{{"doctor", "CRD"}}},
		// The owner-reference inventory, complete on this server: every
		// resource listed.
		{"crdversion-references", lifecycle.StateS4, lifecycle.StateS4, [][]string{{"repair-references", "CRD", "v1", "--dry-run=server"}}},
		{"crdversion-operator", lifecycle.StateS1, lifecycle.StateS6, [][]string{
			{"status", "CRD"}, {"promote-storage", "CRD", "v2"}, {"retire", "CRD", "v1", "--migrate", "--clean-managed-fields", "--usage-window=1s", "--usage-min-window=1s", "--usage-history=0"},
		}},
	}
	// Last: the storage version migrator it needs runs a garbage
	// collector's graph builder, whose watches the client-usage checks of
	// unserve and retire would see.
	cases = append(cases, struct {
		role  string
		state lifecycle.State
		want  lifecycle.State
		runs  [][]string
	}{"crdversion-migrate-server", lifecycle.StateS2, lifecycle.StateS3, [][]string{{"migrate", "CRD", "--engine=server"}}})
	documented := map[string]bool{}
	for _, tc := range cases {
		documented[tc.role] = true
		t.Run(tc.role, func(t *testing.T) {
			group := strings.TrimPrefix(tc.role, "crdversion-") + ".rbac.example.com"
			roles := docRoles(t, group)
			role, ok := roles[tc.role]
			if !ok {
				t.Fatalf("docs/rbac.md has no ClusterRole %s", tc.role)
			}
			if tc.role == "crdversion-migrate-server" {
				startSVMController(t)
			}
			crd := advance(t, c, group, apiextensionsv1.NamespaceScoped, 3, tc.state)
			user := grant(t, c, role, "test")
			writesSettled(t, c, crd, time.Second) // the client-usage checks of unserve and retire
			if tc.role == "crdversion-migrate-server" {
				// The subject is the role, not the controller's wait
				// for its informer.
				defer nudgeGCInformer(t, c, crd)()
			}
			for _, args := range tc.runs {
				args = slices.Clone(args)
				if args[0] == "check-upgrade" { // the release is the CRD as installed
					args = []string{args[0], "-f", releaseFile(t, getCRD(t, c, crd.Name))}
				} else {
					args[1] = crd.Name
				}
				r := mustRun(t, append(args, "--as", user)...)
				// The migrate and retire roles list the admission
				// rules, so their loss measurement reads rather than
				// dry-running every object (the rules' comments say so).
				if migrates := tc.role == "crdversion-migrate" || args[0] == "retire"; migrates && !strings.Contains(r.stdout, "(no dry run: nothing acts on the write)") {
					t.Errorf("%s as the role's user did not measure by reads:\n%s", args[0], r.stdout)
				}
				if slices.Contains(args, "--own-priority-level") && !strings.Contains(r.stdout, "(fixed: its own priority level spares the other clients)") {
					t.Errorf("%s --own-priority-level as the role's user did not run in its own priority level:\n%s", args[0], r.stdout)
				}
				if tc.role == "crdversion-promote-storage" && !strings.Contains(r.stdout, "measured by reads") {
					t.Errorf("promote-storage as the role's user did not measure by reads:\n%s", r.stdout)
				}
			}
			if got := lifecycle.Analyze(getCRD(t, c, crd.Name)).State; got != tc.want {
				t.Errorf("state %s after %v, want %s", got, tc.runs, tc.want)
			}
		})
	}
	t.Run("every role of the page is tested", func(t *testing.T) {
		for name := range docRoles(t, "x.example.com") {
			if !documented[name] {
				t.Errorf("docs/rbac.md's ClusterRole %s is not tested here", name)
			}
		}
	})

	t.Run("beyond the role", func(t *testing.T) {
		const group = "beyond.rbac.example.com"
		crd := advance(t, c, group, apiextensionsv1.NamespaceScoped, 3, lifecycle.StateS1)
		roles := docRoles(t, group)
		status := grant(t, c, roles["crdversion-status"], "beyond")
		for _, args := range [][]string{
			{"add-version", crd.Name, "v3"},
			{"promote-storage", crd.Name, "v2"},
			{"unserve", crd.Name, "v2", "--skip-usage-check"},
		} {
			before := fingerprint(t, c, crd.Name)
			r := plugin(t, append(args, "--as", status)...)
			// Refused up front by the permission preflight, or by the API server.
			said := r.stdout + r.stderr
			if r.err != nil {
				said += r.err.Error()
			}
			if r.err == nil || !(apierrors.IsForbidden(r.err) || strings.Contains(said, "Missing permission(s) to ") || strings.Contains(said, "forbidden")) {
				t.Errorf("%v as %s: err = %v, want a refusal for the missing update right\n%s", args, status, r.err, r.stdout)
			}
			if fingerprint(t, c, crd.Name) != before {
				t.Errorf("%v as %s changed the CRD", args, status)
			}
		}
		// migrate: the objects can be listed but not patched.
		setStorage(t, c, crd.Name, "v2")
		before := getCRD(t, c, crd.Name)
		r := plugin(t, "migrate", crd.Name, "--as", status)
		if r.err == nil || !slices.Equal(getCRD(t, c, crd.Name).Status.StoredVersions, before.Status.StoredVersions) {
			t.Errorf("migrate as %s: err = %v, storedVersions %v (was %v)\n%s", status, r.err, getCRD(t, c, crd.Name).Status.StoredVersions, before.Status.StoredVersions, r.stdout)
		}
	})
}

// TestEachPermissionIsNeeded takes each ClusterRole of docs/rbac.md for a
// command that writes, removes one verb of one rule at a time, and runs the
// command as a user bound to what is left: it must refuse before writing
// anything (the CRD and every object unchanged), naming what is missing.
// So the documented roles are minimal, and no command is left half-done
// for want of a permission.
func TestEachPermissionIsNeeded(t *testing.T) {
	slowTier(t, "each documented permission removed in turn")
	t.Parallel()
	c := newClients(t)
	cases := []struct {
		role  string
		state lifecycle.State
		args  []string // "CRD" in second place stands for the CRD's name
	}{
		// With a conversion webhook, add-version lists a sample object.
		{"crdversion-edit", lifecycle.StateS0, []string{"add-version", "CRD", "v2", "--conversion", "Webhook", "--webhook-url", "HOOK", "--ca-bundle-file", "CA"}},
		{"crdversion-promote-storage", lifecycle.StateS1, []string{"promote-storage", "CRD", "v2"}},
		// With its own priority level: the role's create and delete of
		// flowschemas and prioritylevelconfigurations are for it.
		{"crdversion-migrate", lifecycle.StateS2, []string{"migrate", "CRD", "--own-priority-level"}},
		{"crdversion-migrate-server", lifecycle.StateS2, []string{"migrate", "CRD", "--engine=server"}},
		{"crdversion-unserve", lifecycle.StateS4, []string{"unserve", "CRD", "v1", "--usage-window=1s", "--usage-min-window=1s", "--usage-history=0"}},
		// With --own-priority-level, as migrate's.
		{"crdversion-retire", lifecycle.StateS2, []string{"retire", "CRD", "v1", "--migrate", "--own-priority-level", "--clean-managed-fields", "--usage-window=1s", "--usage-min-window=1s", "--usage-history=0"}},
	}
	// Either is enough to count the API server instances (the identity
	// leases, else the kubernetes Service's EndpointSlices); Services and
	// EndpointSlices are read only for a webhook behind a Service, whose
	// checks are skipped, not refused, when they cannot be read.
	alternatives := map[string]bool{"leases": true, "endpointslices": true, "services": true}
	// Permissions a command does without, saying so.
	optional := map[string]string{
		"crdversion-edit list *": "list crontabs.edit3.needed.example.com is forbidden, so no stored object was tried",
		// Without it a run's report gives the UIDs of the flow schema and
		// the priority level instead of their names; a run in its own
		// priority level, as here, names it without a list.
		"crdversion-migrate list flowschemas,prioritylevelconfigurations": "API Priority and Fairness: priority level crdversion-",
		// Without it the loss measurement cannot tell that nothing acts
		// on the writes, and dry-runs every object instead of reading.
		"crdversion-migrate list validatingwebhookconfigurations,mutatingwebhookconfigurations,validatingadmissionpolicies,mutatingadmissionpolicies": "dry runs, not reads, because the webhooks and admission policies that may act on the update could not be listed",
		// The dry-run creates of each object as new at the storage
		// version are sent only when the stored versions' schemas differ
		// or a webhook converts, as none do here (the permission check
		// asks for create then: TestMigrateInItsOwnPriorityLevel runs the
		// role on a webhook-converted CRD).
		"crdversion-migrate create *": "",
		// The same for retire --migrate, whose loss measurement is
		// migrate's (TestMeasurementAsksForCreateWhenSchemasDiffer).
		"crdversion-retire create *": "",
		"crdversion-retire list validatingwebhookconfigurations,mutatingwebhookconfigurations,validatingadmissionpolicies,mutatingadmissionpolicies":          "dry runs, not reads, because the webhooks and admission policies that may act on the update could not be listed",
		"crdversion-promote-storage list validatingwebhookconfigurations,mutatingwebhookconfigurations,validatingadmissionpolicies,mutatingadmissionpolicies": "measured by dry runs: 3 object(s) sent the dry-run update through v2, because the webhooks and admission policies that may act on the update could not be listed",
	}
	// Permissions another test holds to being needed: without create,
	// migrate --engine=server here would succeed as far as waiting for a
	// storage version migrator, which this API server does not run
	// (TestMeasurementAsksForCreateWhenSchemasDiffer refuses it first).
	elsewhere := map[string]bool{"crdversion-migrate-server create *": true}
	hook := newConversionWebhook(t)
	ca := hook.caFile(t)
	for _, tc := range cases {
		t.Run(tc.role, func(t *testing.T) {
			// Each role's removals have CRDs, groups, roles and users of
			// their own (named after the role): they run side by side.
			t.Parallel()
			short := strings.TrimPrefix(tc.role, "crdversion-")
			role := docRoles(t, "stable.example.com")[tc.role]
			if role == nil {
				t.Fatalf("docs/rbac.md has no ClusterRole %s", tc.role)
			}
			n := 0
			for i, rule := range role.Rules {
				if len(rule.Resources) > 0 && alternatives[rule.Resources[0]] {
					continue
				}
				for _, verb := range rule.Verbs {
					if verb == "list" && slices.Contains(rule.Resources, "customresourcedefinitions") {
						// Only a short name, kind or plural is resolved by
						// listing CRDs; the tests name CRDs in full.
						continue
					}
					n++
					what := verb + " " + strings.Join(append(slices.Clone(rule.Resources), rule.NonResourceURLs...), ",")
					if elsewhere[tc.role+" "+what] {
						continue
					}
					// A CRD of its own for each removal, in a group of its
					// own that the role names.
					group := fmt.Sprintf("%s%d.needed.example.com", short, n)
					less := docRoles(t, group)[tc.role]
					less.Rules[i].Verbs = slices.DeleteFunc(less.Rules[i].Verbs, func(v string) bool { return v == verb })
					if len(less.Rules[i].Verbs) == 0 {
						less.Rules = slices.Delete(less.Rules, i, i+1)
					}
					crd := advance(t, c, group, apiextensionsv1.NamespaceScoped, 3, tc.state)
					if tc.args[0] == "retire" || tc.args[0] == "unserve" {
						// The setup's writes are no client of the usage check.
						writesSettled(t, c, crd, time.Second)
					}
					args := slices.Clone(tc.args)
					args[1] = crd.Name
					for j, a := range args {
						switch a {
						case "HOOK":
							args[j] = hook.URL + "/convert"
						case "CA":
							args[j] = ca
						}
					}
					user := grantRules(t, c, less, fmt.Sprintf("less-%d", n))
					objects := objectVersions(t, c, crd, lifecycle.StorageVersion(crd))
					if note, ok := optional[tc.role+" "+what]; ok {
						if r := crdversion(t, append(args, "--as", user)...); r.code != 0 || !strings.Contains(r.stdout, note) {
							t.Errorf("without %s: exit %d, want success with the note %q\n%s%s", what, r.code, note, r.stdout, r.stderr)
						}
						continue
					}
					r := refuses(t, c, []string{crd.Name}, nil, append(args, "--as", user)...)
					if !namesPermission(r.stdout+r.stderr, verb, rule) {
						t.Errorf("without %s: the refusal does not name it:\n%s%s", what, r.stdout, r.stderr)
					}
					if after := objectVersions(t, c, crd, lifecycle.StorageVersion(crd)); !maps.Equal(objects, after) {
						t.Errorf("without %s: objects were written", what)
					}
				}
			}
			if n == 0 {
				t.Fatal("no permission was removed")
			}
		})
	}
}

// namesPermission tells whether a refusal names verb on rule's resource or
// URL: in the permission preflight's words ("update
// customresourcedefinitions/status.apiextensions.k8s.io") or the API
// server's Forbidden message (`cannot update resource "…"`).
func namesPermission(out, verb string, rule rbacv1.PolicyRule) bool {
	targets := append(slices.Clone(rule.NonResourceURLs), rule.Resources...)
	for _, target := range targets {
		if target == "*" {
			target = "" // the CRD's own resource: any name
		}
		for _, form := range []string{verb + " " + target, "cannot " + verb + " resource \"" + target, "cannot " + verb + " path \"" + target} {
			if strings.Contains(out, form) {
				return true
			}
		}
	}
	return false
}

// grantRules is grant for a role whose first rule may be a non-resource
// URL: it waits until the binding allows each resource rule's first verb.
func grantRules(t *testing.T, c clients, role *rbacv1.ClusterRole, suffix string) string {
	t.Helper()
	for i, r := range role.Rules {
		if len(r.Resources) > 0 && r.Resources[0] != "*" {
			role.Rules[0], role.Rules[i] = role.Rules[i], role.Rules[0]
			break
		}
	}
	return grant(t, c, role, suffix)
}

// TestMeasurementAsksForCreateWhenSchemasDiffer (issue 30): migrate
// --engine=server and retire --migrate measure the loss as migrate does,
// and when the stored version's schema differs from the storage version's
// they also dry-run each object as new, which needs create. The documented
// roles lacked it, and retire's permission check did not ask for it: a
// user bound to the role passed the check, and the measurement's dry runs
// were forbidden one by one. Each command's role without create is now
// refused by the permission check, naming create, nothing written; the
// documented retire role (which has it) retires v1.
func TestMeasurementAsksForCreateWhenSchemasDiffer(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	for _, tc := range []struct {
		role string
		args []string // the CRD's name is appended second
	}{
		{"crdversion-migrate-server", []string{"migrate", "--engine=server"}},
		{"crdversion-retire", []string{"retire", "v1", "--migrate", "--clean-managed-fields", "--skip-usage-check"}},
	} {
		t.Run(tc.role, func(t *testing.T) {
			t.Parallel()
			group := strings.TrimPrefix(tc.role, "crdversion-") + "-create.needed.example.com"
			crd := advance(t, c, group, apiextensionsv1.NamespaceScoped, 3, lifecycle.StateS2)
			crd = updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
				for i := range crd.Spec.Versions {
					if crd.Spec.Versions[i].Name == "v2" {
						crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"].Properties["note"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
					}
				}
			})
			args := append([]string{tc.args[0], crd.Name}, tc.args[1:]...)

			role := docRoles(t, group)[tc.role]
			less := docRoles(t, group)[tc.role]
			for i, rule := range less.Rules {
				if slices.Contains(rule.APIGroups, group) {
					less.Rules[i].Verbs = slices.DeleteFunc(slices.Clone(rule.Verbs), func(v string) bool { return v == "create" })
				}
			}
			objects := objectVersions(t, c, crd, "v2")
			r := refuses(t, c, []string{crd.Name}, []string{"missing 1 permission(s)", "create " + crd.Spec.Names.Plural}, append(args, "--as", grantRules(t, c, less, "less-create"))...)
			if strings.Contains(r.stdout+r.stderr, "forbidden") {
				t.Errorf("the refusal is the API server's, not the permission check's:\n%s%s", r.stdout, r.stderr)
			}
			if after := objectVersions(t, c, crd, "v2"); !maps.Equal(objects, after) {
				t.Error("objects were written by the refused run")
			}
			if tc.args[0] != "retire" {
				return // the server engine waits for a migrator this API server does not run
			}
			succeeds(t, append(args, "--as", grantRules(t, c, role, "full-create"))...)
			if got := strings.Join(storedVersionsOf(t, c, crd.Name), ","); got != "v2" {
				t.Errorf("storedVersions %s after retire, want v2", got)
			}
		})
	}
}
