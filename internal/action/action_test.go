package action

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/access"
	"github.com/crdversion/kubectl-crdversion/internal/action/actiontest"
	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/references"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// fake records what the actions ask of the cluster. It stands in for the
// API server only in the control flow of the steps; what the API server
// answers is tested in internal/e2e.
type fake struct {
	calls   []string
	objects *cluster.ObjectsCheck
	usage   usage.Verdict
	missing []access.Need
	written *apiextensionsv1.CustomResourceDefinition
}

func (f *fake) WebhookService(context.Context, string, string) (*corev1.Service, []discoveryv1.EndpointSlice, error) {
	f.calls = append(f.calls, "service")
	return nil, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, "x")
}

func (f *fake) CheckObjects(_ context.Context, _ *apiextensionsv1.CustomResourceDefinition, o cluster.CheckObjectsOptions) (*cluster.ObjectsCheck, error) {
	f.calls = append(f.calls, "objects@"+o.From+"->"+o.To)
	return f.objects, nil
}

func (f *fake) Measure(_ context.Context, targets ...schema.GroupVersionResource) (usage.Assessments, error) {
	out := usage.Assessments{}
	for _, gvr := range targets {
		f.calls = append(f.calls, "usage@"+gvr.Version)
		out[gvr] = usage.Assessment{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Verdict: f.usage}
	}
	return out, nil
}

func (f *fake) WebhookRoundTrip(context.Context, *apiextensionsv1.CustomResourceDefinition, string, string, int64, time.Duration) (*cluster.RoundTrips, error) {
	f.calls = append(f.calls, "roundtrip")
	return nil, errors.New("not reachable")
}

func (f *fake) Describe() string { return "the fake's sources" }

func (f *fake) Writers(_ context.Context, gvr schema.GroupVersionResource) usage.SourceReport {
	return usage.SourceReport{Source: usage.SourceManagedFields, Name: "managedFields of " + gvr.Resource}
}

func (f *fake) CRDAt(context.Context, string, string) (*apiextensionsv1.CustomResourceDefinition, error) {
	return nil, nil
}

func (f *fake) AdmissionRules(context.Context) ([]references.AdmissionRule, error) {
	return nil, nil
}

func (f *fake) Missing(context.Context, []access.Need) ([]access.Need, bool) {
	f.calls = append(f.calls, "access")
	return f.missing, true
}

func (f *fake) UpdateCRD(_ context.Context, crd *apiextensionsv1.CustomResourceDefinition, o cluster.WriteOptions) (*apiextensionsv1.CustomResourceDefinition, error) {
	f.calls = append(f.calls, map[bool]string{true: "update(dry run)", false: "update"}[o.DryRun == lifecycle.DryRunServer])
	f.written = crd
	return crd, nil
}

func (f *fake) WaitServed(context.Context, string, time.Duration) error {
	f.calls = append(f.calls, "wait")
	return nil
}

func (f *fake) AddStoredVersions(_ context.Context, _ string, versions []string, _ string) (*apiextensionsv1.CustomResourceDefinition, error) {
	f.calls = append(f.calls, "stored+"+strings.Join(versions, ","))
	out := f.written.DeepCopy()
	out.Status.StoredVersions = append(out.Status.StoredVersions, versions...)
	return out, nil
}

func TestPromoteStorageOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      *apiextensionsv1.CustomResourceDefinition
		manifst bool
		want    string
	}{
		// The objects are read at the new version only when the webhook
		// that converts them can be called.
		{"None conversion: permissions, then objects", crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Version("v2", crdtest.Served).Stored("v1").CRD(), false, "access objects@v1->v2"},
		{"a Service webhook that fails: no object read", crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Version("v2", crdtest.Served).Stored("v1").WebhookService("ns", "conv", []byte("x")).CRD(), false, "service"},
		{"manifest without a cluster: nothing read", crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Version("v2", crdtest.Served).Stored("v1").CRD(), true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fake{objects: &cluster.ObjectsCheck{Listed: 2, Validated: 2}}
			target := &Target{CRD: tc.in, Live: tc.in}
			var c PromoteCluster = f
			if tc.manifst {
				target = &Target{CRD: tc.in, Manifest: true, LiveSkip: "no cluster"}
				c = nil
			}
			r, err := PromoteStorage(context.Background(), c, target, PromoteOptions{Version: "v2", ChunkSize: 10, WebhookTimeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(f.calls, " "); got != tc.want {
				t.Errorf("calls %q, want %q", got, tc.want)
			}
			if r.Edited.Spec.Versions[1].Storage != true {
				t.Errorf("v2 is not the storage version in the edit")
			}
		})
	}
}

func TestSetServedMeasuresOnlyToUnserve(t *testing.T) {
	for _, tc := range []struct {
		name    string
		served  bool
		skip    bool
		verdict usage.Verdict
		want    string
		outcome edit.Outcome
	}{
		{"serve: no measurement", true, false, usage.NotInUse, "", ""},
		{"unserve, no client", false, false, usage.NotInUse, "usage@v2", edit.Pass},
		{"unserve, a client", false, false, usage.InUse, "usage@v2", edit.Fail},
		// Unknown is not pass.
		{"unserve, unknown", false, false, usage.Unknown, "usage@v2", edit.Fail},
		{"unserve, skipped", false, true, usage.InUse, "", edit.Warn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Version("v2", crdtest.Served).Stored("v1").CRD()
			if tc.served {
				in.Spec.Versions[1].Served = false
			}
			f := &fake{usage: tc.verdict}
			r, err := SetServed(context.Background(), f, &Target{CRD: in, Live: in}, "v2", tc.served, UsageOptions{Skip: tc.skip})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(f.calls, " "); got != tc.want {
				t.Errorf("calls %q, want %q", got, tc.want)
			}
			var outcome edit.Outcome
			for _, c := range r.Checks {
				if c.Name == "ClientUsage" {
					outcome = c.Outcome
				}
			}
			if outcome != tc.outcome {
				t.Errorf("ClientUsage %q, want %q", outcome, tc.outcome)
			}
		})
	}
}

func TestWrite(t *testing.T) {
	in := crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Version("v2", crdtest.Served).Stored("v1").CRD()
	r := edit.SetServed(in, "v2", false)
	for _, tc := range []struct {
		name    string
		dryRun  lifecycle.DryRun
		missing []access.Need
		noop    bool
		stored  []string
		want    string
		err     bool
	}{
		{"real write waits for discovery", lifecycle.DryRunNone, nil, false, nil, "access update wait", false},
		{"server dry run", lifecycle.DryRunServer, nil, false, nil, "access update(dry run)", false},
		{"client dry run sends nothing", lifecycle.DryRunClient, nil, false, nil, "", false},
		{"no-op sends nothing", lifecycle.DryRunNone, nil, true, nil, "", false},
		{"a missing permission writes nothing", lifecycle.DryRunNone, []access.Need{{Verb: "update", Resource: "customresourcedefinitions"}}, false, nil, "access", true},
		// A restored version objects are stored at: storedVersions lists it
		// again right after the spec write, before anything waits.
		{"a restore records storedVersions", lifecycle.DryRunNone, nil, false, []string{"v0"}, "access update stored+v0 wait", false},
		{"a restore in a server dry run records nothing", lifecycle.DryRunServer, nil, false, []string{"v0"}, "access update(dry run)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fake{missing: tc.missing}
			res := *r
			res.NoOp = tc.noop
			res.RecordStored = tc.stored
			_, err := Write(context.Background(), f, &res, WriteOptions{DryRun: tc.dryRun, FieldManager: "m", Operation: "unserve"})
			if (err != nil) != tc.err {
				t.Errorf("err %v", err)
			}
			var missing *access.MissingError
			if tc.err && !errors.As(err, &missing) {
				t.Errorf("err %T, want *access.MissingError", err)
			}
			if got := strings.Join(f.calls, " "); got != tc.want {
				t.Errorf("calls %q, want %q", got, tc.want)
			}
		})
	}
}

var _ Cluster = (*actiontest.Fake)(nil)
