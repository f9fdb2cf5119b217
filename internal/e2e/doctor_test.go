package e2e

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crdversion/kubectl-crdversion/internal/cli"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// TestDoctor runs doctor --all on a cluster with at least 50 CRDs: clean
// ones (generated CronTabs in several lifecycle states, and the corpus's
// shape-1 CRDs when it is present) and a few with injected problems. Each
// injected problem is found, the clean CRDs get no error or warning, the
// exit is 1 (error-level findings) and the number of API requests is
// stated and bounded.
func TestDoctor(t *testing.T) {
	c := newClients(t)
	ctx := context.Background()
	var clean []string

	// Generated CRDs, some with objects, in states S0, S1, S3 and S6.
	generated := 40
	corpus := shape1CorpusCRDs(t)
	if len(corpus) == 0 {
		generated = 50
	}
	states := []lifecycle.State{lifecycle.StateS0, lifecycle.StateS1, lifecycle.StateS3, lifecycle.StateS0, lifecycle.StateS6}
	for i := range generated {
		group := fmt.Sprintf("doctor-clean-%02d.example.com", i)
		var crd *apiextensionsv1.CustomResourceDefinition
		if i%4 == 0 {
			crd = advance(t, c, group, apiextensionsv1.NamespaceScoped, 2, states[(i/4)%len(states)])
		} else {
			crd = createCRD(t, c, crontab(group, apiextensionsv1.ClusterScoped))
		}
		clean = append(clean, crd.Name)
	}
	for _, crd := range corpus {
		createCRD(t, c, crd)
		clean = append(clean, crd.Name)
	}

	// Injected: status.storedVersions still lists v1, and no object is left.
	stale := createCRD(t, c, crontab("doctor-stale.example.com", apiextensionsv1.NamespaceScoped))
	updateCRD(t, c, stale.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = append(crd.Spec.Versions, crontabVersion("v2", true, false))
	})
	setStorage(t, c, stale.Name, "v2")

	// Injected: storedVersions names v1, which spec.versions lacks (a hand
	// edit in etcd; the API server refuses to make this state).
	gone := createCRD(t, c, crontab("doctor-gone.example.com", apiextensionsv1.NamespaceScoped))
	updateCRD(t, c, gone.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = append(crd.Spec.Versions, crontabVersion("v2", true, false))
	})
	setStorage(t, c, gone.Name, "v2")
	editStoredCRD(t, gone.Name, func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Versions = crd.Spec.Versions[1:] })

	// Injected: objects stored at v1, then v1 removed from spec.versions
	// and storedVersions (etcd edit): only listing reveals them.
	removed := advance(t, c, "doctor-removed.example.com", apiextensionsv1.NamespaceScoped, 2, lifecycle.StateS2)
	editStoredCRD(t, removed.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = crd.Spec.Versions[1:]
		crd.Status.StoredVersions = []string{"v2"}
	})

	// Injected: Webhook conversion to a URL where nothing listens, and to a
	// Service that does not exist.
	hookURL := crontab("doctor-webhook.example.com", apiextensionsv1.NamespaceScoped)
	hookURL.Spec.Versions = append(hookURL.Spec.Versions, crontabVersion("v2", true, false))
	hookURL.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
		ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/convert")}, ConversionReviewVersions: []string{"v1"}}}
	createCRD(t, c, hookURL)
	hookSvc := crontab("doctor-websvc.example.com", apiextensionsv1.NamespaceScoped)
	hookSvc.Spec.Versions = append(hookSvc.Spec.Versions, crontabVersion("v2", true, false))
	hookSvc.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
		ClientConfig: &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Namespace: "default", Name: "no-such-conversion-webhook", Path: ptr.To("/convert")}}, ConversionReviewVersions: []string{"v1"}}}
	createCRD(t, c, hookSvc)

	// Injected: a deprecated version that a client watches.
	watched := advance(t, c, "doctor-watched.example.com", apiextensionsv1.NamespaceScoped, 1, lifecycle.StateS4)
	stopWatching := keepWatching(t, resource(c, watched, "v1", "team-a"))
	defer stopWatching()

	waitFor(t, "the API server to see the etcd edits", func() (bool, error) {
		g, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, gone.Name, metav1.GetOptions{})
		if err != nil || len(g.Spec.Versions) != 1 {
			return false, err
		}
		_, err = c.dyn.Resource(gvr(removed, "v2")).List(ctx, metav1.ListOptions{})
		return err != nil && strings.Contains(err.Error(), "invalid group/version"), nil
	})

	injected := map[string]string{
		stale.Name:   lifecycle.CodeStoredVersionsReadyToTrim,
		gone.Name:    lifecycle.CodeStoredVersionNotInSpec,
		removed.Name: lifecycle.CodeObjectsUnlistable,
		hookURL.Name: lifecycle.CodeWebhookUnreachable,
		hookSvc.Name: lifecycle.CodeWebhookUnreachable,
		watched.Name: lifecycle.CodeDeprecatedVersionInUse,
	}

	r := plugin(t, "doctor", "--all", "-o", "json")
	var found *cli.FindingsError
	if !errors.As(r.err, &found) {
		t.Fatalf("doctor --all: err %v, want *FindingsError (exit 1)\n%s", r.err, r.stderr)
	}
	var d report.Doctor
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	byName := map[string]report.DoctorCRD{}
	for _, x := range d.CRDs {
		byName[x.Name] = x
	}
	for name, code := range injected {
		x, ok := byName[name]
		if !ok {
			t.Errorf("%s not in the report", name)
			continue
		}
		if !slices.ContainsFunc(x.Findings, func(f lifecycle.Finding) bool { return f.Code == code && f.Severity != lifecycle.SeverityInfo }) {
			t.Errorf("%s: want a finding %s, got %+v", name, code, x.Findings)
		}
	}
	for _, name := range clean {
		x, ok := byName[name]
		if !ok {
			t.Errorf("%s not in the report", name)
			continue
		}
		for _, f := range x.Findings {
			if f.Severity != lifecycle.SeverityInfo {
				t.Errorf("clean CRD %s: %s %s: %s", name, f.Severity, f.Code, f.Message)
			}
		}
	}
	total := len(clean) + len(injected)
	if total < 50 || len(d.CRDs) < total {
		t.Errorf("%d CRDs checked, %d made by the test", len(d.CRDs), total)
	}
	// One CRD list, one object list per CRD (every CRD here has fewer
	// objects than a page), a retry per other served version where the
	// first list fails, two reads per Service-referenced webhook; and, when
	// a CRD has a deprecated served version, the client-usage check: the
	// identity leases, the kubernetes Service's EndpointSlices and one read
	// of /metrics once, and per such CRD a read of it and a list of its
	// objects' managedFields.
	deprecated := 0
	for _, c := range d.CRDs {
		if len(c.Usage) > 0 {
			deprecated++
		}
	}
	usageRequests := 0
	if deprecated > 0 {
		usageRequests = 3 + 2*deprecated
	}
	if lo, hi := int64(1+len(d.CRDs)+usageRequests), int64(1+len(d.CRDs)+usageRequests+4); d.Requests < lo || d.Requests > hi {
		t.Errorf("%d API requests for %d CRDs, want between %d and %d", d.Requests, len(d.CRDs), lo, hi)
	}
	t.Logf("doctor --all: %d CRDs, %d API requests, %s", len(d.CRDs), d.Requests, fmt.Sprint(d.Summary))

	// The table says the same, with the request count.
	table := plugin(t, "doctor", "--all")
	if !strings.Contains(table.stdout, fmt.Sprintf("CRDs checked with %d API requests", d.Requests)) {
		t.Errorf("table output:\n%s", table.stdout)
	}
	// Clean CRDs alone: exit 0.
	if ok := plugin(t, "doctor", clean[0], clean[1]); ok.err != nil {
		t.Errorf("doctor on clean CRDs: %v\n%s", ok.err, ok.stdout)
	}
}

// shape1CorpusCRDs are the corpus's shape-1 CRDs (several versions,
// conversion None, identical schemas), one release per CRD name, or none
// without the corpus.
func shape1CorpusCRDs(t *testing.T) []*apiextensionsv1.CustomResourceDefinition {
	data, err := os.ReadFile(filepath.Join(corpusDir(), "sources.json"))
	if err != nil {
		t.Logf("no shared corpus: generated CRDs only")
		return nil
	}
	var sources []struct {
		Dest   string   `json:"dest"`
		Type   string   `json:"type"`
		Shapes []string `json:"shapes"`
	}
	if err := json.Unmarshal(data, &sources); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, s := range sources {
		if s.Type != "crd" || !slices.Contains(s.Shapes, "1") {
			continue
		}
		crd := readOneCRD(t, filepath.Join(corpusDir(), nodesc(corpusDir(), s.Dest)))
		if seen[crd.Name] {
			continue
		}
		seen[crd.Name] = true
		// Another test may still be deleting a CRD of the same name.
		waitFor(t, crd.Name+" to be absent", func() (bool, error) {
			_, err := newClients(t).ext.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), crd.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
		out = append(out, crd)
	}
	return out
}

// TestDoctorUnreadableList: every list of a CRD's objects that the API
// server cannot answer is an error-level finding (exit 1) naming the
// objects that break it (issue 17: doctor exited 0 while every list at the
// default version failed, because it listed only at the storage version).
//
//   - convert: Webhook conversion, v1 the storage version, v2 kubectl's
//     default; the webhook cannot convert one object, so every list at v2
//     fails while lists at v1 (no conversion) succeed.
//   - removed: objects stored at v1, then v1 removed from spec.versions
//     (an etcd edit): no served version lists them.
func TestDoctorUnreadableList(t *testing.T) {
	slowTier(t, "doctor on lists the API server cannot answer")
	t.Parallel()
	c := newClients(t)
	ctx := context.Background()
	hook := newConversionWebhook(t)

	convert := crontab("doctor-convert.example.com", apiextensionsv1.NamespaceScoped)
	convert.Spec.Versions = append(convert.Spec.Versions, crontabVersion("v2", true, false))
	convert.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
		ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: ptr.To(hook.URL + "/convert"), CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})},
		ConversionReviewVersions: []string{"v1"}}}
	createCRD(t, c, convert)
	// Before the objects exist, so that no cache of the API server holds
	// crontab-1 converted.
	hook.failFor.Store("crontab-1")
	createCronTabs(t, c, convert, "v1", 3, "team-a")

	removed := advance(t, c, "doctor-unlistable.example.com", apiextensionsv1.NamespaceScoped, 2, lifecycle.StateS2)
	editStoredCRD(t, removed.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = crd.Spec.Versions[1:]
		crd.Status.StoredVersions = []string{"v2"}
	})
	waitFor(t, "lists at v2 to fail", func() (bool, error) {
		_, err1 := c.dyn.Resource(gvr(convert, "v2")).List(ctx, metav1.ListOptions{})
		_, err2 := c.dyn.Resource(gvr(removed, "v2")).List(ctx, metav1.ListOptions{})
		return err1 != nil && strings.Contains(err2.Error(), "invalid group/version"), nil
	})
	if _, err := c.dyn.Resource(gvr(convert, "v1")).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("a list at v1 needs no conversion, yet: %v", err)
	}

	for _, tc := range []struct {
		crd        *apiextensionsv1.CustomResourceDefinition
		code       string
		unreadable []string // objects the finding names
		readable   []string // objects it must not name
	}{
		{convert, lifecycle.CodeObjectsUnreadable, []string{"team-a/crontab-1"}, []string{"team-a/crontab-0", "team-a/crontab-2"}},
		{removed, lifecycle.CodeObjectsUnlistable, []string{"team-a/crontab-0", "team-b/crontab-1"}, nil},
	} {
		t.Run(tc.crd.Name, func(t *testing.T) {
			r := plugin(t, "doctor", tc.crd.Name, "--skip-usage-check", "-o", "json")
			var found *cli.FindingsError
			if !errors.As(r.err, &found) {
				t.Fatalf("doctor: err %v, want *FindingsError (exit 1)\n%s%s", r.err, r.stdout, r.stderr)
			}
			var d report.Doctor
			if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || len(d.CRDs) != 1 {
				t.Fatalf("%v\n%s", err, r.stdout)
			}
			i := slices.IndexFunc(d.CRDs[0].Findings, func(f lifecycle.Finding) bool {
				return f.Code == tc.code && f.Severity == lifecycle.SeverityError && f.Version == "v2"
			})
			if i < 0 {
				t.Fatalf("no error %s at v2: %+v", tc.code, d.CRDs[0].Findings)
			}
			f := d.CRDs[0].Findings[i]
			for _, o := range tc.unreadable {
				if !strings.Contains(f.Message, o) {
					t.Errorf("the finding does not name %s: %s", o, f.Message)
				}
			}
			for _, o := range tc.readable {
				if strings.Contains(f.Message, o+",") || strings.HasSuffix(f.Message, o) {
					t.Errorf("the finding names %s, which can be read: %s", o, f.Message)
				}
			}
			// The report lists them, per version listed.
			l := slices.IndexFunc(d.CRDs[0].Lists, func(l report.ObjectList) bool { return l.Version == "v2" })
			if l < 0 || !reflect.DeepEqual(d.CRDs[0].Lists[l].Unreadable, tc.unreadable) || d.CRDs[0].Lists[l].MoreUnreadable || d.CRDs[0].Lists[l].Error == "" {
				t.Errorf("lists %+v, want v2 failed with %v unreadable", d.CRDs[0].Lists, tc.unreadable)
			}
			table := plugin(t, "doctor", tc.crd.Name, "--skip-usage-check")
			if !strings.Contains(table.stdout, "ERROR: "+f.Message) {
				t.Errorf("table output:\n%s", table.stdout)
			}
			t.Logf("doctor %s (%d API requests):\n%s", tc.crd.Name, d.Requests, table.stdout)
		})
	}

	// Once the webhook converts every object, every list succeeds.
	hook.failFor.Store("")
	waitFor(t, "a list at v2 to succeed", func() (bool, error) {
		_, err := c.dyn.Resource(gvr(convert, "v2")).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if r := plugin(t, "doctor", convert.Name, "--skip-usage-check"); r.err != nil {
		t.Errorf("doctor after the repair: %v\n%s", r.err, r.stdout)
	}
}
