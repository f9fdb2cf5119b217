package view

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/crdversion/kubectl-crdversion/internal/doctor"
	"github.com/crdversion/kubectl-crdversion/internal/migrate"
	"github.com/crdversion/kubectl-crdversion/internal/svm"
	"github.com/schollz/progressbar/v3"
)

// ProgressBar draws a bar with count, rate and ETA, redrawn at most ten
// times a second. The returned stop function clears it.
func ProgressBar(w io.Writer, name string) (func(migrate.Progress), func()) {
	return LabelledProgressBar(w, "migrating "+name)
}

// LabelledProgressBar is ProgressBar with label as its description
// ("checking the objects of NAME" for promote-storage's object preflight).
func LabelledProgressBar(w io.Writer, label string) (func(migrate.Progress), func()) {
	var mu sync.Mutex
	bar := progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(label),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("objects"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	var known int64 = -1
	var where string
	update := func(p migrate.Progress) {
		mu.Lock()
		defer mu.Unlock()
		done, total := p.Done, p.Total
		if w := progressWhere(p); w != where {
			where = w
			bar.Describe(label + where)
		}
		if total > 0 && total != known {
			known = total
			bar.ChangeMax64(total)
		}
		_ = bar.Set64(done)
	}
	return update, func() { _ = bar.Finish() }
}

// progressWhere is the part of the progress line that says where APF put
// the run and how many writes are in flight.
func progressWhere(p migrate.Progress) string {
	var parts []string
	switch {
	case p.Exempt:
		parts = append(parts, "exempt from APF")
	case p.PriorityLevel != "":
		parts = append(parts, "priority level "+p.PriorityLevel)
	}
	if p.Limit > 0 {
		parts = append(parts, fmt.Sprintf("%d in flight", p.Limit))
	}
	if p.TooManyRequests > 0 {
		parts = append(parts, fmt.Sprintf("%d×429", p.TooManyRequests))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// StatusLine draws a spinner with the elapsed time and the migration's
// phase and message, for a StorageVersionMigration, which reports no object
// count. The returned stop function clears it.
func StatusLine(w io.Writer, name string) (func(svm.Status), func()) {
	bar := progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("migrating "+name+": "+string(svm.Pending)),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionClearOnFinish(),
	)
	update := func(s svm.Status) {
		text := "migrating " + name + ": " + string(s.Phase)
		if s.Message != "" {
			text += " (" + s.Message + ")"
		}
		bar.Describe(text)
	}
	return update, func() { _ = bar.Finish() }
}

// DoctorProgress draws a spinner with the objects counted so far while a
// list runs long enough to report progress (doctor.Event), one per list;
// a list that ends before its first report draws nothing. Each spinner is
// cleared when its list ends; stop clears the last.
func DoctorProgress(w io.Writer) (func(doctor.Event), func()) {
	var bar *progressbar.ProgressBar
	current := ""
	stop := func() {
		if bar != nil {
			_ = bar.Finish() // with OptionClearOnFinish: clears the line
			bar = nil
		}
	}
	update := func(e doctor.Event) {
		if key := e.CRD + " at " + e.Version; key != current {
			stop()
			current = key
		}
		if bar == nil {
			if e.Done {
				return
			}
			bar = progressbar.NewOptions64(-1,
				progressbar.OptionSetWriter(w),
				progressbar.OptionSetDescription("checking "+current),
				progressbar.OptionSpinnerType(14),
				progressbar.OptionShowCount(),
				progressbar.OptionShowIts(),
				progressbar.OptionSetItsString("objects"),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionClearOnFinish(),
			)
		}
		_ = bar.Set(e.Objects)
		if e.Done {
			stop()
		}
	}
	return update, stop
}
