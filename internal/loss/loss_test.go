package loss

import (
	"context"
	"errors"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// fakeChecker answers CheckObjects from a table keyed by the version read
// at, recording the versions asked for.
type fakeChecker struct {
	answers map[string]*cluster.ObjectsCheck
	err     error
	asked   []string
}

func (f *fakeChecker) CheckObjects(_ context.Context, _ *apiextensionsv1.CustomResourceDefinition, o cluster.CheckObjectsOptions) (*cluster.ObjectsCheck, error) {
	f.asked = append(f.asked, o.From+">"+o.To)
	if f.err != nil {
		return nil, f.err
	}
	if a, ok := f.answers[o.From]; ok {
		return a, nil
	}
	return &cluster.ObjectsCheck{From: o.From, To: o.To}, nil
}

func TestMeasure(t *testing.T) {
	twoServed := crdtest.New("widgets.example.com").Version("v1", crdtest.Served).
		Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").CRD()
	webhookUnserved := crdtest.New("widgets.example.com").Version("v1").
		Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").CRD()
	webhookUnserved.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
	storageUnserved := crdtest.New("widgets.example.com").Version("v1", crdtest.Served).
		Version("v2", crdtest.Storage).Stored("v1", "v2").CRD()
	broken := errors.New("connection refused")

	tests := []struct {
		name    string
		crd     *apiextensionsv1.CustomResourceDefinition
		answers map[string]*cluster.ObjectsCheck
		err     error
		asked   string
		wantErr string // "" for a measurement
		passes  int
	}{
		{"nothing lost", twoServed, map[string]*cluster.ObjectsCheck{"v1": {Listed: 3}}, nil, "v1>v2", "", 1},
		{"field pruned", twoServed, map[string]*cluster.ObjectsCheck{"v1": {Listed: 3,
			Lost: []cluster.ObjectLoss{{Object: "default/a", Paths: []string{".spec.color"}}}}}, nil,
			"v1>v2", "loses data", 0},
		{"hidden: managedFields record a field that no read shows", twoServed, map[string]*cluster.ObjectsCheck{"v1": {Listed: 1,
			RecordedMissing: []cluster.ObjectLoss{{Object: "default/a", Paths: []string{".spec.color"}}}}}, nil,
			"v1>v2", "loses data that no read shows", 0},
		{"unknown: webhook conversion from an unserved version", webhookUnserved,
			map[string]*cluster.ObjectsCheck{"v2": {Listed: 2}}, nil, "v2>v2", "unknown for objects stored at v1", 0},
		{"no object at all: the unserved version holds none", webhookUnserved, nil, nil, "v2>v2", "", 1},
		{"blind: objects that cannot be listed are a warning", twoServed,
			map[string]*cluster.ObjectsCheck{"v1": {ListError: "forbidden"}}, nil, "v1>v2", "", 0},
		{"storage version not served", storageUnserved, nil, nil, "", "not served", 0},
		{"error from the API server", twoServed, nil, broken, "v1>v2", "connection refused", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeChecker{answers: tt.answers, err: tt.err}
			m, err := Measure(context.Background(), f, tt.crd, Options{})
			if got := strings.Join(f.asked, ","); got != tt.asked {
				t.Errorf("checked %q, want %q", got, tt.asked)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				if tt.err != nil && !errors.Is(err, tt.err) {
					t.Errorf("error %v does not wrap the API server's %v", err, tt.err)
				}
				if tt.err == nil {
					var r *lifecycle.RefusalError
					if !errors.As(err, &r) {
						t.Errorf("error %T is not a refusal", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Passes) != tt.passes {
				t.Errorf("%d passes, want %d", len(m.Passes), tt.passes)
			}
			if blind := tt.answers["v1"] != nil && tt.answers["v1"].ListError != ""; blind != (len(m.Warnings) == 1) {
				t.Errorf("warnings %q", m.Warnings)
			}
		})
	}
}
