package migrate

import (
	"time"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate/result"
)

// The values of a run live in package result, where report and view can
// name them without importing the engine; these are their names here.
type (
	// Outcome is result.Outcome.
	Outcome = result.Outcome
	// Progress is result.Progress.
	Progress = result.Progress
	// Failure is result.Failure.
	Failure = result.Failure
	// Counts is result.Counts.
	Counts = result.Counts
	// Trim is result.Trim.
	Trim = result.Trim
	// ServerMigration is result.ServerMigration.
	ServerMigration = result.ServerMigration
	// Result is result.Result.
	Result = result.Result
	// Measurement is result.Measurement.
	Measurement = result.Measurement
	// PriorityAndFairness is result.PriorityAndFairness.
	PriorityAndFairness = result.PriorityAndFairness
	// Concurrency is result.Concurrency.
	Concurrency = result.Concurrency
	// Refusal is result.Refusal.
	Refusal = result.Refusal
)

// ErrStorageNotServed refuses a run whose writes would have to go through a
// version other than the storage version (result.ErrStorageNotServed).
var ErrStorageNotServed = result.ErrStorageNotServed

// The outcomes of one object (see result.Outcome).
const (
	Rewritten = result.Rewritten
	Current   = result.Current
	Conflict  = result.Conflict
	Deleted   = result.Deleted
	Failed    = result.Failed
	Accepted  = result.Accepted
	Listed    = result.Listed
)

// Who trimmed storedVersions (Trim.By), and the engines of a run
// (Result.Engine).
const (
	TrimmedByUs     = result.TrimmedByUs
	TrimmedByServer = result.TrimmedByServer
	EngineClient    = result.EngineClient
	EngineServer    = result.EngineServer
)

// The designs of a loss measurement pass (Measurement.Design).
const (
	DesignReads  = result.DesignReads
	DesignDryRun = result.DesignDryRun
)

// MaxConcurrency is the most writes in flight Options.Concurrency may ask
// for. An API server serves 600 requests at once by default (its
// --max-requests-inflight 400 plus --max-mutating-requests-inflight 200,
// which API Priority and Fairness shares out as seats); more writes in
// flight only queue, and each costs the run a worker.
const MaxConcurrency = 1000

// Options tune a run. The zero value is not valid; start from DefaultOptions.
type Options struct {
	// ChunkSize is the page size of the list (limit).
	ChunkSize int64
	// Concurrency is the number of writes in flight: exactly that many
	// when MaxLatency is 0, at most that many otherwise.
	Concurrency int
	// MaxLatency is the latency budget of the run's writes: when it is
	// positive, an adaptive limiter (see limit.go) keeps the number of
	// writes in flight between 1 and Concurrency such that the p90 latency
	// of recent writes, measured by this process from request to answer,
	// stays within it — the API server's latency for everyone else rises
	// with the load this run puts on it. 0 writes at the fixed
	// Concurrency, as fast as the API server takes it (--max-speed).
	MaxLatency time.Duration
	// Retries is how often a write that failed with a server error (5xx) or a
	// timeout is retried, with exponential backoff from RetryDelay. 429 Too
	// Many Requests is retried by client-go itself, honouring Retry-After.
	Retries    int
	RetryDelay time.Duration
	// Unreachable is how long a write keeps being retried while the API
	// server cannot be reached at all (connection refused or reset, a
	// connection lost mid-request), as during a control-plane restart or a
	// load balancer failover. These retries do not count against Retries.
	Unreachable time.Duration
	// DryRun server sends the writes with dryRun=All: every object is
	// checked (conversion, validation, admission) and nothing is persisted
	// or trimmed. DryRun client lists the objects without writing.
	DryRun lifecycle.DryRun
	// NoTrim skips the storedVersions trim.
	NoTrim bool
	// FieldManager names the writer.
	FieldManager string
	// Checkpoint is a file recording progress after each completed page;
	// a run with the same file resumes after the last completed page.
	Checkpoint string
	// Progress, when set, is called after every object with where the run
	// stands, one call at a time (the last one sees every object done). It
	// must be cheap: the writers wait for it.
	Progress func(Progress)
}

// DefaultOptions are the defaults of kubectl crdversion migrate.
func DefaultOptions() Options {
	return Options{ChunkSize: cluster.ChunkSize, Concurrency: 64, MaxLatency: DefaultMaxLatency, Retries: 5, RetryDelay: 200 * time.Millisecond, Unreachable: 2 * time.Minute, FieldManager: "kubectl-crdversion"}
}

// DefaultMaxLatency is the default latency budget of a run's writes
// (Options.MaxLatency); see docs/performance.md for how it was chosen.
const DefaultMaxLatency = 50 * time.Millisecond
