package cluster

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRecordedMissing(t *testing.T) {
	withFields := func(raw ...string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		var entries []metav1.ManagedFieldsEntry
		for _, r := range raw {
			entries = append(entries, metav1.ManagedFieldsEntry{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(r)})
		}
		u.SetManagedFields(entries)
		return u
	}
	spec := `{"f:spec":{".":{},"f:url":{},"f:licenseUrl":{},"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{}}},"f:tags":{"v:\"a\"":{}},"f:labels":{"f:team":{}}}}`
	for _, tc := range []struct {
		name         string
		u            *unstructured.Unstructured
		at           map[string]any
		within       []string
		want         []string
		wantRecorded bool
	}{
		{"a recorded field absent", withFields(spec), map[string]any{"spec": map[string]any{"url": "x"}}, []string{".spec.licenseUrl"}, []string{".spec.licenseUrl"}, true},
		{"a recorded field present", withFields(spec), map[string]any{"spec": map[string]any{"licenseUrl": "x"}}, []string{".spec.licenseUrl"}, nil, true},
		{"under a predicted parent", withFields(spec), map[string]any{}, []string{".spec"}, []string{".spec.labels.team", ".spec.licenseUrl", ".spec.ports[*].name", ".spec.tags[*]", ".spec.url"}, true},
		{"map values", withFields(spec), map[string]any{"spec": map[string]any{"labels": map[string]any{}}}, []string{".spec.labels.*"}, []string{".spec.labels.team"}, true},
		{"keyed list element present", withFields(spec), map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80), "protocol": "TCP", "name": "http"}}}}, []string{".spec.ports[*].name"}, nil, true},
		{"keyed list element without the field", withFields(spec), map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": float64(80), "protocol": "TCP"}}}}, []string{".spec.ports[*].name"}, []string{".spec.ports[*].name"}, true},
		{"set element", withFields(spec), map[string]any{"spec": map[string]any{"tags": []any{"b"}}}, []string{".spec.tags"}, []string{".spec.tags[*]"}, true},
		{"not under any prediction", withFields(spec), map[string]any{}, []string{".status"}, nil, true},
		{"no managedFields", withFields(), map[string]any{}, []string{".spec"}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, recorded := RecordedMissing(tc.u, tc.at, tc.within)
			if !slices.Equal(got, tc.want) || recorded != tc.wantRecorded {
				t.Errorf("RecordedMissing = %q, %v; want %q, %v", got, recorded, tc.want, tc.wantRecorded)
			}
		})
	}
}

func TestWholeRecorded(t *testing.T) {
	entry := func(apiVersion, raw string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: apiVersion, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(raw)}
	}
	// items is an atomic list, cfg an atomic map, names an atomic list of
	// strings, ports a keyed list whose elements hold an atomic map.
	fields := `{"f:metadata":{"f:labels":{}},"f:spec":{"f:other":{},"f:items":{},"f:cfg":{},"f:empty":{},"f:names":{},"f:ports":{"k:{\"port\":80}":{".":{},"f:port":{},"f:opts":{}}}}}`
	obj := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"a": "b"}},
		"spec": map[string]any{
			"other": "x",
			"items": []any{map[string]any{"name": "a"}},
			"cfg":   map[string]any{"a": "1"},
			"empty": map[string]any{},
			"names": []any{"a", "b"},
			"ports": []any{map[string]any{"port": int64(80), "opts": map[string]any{"k": "v"}}},
		},
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetManagedFields([]metav1.ManagedFieldsEntry{entry("example.com/v1", fields), entry("example.com/v2", `{"f:spec":{"f:renamed":{}}}`)})
	want := []string{".spec.cfg", ".spec.empty", ".spec.items", ".spec.ports[*].opts"}
	if got := WholeRecorded(u, ""); !slices.Equal(got, want) {
		t.Errorf("WholeRecorded = %q, want %q (a map emptied by pruning too; not metadata, scalars or a list of strings)", got, want)
	}
	if got := WholeRecorded(u, "example.com/v2"); len(got) != 0 {
		t.Errorf("WholeRecorded through v2 = %q, want none (its entry names nothing the object holds)", got)
	}
}

func TestUnaccounted(t *testing.T) {
	obj := func() map[string]any {
		return map[string]any{
			"apiVersion": "example.com/v1", "kind": "Thing",
			"metadata": map[string]any{"name": "o", "labels": map[string]any{"x": "y"}},
			"spec": map[string]any{
				"image": "nginx",
				"ports": []any{map[string]any{"port": int64(80), "name": "http"}},
				"cfg":   map[string]any{"a": "1"},
				"mode":  "fast",
			},
			"status": map[string]any{"ready": true},
		}
	}
	with := func(raw ...string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: obj()}
		var entries []metav1.ManagedFieldsEntry
		for _, r := range raw {
			entries = append(entries, metav1.ManagedFieldsEntry{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(r)})
		}
		u.SetManagedFields(entries)
		return u
	}
	all := `{"f:spec":{"f:image":{},"f:ports":{"k:{\"port\":80}":{".":{},"f:port":{},"f:name":{}}},"f:cfg":{}}}`
	status := `{"f:status":{"f:ready":{}}}`
	for _, tc := range []struct {
		name      string
		u         *unstructured.Unstructured
		defaulted []string
		want      []string
	}{
		{"every value recorded, a default set on read", with(all, status), []string{".spec.mode"}, nil},
		{"an unrecorded default", with(all, status), nil, []string{".spec"}},
		{"status written by nobody recorded", with(all), []string{".spec.mode"}, []string{".status"}},
		{"rewritten to name one field", with(`{"f:spec":{"f:image":{}}}`, status), []string{".spec.mode"}, []string{".spec"}},
		{"a keyed element's field not recorded", with(`{"f:spec":{"f:image":{},"f:ports":{"k:{\"port\":80}":{".":{},"f:port":{}}},"f:cfg":{}}}`, status), []string{".spec.mode"}, []string{".spec"}},
		{"no managedFields", with(), []string{".spec.mode"}, []string{".spec", ".status"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Unaccounted(tc.u, tc.defaulted); !slices.Equal(got, tc.want) {
				t.Errorf("Unaccounted = %q, want %q", got, tc.want)
			}
		})
	}
}

// BenchmarkRecordedJudgements is the managedFields judgements of one
// object in the loss measurement's pass (compareFinding with Recorded): a
// CronTab written by two managers. "three parses" calls the exported
// functions, each parsing the entries; "one parse" is the pass's way.
// The ratio of the two is what sharing the parse saves per object.
func BenchmarkRecordedJudgements(b *testing.B) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "stable.example.com/v1", "kind": "CronTab",
		"metadata": map[string]any{"name": "c", "namespace": "default"},
		"spec": map[string]any{"cronSpec": "* * * * */5", "image": "my-cron-image", "replicas": int64(3),
			"ports": []any{map[string]any{"port": int64(80), "protocol": "TCP", "name": "http"}}, "tags": []any{"a", "b"}},
		"status": map[string]any{"lastRun": "2026-12-01T00:00:00Z"},
	}}
	u.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "stable.example.com/v1", FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:cronSpec":{},"f:image":{},"f:replicas":{},"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{}}},"f:tags":{}}}`)},
		{Manager: "controller", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "stable.example.com/v1", FieldsType: "FieldsV1", Subresource: "status",
			FieldsV1: metav1.NewFieldsV1(`{"f:status":{".":{},"f:lastRun":{}}}`)},
	})
	at := u.Object
	within := []string{".spec.image", ".spec.ports[*].name"}
	b.Run("three parses", func(b *testing.B) {
		for b.Loop() {
			RecordedMissingThrough(u, at, within, "")
			WholeRecorded(u, "")
			Unaccounted(u, nil)
		}
	})
	b.Run("one parse", func(b *testing.B) {
		for b.Loop() {
			entries := parseRecorded(u)
			recordedMissing(entries, u, at, within, "")
			wholeRecorded(entries, u, "")
			unaccounted(entries, u, nil)
		}
	})
}
