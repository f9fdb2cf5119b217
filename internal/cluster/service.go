package cluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// WebhookService reads the Service namespace/name and its EndpointSlices
// (those labelled kubernetes.io/service-name=<name>, as the API server and
// kube-proxy find them): two requests. Errors are the API server's:
// apierrors.IsNotFound when the Service does not exist, IsForbidden when the
// user may not read Services or EndpointSlices there.
func (c *Client) WebhookService(ctx context.Context, namespace, name string) (*corev1.Service, []discoveryv1.EndpointSlice, error) {
	cs, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return nil, nil, err
	}
	svc, err := cs.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	slices, err := cs.DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
	if err != nil {
		return svc, nil, err
	}
	return svc, slices.Items, nil
}
