package loss

import (
	"context"
	"errors"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/migrate/result"
)

// optionsChecker records the options of the one check it is asked for.
type optionsChecker struct {
	got   *cluster.CheckObjectsOptions
	err   error
	found *cluster.ObjectsCheck
}

func (f *optionsChecker) CheckObjects(_ context.Context, _ *apiextensionsv1.CustomResourceDefinition, o cluster.CheckObjectsOptions) (*cluster.ObjectsCheck, error) {
	if f.got != nil {
		return nil, errors.New("asked twice")
	}
	f.got = &o
	if f.err != nil {
		return nil, f.err
	}
	return f.found, nil
}

func TestMeasurePromotion(t *testing.T) {
	served := crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).
		Version("v2", crdtest.Served).Stored("v1").CRD()
	webhook := served.DeepCopy()
	webhook.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
	storageUnserved := crdtest.New("widgets.example.com").Version("v1", crdtest.Storage).
		Version("v2", crdtest.Served).Stored("v1").CRD()
	storageUnservedWebhook := storageUnserved.DeepCopy()
	storageUnservedWebhook.Spec.Conversion = webhook.Spec.Conversion
	broken := errors.New("connection refused")

	tests := []struct {
		name      string
		crd       *apiextensionsv1.CustomResourceDefinition
		err       error
		from      string
		blind     bool
		roundTrip bool
	}{
		{"read at the storage version, written through the new one", served, nil, "v1", false, false},
		{"webhook conversion: the round trip back is read too", webhook, nil, "v1", false, true},
		{"storage version not served: blind, read at the new one", storageUnserved, nil, "v2", true, false},
		{"blind under webhook conversion: no round trip to a version that cannot be read", storageUnservedWebhook, nil, "v2", true, false},
		{"error from the API server", served, broken, "v1", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			found := &cluster.ObjectsCheck{Listed: 4}
			f := &optionsChecker{err: tt.err, found: found}
			var progressFrom string
			var updates []result.Progress
			o := PromotionOptions{Sample: 7, Options: Options{PageSize: 50, Concurrency: 3, FieldManager: "fm",
				Progress: func(from string) (func(result.Progress), func()) {
					progressFrom = from
					return func(p result.Progress) { updates = append(updates, p) }, func() {}
				}}}
			p, err := MeasurePromotion(context.Background(), f, tt.crd, "v2", o)
			if f.got == nil {
				t.Fatal("the objects were not checked")
			}
			want := cluster.CheckObjectsOptions{From: tt.from, To: "v2", Sample: 7, PageSize: 50, Concurrency: 3,
				FieldManager: "fm", RoundTrip: tt.roundTrip}
			got := *f.got
			if got.Progress == nil {
				t.Error("no progress given to the check")
			} else {
				got.Progress(1, 4)
			}
			got.Progress = nil
			if got.From != want.From || got.To != want.To || got.Sample != want.Sample || got.PageSize != want.PageSize ||
				got.Concurrency != want.Concurrency || got.FieldManager != want.FieldManager || got.RoundTrip != want.RoundTrip ||
				got.UpdateOnly || len(got.Recorded) > 0 {
				t.Errorf("checked with %+v, want %+v", got, want)
			}
			if progressFrom != tt.from || len(updates) != 1 || updates[0] != (result.Progress{Done: 1, Total: 4}) {
				t.Errorf("progress started at %q with %v, want %q and one update 1/4", progressFrom, updates, tt.from)
			}
			if tt.err != nil {
				if !errors.Is(err, tt.err) || p != nil {
					t.Fatalf("got %+v, %v; want the API server's error", p, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.From != tt.from || p.Blind != tt.blind || p.Found != found {
				t.Errorf("got From %q Blind %v Found %p, want %q %v %p", p.From, p.Blind, p.Found, tt.from, tt.blind, found)
			}
		})
	}
}
