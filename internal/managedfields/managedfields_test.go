package managedfields

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func entry(manager string, op metav1.ManagedFieldsOperationType, version, sub, fields string, at int64) metav1.ManagedFieldsEntry {
	t := metav1.NewTime(time.Unix(at, 0))
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "stable.example.com/" + version,
		Subresource: sub, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields), Time: &t}
}

const (
	specA  = `{"f:spec":{"f:a":{}}}`
	specB  = `{"f:spec":{"f:b":{}}}`
	specAB = `{"f:spec":{"f:a":{},"f:b":{}}}`
	status = `{"f:status":{"f:ok":{}}}`
)

func TestRelabel(t *testing.T) {
	from, to := "stable.example.com/v1", "stable.example.com/v2"
	for _, tc := range []struct {
		name              string
		in, want          []metav1.ManagedFieldsEntry
		relabeled, merged int
	}{
		{name: "nothing stale",
			in:   []metav1.ManagedFieldsEntry{entry("ctrl", "Apply", "v2", "", specA, 1)},
			want: []metav1.ManagedFieldsEntry{entry("ctrl", "Apply", "v2", "", specA, 1)}},
		{name: "an applier and a status updater relabeled, order and times kept",
			in: []metav1.ManagedFieldsEntry{entry("ctrl", "Apply", "v1", "", specA, 1), entry("ctrl", "Update", "v1", "status", status, 2),
				entry("other", "Update", "v2", "", specB, 3)},
			want: []metav1.ManagedFieldsEntry{entry("ctrl", "Apply", "v2", "", specA, 1), entry("ctrl", "Update", "v2", "status", status, 2),
				entry("other", "Update", "v2", "", specB, 3)},
			relabeled: 2},
		{name: "an updater with entries at both versions is merged into one, the later time",
			in:     []metav1.ManagedFieldsEntry{entry("kubectl-edit", "Update", "v1", "", specA, 5), entry("kubectl-edit", "Update", "v2", "", specB, 4)},
			want:   []metav1.ManagedFieldsEntry{entry("kubectl-edit", "Update", "v2", "", specAB, 5)},
			merged: 1},
		{name: "same manager, other operation or subresource: not merged",
			in: []metav1.ManagedFieldsEntry{entry("m", "Update", "v1", "", specA, 1), entry("m", "Apply", "v2", "", specB, 1),
				entry("m", "Update", "v2", "status", status, 1)},
			want: []metav1.ManagedFieldsEntry{entry("m", "Update", "v2", "", specA, 1), entry("m", "Apply", "v2", "", specB, 1),
				entry("m", "Update", "v2", "status", status, 1)},
			relabeled: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := make([]metav1.ManagedFieldsEntry, len(tc.in))
			for i := range tc.in {
				in[i] = *tc.in[i].DeepCopy()
			}
			got, relabeled, merged, err := Relabel(in, from, to)
			if err != nil {
				t.Fatal(err)
			}
			if relabeled != tc.relabeled || merged != tc.merged {
				t.Errorf("relabeled %d merged %d, want %d %d", relabeled, merged, tc.relabeled, tc.merged)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d entries, want %d: %+v", len(got), len(tc.want), got)
			}
			for i := range got {
				g, w := got[i], tc.want[i]
				if g.Manager != w.Manager || g.Operation != w.Operation || g.APIVersion != w.APIVersion || g.Subresource != w.Subresource ||
					g.FieldsV1.GetRawString() != w.FieldsV1.GetRawString() || !g.Time.Equal(w.Time) {
					t.Errorf("entry %d:\n got %s %s %s %q %s %v\nwant %s %s %s %q %s %v", i,
						g.Manager, g.Operation, g.APIVersion, g.Subresource, g.FieldsV1.GetRawString(), g.Time,
						w.Manager, w.Operation, w.APIVersion, w.Subresource, w.FieldsV1.GetRawString(), w.Time)
				}
			}
			if Stale(got, from) {
				t.Error("an entry still names the old version")
			}
			if !Stale(tc.in, from) && tc.relabeled+tc.merged > 0 {
				t.Error("Stale missed the old version")
			}
			for i := range in {
				if in[i].APIVersion != tc.in[i].APIVersion {
					t.Error("Relabel changed its input")
				}
			}
		})
	}
	if _, _, _, err := Relabel([]metav1.ManagedFieldsEntry{entry("m", "Update", "v1", "", "{not json", 1), entry("m", "Update", "v2", "", specA, 1)}, from, to); err == nil {
		t.Error("a field set that does not parse was merged without error")
	}
}

func TestOwners(t *testing.T) {
	entries := []metav1.ManagedFieldsEntry{
		entry("installer", metav1.ManagedFieldsOperationApply, "v1", "", `{"f:spec":{"f:conversion":{"f:webhook":{"f:clientConfig":{"f:url":{}}}}}}`, 1),
		entry("cainjector", metav1.ManagedFieldsOperationUpdate, "v1", "", `{"f:spec":{"f:conversion":{"f:webhook":{"f:clientConfig":{"f:caBundle":{}}}}}}`, 2),
		entry("broken", metav1.ManagedFieldsOperationUpdate, "v1", "", `{"f:spec":`, 3),
		entry("status", metav1.ManagedFieldsOperationUpdate, "v1", "status", `{"f:status":{"f:storedVersions":{}}}`, 4),
	}
	for _, tc := range []struct {
		path []string
		want []string
	}{
		{[]string{"spec", "conversion", "webhook", "clientConfig", "caBundle"}, []string{"cainjector"}},
		{[]string{"spec", "conversion", "webhook", "clientConfig", "url"}, []string{"installer"}},
		{[]string{"spec", "conversion", "webhook", "clientConfig"}, nil},
		{[]string{"status", "storedVersions"}, []string{"status"}},
		{[]string{"spec", "group"}, nil},
	} {
		if got := Owners(entries, tc.path...); !slices.Equal(got, tc.want) {
			t.Errorf("Owners(%v) = %v, want %v", tc.path, got, tc.want)
		}
	}
}
