package cluster

import (
	"context"
	"net/http"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// The methods of fairness.Cluster: a run's priority level of its own.

// WhoAmI returns the user name and groups the API server authenticates
// this client as, from a SelfSubjectReview (authentication.k8s.io/v1),
// which every authenticated user may create; --as impersonation is
// honoured.
func (c *Client) WhoAmI(ctx context.Context) (string, []string, error) {
	cs, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return "", nil, err
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", nil, err
	}
	return r.Status.UserInfo.Username, r.Status.UserInfo.Groups, nil
}

// CreatePriorityLevel creates pl (a server-side dry run when dryRun) and
// returns its uid.
func (c *Client) CreatePriorityLevel(ctx context.Context, pl *flowcontrolv1.PriorityLevelConfiguration, dryRun bool) (string, error) {
	cs, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return "", err
	}
	got, err := cs.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, pl, createOptions(dryRun))
	if err != nil {
		return "", err
	}
	return string(got.UID), nil
}

// CreateFlowSchema creates fs (a server-side dry run when dryRun) and
// returns its uid.
func (c *Client) CreateFlowSchema(ctx context.Context, fs *flowcontrolv1.FlowSchema, dryRun bool) (string, error) {
	cs, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return "", err
	}
	got, err := cs.FlowcontrolV1().FlowSchemas().Create(ctx, fs, createOptions(dryRun))
	if err != nil {
		return "", err
	}
	return string(got.UID), nil
}

// DeleteFlowSchema deletes the FlowSchema name, only if its uid is uid
// when uid is set (a delete precondition); found is false when there was
// none, or one of another uid.
func (c *Client) DeleteFlowSchema(ctx context.Context, name, uid string) (bool, error) {
	cs, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return false, err
	}
	return deleted(cs.FlowcontrolV1().FlowSchemas().Delete(ctx, name, deleteOptions(uid)))
}

// DeletePriorityLevel deletes the PriorityLevelConfiguration name, only if
// its uid is uid when uid is set; found is false when there was none, or
// one of another uid.
func (c *Client) DeletePriorityLevel(ctx context.Context, name, uid string) (bool, error) {
	cs, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return false, err
	}
	return deleted(cs.FlowcontrolV1().PriorityLevelConfigurations().Delete(ctx, name, deleteOptions(uid)))
}

func deleteOptions(uid string) metav1.DeleteOptions {
	if uid == "" {
		return metav1.DeleteOptions{}
	}
	u := types.UID(uid)
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &u}}
}

// FlowSchemaOf sends one request to gvr — a read of an object that does
// not exist (metadata only), which API Priority and Fairness classifies
// like any request to the resource but which reads and converts no stored
// object — and returns the uid of the FlowSchema the API server classified
// it into, from the response header X-Kubernetes-PF-FlowSchema-UID (""
// when the answer has none). The answer itself (404) is not an error; a
// request that got no answer is.
func (c *Client) FlowSchemaOf(ctx context.Context, gvr schema.GroupVersionResource) (string, error) {
	var mu sync.Mutex
	var uid string
	cfg := rest.CopyConfig(c.config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if resp != nil {
				mu.Lock()
				uid = resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID")
				mu.Unlock()
			}
			return resp, err
		})
	})
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	if _, err := md.Resource(gvr).Get(ctx, flowProbeName, metav1.GetOptions{}); err != nil {
		if _, answered := err.(apierrors.APIStatus); !answered {
			return "", err
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return uid, nil
}

// flowProbeName is the name FlowSchemaOf reads: an invalid object name
// (upper case), so that no object can have it.
const flowProbeName = "CRDVERSION-FLOW-PROBE"

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func createOptions(dryRun bool) metav1.CreateOptions {
	if dryRun {
		return metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	}
	return metav1.CreateOptions{}
}

func deleted(err error) (bool, error) {
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Conflict: the uid precondition failed, another object has
		// the name.
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}
