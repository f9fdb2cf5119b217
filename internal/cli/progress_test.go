package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/crdversion/kubectl-crdversion/internal/migrate"
	"github.com/crdversion/kubectl-crdversion/internal/view"
)

// TestLabelledProgressBar: promote-storage's object check draws migrate's
// bar under its own label, with the count and the rate (redrawn at most
// ten times a second, so the first state is what a test sees).
func TestLabelledProgressBar(t *testing.T) {
	var out bytes.Buffer
	update, stop := view.LabelledProgressBar(&out, "checking the objects of widgets.example.com at v2")
	update(migrate.Progress{Done: 1, Total: 4})
	update(migrate.Progress{Done: 4, Total: 4})
	got := out.String()
	stop()
	for _, want := range []string{"checking the objects of widgets.example.com at v2", "/4,", " objects/"} {
		if !strings.Contains(got, want) {
			t.Errorf("the bar does not show %q:\n%q", want, got)
		}
	}
}

// TestWaitProgress: the usage check's wait shows its label and window at
// once (a 15 s wait otherwise looks like a hang), and is cleared when it
// ends; ending it twice is harmless.
func TestWaitProgress(t *testing.T) {
	var out bytes.Buffer
	done := waitProgress(&out, 15*time.Second)(15 * time.Second)
	drawn := out.String()
	done()
	done()
	if want := "counting requests between the two reads of /metrics (--usage-window 15s)"; !strings.Contains(drawn, want) {
		t.Errorf("the wait does not show %q:\n%q", want, drawn)
	}
	if cleared := out.String()[len(drawn):]; !strings.Contains(cleared, "\r") {
		t.Errorf("the wait's line is not cleared at its end: %q", cleared)
	}
}
