// Package fairness gives one run of the plugin a priority level of its own
// in API Priority and Fairness (APF, flowcontrol.apiserver.k8s.io/v1): a
// PriorityLevelConfiguration of a few nominal concurrency shares that
// neither lends nor borrows seats, and a FlowSchema that sends there the
// requests of the run's identity to the CRD's resource — and nothing else.
// The API server then queues the run's requests behind its own seats, and
// every other client keeps its share of the server however fast the run
// writes: the cluster's own fairness instead of a client-side latency
// budget.
//
// Both objects are named after the identity and the CRD, so a run that was
// killed before it could remove them leaves objects the next run of the
// same migration finds under the same name and removes first. They carry
// the label app.kubernetes.io/managed-by=kubectl-crdversion and, as
// annotations, the CRD and the identity, so that they can be found and
// told apart: kubectl get flowschemas,prioritylevelconfigurations -l
// app.kubernetes.io/managed-by=kubectl-crdversion.
package fairness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/crdversion/kubectl-crdversion/internal/migrate/result"
)

// The labels and annotations of the objects a run creates.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "kubectl-crdversion"
	CRDAnnotation  = "crdversion.io/crd"
	UserAnnotation = "crdversion.io/user"
)

// DefaultShares is the nominal concurrency shares of a run's priority level
// when none are given: the value of the bench's priority-level phase (p),
// which left other clients the lowest latency of every design measured
// (docs/performance.md). Out of the roughly 245 shares of a v1.37 API
// server's default levels, it is a few seats of the server's concurrency
// limit.
const DefaultShares int32 = 1

// MatchingPrecedence is the FlowSchema's matchingPrecedence: before the
// defaults that hold users and service accounts (global-default 9900,
// service-accounts 9000, workload-low 9000, kube-system-service-accounts
// 7500), after system-nodes and leader election. Nothing can come before
// the schema exempt (precedence 1), which holds system:masters.
const MatchingPrecedence int32 = 500

// ExemptGroup is the group the API server's flow schema exempt matches at
// precedence 1: APF never queues its requests, and no schema can come
// before it.
const ExemptGroup = "system:masters"

// DefaultLandingWait bounds Acquire's wait for the API server to classify
// a request of the run into the new FlowSchema (the APF configuration
// controller takes a new schema in a moment after it is created).
const DefaultLandingWait = 30 * time.Second

// Cluster is what a run's priority level needs of the API server.
type Cluster interface {
	// WhoAmI is the user name and groups the API server authenticates the
	// client as (a SelfSubjectReview: impersonation included).
	WhoAmI(ctx context.Context) (user string, groups []string, err error)
	// CreatePriorityLevel and CreateFlowSchema create the objects (a
	// server-side dry run when dryRun) and return their uids.
	CreatePriorityLevel(ctx context.Context, pl *flowcontrolv1.PriorityLevelConfiguration, dryRun bool) (uid string, err error)
	CreateFlowSchema(ctx context.Context, fs *flowcontrolv1.FlowSchema, dryRun bool) (uid string, err error)
	// DeleteFlowSchema and DeletePriorityLevel delete an object by name,
	// and only if its uid is uid when uid is not empty (a precondition);
	// found is false when there was none, or another object of that name.
	DeleteFlowSchema(ctx context.Context, name, uid string) (found bool, err error)
	DeletePriorityLevel(ctx context.Context, name, uid string) (found bool, err error)
	// FlowSchemaOf sends one request of the run (a list of at most one
	// object of gvr) and returns the uid of the FlowSchema the API server
	// classified it into (the X-Kubernetes-PF-FlowSchema-UID header; ""
	// without it).
	FlowSchemaOf(ctx context.Context, gvr schema.GroupVersionResource) (string, error)
}

// Options are Acquire's inputs.
type Options struct {
	// CRD is the CRD's name; Resource its resource at a served version,
	// through which the run's requests go.
	CRD      string
	Resource schema.GroupVersionResource
	// Shares is the priority level's nominal concurrency shares
	// (DefaultShares when 0).
	Shares int32
	// DryRun creates both objects as server-side dry runs: the API server
	// validates and authorizes them, nothing is kept, and the run's
	// requests land where they always do.
	DryRun bool
	// Planned, with DryRun, says that the dry run plans a run without
	// one, which removes what a killed run left before it creates its own
	// (retire's server-side dry run of every step before it takes them):
	// an object of the run's name that exists is then what that run
	// removes — reported as LeftoverRemoved — not a refusal.
	Planned bool
	// LandingWait bounds the wait for a request to land in the new
	// FlowSchema (DefaultLandingWait when 0).
	LandingWait time.Duration
	// Poll is the interval between the requests of that wait (100ms when
	// 0).
	Poll time.Duration
}

// Level is a run's priority level, created by Acquire: what the report
// says of it, and the FlowSchema's uid.
type Level struct {
	result.OwnPriorityLevel
	// FlowSchemaUID and PriorityLevelUID are the created objects' uids
	// ("" in a dry run): Release removes these objects and no other of
	// their name (one that another run of the migration created).
	FlowSchemaUID, PriorityLevelUID string
}

// NotLandingError is Acquire's refusal when the run's requests do not land
// in the new FlowSchema: a schema of lower matchingPrecedence matches them
// first (the schema exempt, precedence 1, matches system:masters, which
// APF never queues), or the API server did not take the schema in within
// the wait. Both objects were removed again.
type NotLandingError struct {
	Name, User string
	// Exempt is true when the identity is in ExemptGroup: nothing was
	// created.
	Exempt bool
	// LandedIn is the uid of the FlowSchema the last request landed in
	// ("" when the API server named none).
	LandedIn string
	Wait     time.Duration
	// LastError is the last request of the wait that got no answer, if
	// any.
	LastError error
}

func (e *NotLandingError) Error() string {
	if e.Exempt {
		return fmt.Sprintf("%s is in %s, which API Priority and Fairness exempts", e.User, ExemptGroup)
	}
	return fmt.Sprintf("requests of %s did not land in the priority level created for them within %s", e.User, e.Wait)
}

// Why is the reason behind Error, in a sentence.
func (e *NotLandingError) Why() string {
	if e.Exempt {
		return "the flow schema exempt matches " + ExemptGroup + " at precedence 1, before any schema a run can create: no priority level holds its requests"
	}
	where := "no flow schema"
	if e.LandedIn != "" {
		where = "the flow schema of uid " + e.LandedIn
	}
	why := "they landed in " + where + ", not in " + e.Name + ": a flow schema of lower matchingPrecedence matches them first, or the API server did not take the new one in; both objects were removed again"
	if e.LastError != nil {
		why += " (the last request that got no answer: " + e.LastError.Error() + ")"
	}
	return why
}

// Name is the name of the objects of the run of user on crd: "crdversion-"
// and a hash of both, the same for every run of that migration, so that a
// re-run finds what a killed run left.
func Name(user, crd string) string {
	sum := sha256.Sum256([]byte(user + "\x00" + crd))
	return "crdversion-" + hex.EncodeToString(sum[:])[:16]
}

// IsName reports whether name has the shape of Name's names: a run's own
// priority level, left behind when its name shows up in a run without one.
func IsName(name string) bool {
	h, ok := strings.CutPrefix(name, "crdversion-")
	if !ok || len(h) != 16 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// Objects are the PriorityLevelConfiguration and FlowSchema of the run of
// user on the resource gvr (any version: a FlowSchema's resource rules
// name group and resource only) of crd, with shares nominal concurrency
// shares.
func Objects(user, crd string, gvr schema.GroupVersionResource, shares int32) (*flowcontrolv1.PriorityLevelConfiguration, *flowcontrolv1.FlowSchema) {
	name := Name(user, crd)
	meta := metav1.ObjectMeta{Name: name, Labels: map[string]string{ManagedByLabel: ManagedBy},
		Annotations: map[string]string{CRDAnnotation: crd, UserAnnotation: user}}
	zero := int32(0)
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: *meta.DeepCopy(),
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: &shares, LendablePercent: &zero, BorrowingLimitPercent: &zero,
				// Queue rather than reject: the run's writes wait for a
				// seat instead of being answered 429.
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 16, HandSize: 4, QueueLengthLimit: 128}},
			},
		},
	}
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: *meta.DeepCopy(),
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: name},
			MatchingPrecedence:         MatchingPrecedence,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: user}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{gvr.Group},
					Resources: []string{gvr.Resource}, ClusterScope: true, Namespaces: []string{"*"}}},
			}},
		},
	}
	return pl, fs
}

// Acquire creates the run's priority level: it learns the identity,
// removes what a killed run of the same migration left, creates the
// PriorityLevelConfiguration and the FlowSchema, and waits until a request
// of the run lands in that FlowSchema, as the API server says. Requests
// that keep landing elsewhere make it remove both and return a
// *NotLandingError; an error of the API server is returned as it is,
// after removing what was created. In a dry run both are sent as
// server-side dry runs and nothing is waited for.
func Acquire(ctx context.Context, c Cluster, o Options) (*Level, error) {
	user, groups, err := c.WhoAmI(ctx)
	if err != nil {
		return nil, fmt.Errorf("who the API server takes this client for (SelfSubjectReview): %w", err)
	}
	if slices.Contains(groups, ExemptGroup) {
		return nil, &NotLandingError{User: user, Exempt: true}
	}
	shares := o.Shares
	if shares <= 0 {
		shares = DefaultShares
	}
	pl, fs := Objects(user, o.CRD, o.Resource, shares)
	l := &Level{OwnPriorityLevel: result.OwnPriorityLevel{Name: pl.Name, User: user, Shares: shares, DryRun: o.DryRun}}
	if !o.DryRun {
		fsFound, err := c.DeleteFlowSchema(ctx, l.Name, "")
		if err != nil {
			return nil, fmt.Errorf("removing the FlowSchema %s a killed run left: %w", l.Name, err)
		}
		plFound, err := c.DeletePriorityLevel(ctx, l.Name, "")
		if err != nil {
			return nil, fmt.Errorf("removing the PriorityLevelConfiguration %s a killed run left: %w", l.Name, err)
		}
		l.LeftoverRemoved = fsFound || plFound
	}
	removedFirst := func(err error) bool {
		if o.DryRun && o.Planned && apierrors.IsAlreadyExists(err) {
			l.LeftoverRemoved = true
			return true
		}
		return false
	}
	if l.PriorityLevelUID, err = c.CreatePriorityLevel(ctx, pl, o.DryRun); err != nil && !removedFirst(err) {
		return nil, createError("PriorityLevelConfiguration", l.Name, o.DryRun, err)
	}
	if l.FlowSchemaUID, err = c.CreateFlowSchema(ctx, fs, o.DryRun); err != nil && !removedFirst(err) {
		return nil, errors.Join(createError("FlowSchema", l.Name, o.DryRun, err), l.Release(ctx, c))
	}
	if o.DryRun {
		return l, nil
	}
	waitFor := o.LandingWait
	if waitFor <= 0 {
		waitFor = DefaultLandingWait
	}
	poll := o.Poll
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	// A request that fails (a timeout, a rate limiter out of time) is
	// not yet an answer: only the wait running out is.
	var landed string
	var lastErr error
	err = wait.PollUntilContextTimeout(ctx, poll, waitFor, true, func(ctx context.Context) (bool, error) {
		uid, err := c.FlowSchemaOf(ctx, o.Resource)
		if err != nil {
			lastErr = err
			return false, nil
		}
		landed = uid
		return uid == l.FlowSchemaUID, nil
	})
	if err == nil {
		return l, nil
	}
	if ctx.Err() == nil && wait.Interrupted(err) {
		err = &NotLandingError{Name: l.Name, User: user, LandedIn: landed, Wait: waitFor, LastError: lastErr}
	}
	return nil, errors.Join(err, l.Release(ctx, c))
}

// createError is the error of a create of the run's kind/name: one that
// already exists in a dry run (a run without --dry-run removes it first)
// says so, with the commands that remove it.
func createError(kind, name string, dryRun bool, err error) error {
	if dryRun && apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("the %s %s exists: a killed run of this migration left it, or one is going on; a run without --dry-run removes it first (or: kubectl delete flowschema %s; kubectl delete prioritylevelconfiguration %s)", kind, name, name, name)
	}
	return fmt.Errorf("creating the %s %s: %w", kind, name, err)
}

// Release removes the FlowSchema, then the PriorityLevelConfiguration, of
// l — those it created, by uid, not others of their names that another run
// of the migration created since — also when ctx was cancelled (an interrupted run): it then uses a
// context of its own, bounded to 30 seconds. Objects already gone are no
// error. A dry run's objects were never kept: nothing to remove.
func (l *Level) Release(ctx context.Context, c Cluster) error {
	if l == nil || l.DryRun || l.Removed {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := c.DeleteFlowSchema(ctx, l.Name, l.FlowSchemaUID); err != nil {
		return fmt.Errorf("removing the FlowSchema %s (the next run of this migration removes it, or: kubectl delete flowschema %s): %w", l.Name, l.Name, err)
	}
	if _, err := c.DeletePriorityLevel(ctx, l.Name, l.PriorityLevelUID); err != nil {
		return fmt.Errorf("removing the PriorityLevelConfiguration %s (the next run of this migration removes it, or: kubectl delete prioritylevelconfiguration %s): %w", l.Name, l.Name, err)
	}
	l.Removed = true
	return nil
}
