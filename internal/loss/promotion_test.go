package loss

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/migrate/result"
	"github.com/crdversion/kubectl-crdversion/internal/references"
	"github.com/crdversion/kubectl-crdversion/internal/webhook"
)

// optionsChecker records the options of the one check it is asked for.
type optionsChecker struct {
	got   *cluster.CheckObjectsOptions
	err   error
	found *cluster.ObjectsCheck
}

func (f *optionsChecker) CRDAt(context.Context, string, string) (*apiextensionsv1.CustomResourceDefinition, error) {
	return nil, nil
}

func (f *optionsChecker) AdmissionRules(context.Context) ([]references.AdmissionRule, error) {
	return nil, nil
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
		reads     bool
	}{
		{"read at the storage version, written through the new one: by reads", served, nil, "v1", false, false, true},
		{"webhook conversion: the round trip back is read too", webhook, nil, "v1", false, true, false},
		{"storage version not served: blind, read at the new one", storageUnserved, nil, "v2", true, false, false},
		{"blind under webhook conversion: no round trip to a version that cannot be read", storageUnservedWebhook, nil, "v2", true, false, false},
		{"error from the API server", served, broken, "v1", false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			found := &cluster.ObjectsCheck{Listed: 4}
			f := &optionsChecker{err: tt.err, found: found}
			var progressFrom string
			var updates []result.Progress
			o := PromotionOptions{Options: Options{PageSize: 50, Concurrency: 3, FieldManager: "fm",
				Progress: func(from string) (func(result.Progress), func()) {
					progressFrom = from
					return func(p result.Progress) { updates = append(updates, p) }, func() {}
				}}}
			p, err := MeasurePromotion(context.Background(), f, tt.crd, "v2", o)
			if f.got == nil {
				t.Fatal("the objects were not checked")
			}
			want := cluster.CheckObjectsOptions{From: tt.from, To: "v2", PageSize: 50, Concurrency: 3,
				FieldManager: "fm", RoundTrip: tt.roundTrip}
			got := *f.got
			if got.Progress == nil {
				t.Error("no progress given to the check")
			} else {
				got.Progress(1, 4)
			}
			got.Progress = nil
			if got.From != want.From || got.To != want.To || got.Sample != want.Sample || got.PageSize != want.PageSize ||
				got.Concurrency != want.Concurrency || got.FieldManager != want.FieldManager || got.RoundTrip != want.RoundTrip || got.Reads != tt.reads ||
				got.UpdateOnly || len(got.Recorded) > 0 || got.Whole != (!tt.blind && !tt.roundTrip && tt.crd.Spec.Conversion == nil) {
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
			if tt.reads != (p.Design == result.DesignReads) || tt.reads != (p.DryRunBecause == "") {
				t.Errorf("design %q because %q, want by reads %v", p.Design, p.DryRunBecause, tt.reads)
			}
		})
	}
}

// TestMeasurePromotionReadsOnlyWhereNothingActsOnTheWrite: the promotion
// of v2 reads (a second list at v2) unless something a read does not show
// can act on migrate's update through v2 once it is the storage version —
// the rules of Measure with v2 as the storage version and the current
// storage version v1 among the stored ones — and says why it dry-ran.
// Under CrossCheck, a pass by reads is measured again by dry runs and a
// differing verdict fails as a *Disagreement.
func TestMeasurePromotionReadsOnlyWhereNothingActsOnTheWrite(t *testing.T) {
	plain := func() *apiextensionsv1.CustomResourceDefinition {
		return crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).
			Version("v2", crdtest.Served).Stored("v1").CRD()
	}
	spec := func(crd *apiextensionsv1.CustomResourceDefinition, i int, size apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceDefinition {
		crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{Type: "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": size}}
		return crd
	}
	transition := spec(plain(), 1, apiextensionsv1.JSONSchemaProps{Type: "string",
		XValidations: apiextensionsv1.ValidationRules{{Rule: "self == oldSelf", Message: "immutable"}}})
	defaultM := apiextensionsv1.JSONSchemaProps{Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"M"`)}}
	webhook := plain()
	webhook.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
	onUpdate := references.AdmissionRule{Kind: "ValidatingAdmissionPolicy", Name: "p", MatchPolicy: "Equivalent",
		APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}, Operations: []string{"UPDATE"}}
	tests := []struct {
		name     string
		crd      *apiextensionsv1.CustomResourceDefinition
		rules    []references.AdmissionRule
		rulesErr error
		because  string // "" for reads
	}{
		{"nothing acts: reads", plain(), nil, nil, ""},
		{"a policy on UPDATE of the resource, at another version", plain(), []references.AdmissionRule{onUpdate}, nil, "admission acts on UPDATE of widgets.example.com: ValidatingAdmissionPolicy p"},
		{"rules that could not be listed", plain(), nil, errors.New("forbidden"), "could not be listed (forbidden)"},
		{"a transition rule at the new version", transition, nil, nil, "v2's schema has transition rules"},
		{"a default of the new version the storage version lacks", spec(plain(), 1, defaultM), nil, nil, "v2's schema defaults .spec.size and v1's does not alike"},
		{"the same default at both versions: reads", spec(spec(plain(), 0, defaultM), 1, defaultM), nil, nil, ""},
		{"Webhook conversion", webhook, nil, nil, "Webhook conversion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeChecker{rules: tt.rules, rulesErr: tt.rulesErr}
			p, err := MeasurePromotion(context.Background(), f, tt.crd, "v2", PromotionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			reads := tt.because == ""
			want := result.DesignDryRun
			if reads {
				want = result.DesignReads
			}
			if !slices.Equal(f.reads, []bool{reads}) || p.Design != want || !strings.Contains(p.DryRunBecause, tt.because) || reads != (p.DryRunBecause == "") {
				t.Errorf("checks with Reads %v, design %q because %q; want Reads %v, %q because %q", f.reads, p.Design, p.DryRunBecause, reads, want, tt.because)
			}
		})
	}

	// A sample is not a design of reads: the second list judges every
	// object it answers, the sample only some (a trial found "measured by
	// reads: 0 of 40" under --sample 5).
	sampled := &optionsChecker{found: &cluster.ObjectsCheck{}}
	if p, err := MeasurePromotion(context.Background(), sampled, plain(), "v2", PromotionOptions{Sample: 5}); err != nil || p.Design != result.DesignDryRun ||
		!strings.HasPrefix(p.DryRunBecause, "--sample 5: ") || sampled.got.Reads || sampled.got.Sample != 5 {
		t.Errorf("--sample 5: %v, checked with %+v; want the dry runs of a sample of 5, because of the sample", err, sampled.got)
	}

	f := &fakeChecker{answers: map[string]*cluster.ObjectsCheck{"v1": {Listed: 2}},
		dryRun: map[string]*cluster.ObjectsCheck{"v1": {Listed: 2, Problems: []cluster.ObjectProblem{{Object: "default/a", Message: "refused"}}}}}
	_, err := MeasurePromotion(context.Background(), f, plain(), "v2", PromotionOptions{Options: Options{CrossCheck: true}})
	var d *Disagreement
	if !errors.As(err, &d) || !strings.Contains(d.Detail(), "default/a: reads [], dry run [refused]") || !slices.Equal(f.reads, []bool{true, false}) {
		t.Fatalf("cross-check: %v after checks with Reads %v; want a disagreement naming default/a after a read and a dry run", err, f.reads)
	}
}

type roundTripper struct {
	rt  *cluster.RoundTrips
	err error
}

func (r roundTripper) WebhookRoundTrip(context.Context, *apiextensionsv1.CustomResourceDefinition, string, string, int64, time.Duration) (*cluster.RoundTrips, error) {
	return r.rt, r.err
}

// TestMeasurePromotionJudgesTheWebhookRoundTrip (issue 34): under Webhook
// conversion the keys of an object at the two versions do not say what it
// loses (a renamed field looks lost, a changed value looks kept); the round
// trip through the webhook, whole, does. Where the client cannot call the
// webhook (a Service endpoint out of its reach included) the keys stay,
// and the promotion says why: the round trip is unknown.
func TestMeasurePromotionJudgesTheWebhookRoundTrip(t *testing.T) {
	crd := crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).
		Version("v2", crdtest.Served).Stored("v1").CRD()
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
	keys := func() *cluster.ObjectsCheck {
		return &cluster.ObjectsCheck{Listed: 2, Lost: []cluster.ObjectLoss{{Object: "default/renamed", Paths: []string{".spec.image"}}}}
	}
	changed := []cluster.ObjectLoss{{Object: "default/zeroed", Paths: []string{".spec.replicas"}}}
	for _, tc := range []struct {
		name      string
		rt        RoundTripper
		lost      string
		changed   string
		roundTrip string
	}{
		{"the round trip is the verdict", roundTripper{rt: &cluster.RoundTrips{Objects: 2, Changed: changed}}, "", "default/zeroed: .spec.replicas", ""},
		{"a Service webhook out of reach: keys", roundTripper{err: &webhook.NotReachableError{Address: "10.0.0.7:8443", Err: errors.New("i/o timeout")}}, "default/renamed: .spec.image", "", "the endpoint 10.0.0.7:8443 is not reachable from this client"},
		{"a webhook that cannot be called: keys", roundTripper{err: errors.New("dial tcp: no route")}, "default/renamed: .spec.image", "", "could not be called from this client: dial tcp: no route"},
		{"no client: keys", nil, "default/renamed: .spec.image", "", "no client for the webhook"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeChecker{answers: map[string]*cluster.ObjectsCheck{"v1": keys()}}
			p, err := MeasurePromotion(context.Background(), f, crd, "v2", PromotionOptions{RoundTripper: tc.rt})
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(p.Found.Lost); got != "["+tc.lost+"]" {
				t.Errorf("lost %q, want %q", got, tc.lost)
			}
			if got := fmt.Sprint(p.Found.Changed); got != "["+tc.changed+"]" {
				t.Errorf("changed %q, want %q", got, tc.changed)
			}
			if !p.Webhook || !strings.Contains(p.RoundTrip, tc.roundTrip) || (tc.roundTrip == "") != (p.RoundTrip == "") {
				t.Errorf("webhook %v, round trip %q, want %q", p.Webhook, p.RoundTrip, tc.roundTrip)
			}
		})
	}
}

// TestMeasurePromotionUnderAWebhookSeesAdmission (trial): under Webhook
// conversion the round trip compares conversions only; a policy on UPDATE
// of the new version zeroed values and dropped labels, and promote-storage
// passed. With anything acting on the update, each object read at the new
// version is also compared whole with its dry-run update through it.
func TestMeasurePromotionUnderAWebhookSeesAdmission(t *testing.T) {
	crd := crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).
		Version("v2", crdtest.Served).Stored("v1").WebhookURL("https://conv.example.com", nil).CRD()
	exact := references.AdmissionRule{Kind: "MutatingAdmissionPolicy", Name: "p", MatchPolicy: "Exact",
		APIGroups: []string{"example.com"}, APIVersions: []string{"v2"}, Resources: []string{"widgets"}, Operations: []string{"UPDATE"}}
	zeroed := []cluster.ObjectLoss{{Object: "default/a", Paths: []string{".spec.size"}}}
	for _, tc := range []struct {
		name    string
		rules   []references.AdmissionRule
		asked   string
		changed string
	}{
		{"nothing acts on the update", nil, "not whole,v1>>v2+new", "[]"},
		{"a policy on UPDATE at the new version", []references.AdmissionRule{exact}, "not whole,v1>>v2+new,v2>>v2", "[default/a: .spec.size]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeChecker{rules: tc.rules, answers: map[string]*cluster.ObjectsCheck{"v2": {Changed: zeroed}}}
			p, err := MeasurePromotion(context.Background(), f, crd, "v2", PromotionOptions{RoundTripper: roundTripper{rt: &cluster.RoundTrips{}}})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(f.asked, ","); got != tc.asked {
				t.Errorf("checked %q, want %q", got, tc.asked)
			}
			if got := fmt.Sprint(p.Found.Changed); got != tc.changed || p.AdmissionPass != (len(tc.rules) > 0) {
				t.Errorf("changed %s (admission pass %v), want %s", got, p.AdmissionPass, tc.changed)
			}
		})
	}
}
