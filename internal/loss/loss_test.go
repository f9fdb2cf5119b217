package loss

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate/result"
	"github.com/crdversion/kubectl-crdversion/internal/references"
)

// fakeChecker answers CheckObjects from a table keyed by the version read
// at, recording the versions asked for.
type fakeChecker struct {
	answers map[string]*cluster.ObjectsCheck
	err     error
	asked   []string
	// rules and rulesErr answer AdmissionRules; reads records each
	// check's CheckObjectsOptions.Reads; dryRun, when set, answers the
	// checks sent without Reads (a cross-check's second pass).
	rules    []references.AdmissionRule
	rulesErr error
	reads    []bool
	dryRun   map[string]*cluster.ObjectsCheck
	// history answers CRDAt by revision (historyErr, when set, instead);
	// historyAsked records the revisions asked for.
	history      map[string]*apiextensionsv1.CustomResourceDefinition
	historyErr   error
	historyAsked []string
}

func (f *fakeChecker) CRDAt(_ context.Context, _, rv string) (*apiextensionsv1.CustomResourceDefinition, error) {
	f.historyAsked = append(f.historyAsked, rv)
	if f.historyErr != nil {
		return nil, f.historyErr
	}
	return f.history[rv], nil
}

func (f *fakeChecker) AdmissionRules(context.Context) ([]references.AdmissionRule, error) {
	return f.rules, f.rulesErr
}

func (f *fakeChecker) CheckObjects(_ context.Context, _ *apiextensionsv1.CustomResourceDefinition, o cluster.CheckObjectsOptions) (*cluster.ObjectsCheck, error) {
	if !o.Whole {
		f.asked = append(f.asked, "not whole")
	}
	asked := o.From + ">" + o.Through + ">" + o.To
	if !o.UpdateOnly {
		asked += "+new"
	}
	f.asked = append(f.asked, asked)
	f.reads = append(f.reads, o.Reads)
	if f.err != nil {
		return nil, f.err
	}
	if a, ok := f.dryRun[o.From]; ok && !o.Reads {
		return a, nil
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
	webhookServed := crdtest.New("widgets.example.com").Version("v1", crdtest.Served).
		Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").CRD()
	webhookServed.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
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
		{"nothing lost", twoServed, map[string]*cluster.ObjectsCheck{"v1": {Listed: 3}}, nil, "v1>v2>v2", "", 1},
		{"field pruned", twoServed, map[string]*cluster.ObjectsCheck{"v1": {Listed: 3,
			Lost: []cluster.ObjectLoss{{Object: "default/a", Paths: []string{".spec.color"}}}}}, nil,
			"v1>v2>v2", "loses data", 0},
		{"value changed (B17)", twoServed, map[string]*cluster.ObjectsCheck{"v1": {Listed: 3,
			Changed: []cluster.ObjectLoss{{Object: "default/a", Paths: []string{".spec.size"}}}}}, nil,
			"v1>v2>v2", "values at v1 that the rewrite at v2 changes: default/a: .spec.size", 0},
		{"defaults, nulls and generation are reported, not refused (B11)", twoServed, map[string]*cluster.ObjectsCheck{"v1": {Listed: 2,
			Set:               []cluster.ObjectLoss{{Object: "default/a", Paths: []string{".spec.mode"}}, {Object: "default/b", Paths: []string{".spec.mode"}}},
			NullsDropped:      []cluster.ObjectLoss{{Object: "default/b", Paths: []string{".spec.opt"}}},
			GenerationChanged: []string{"default/a", "default/b"}}}, nil, "v1>v2>v2", "", 1},
		{"refused dry runs stop the run before it writes (B13)", twoServed, map[string]*cluster.ObjectsCheck{"v1": {Listed: 10,
			Problems: []cluster.ObjectProblem{{Object: "default/o03", Message: "transition rule"}, {Object: "default/o07", Message: "transition rule"}}}}, nil,
			"v1>v2>v2", "the API server refuses to rewrite some objects", 0},
		{"an object that cannot be read is unknown (B18)", twoServed, map[string]*cluster.ObjectsCheck{"v1": {Listed: 3,
			Unreadable: []cluster.ObjectProblem{{Object: "default/nodown1", Message: "conversion webhook failed"}}}}, nil,
			"v1>v2>v2", "unknown for objects that could not be measured", 0},
		{"webhook: the round trip through the version read at", webhookServed,
			map[string]*cluster.ObjectsCheck{"v1": {Listed: 2}}, nil, "v1>v1>v2+new", "", 1},
		{"hidden: managedFields record a field that no read shows", twoServed, map[string]*cluster.ObjectsCheck{"v1": {Listed: 1,
			RecordedMissing: []cluster.ObjectLoss{{Object: "default/a", Paths: []string{".spec.color"}}}}}, nil,
			"v1>v2>v2", "loses data that no read shows", 0},
		{"unknown: webhook conversion from an unserved version", webhookUnserved,
			map[string]*cluster.ObjectsCheck{"v2": {Listed: 2}}, nil, "v2>v2>v2+new", "unknown for objects stored at v1", 0},
		{"no object at all: the unserved version holds none", webhookUnserved, nil, nil, "v2>v2>v2+new", "", 1},
		{"objects that cannot be listed are unknown (B18)", twoServed,
			map[string]*cluster.ObjectsCheck{"v1": {ListError: "forbidden"}}, nil, "v1>v2>v2", "cannot be listed at v1: forbidden", 0},
		{"storage version not served", storageUnserved, nil, nil, "", "not served", 0},
		{"error from the API server", twoServed, nil, broken, "v1>v2>v2", "connection refused", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeChecker{answers: tt.answers, err: tt.err}
			m, err := Measure(context.Background(), f, tt.crd, Options{})
			if got := strings.Join(f.asked, ","); got != tt.asked {
				t.Errorf("checked %q, want %q", got, tt.asked)
			}
			if tt.wantErr != "" {
				text := ""
				if r := (*lifecycle.RefusalError)(nil); errors.As(err, &r) {
					text = strings.Join(r.Details, "\n")
				}
				if err == nil || !strings.Contains(err.Error()+"\n"+text, tt.wantErr) {
					t.Fatalf("error %v (%s), want one containing %q", err, text, tt.wantErr)
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
			if len(m.Warnings) > 0 {
				t.Errorf("warnings %q", m.Warnings)
			}
		})
	}
}

// TestMeasureReportsWhatTheRewriteSets: the paths a rewrite sets or whose
// nulls it drops are counted per path, and the objects whose generation
// changes, in the pass (text and JSON of migrate).
func TestMeasureReportsWhatTheRewriteSets(t *testing.T) {
	crd := crdtest.New("widgets.example.com").Version("v1", crdtest.Served).
		Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").CRD()
	f := &fakeChecker{answers: map[string]*cluster.ObjectsCheck{"v1": {Listed: 2,
		Set:               []cluster.ObjectLoss{{Object: "default/a", Paths: []string{".spec.mode", ".spec.paused"}}, {Object: "default/b", Paths: []string{".spec.mode"}}},
		NullsDropped:      []cluster.ObjectLoss{{Object: "default/b", Paths: []string{".spec.opt"}}},
		GenerationChanged: []string{"default/a", "default/b"}}}}
	m, err := Measure(context.Background(), f, crd, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := m.Passes[0]
	if len(p.Set) != 2 || p.Set[0].Path != ".spec.mode" || p.Set[0].Objects != 2 || p.Set[1].Path != ".spec.paused" || p.Set[1].Objects != 1 ||
		len(p.NullsDropped) != 1 || p.NullsDropped[0].Objects != 1 || p.GenerationChanged != 2 || p.Through != "v2" {
		t.Errorf("pass %+v", p)
	}
}

// TestMeasureFollowsTheRunsPath: validity at the storage version is checked
// (a dry-run create, "+new") whenever a stored version differs from it —
// whoever switched the storage version (B14) — and the dry runs take the
// path of the run's writes: the preferred version of the server engine's
// controller under None; under a webhook a conversion to it that no read
// can be compared with is unknown (B23).
func TestMeasureFollowsTheRunsPath(t *testing.T) {
	schemas := func(b *crdtest.Builder) *crdtest.Builder {
		return b.Version("v1", crdtest.Served, crdtest.Fields("count")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("count", "mode")).
			Version("v3", crdtest.Served, crdtest.Fields("count", "mode")).Stored("v1", "v2")
	}
	none := schemas(crdtest.New("widgets.example.com")).CRD()
	webhook := schemas(crdtest.New("widgets.example.com")).WebhookURL("https://conv.example.com", nil).CRD()
	same := crdtest.New("widgets.example.com").EachVersion(crdtest.Fields("count")).Version("v1", crdtest.Served).
		Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").CRD()
	invalid := map[string]*cluster.ObjectsCheck{"v1": {Listed: 3, InvalidAsNew: []cluster.ObjectProblem{{Object: "default/a", Message: "spec.count: Invalid value"}}}}
	tests := []struct {
		name    string
		crd     *apiextensionsv1.CustomResourceDefinition
		writes  string
		answers map[string]*cluster.ObjectsCheck
		asked   string
		wantErr string
		warning string
	}{
		{"same schemas under None: updates only", same, "", nil, "v1>v2>v2", "", ""},
		{"schemas differ: validity at the storage version too (B14)", none, "", invalid, "v1>v2>v2+new", "", "1 object(s) read at v1 are invalid at v2 as new objects"},
		{"server engine under None: through the preferred version (B23)", none, "v3", nil, "v1>v3>v2+new", "", ""},
		{"server engine under a webhook through the version read at", webhook, "v1", nil, "v1>v1>v2+new", "", ""},
		{"server engine under a webhook through the storage version", webhook, "v2", nil, "v1>v1>v2+new", "", ""},
		{"server engine under a webhook through another version: unknown (B23)", webhook, "v3", nil, "", "the run writes them through v3", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeChecker{answers: tt.answers}
			m, err := Measure(context.Background(), f, tt.crd, Options{WritesThrough: tt.writes})
			if got := strings.Join(f.asked, ","); got != tt.asked {
				t.Errorf("checked %q, want %q", got, tt.asked)
			}
			if tt.wantErr != "" {
				var r *lifecycle.RefusalError
				if !errors.As(err, &r) || !strings.Contains(strings.Join(r.Details, "\n"), tt.wantErr) {
					t.Fatalf("error %v, want a refusal naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(m.Warnings, "\n")
			if tt.warning == "" && got != "" || !strings.Contains(got, tt.warning) {
				t.Errorf("warnings %q, want %q", got, tt.warning)
			}
			want := 0
			if a := tt.answers["v1"]; a != nil {
				want = len(a.InvalidAsNew)
			}
			if m.Passes[0].InvalidAtStorage != want {
				t.Errorf("pass counts %d invalid, want %d", m.Passes[0].InvalidAtStorage, want)
			}
		})
	}
}

// TestMeasureReadsAtClaimedVersions: a status.storedVersions trimmed by
// hand claims that nothing is stored at v1; retire passes v1 to be read
// anyway while it is served (B24), so that an object still stored there
// is compared with what the rewrite keeps of it.
func TestMeasureReadsAtClaimedVersions(t *testing.T) {
	served := crdtest.New("widgets.example.com").Version("v1", crdtest.Served).
		Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD()
	unserved := crdtest.New("widgets.example.com").Version("v1").
		Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").WebhookURL("https://conv.example.com", nil).CRD()
	for _, tt := range []struct {
		name   string
		crd    *apiextensionsv1.CustomResourceDefinition
		stored []string
		asked  string
	}{
		{"claimed, served: read there", served, []string{"v1"}, "v1>v2>v2"},
		{"not asked: the claim stands", served, nil, "v2>v2>v2"},
		{"not in spec.versions", served, []string{"v0"}, "v2>v2>v2"},
		{"unserved: cannot be read, not refused", unserved, []string{"v1"}, "v2>v2>v2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeChecker{}
			if _, err := Measure(context.Background(), f, tt.crd, Options{Stored: tt.stored}); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(f.asked, ","); got != tt.asked {
				t.Errorf("checked %q, want %q", got, tt.asked)
			}
		})
	}
}

// TestMeasureAcceptsNamedPaths (B19): --allow-pruning=PATHS accepts losing
// those paths and what is under them; the measurement still runs and
// refuses every other loss, which no longer hides behind "and N more".
func TestMeasureAcceptsNamedPaths(t *testing.T) {
	crd := crdtest.New("widgets.example.com").Version("v1", crdtest.Served).
		Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").CRD()
	answer := func() map[string]*cluster.ObjectsCheck {
		return map[string]*cluster.ObjectsCheck{"v1": {Listed: 3,
			Lost: []cluster.ObjectLoss{{Object: "default/a", Paths: []string{".spec.hostPort"}},
				{Object: "default/b", Paths: []string{".spec.hostPort", ".spec.ports[0].name"}}},
			Changed: []cluster.ObjectLoss{{Object: "default/c", Paths: []string{".spec.ports[1].port"}}}}}
	}
	_, err := Measure(context.Background(), &fakeChecker{answers: answer()}, crd, Options{Accepted: []string{".spec.hostPort"}})
	var r *lifecycle.RefusalError
	if !errors.As(err, &r) || !strings.Contains(strings.Join(r.Details, "\n"), "default/b: .spec.ports[0].name") ||
		strings.Contains(strings.Join(r.Details, "\n"), "hostPort") || !strings.Contains(strings.Join(r.Details, "\n"), "default/c: .spec.ports[1].port") {
		t.Fatalf("accepting .spec.hostPort: %v (%+v), want a refusal naming the ports only", err, r)
	}
	// The way out accepts what was accepted and what the refusal names,
	// each path once, nothing more (never the bare flag, which turns the
	// measurement off), indexes as the schemas' prediction writes them,
	// quoted for the shell (a trial pasted it unquoted: bash globbed it).
	if want := "'--allow-pruning=.spec.hostPort,.spec.ports[*].name,.spec.ports[*].port' (every other loss still refuses)"; !strings.HasSuffix(r.WayOut, want) {
		t.Errorf("way out %q, want it to end in %q", r.WayOut, want)
	}
	// A path that accepts nothing (.spec.host, a prefix of a name, not
	// the field) is not repeated in the way out, and the refusal says so.
	_, err = Measure(context.Background(), &fakeChecker{answers: answer()}, crd, Options{Accepted: []string{".spec.hostPort", ".spec.host"}})
	if !errors.As(err, &r) || !strings.Contains(r.WayOut, "'--allow-pruning=.spec.hostPort,.spec.ports[*].name,.spec.ports[*].port' (every other loss still refuses); --allow-pruning path(s) .spec.host matched nothing and are left out") {
		t.Errorf("with a path that accepts nothing: %v", err)
	}
	m, err := Measure(context.Background(), &fakeChecker{answers: answer()}, crd, Options{Accepted: []string{".spec.hostPort", ".spec.ports"}})
	if err != nil {
		t.Fatal(err)
	}
	p := m.Passes[0]
	if p.Lost != 0 || p.Changed != 0 || len(p.Accepted) != 3 || p.Accepted[0] != (result.PathCount{Path: ".spec.hostPort", Objects: 2}) ||
		len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], "accepted (--allow-pruning=.spec.hostPort,.spec.ports)") {
		t.Errorf("pass %+v, warnings %q", p, m.Warnings)
	}
}

// TestRefusalNamesEveryObject (issue 34): the refusal's text names ten
// objects and "and N more"; the Refusal behind it names every object with
// each of its paths, by version and object, for migrate -o json.
func TestRefusalNamesEveryObject(t *testing.T) {
	crd := crdtest.New("widgets.example.com").Version("v1", crdtest.Served).
		Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").CRD()
	found := &cluster.ObjectsCheck{Listed: 15, Changed: []cluster.ObjectLoss{{Object: "default/o00", Paths: []string{".spec.size"}}},
		RecordedMissing: []cluster.ObjectLoss{{Object: "default/o01", Paths: []string{".spec.legacy"}}}}
	for i := 14; i >= 0; i-- {
		found.Lost = append(found.Lost, cluster.ObjectLoss{Object: fmt.Sprintf("default/o%02d", i), Paths: []string{".spec.color"}})
	}
	_, err := Measure(context.Background(), &fakeChecker{answers: map[string]*cluster.ObjectsCheck{"v1": found}}, crd, Options{})
	var r *Refusal
	if !errors.As(err, &r) {
		t.Fatalf("error %v is not a Refusal", err)
	}
	if !strings.Contains(strings.Join(r.Details, "\n"), "and 5 more") {
		t.Errorf("the text does not stop at ten objects: %q", r.Details)
	}
	if len(r.Objects) != 15 {
		t.Fatalf("%d objects, want 15: %+v", len(r.Objects), r.Objects)
	}
	for i, o := range r.Objects {
		if o.Object != fmt.Sprintf("default/o%02d", i) || o.Version != "v1" || !slices.Equal(o.Dropped, []string{".spec.color"}) {
			t.Errorf("object %d: %+v", i, o)
		}
	}
	if !slices.Equal(r.Objects[0].Changed, []string{".spec.size"}) || !slices.Equal(r.Objects[1].Hidden, []string{".spec.legacy"}) {
		t.Errorf("changed or hidden paths missing: %+v %+v", r.Objects[0], r.Objects[1])
	}
	if rep := r.Report(); len(rep.Objects) != 15 || rep.Reason != r.Reason {
		t.Errorf("report %+v", rep)
	}
}

// TestMeasureUnderAWebhookAlsoWritesThroughTheStorageVersion (trial): under
// Webhook conversion the dry runs go through the stored version (the round
// trip), while the run writes through the storage version; a policy that
// matches only requests of the storage version changed values and dropped
// labels behind "0 losing a field". With anything acting on the update the
// objects are also read at the storage version and dry-run written
// through it; with nothing, not.
func TestMeasureUnderAWebhookAlsoWritesThroughTheStorageVersion(t *testing.T) {
	crd := crdtest.New("widgets.example.com").Version("v1", crdtest.Served).
		Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").WebhookURL("https://conv.example.com", nil).CRD()
	exact := references.AdmissionRule{Kind: "MutatingAdmissionPolicy", Name: "p", MatchPolicy: "Exact",
		APIGroups: []string{"example.com"}, APIVersions: []string{"v2"}, Resources: []string{"widgets"}, Operations: []string{"UPDATE"}}
	for _, tc := range []struct {
		name  string
		rules []references.AdmissionRule
		asked string
	}{
		{"nothing acts on the update: the round trip alone", nil, "v1>v1>v2+new"},
		{"a policy on UPDATE at the storage version: its path too", []references.AdmissionRule{exact}, "v1>v1>v2+new,v2>v2>v2+new"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeChecker{rules: tc.rules}
			if _, err := Measure(context.Background(), f, crd, Options{}); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(f.asked, ","); got != tc.asked {
				t.Errorf("checked %q, want %q", got, tc.asked)
			}
		})
	}
}

// TestUnmatched (trial): an --allow-pruning path that matches nothing was
// taken silently; Unmatched names the paths no accepted loss lies under.
func TestUnmatched(t *testing.T) {
	took := []cluster.ObjectLoss{{Object: "default/a", Paths: []string{".spec.ports[2].name", ".metadata.labels.legacy"}}}
	for _, tc := range []struct {
		accepted []string
		want     []string
	}{
		{nil, nil},
		{[]string{".spec.ports[*]", ".metadata.labels"}, nil},
		{[]string{".spec.ports[*].name", ".spec.imgae", ".metadata.labels.legacy"}, []string{".spec.imgae"}},
		{[]string{".spec.port"}, []string{".spec.port"}}, // a prefix of a name is not the field
	} {
		if got := Unmatched(tc.accepted, took); !slices.Equal(got, tc.want) {
			t.Errorf("Unmatched(%q) = %q, want %q", tc.accepted, got, tc.want)
		}
	}
}
