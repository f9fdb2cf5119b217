package migrate

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
)

// limiter bounds the writes in flight. The fixed one lets every worker
// write (Options.Concurrency workers); the adaptive one is failsafe-go's
// adaptive concurrency limiter (a gradient limiter: it raises the limit
// while the latency of recent writes stays near its baseline and lowers it
// when latency rises with the limit and throughput does not), capped so
// that the writes' recent p90 latency stays within Options.MaxLatency.
type limiter interface {
	// acquire blocks until a write may start; done ends it.
	acquire(ctx context.Context) (done func(), err error)
	// limit is the current limit of writes in flight.
	limit() int
}

type fixedLimiter int

func (fixedLimiter) acquire(context.Context) (func(), error) { return func() {}, nil }
func (f fixedLimiter) limit() int                            { return int(f) }

// The adaptive limiter's start and its windows. It starts at a few writes
// in flight, so a run does not open with a burst at full concurrency, and
// revises the limit every 50 ms (or every 20 writes, if slower), so that it
// settles within seconds.
const (
	adaptiveInitialLimit = 4
	adaptiveWindow       = 50 * time.Millisecond
	adaptiveWindowMax    = time.Second
	adaptiveMinSamples   = 20
	// budgetSamples is how many recent writes the budget's p90 is taken
	// over.
	budgetSamples = 64
)

type adaptiveLimiter struct {
	lim    adaptivelimiter.AdaptiveLimiter[any]
	budget time.Duration

	mu     sync.Mutex
	recent [budgetSamples]time.Duration
	n      int           // writes recorded so far
	floor  time.Duration // the lowest p50 of budgetSamples writes seen, 0 before
}

// newAdaptiveLimiter returns a limiter between 1 and most writes in flight
// whose writes' p90 latency stays within budget.
func newAdaptiveLimiter(most int, budget time.Duration) *adaptiveLimiter {
	a := &adaptiveLimiter{budget: budget}
	initial := min(adaptiveInitialLimit, most)
	a.lim = adaptivelimiter.NewBuilder[any]().
		WithLimits(1, uint(most), uint(initial)).
		WithRecentWindow(adaptiveWindow, adaptiveWindowMax, adaptiveMinSamples).
		WithMaxLimitFunc(a.maxLimit).
		Build()
	return a
}

// maxLimit is the library's cap on the limit, given the most writes in
// flight during its last window: while the recent p90 latency is within
// the budget, five times that (the library's default headroom); above it,
// that many writes scaled down by budget/p90 — by Little's law, at the same
// throughput, the number of writes in flight whose latency is the budget.
// The library then lowers the limit step by step towards the cap.
//
// The budget is Options.MaxLatency, or twice the lowest median latency the
// run has seen if that is more: writes that are slow by nature (a
// conversion webhook of 250 ms is called several times per write) are not
// held to one at a time for a latency no load can reach; the gradient
// limiter alone then keeps them from queueing.
func (a *adaptiveLimiter) maxLimit(inflight int) float64 {
	p50, p90 := a.percentiles()
	budget := max(a.budget, 2*a.floorOf(p50))
	if p90 <= budget {
		return float64(max(1, inflight)) * 5
	}
	return max(1, float64(inflight)*float64(budget)/float64(p90))
}

// percentiles are the p50 and p90 of the recent writes; they also lower
// the floor.
func (a *adaptiveLimiter) percentiles() (p50, p90 time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := min(a.n, budgetSamples)
	if n == 0 {
		return 0, 0
	}
	s := slices.Clone(a.recent[:n])
	slices.Sort(s)
	p50, p90 = s[n/2], s[(n*9)/10]
	if n == budgetSamples && (a.floor == 0 || p50 < a.floor) {
		a.floor = p50
	}
	return p50, p90
}

// floorOf is the floor, or p50 before there is one.
func (a *adaptiveLimiter) floorOf(p50 time.Duration) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.floor == 0 {
		return p50
	}
	return a.floor
}

func (a *adaptiveLimiter) acquire(ctx context.Context) (func(), error) {
	p, err := a.lim.AcquirePermit(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	return func() {
		a.mu.Lock()
		a.recent[a.n%budgetSamples] = time.Since(start)
		a.n++
		a.mu.Unlock()
		p.Record()
	}, nil
}

func (a *adaptiveLimiter) limit() int { return a.lim.Limit() }
