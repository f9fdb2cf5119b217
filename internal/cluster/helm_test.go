package cluster

import (
	"testing"
)

// TestCurrentRecord: the record helm upgrade reads as current — the
// latest revision when it is deployed, else the latest deployed one,
// else the latest (helm.sh/helm/v4 action.Upgrade).
func TestCurrentRecord(t *testing.T) {
	type rec struct {
		rev    int
		status string
	}
	at := func(r rec) (int, string) { return r.rev, r.status }
	for _, tc := range []struct {
		name string
		recs []rec
		want int
	}{
		{"latest deployed", []rec{{1, "superseded"}, {3, "deployed"}, {2, "superseded"}}, 3},
		{"a failed upgrade after the deployed one", []rec{{1, "superseded"}, {2, "deployed"}, {3, "failed"}}, 2},
		{"two deployed (a concurrent upgrade): the later", []rec{{2, "deployed"}, {1, "deployed"}}, 2},
		{"none deployed", []rec{{1, "failed"}, {2, "pending-upgrade"}}, 2},
		{"only one", []rec{{1, "uninstalling"}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.recs[currentRecord(tc.recs, at)].rev; got != tc.want {
				t.Errorf("current revision %d, want %d", got, tc.want)
			}
		})
	}
}
