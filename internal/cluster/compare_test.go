package cluster

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestCompareObjects(t *testing.T) {
	obj := func(s string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, tc := range []struct {
		name          string
		before, after string
		want          Changes
	}{
		{"identical but for apiVersion and server-set metadata",
			`{"apiVersion":"g/v1","metadata":{"name":"a","resourceVersion":"1","managedFields":[{"manager":"x"}],"generation":1},"spec":{"size":5}}`,
			`{"apiVersion":"g/v2","metadata":{"name":"a","resourceVersion":"2","generation":1},"spec":{"size":5.0}}`, Changes{}},
		{"a pruned field (B15)",
			`{"spec":{"size":5,"legacy":"precious"}}`, `{"spec":{"size":5}}`, Changes{Dropped: []string{".spec.legacy"}}},
		{"a changed value (B17)",
			`{"spec":{"size":5}}`, `{"spec":{"size":0}}`, Changes{Changed: []string{".spec.size"}}},
		{"labels and annotations a webhook dropped (B16)",
			`{"metadata":{"labels":{"legacy":"x","app":"a"},"annotations":{"example.com/note":"n"}}}`,
			`{"metadata":{"labels":{"app":"a"}}}`,
			Changes{Dropped: []string{`.metadata.annotations`, ".metadata.labels.legacy"}}},
		{"defaults, a dropped null and generation (B11)",
			`{"metadata":{"generation":1},"spec":{"opt":null}}`,
			`{"metadata":{"generation":2},"spec":{"mode":"fast","paused":false}}`,
			Changes{Set: []string{".spec.mode", ".spec.paused"}, NullsDropped: []string{".spec.opt"}, GenerationChanged: true}},
		{"a null that became a value",
			`{"spec":{"opt":null}}`, `{"spec":{"opt":"x"}}`, Changes{Set: []string{".spec.opt"}}},
		{"a null in a list that became a value: set, as in a map",
			`{"spec":{"l":[null,"a"]}}`, `{"spec":{"l":["x","a"]}}`, Changes{Set: []string{".spec.l[0]"}}},
		{"inside an atomic list (B10)",
			`{"spec":{"items":[{"name":"a","extra":"E1"},{"name":"b"}]}}`,
			`{"spec":{"items":[{"name":"a"}]}}`,
			Changes{Dropped: []string{".spec.items[0].extra", ".spec.items[1]"}}},
		{"a list that grew", `{"spec":{"l":[1]}}`, `{"spec":{"l":[1,2]}}`, Changes{Set: []string{".spec.l[1]"}}},
		{"a kind that changed", `{"spec":{"m":{"a":1}}}`, `{"spec":{"m":"a=1"}}`, Changes{Changed: []string{".spec.m"}}},
		{"keys that are not plain names",
			`{"metadata":{"annotations":{"a/b":"1"}}}`, `{"metadata":{"annotations":{"a/b":"2"}}}`,
			Changes{Changed: []string{`.metadata.annotations["a/b"]`}}},
		{"status too", `{"status":{"ready":true}}`, `{}`, Changes{Dropped: []string{".status"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CompareObjects(obj(tc.before), obj(tc.after))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
			if got.Loses() != (len(tc.want.Dropped)+len(tc.want.Changed) > 0) {
				t.Errorf("Loses() = %v", got.Loses())
			}
		})
	}
}

// TestCompareObjectsNumbers: integers are compared exactly, also above
// 2^53 where float64 cannot tell neighbours apart; an integer and a float
// are the same number only when the float is exactly that integer (client
// decoding gives int64 for integral JSON numbers, float64 for the rest).
func TestCompareObjectsNumbers(t *testing.T) {
	const big = int64(1)<<53 + 1
	for _, tc := range []struct {
		name          string
		before, after any
		changed       bool
	}{
		{"equal integers", int64(5), int64(5), false},
		{"integers above 2^53 one apart", big, big - 1, true},
		{"an integer above 2^53 and its nearest float", big, float64(big), true},
		{"an integer and the same float", int64(2), 2.0, false},
		{"a float and the same integer", 2.0, int64(2), false},
		{"an integer and a fraction", int64(2), 2.5, true},
		{"Go ints", 3, int64(3), false},
		{"floats", 0.1, 0.1, false},
	} {
		got := CompareObjects(map[string]any{"spec": map[string]any{"n": tc.before}}, map[string]any{"spec": map[string]any{"n": tc.after}})
		if changed := len(got.Changed) > 0; changed != tc.changed {
			t.Errorf("%s: %v -> %v: changes %+v, want changed %v", tc.name, tc.before, tc.after, got, tc.changed)
		}
	}
}
