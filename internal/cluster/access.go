package cluster

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/crdversion/kubectl-crdversion/internal/access"
)

// Missing asks the API server, with one SelfSubjectAccessReview per need
// (cluster-wide, all namespaces), which of needs the user lacks. When the
// reviews themselves cannot be made (an API server without the
// authorization API, or a review forbidden), it returns no missing
// permission and checked false: the command then goes on and the API
// server's own answer decides.
func (c *Client) Missing(ctx context.Context, needs []access.Need) (missing []access.Need, checked bool) {
	cs, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return nil, false
	}
	for _, n := range access.Dedup(needs) {
		review := &authorizationv1.SelfSubjectAccessReview{}
		if n.URL != "" {
			review.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: n.URL, Verb: n.Verb}
		} else {
			review.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{Verb: n.Verb, Group: n.Group, Resource: n.Resource, Subresource: n.Subresource, Namespace: n.Namespace}
		}
		got, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return nil, false
		}
		if !got.Status.Allowed {
			missing = append(missing, n)
		}
	}
	return missing, true
}
