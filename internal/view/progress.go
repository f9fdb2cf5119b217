package view

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/crdversion/kubectl-crdversion/internal/migrate/result"
	"github.com/schollz/progressbar/v3"
)

// ProgressBar draws a bar with count, rate and ETA, redrawn at most ten
// times a second. The returned stop function clears it.
func ProgressBar(w io.Writer, name string) (func(result.Progress), func()) {
	return LabelledProgressBar(w, "migrating "+name)
}

// LabelledProgressBar is ProgressBar with label as its description
// ("checking the objects of NAME" for promote-storage's object preflight).
func LabelledProgressBar(w io.Writer, label string) (func(result.Progress), func()) {
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
	update := func(p result.Progress) {
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
func progressWhere(p result.Progress) string {
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
// count; it starts at phase. The returned stop function clears it.
func StatusLine(w io.Writer, name string, phase result.Phase) (func(phase result.Phase, message string), func()) {
	bar := progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("migrating "+name+": "+string(phase)),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionClearOnFinish(),
	)
	update := func(phase result.Phase, message string) {
		text := "migrating " + name + ": " + string(phase)
		if message != "" {
			text += " (" + message + ")"
		}
		bar.Describe(text)
	}
	return update, func() { _ = bar.Finish() }
}

// DoctorProgress draws a spinner with the objects counted so far while a
// list runs long enough to report progress, one per list: update gets the
// CRD and the version listed through, the objects so far, and done on the
// list's last report. A list that ends before its first report draws
// nothing. Each spinner is cleared when its list ends; stop clears the last.
func DoctorProgress(w io.Writer) (update func(crd, version string, objects int, done bool), stop func()) {
	var bar *progressbar.ProgressBar
	current := ""
	stop = func() {
		if bar != nil {
			_ = bar.Finish() // with OptionClearOnFinish: clears the line
			bar = nil
		}
	}
	update = func(crd, version string, objects int, done bool) {
		if key := crd + " at " + version; key != current {
			stop()
			current = key
		}
		if bar == nil {
			if done {
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
		_ = bar.Set(objects)
		if done {
			stop()
		}
	}
	return update, stop
}

// WaitProgress draws the wait of a usage check between its two reads of
// the API servers' /metrics: label, a bar that fills over the window and
// the time left, redrawn every 200ms. waiting starts one for a window;
// the function it returns clears it (call it however the wait ends).
func WaitProgress(w io.Writer, label string) (waiting func(window time.Duration) (done func())) {
	return func(window time.Duration) func() {
		bar := progressbar.NewOptions64(window.Milliseconds(),
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(label),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionSetRenderBlankState(true),
			progressbar.OptionClearOnFinish(),
		)
		start := time.Now()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					_ = bar.Set64(min(time.Since(start).Milliseconds(), window.Milliseconds()))
				}
			}
		})
		var once sync.Once
		return func() {
			once.Do(func() {
				close(stop)
				wg.Wait()
				_ = bar.Finish()
			})
		}
	}
}

// ResourceProgress draws the reference inventory's progress: label, the
// resources listed of their total, redrawn at most ten times a second.
// update is safe for concurrent use; stop clears the bar.
func ResourceProgress(w io.Writer, label string) (update func(done, total int), stop func()) {
	var mu sync.Mutex
	var bar *progressbar.ProgressBar
	update = func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		if bar == nil {
			bar = progressbar.NewOptions(total,
				progressbar.OptionSetWriter(w),
				progressbar.OptionSetDescription(label),
				progressbar.OptionShowCount(),
				progressbar.OptionSetItsString("resources"),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionClearOnFinish(),
			)
		}
		if total != bar.GetMax() {
			bar.ChangeMax(total)
		}
		_ = bar.Set(done)
	}
	stop = func() {
		mu.Lock()
		defer mu.Unlock()
		if bar != nil {
			_ = bar.Finish()
			bar = nil
		}
	}
	return update, stop
}
