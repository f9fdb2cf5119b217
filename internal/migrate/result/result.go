// Package result holds the values a migration run reports: the Result of
// a run (migrate.Engine's client engine or a StorageVersionMigration), its
// Counts by Outcome, Failures, Trim and measurements, and the Progress a run
// reports while it goes. They are plain data, so that report and view,
// which print them, need not import the engines (package migrate, which
// names them through aliases, and package svm).
package result

import (
	"errors"
	"time"
)

// ErrStorageNotServed refuses a run whose writes would have to go through a
// version other than the storage version: the API server stores an object
// at the storage version only when it is written through a served version,
// and a run writes through the storage version so that it converts nothing.
// migrate and loss return it (errors.Is) for a CRD whose storage version is
// not served.
var ErrStorageNotServed = errors.New("the storage version is not served")

// Outcome of one object.
type Outcome string

// The outcomes, as in docs/migrate.md.
const (
	// Rewritten: the write re-encoded the object (its resourceVersion changed).
	Rewritten Outcome = "rewritten"
	// Current: the object was already stored at the storage version.
	Current Outcome = "current"
	// Conflict: someone else wrote the object since it was listed, so it is
	// stored at the storage version — valid while that version is unchanged,
	// which the trim guard checks.
	Conflict Outcome = "conflict"
	// Deleted: the object was deleted since it was listed; it is not re-created.
	Deleted Outcome = "deleted"
	// Failed: the API server refused the write (validation, a conversion
	// webhook, …) or kept failing after the retries.
	Failed Outcome = "failed"
	// Accepted: the API server accepted the write as a server-side dry
	// run. A dry run is not stored and keeps the resourceVersion, so it
	// cannot tell an object it would rewrite from one already current.
	Accepted Outcome = "accepted"
	// Listed: the object was listed and nothing was sent (a client-side
	// dry run, which counts the objects only).
	Listed Outcome = "listed"
)

// Progress is where a run stands.
type Progress struct {
	// Done is the number of objects handled so far; Total the number known
	// (0 while unknown).
	Done, Total int64
	// Limit is the number of writes allowed in flight now.
	Limit int
	// PriorityLevel and FlowSchema name where API Priority and Fairness
	// put the run's requests (a UID when the name could not be read; empty
	// when unknown). Exempt is true for the exempt priority level.
	PriorityLevel, FlowSchema string
	Exempt                    bool
	// TooManyRequests is the number of 429 answers so far.
	TooManyRequests int64
}

// Failure is an object that could not be migrated.
type Failure struct {
	// Object is "namespace/name", or "name" for cluster-scoped objects.
	Object string `json:"object"`
	// Message is the API server's message.
	Message string `json:"message"`
}

// Counts of the outcomes.
type Counts struct {
	Total     int64 `json:"total"`
	Rewritten int64 `json:"rewritten"`
	Current   int64 `json:"alreadyCurrent"`
	Conflicts int64 `json:"conflicts"`
	Deleted   int64 `json:"deleted"`
	Failed    int64 `json:"failed"`
	// Accepted counts the writes a server-side dry run had accepted: in a
	// dry run they take the place of rewritten and alreadyCurrent.
	Accepted int64 `json:"acceptedByDryRun,omitempty"`
}

// Add counts one object with outcome o.
func (c *Counts) Add(o Outcome) {
	c.Total++
	switch o {
	case Rewritten:
		c.Rewritten++
	case Current:
		c.Current++
	case Conflict:
		c.Conflicts++
	case Deleted:
		c.Deleted++
	case Failed:
		c.Failed++
	case Accepted:
		c.Accepted++
	}
}

// Plus adds the counts of o.
func (c *Counts) Plus(o Counts) {
	c.Total += o.Total
	c.Rewritten += o.Rewritten
	c.Current += o.Current
	c.Conflicts += o.Conflicts
	c.Deleted += o.Deleted
	c.Failed += o.Failed
	c.Accepted += o.Accepted
}

// Trim says what happened to status.storedVersions.
type Trim struct {
	// Trimmed is true when this run wrote storedVersions.
	Trimmed bool `json:"trimmed"`
	// Before and After are storedVersions before the run and at its end.
	Before []string `json:"before"`
	After  []string `json:"after"`
	// Reason says why nothing was trimmed, when nothing was.
	Reason string `json:"reason,omitempty"`
	// Failed is true when the pass was complete and clean, so the trim was
	// due, but it did not happen: the storage version or the spec changed
	// during the run, the write failed, or the API server did not keep
	// [storage]. storedVersions then still lists the old versions.
	Failed bool `json:"failed,omitempty"`
	// By names who wrote storedVersions when Trimmed is true: TrimmedByUs
	// (this run's guarded status write) or TrimmedByServer (the
	// kube-controller-manager's storage version migrator, after a
	// StorageVersionMigration succeeded).
	By string `json:"by,omitempty"`
	// Restored is true when a failed StorageVersionMigration's controller
	// trimmed storedVersions anyway and this run put the versions it removed
	// back (server engine; see docs/migrate.md).
	Restored bool `json:"restored,omitempty"`
}

// Who trimmed storedVersions (Trim.By).
const (
	TrimmedByUs     = "kubectl-crdversion"
	TrimmedByServer = "kube-controller-manager"
)

// The engines of a run (Result.Engine).
const (
	// EngineClient lists and rewrites the objects from this process.
	EngineClient = "client"
	// EngineServer delegates the rewrite to a StorageVersionMigration
	// object that the kube-controller-manager carries out.
	EngineServer = "server"
)

// ServerMigration is the StorageVersionMigration a server-engine run
// created (or, in a client dry run, would create) and what became of it.
type ServerMigration struct {
	// APIVersion is storagemigration.k8s.io/<version>, the version the
	// cluster serves.
	APIVersion string `json:"apiVersion"`
	// Name is the object's name; empty in a client dry run (the API server
	// generates it from GenerateName).
	Name         string `json:"name,omitempty"`
	GenerateName string `json:"generateName"`
	// Resource is the migrated resource, "<plural>.<group>".
	Resource string `json:"resource"`
	// Phase is Pending (no condition yet), Running, Succeeded or Failed, as
	// last observed.
	Phase string `json:"phase"`
	// Reason and Message are those of the condition that decided Phase.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Result of a run.
type Result struct {
	// Engine is EngineClient or EngineServer.
	Engine         string `json:"engine"`
	CRD            string `json:"crd"`
	StorageVersion string `json:"storageVersion"`
	Counts         `json:",inline"`
	Failures       []Failure `json:"failures"`
	// Complete is true when every object was listed (the run was not
	// interrupted).
	Complete bool `json:"complete"`
	// Resumed is true when the run started from a checkpoint.
	Resumed bool `json:"resumed,omitempty"`
	// Restarted is true when the checkpoint's continue token had expired
	// (410 Gone, etcd compacted past it): the list started again from the
	// first object, and the counts are this run's alone, each object once.
	Restarted bool          `json:"restarted,omitempty"`
	Elapsed   time.Duration `json:"-"`
	// ElapsedSeconds and ObjectsPerSecond measure the run.
	ElapsedSeconds   float64 `json:"elapsedSeconds"`
	ObjectsPerSecond float64 `json:"objectsPerSecond"`
	Trim             Trim    `json:"trim"`
	DryRun           bool    `json:"dryRun,omitempty"`
	// Refused is set when the run was refused before it wrote anything,
	// because the loss measurement found a loss or could not measure:
	// every object and path it names (its text names the first ten).
	Refused *Refusal `json:"refused,omitempty"`
	// StorageVersionMigration is set by the server engine.
	StorageVersionMigration *ServerMigration `json:"storageVersionMigration,omitempty"`
	// PriorityAndFairness says where API Priority and Fairness put the
	// run's requests; nil when no answer carried its headers (APF off).
	PriorityAndFairness *PriorityAndFairness `json:"priorityAndFairness,omitempty"`
	// OwnPriorityLevel is the priority level the run created for itself
	// and removed after (migrate --own-priority-level); nil without it.
	OwnPriorityLevel *OwnPriorityLevel `json:"ownPriorityLevel,omitempty"`
	// TooManyRequests counts the 429 Too Many Requests answers to the
	// run's requests (each one retried, by client-go after its
	// Retry-After, then within migrate.Options.Retries).
	TooManyRequests int64 `json:"tooManyRequests"`
	// Retries counts the writes the engine sent again after a server
	// error, a timeout or a 429 that outlasted client-go's own retries
	// (migrate.Options.Retries each), and after an unreachable API server.
	Retries int64 `json:"retries"`
	// InFlightUnknown counts the writes that were in flight when the run
	// was interrupted and whose objects could not be read back to tell
	// whether they landed (the ones read back are counted by outcome).
	InFlightUnknown int64 `json:"inFlightUnknown,omitempty"`
	// Concurrency says how many writes were in flight and how fast the
	// API server answered them.
	Concurrency *Concurrency `json:"concurrency,omitempty"`
	// Warnings are things the user should know about the run.
	Warnings []string `json:"warnings,omitempty"`
	// Measured are the loss measurements that ran before the rewrite, one
	// per version the objects were read at; empty when none ran
	// (--allow-pruning, a client dry run).
	Measured []Measurement `json:"measured,omitempty"`
}

// Measurement is one pass of the loss measurement that runs before a
// migration (loss.Measure): every object read at From and sent the
// migration's own no-op update as a server-side dry run — through the
// storage version, or under a conversion webhook through From (Through),
// whose answer is the round trip From -> storage -> From — the two
// compared as whole objects (cluster.CompareObjects).
type Measurement struct {
	// From is the version the objects were read at.
	From string `json:"from"`
	// Objects is the number of objects read and measured.
	Objects int `json:"objects"`
	// Through is the version the writes (and their dry runs) go through.
	Through string `json:"through,omitempty"`
	// Design is how the pass measured: "reads" (each object read at From
	// and at Through, two paged lists, compared: nothing on the write can
	// change or refuse it that a read does not show) or "dryRun" (each
	// object also sent the run's update as a server-side dry run).
	Design string `json:"design"`
	// DryRunBecause says why the pass sent dry runs (a webhook or policy
	// that acts on the update, transition rules, Webhook conversion…).
	DryRunBecause string `json:"dryRunBecause,omitempty"`
	// DryRuns is the number of objects sent the dry-run update: all of
	// them under "dryRun"; under "reads", those the two lists did not show
	// alike (written between them) and those the API server refuses as
	// new objects (whose update it may refuse too).
	DryRuns int `json:"dryRuns"`
	// Lost is the number of objects with a field the write would drop.
	Lost int `json:"lost"`
	// Changed is the number of objects with a value the write would
	// change.
	Changed int `json:"changed"`
	// Set are the paths the write would set (defaults of the schema,
	// admission) with the number of objects for each.
	Set []PathCount `json:"set,omitempty"`
	// NullsDropped are the paths whose explicit null the write would drop,
	// with the number of objects for each.
	NullsDropped []PathCount `json:"nullsDropped,omitempty"`
	// GenerationChanged is the number of objects whose
	// metadata.generation the write would change (controllers reconcile
	// them again).
	GenerationChanged int `json:"generationChanged"`
	// InvalidAtStorage is the number of objects that the API server
	// refuses as new objects at the storage version (a server-side dry-run
	// create under their own names): the rewrite stores them all the same,
	// since ratcheting keeps unchanged invalid fields, but typed clients of
	// the storage version may fail to decode them. Counted only when a
	// stored version differs from the storage version (its schema, or
	// Webhook conversion).
	InvalidAtStorage int `json:"invalidAtStorage,omitempty"`
	// Accepted are the paths whose loss or change the user accepted
	// (--allow-pruning=PATHS), with the number of objects for each.
	Accepted []PathCount `json:"accepted,omitempty"`
	// ElapsedSeconds times the pass.
	ElapsedSeconds float64 `json:"elapsedSeconds"`
}

// The designs of a measurement pass (Measurement.Design).
const (
	DesignReads  = "reads"
	DesignDryRun = "dryRun"
)

// PathCount is a JSON path and the number of objects it was found in.
type PathCount struct {
	Path    string `json:"path"`
	Objects int    `json:"objects"`
}

// PriorityAndFairness is where API Priority and Fairness (APF) classified
// a run's requests, from the X-Kubernetes-PF-FlowSchema-UID and
// X-Kubernetes-PF-PriorityLevel-UID response headers, with the names of
// the FlowSchema and PriorityLevelConfiguration when they could be read.
type PriorityAndFairness struct {
	FlowSchema       string `json:"flowSchema,omitempty"`
	FlowSchemaUID    string `json:"flowSchemaUID"`
	PriorityLevel    string `json:"priorityLevel,omitempty"`
	PriorityLevelUID string `json:"priorityLevelUID"`
	// Exempt is true when the priority level is of type Exempt (the
	// requests bypass APF's queues and limits: system:masters, for one).
	Exempt bool `json:"exempt"`
	// Unresolved says which names could not be read and why.
	Unresolved string `json:"unresolved,omitempty"`
}

// OwnPriorityLevel is a priority level of API Priority and Fairness that a
// run created for its own requests (a FlowSchema and a
// PriorityLevelConfiguration of the same name; see internal/fairness).
type OwnPriorityLevel struct {
	// Name is the name of both objects.
	Name string `json:"name"`
	// User is the identity whose requests it held.
	User string `json:"user"`
	// Shares is its nominal concurrency shares.
	Shares int32 `json:"shares"`
	// LeftoverRemoved is true when objects of that name were found and
	// removed before the run created its own: left by a run that was
	// killed before it could remove them.
	LeftoverRemoved bool `json:"leftoverRemoved,omitempty"`
	// DryRun is true when both were only created as server-side dry runs
	// (--dry-run=server): the run's requests landed where they always do.
	DryRun bool `json:"dryRun,omitempty"`
	// Removed is true once both were removed after the run.
	Removed bool `json:"removed"`
}

// Concurrency reports the writes in flight of a run.
type Concurrency struct {
	// Mode is "adaptive" (migrate.Options.MaxLatency > 0) or "fixed".
	Mode string `json:"mode"`
	// Max is migrate.Options.Concurrency; MaxLatencySeconds its MaxLatency.
	Max               int     `json:"max"`
	MaxLatencySeconds float64 `json:"maxLatencySeconds,omitempty"`
	// FinalLimit is the limit of writes in flight at the end (Max when
	// fixed); MeanLimit its mean over the writes.
	FinalLimit int     `json:"finalLimit"`
	MeanLimit  float64 `json:"meanLimit"`
	// WriteLatencyP50Seconds and WriteLatencyP99Seconds are the latency
	// percentiles of the run's write requests (each attempt, from request to
	// answer, client-go's own 429 retries included).
	WriteLatencyP50Seconds float64 `json:"writeLatencyP50Seconds"`
	WriteLatencyP99Seconds float64 `json:"writeLatencyP99Seconds"`
}

// Phase of a StorageVersionMigration as its conditions tell it
// (svm.Interpret); ServerMigration.Phase is one of these.
type Phase string

// The phases.
const (
	// PhasePending: no controller has taken the migration up yet (no condition),
	// or another migration of the same resource runs first.
	PhasePending Phase = "Pending"
	// PhaseRunning: condition Running is True and no terminal condition is.
	PhaseRunning Phase = "Running"
	// PhaseSucceeded: condition Succeeded is True; every object listed when the
	// migration started was rewritten (or deleted, or written by someone
	// else meanwhile).
	PhaseSucceeded Phase = "Succeeded"
	// PhaseFailed: condition Failed is True; the message names the error.
	PhaseFailed Phase = "Failed"
)

// Terminal tells whether p is PhaseSucceeded or PhaseFailed.
func (p Phase) Terminal() bool { return p == PhaseSucceeded || p == PhaseFailed }

// Refusal is a migration refused before it wrote anything by the loss
// measurement (issue 34): why, the way out, and each object the refusal
// names, none left out.
type Refusal struct {
	Reason string `json:"reason"`
	WayOut string `json:"wayOut,omitempty"`
	// Details are the lines the refusal prints, whose lists of objects
	// stop at ten.
	Details []string `json:"details,omitempty"`
	// Objects are every object behind the refusal, sorted by version read
	// at, then object.
	Objects []RefusedObject `json:"objects,omitempty"`
}

// RefusedObject is one object behind a Refusal: what its rewrite does to
// it, read at Version, by JSON path (".spec.image", ".metadata.labels.a").
type RefusedObject struct {
	// Object is "namespace/name", or "name" for a cluster-scoped object.
	Object string `json:"object"`
	// Version is the version the object was read at.
	Version string `json:"version"`
	// Dropped are the paths the rewrite drops; Changed those whose value
	// it changes.
	Dropped []string `json:"dropped,omitempty"`
	Changed []string `json:"changed,omitempty"`
	// Hidden are paths the object's managedFields record that neither the
	// read nor the dry run's answer shows: data no read shows, which the
	// rewrite erases.
	Hidden []string `json:"hidden,omitempty"`
	// Refused is the API server's refusal of the object's dry-run write;
	// Unmeasured why it could not be measured (read, or written as a dry
	// run).
	Refused    string `json:"refused,omitempty"`
	Unmeasured string `json:"unmeasured,omitempty"`
}
