package action

import (
	"strings"
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/loss"
	"github.com/crdversion/kubectl-crdversion/internal/migrate/result"
)

// TestMeasuredCheckRoundTripUnknown (issue 34, unknown is not pass): under
// Webhook conversion a round trip this client could not make (a webhook
// behind a Service whose endpoints it cannot reach, a URL it cannot call)
// leaves values the webhook changes on the way back unseen. The check
// fails, naming why and the ways on; --allow-pruning makes it a warning; a
// round trip made passes.
func TestMeasuredCheckRoundTripUnknown(t *testing.T) {
	found := &cluster.ObjectsCheck{From: "v1", To: "v2", Listed: 3, Validated: 3}
	for _, tc := range []struct {
		name         string
		roundTrip    string
		allowPruning bool
		outcome      edit.Outcome
		says         []string
	}{
		{"round trip made", "", false, edit.Pass, []string{"sent back to v1 through the webhook by this client and compared whole"}},
		{"round trip unknown", "the webhook could not be called from this client: the endpoint 10.0.0.7:8443 is not reachable from this client", false, edit.Fail,
			[]string{"round trip back to v1 is NOT MEASURED", "10.0.0.7:8443 is not reachable", "inside the cluster network", "or pass --allow-pruning"}},
		{"round trip unknown, accepted", "the webhook could not be called from this client: refused", true, edit.Warn,
			[]string{"NOT MEASURED", "; --allow-pruning"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &loss.Promotion{From: "v1", Found: found, Design: result.DesignDryRun, DryRunBecause: "Webhook conversion", Webhook: true, RoundTrip: tc.roundTrip}
			c := measuredCheck(p, tc.allowPruning)
			if c.Outcome != tc.outcome {
				t.Errorf("outcome %s, want %s: %s", c.Outcome, tc.outcome, c.Message)
			}
			for _, want := range tc.says {
				if !strings.Contains(c.Message, want) {
					t.Errorf("message lacks %q: %s", want, c.Message)
				}
			}
		})
	}
}

// TestUnmatchedPruning: the paths of --allow-pruning that accept nothing —
// no object loses or changes a field under them, conversion None prunes
// none there — are named in a warning; a path that accepts a predicted
// pruning only is not.
func TestUnmatchedPruning(t *testing.T) {
	crd := crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("a", "b")).
		Version("v2", crdtest.Served, crdtest.Fields("a")).Stored("v1").CRD()
	found := &cluster.ObjectsCheck{From: "v1", To: "v2", Changed: []cluster.ObjectLoss{{Object: "default/x", Paths: []string{".spec.a"}}}}
	for _, tc := range []struct {
		pruning edit.Pruning
		want    string
	}{
		{edit.Pruning{All: true}, ""},
		{edit.Pruning{Paths: []string{".spec.a", ".spec.b"}}, ""},
		{edit.Pruning{Paths: []string{".spec.a", ".spec.c", ".status"}}, "--allow-pruning path(s) .spec.c, .status match nothing"},
	} {
		c := unmatchedPruning(crd, "v2", found, tc.pruning)
		if (c == nil) != (tc.want == "") || c != nil && (c.Outcome != edit.Warn || !strings.Contains(c.Message, tc.want)) {
			t.Errorf("%+v: %+v, want %q", tc.pruning, c, tc.want)
		}
	}
}
