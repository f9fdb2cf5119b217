package loss

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
)

// itemsSchema is a spec with an atomic list of objects, items, whose
// elements declare name, and extra too when wide.
func itemsSchema(t *testing.T, wide bool) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	extra := ""
	if wide {
		extra = ", extra: {type: string}"
	}
	var s apiextensionsv1.JSONSchemaProps
	if err := yaml.Unmarshal([]byte(`{type: object, properties: {spec: {type: object, properties: {
  items: {type: array, items: {type: object, properties: {name: {type: string}`+extra+`}}},
  raw: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}}`), &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// TestMeasureJudgesDataRecordedAsAWhole is B10's verdicts: data inside an
// atomic list or map hides a field pruned on read only if the schema of
// the version it is stored at was wider when it was last written — which
// the CRD as it was then (its history) answers, and nothing else does.
func TestMeasureJudgesDataRecordedAsAWhole(t *testing.T) {
	// Each state of the CRD was written at its resourceVersion's minute
	// of the day (by its managedFields' time).
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at := func(rv string) time.Time {
		n, _ := strconv.Atoi(rv)
		return day.Add(time.Duration(n) * time.Minute)
	}
	crdAt := func(wide bool, rv string, generation int64) *apiextensionsv1.CustomResourceDefinition {
		crd := crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Schema(itemsSchema(t, wide))).
			Version("v2", crdtest.Served, crdtest.Storage, crdtest.Schema(itemsSchema(t, true))).Stored("v1", "v2").CRD()
		crd.ResourceVersion, crd.Generation = rv, generation
		crd.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "helm", Time: &metav1.Time{Time: at(rv)}}}
		return crd
	}
	narrowed := crdAt(false, "100", 3) // v1 narrowed at some revision before 100
	// written is o1 written at rv, after from rv's minute (0: no time
	// recorded).
	written := func(rv string, after time.Duration, paths ...string) map[string]*cluster.ObjectsCheck {
		w := cluster.ObjectWrite{Object: "default/o1", ResourceVersion: rv, Paths: paths}
		if after != 0 {
			w.WrittenAt = at(rv).Add(after)
		}
		return map[string]*cluster.ObjectsCheck{"v1": {Listed: 1, WholeRecorded: []cluster.ObjectWrite{w}}}
	}
	later := 2 * ApplyLag
	compacted := apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, "", errors.New("no list"))
	for _, tc := range []struct {
		name       string
		crd        *apiextensionsv1.CustomResourceDefinition
		answers    map[string]*cluster.ObjectsCheck
		history    map[string]*apiextensionsv1.CustomResourceDefinition
		historyErr error
		accepted   []string
		wantErr    string // "" for a measurement
		wantAsked  []string
	}{
		{"written wide, narrowed since: hidden", narrowed, written("40", later, ".spec.items"),
			map[string]*apiextensionsv1.CustomResourceDefinition{"40": crdAt(true, "30", 2)}, nil, nil,
			"default/o1: .spec.items[*].extra", []string{"40"}},
		{"written under today's schemas: nothing hidden", narrowed, written("60", later, ".spec.items"),
			map[string]*apiextensionsv1.CustomResourceDefinition{"60": crdAt(false, "50", 2)}, nil, nil, "", []string{"60"}},
		{"written well after the CRD's last write: not asked", narrowed, written("101", later, ".spec.items"), nil, nil, nil, "", nil},
		{"written right after a narrowing, which the API server may not have applied yet: hidden", narrowed, written("101", 10*time.Second-time.Minute, ".spec.items"),
			map[string]*apiextensionsv1.CustomResourceDefinition{"99": crdAt(true, "90", 2)}, nil, nil,
			"default/o1: .spec.items[*].extra", []string{"99"}},
		{"no time of writing: every state back to the CRD's first", narrowed, written("40", 0, ".spec.items"),
			map[string]*apiextensionsv1.CustomResourceDefinition{"40": crdAt(false, "30", 2), "29": crdAt(true, "10", 1)}, nil, nil,
			"default/o1: .spec.items[*].extra", []string{"40", "29"}},
		{"a CRD never changed: not asked", crdAt(false, "100", 1), written("40", later, ".spec.items"), nil, nil, nil, "", nil},
		{"a subtree no schema closes: not asked", narrowed, written("40", later, ".spec.raw"), nil, nil, nil, "", nil},
		{"history compacted: unknown", narrowed, written("40", later, ".spec.items"), nil, compacted, nil,
			"etcd no longer keeps the CRD as it was then (compacted); if no schema", []string{"40"}},
		{"history forbidden: unknown", narrowed, written("40", later, ".spec.items"), nil, forbidden, nil,
			"cannot be read: customresourcedefinitions.apiextensions.k8s.io is forbidden", []string{"40"}},
		{"unknown, accepted by path", narrowed, written("40", later, ".spec.items"), nil, compacted, []string{".spec.items"}, "", []string{"40"}},
		{"hidden, accepted by path", narrowed, written("40", later, ".spec.items"),
			map[string]*apiextensionsv1.CustomResourceDefinition{"40": crdAt(true, "30", 2)}, nil, []string{".spec.items[*].extra"}, "", []string{"40"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeChecker{answers: tc.answers, history: tc.history, historyErr: tc.historyErr}
			_, err := Measure(context.Background(), f, tc.crd, Options{Accepted: tc.accepted})
			if !slices.Equal(f.historyAsked, tc.wantAsked) {
				t.Errorf("read the CRD at revisions %q, want %q", f.historyAsked, tc.wantAsked)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var r *Refusal
			if !errors.As(err, &r) {
				t.Fatalf("error %v, want a refusal", err)
			}
			if text := strings.Join(r.Details, "\n"); !strings.Contains(text, tc.wantErr) {
				t.Errorf("refusal %q, want %q in it", text, tc.wantErr)
			}
			if len(r.Objects) != 1 || r.Objects[0].Object != "default/o1" {
				t.Errorf("objects %+v, want default/o1", r.Objects)
			}
		})
	}
}

// TestCRDHistoryReadsOncePerState: one read of the CRD at a revision
// answers for every object written between the CRD's last change before
// it and that revision.
func TestCRDHistoryReadsOncePerState(t *testing.T) {
	crd := crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Schema(itemsSchema(t, false))).Stored("v1").CRD()
	crd.ResourceVersion, crd.Generation = "100", 3
	changed := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	old := crd.DeepCopy()
	old.ResourceVersion, old.ManagedFields = "20", []metav1.ManagedFieldsEntry{{Manager: "helm", Time: &metav1.Time{Time: changed}}}
	f := &fakeChecker{history: map[string]*apiextensionsv1.CustomResourceDefinition{"90": old, "10": old}}
	var writes []cluster.ObjectWrite
	for _, rv := range []string{"30", "90", "50", "21", "10"} {
		writes = append(writes, cluster.ObjectWrite{Object: "default/o" + rv, ResourceVersion: rv, WrittenAt: changed.Add(2 * ApplyLag), Paths: []string{".spec.items"}})
	}
	h := &crdHistory{h: f, name: crd.Name}
	if _, err := judgeWhole(context.Background(), h, crd, crd.Status.StoredVersions, writes); err != nil {
		t.Fatal(err)
	}
	if want := []string{"90", "10"}; !slices.Equal(f.historyAsked, want) {
		t.Errorf("read the CRD at %q, want %q (90 answers for 21 to 90)", f.historyAsked, want)
	}
}
